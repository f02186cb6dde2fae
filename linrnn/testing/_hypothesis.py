"""Hypothesis' `hypothesis` entry point (pyproject.toml): `st.from_type` of a layer config draws `configs(kind)`.

Hypothesis runs `register` when it is imported, in every process that imports it with linrnn installed, so loading
this module and running `register` import the standard library only: no NumPy, nothing of linrnn's models. The
config classes are registered when the registry of models (`linrnn.impls.specs`, which defines them) is imported:
at once where it already is, else right after its first import (a hook on `sys.meta_path` that waits for that one
module, wraps that one import's loader, then removes itself). A user cannot hold a config class before that
import, so `st.from_type(LRUConfig)` always finds its strategy; each is a function of the type, called on the
first draw (a strategy would be resolved at once, by `register_type_strategy`'s emptiness check), so that the
strategies module loads then.
"""

from __future__ import annotations

import importlib.abc
import sys

REGISTRY = "linrnn.impls.specs"


def register() -> None:
    registry = sys.modules.get(REGISTRY)
    if registry is not None:
        register_configs(registry)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(REGISTRY, register_configs))


def register_configs(registry) -> None:
    """Each registered model's config class -> `configs(kind)`, built when first drawn (models registered later: on
    the next call, which `linrnn.testing.strategies` makes when it is imported)."""
    from hypothesis import strategies as st
    for spec in list(registry.SPECS.values()):
        st.register_type_strategy(spec.config, lambda _type, kind=spec.kind: _configs(kind))


def _configs(kind: str):
    from linrnn.testing.strategies import configs
    return configs(kind)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` once the module `name` has been executed by its own loader (found by the finders after
    this one), then leaves `sys.meta_path`."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader(importlib.abc.Loader):
    """The module's own loader (often shared by many modules: pytest's assertion rewriter), then `then(module)`:
    a wrapper of this one import's, so that no other module is touched."""

    def __init__(self, loader, then):
        self.loader, self.then = loader, then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name):        # get_source, get_filename, ...: the module's own loader's
        return getattr(self.loader, name)

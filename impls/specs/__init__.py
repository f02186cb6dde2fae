"""The registry of models: one contract file per model, everything the contract says about a mixer kind in one place
(docs/architecture.md).

A `ModelSpec` (`base.py`) is the contract layer's record of one mixer: its config class (with the config's checks),
the bundle's keys and shapes, which keys are the recurrence's (their own optimiser group), its initialisation, its
modes, whether it has heads, a state and a bidirectional form, the default sizes of the tests, the cross-check
and the benchmarks, and where each side's implementation lives. The seven built-in models are the files beside this
one (`rotrnn.py`, `lru.py`, `dlr.py`, `s4d.py`, `s5.py`, `attention.py`, `rglru.py`); each is that model's contract,
in the shape of tests/models/toy_source.py: its config class, its initialiser, its bundle's shapes, where its decays sit
(`with_radius`) and its `SPEC`, next to its reference (`linrnn.impls.reference.<kind>`), PyTorch
(`linrnn.impls.torch.<kind>`) and JAX (`linrnn.impls.jax.<kind>`) files. They import `base.py` only, never this
registry, so the contract has no import cycle.

The sides register their implementation against the spec by name (`implementations`: backend ->
"module" or "module:attribute", imported on first use), so this layer imports neither framework. Everything
that loops over models (the config tables, bundles, the cross-check, `linrnn conform`, the backends' dispatch)
reads this registry: adding a model is `register(ModelSpec(...))` and its three implementation files
(tests/models/test_seventh_model.py does exactly that in a temporary package).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import attention, dlr, lru, rglru, rotrnn, s4d, s5
from linrnn.impls.specs.base import BACKENDS, ModelSpec

SPECS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model; its kind must be new and match its config class's `kind`."""
    if getattr(spec.config, "kind", None) != spec.kind:
        raise LinrnnError(f"spec {spec.kind!r}: its config class {spec.config.__name__} has kind "
                          f"{getattr(spec.config, 'kind', None)!r}")
    if spec.kind in SPECS or spec.kind in ("model", "scan"):
        raise LinrnnError(f"spec {spec.kind!r}: the kind is taken")
    unknown = set(spec.implementations) - set(BACKENDS)
    if unknown:
        raise LinrnnError(f"spec {spec.kind!r}: unknown backend(s) {', '.join(sorted(unknown))}")
    SPECS[spec.kind] = spec
    return spec


def unregister(kind: str) -> None:
    """Remove a model added by `register` (the tests' toy model); the built-in seven stay."""
    if kind in BUILTIN:
        raise LinrnnError(f"spec {kind!r}: a built-in model cannot be removed")
    SPECS.pop(kind, None)


def spec(kind: str) -> ModelSpec:
    """The spec of `kind`; an unknown kind is a one-line error listing the known ones."""
    try:
        return SPECS[kind]
    except (KeyError, TypeError):
        raise LinrnnError(f"mixer: expected one of {', '.join(SPECS)}, found {kind!r}") from None


def kinds() -> tuple[str, ...]:
    """Every registered mixer kind, the built-in seven first."""
    return tuple(SPECS)


def recurrent_kinds() -> tuple[str, ...]:
    """The kinds with a recurrent state (the scan/step views and the conformance contracts)."""
    return tuple(kind for kind, s in SPECS.items() if s.stateful)


class SpecView(Mapping):
    """A read-only dict over the registry, kind -> `pick(spec)`, that follows later registrations (the tables
    `MIXER_CONFIGS`, `RECURRENCE_KEYS` and the backends' `MIXERS` are such views)."""

    def __init__(self, pick: Callable[[ModelSpec], Any], only: Callable[[ModelSpec], bool] = lambda s: True):
        self._pick, self._only = pick, only

    def __getitem__(self, kind: str) -> Any:
        s = SPECS.get(kind) if isinstance(kind, str) else None
        if s is None or not self._only(s):
            raise KeyError(kind)
        return self._pick(s)

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, s in SPECS.items() if self._only(s)])

    def __len__(self) -> int:
        return sum(1 for s in SPECS.values() if self._only(s))

    def __repr__(self) -> str:
        return f"SpecView({dict(self)!r})"


class KindView(Sequence):
    """A read-only tuple of the registered kinds (`only` those whose spec passes) that follows later registrations:
    `KINDS`, every registered mixer kind, and `RECURRENT_KINDS`, those with a state."""

    def __init__(self, only: Callable[[ModelSpec], bool] = lambda s: True):
        self._only = only

    def _kinds(self) -> tuple[str, ...]:
        return tuple(k for k, s in SPECS.items() if self._only(s))

    def __getitem__(self, index):
        return self._kinds()[index]

    def __len__(self) -> int:
        return len(self._kinds())

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds()

    def __add__(self, other) -> tuple:
        return self._kinds() + tuple(other)

    def __radd__(self, other) -> tuple:
        return tuple(other) + self._kinds()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, KindView)) and self._kinds() == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"KindView({self._kinds()!r})"


KINDS = KindView()                                     # every registered mixer kind, the built-in seven first
RECURRENT_KINDS = KindView(lambda s: s.stateful)       # those with a recurrent state (scan/step, conform's contracts)


def implementations(backend: str, only: Callable[[ModelSpec], bool] = lambda s: True) -> SpecView:
    """kind -> the side `backend`'s implementation, for every kind that has one (imported on first use)."""
    return SpecView(lambda s: s.implementation(backend), lambda s: backend in s.implementations and only(s))


BUILTIN = ("rotrnn", "lru", "dlr", "s4d", "s5", "attention", "rglru")
for _module in (rotrnn, lru, dlr, s4d, s5, attention, rglru):
    register(_module.SPEC)

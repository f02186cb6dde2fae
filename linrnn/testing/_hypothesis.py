"""Hypothesis' `hypothesis` entry point (pyproject.toml): `st.from_type` of a layer config draws `configs(kind)`.

Hypothesis runs `register` when it is imported, in every process that imports it with linrnn installed, so this
module imports only the registry of models with their config classes (NumPy, no framework); the strategies are
built on first use.
"""

from __future__ import annotations


def register() -> None:
    from hypothesis import strategies as st

    from linrnn.impls.config import MIXER_CONFIGS

    for cls in MIXER_CONFIGS.values():
        st.register_type_strategy(cls, st.deferred(lambda kind=cls.kind: _configs(kind)))


def _configs(kind: str):
    from linrnn.testing.strategies import configs
    return configs(kind)

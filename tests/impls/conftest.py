"""Helpers shared by the tests of this folder: the long-sequence cases (the command line in-process: tests/conftest.py)."""

from functools import lru_cache

import numpy as np
import pytest

from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig

LONG_H, LONG_N = 4, 8   # small H and N: the long-sequence cases are about L and the decays, not width


def slow_config(kind: str, bidirectional: bool):
    """Every decay near 1: RotRNN gamma in [0.999, 0.9999], LRU |lambda| in [0.99, 0.9999], DLR a^2 <= 5e-5."""
    if kind == "rotrnn":
        return RotRNNConfig(d_model=LONG_H, d_state=LONG_N // 2, heads=2, gamma_min=0.999, gamma_max=0.9999,
                            bidirectional=bidirectional)
    if kind == "lru":
        return LRUConfig(d_model=LONG_H, d_state=LONG_N, r_min=0.99, r_max=0.9999, bidirectional=bidirectional)
    return DLRConfig(d_model=LONG_H, d_state=LONG_N, dt_min=1e-5, dt_max=1e-4, bidirectional=bidirectional)


@lru_cache(maxsize=None)
def _long_case(kind: str, bidirectional: bool, L: int):
    cfg = slow_config(kind, bidirectional)
    bundle = init(cfg, 21)
    u = np.random.default_rng([22, L]).standard_normal((1, L, LONG_H))
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "sequential")
    return cfg, bundle, u, y_ref, spectral_radius(cfg, bundle.params)


@pytest.fixture(scope="session")
def long_case():
    """(kind, bidirectional, L) -> (config, bundle, u (1 L H), reference y, largest |eigenvalue|); the
    float64 reference runs once per case for both sides' long-sequence tests."""
    return _long_case

"""The PyTorch `scan` and `conv` views at lengths in the thousands, decays near 1, against the float64 reference.

The other tests reach L = 45 at most, where a decay of 0.9999 has barely started: the powers
lambda^l = exp(l log lambda) at l ~ 3000, the chunked two-level scan over hundreds of chunks with a
partial last one, the FFT lengths of 4096 and 8192 (L = 2048, and the odd L = 3001), DLR's kernel-form
chunked scan and its blocked kernel are met only here. Sizes are small (B = 1, H = 4, N = 8) so that
each case takes a fraction of a second; the bound is the tolerance table's with
memory = min(L, 1 / (1 - r)) = L at these decays.
"""

from functools import lru_cache

import numpy as np
import pytest
import torch

from linrnn.impls.config import DLRConfig, LRUConfig, RotRNNConfig
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.tolerance import assert_close
from linrnn.impls.torch import from_bundle

H, N = 4, 8


def slow_config(kind: str, bidirectional: bool):
    """Every decay near 1: RotRNN gamma in [0.999, 0.9999], LRU |lambda| in [0.99, 0.9999], DLR a^2 <= 5e-5."""
    if kind == "rotrnn":
        return RotRNNConfig(d_model=H, d_state=N // 2, heads=2, gamma_min=0.999, gamma_max=0.9999,
                            bidirectional=bidirectional)
    if kind == "lru":
        return LRUConfig(d_model=H, d_state=N, r_min=0.99, r_max=0.9999, bidirectional=bidirectional)
    return DLRConfig(d_model=H, d_state=N, dt_min=1e-5, dt_max=1e-4, bidirectional=bidirectional)


@lru_cache(maxsize=None)
def case(kind: str, bidirectional: bool, L: int):
    """(config, bundle, u (1 L H), reference y, largest |eigenvalue|), computed once per module."""
    cfg = slow_config(kind, bidirectional)
    bundle = init(cfg, 21)
    u = np.random.default_rng([22, L]).standard_normal((1, L, H))
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "sequential")
    return cfg, bundle, u, y_ref, spectral_radius(cfg, bundle.params)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["scan", "conv"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("L", [2048, 3001])
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])
def test_long_sequences_with_decays_near_one_match_the_reference(kind, L, bidirectional, mode, dtype):
    cfg, bundle, u, y_ref, r = case(kind, bidirectional, L)
    assert r > 0.999
    layer = from_bundle(bundle, getattr(torch, dtype))
    with torch.no_grad():
        y, _ = layer(torch.tensor(u, dtype=layer.dtype), mode)
    assert_close(f"torch {kind} {'bi' if bidirectional else 'causal'} {mode} {dtype} L={L}", y_ref, y.double().numpy(),
                 "forward", dtype, L, r)

"""The PyTorch `scan` and `conv` views at lengths in the thousands, decays near 1, against the float64 reference.

The other tests reach L = 45 at most, where a decay of 0.9999 has barely started: the powers
lambda^l = exp(l log lambda) at l ~ 3000, the chunked two-level scan over hundreds of chunks with a
partial last one, the FFT lengths of 4096 and 8192 (L = 2048, and the odd L = 3001), DLR's kernel-form
chunked scan and its blocked kernel are met only here. Sizes are small (B = 1, H = 4, N = 8) so that
each case takes a fraction of a second; the bound is the tolerance table's with
memory = min(L, 1 / (1 - r)) = L at these decays.
"""

import pytest
import torch

from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import from_bundle


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["scan", "conv"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("L", [2048, 3001])
# the three papers' models' routes (every registered kind at long L: the precision map, test_precision_map.py)
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])
def test_long_sequences_with_decays_near_one_match_the_reference(long_case, kind, L, bidirectional, mode, dtype):
    cfg, bundle, u, y_ref, r = long_case(kind, bidirectional, L)
    assert r > 0.999
    layer = from_bundle(bundle, getattr(torch, dtype))
    with torch.no_grad():
        y, _ = layer(torch.tensor(u, dtype=layer.dtype), mode)
    assert_close(f"torch {kind} {'bi' if bidirectional else 'causal'} {mode} {dtype} L={L}", y_ref, y.double().numpy(),
                 "forward", dtype, L, r)

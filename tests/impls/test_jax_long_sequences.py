"""The JAX `scan` and `conv` modes at lengths in the thousands, decays near 1, against the float64 reference.

The other tests reach L = 33 at most, where a decay of 0.9999 has barely started: the powers
lambda^l = exp(l log lambda) at l ~ 3000, the associative scan's log-depth tree over thousands of
positions, the FFT lengths of 4096 and 8192 (L = 2048, and the odd L = 3001 with a padded tail), the
DLR chunkwise scan over ~50 chunks and its blocked kernel are met only here. Sizes are small (B = 1,
H = 4, N = 8) so that each case costs one compilation and about a second of compute; float32 runs
`conv`, the mode whose phase l * theta is rounded once at l ~ L (the least precise one, `scan.py`), since
every float32 `scan` compilation at these lengths costs as much again. The bound is the tolerance table's
with memory = min(L, 1 / (1 - r)) = L at these decays.
"""

import jax
import pytest

from linrnn.impls.jax import from_bundle, layer
from linrnn.base.tolerance import assert_close


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


@pytest.mark.parametrize("mode, dtype", [("scan", "float64"), ("conv", "float64"), ("conv", "float32")])
@pytest.mark.parametrize("L, bidirectional", [(3001, False), (2048, True)])
# the three papers' models' routes (every registered kind at long L: the precision map, test_precision_map.py)
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])
def test_long_sequences_with_decays_near_one_match_the_reference(long_case, kind, L, bidirectional, mode, dtype):
    cfg, bundle, u, y_ref, r = long_case(kind, bidirectional, L)
    assert r > 0.999
    y, _ = layer.apply(from_bundle(bundle, dtype), cfg, u, mode)
    assert_close(f"jax {kind} {'bi' if bidirectional else 'causal'} {mode} {dtype} L={L}", y_ref, y,
                 "forward", dtype, L, r)

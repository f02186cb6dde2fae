"""JAX mean pooling under a low dtype sums over L in float32 (docs/precision.md, "Low precision"), tested where a
low-dtype sum shows: L = 4,096 and lengths that are not powers of two.

The inputs are low-dtype numbers in [0.5, 2]: multiples of 2^-8 (bfloat16) or 2^-11 (float16), so every partial sum
of up to 4,096 of them is a multiple of that step below 2^13 and is exact in float32, whatever the order of the sum.
A float32 sum is then exact, the division by the length rounds once in float32 and the result once to the low dtype:
|pooled - mean| <= half a low-dtype ulp of the mean + eps32 |mean|, with the exact mean in float64 (the second term
also covers a division done as a product with 1/length, one more float32 rounding). A sum accumulated or rounded in
the low dtype breaks this bound: its sum is rounded to 8 (11) significant bits before the division, or at every
step. With a length of 4,096 a sum rounded once to bfloat16 and divided exactly by the power of two rounds like the
mean itself (the pooled values agree with a float32 mean to bfloat16's precision, 1.046875 for 1.046864), so the
lengths here are mostly not powers of two.
"""

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from linrnn.impls.config import LOW_DTYPES
from linrnn.impls.jax.model import pool

B, L, H = 8, 4096, 32
LENGTHS = np.array([4096, 4095, 4093, 3000, 2049, 1023, 4000, 3333], dtype=np.int32)
SIGNIFICAND_BITS = {"bfloat16": 7, "float16": 10}  # stored fraction bits: ulp(x) = 2^(floor(log2 x) - bits)
NUMPY_DTYPE = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


@pytest.mark.parametrize("dtype", LOW_DTYPES)
def test_mean_pooling_in_a_low_dtype_sums_in_float32(dtype):
    x = np.random.default_rng(0).uniform(0.5, 2.0, (B, L, H)).astype(np.float32).astype(NUMPY_DTYPE[dtype])
    values = x.astype(np.float64)                                                    # exactly the low-dtype inputs
    valid = np.arange(L)[None, :] < LENGTHS[:, None]                                 # (B L)
    mean = (values * valid[..., None]).sum(1) / LENGTHS[:, None]                     # (B H), exact to float64
    pooled = pool(jnp.asarray(x), jnp.asarray(LENGTHS), "mean")
    assert pooled.dtype == jnp.dtype(dtype) and pooled.shape == (B, H)
    err = np.abs(np.asarray(pooled).astype(np.float64) - mean)
    bound = 0.5 * 2.0 ** (np.floor(np.log2(mean)) - SIGNIFICAND_BITS[dtype]) + np.finfo(np.float32).eps * mean
    over = err > bound
    worst = np.unravel_index(np.argmax(err / bound), err.shape)
    assert not over.any(), (
        f"{dtype} mean pooling at L = {L}: {int(over.sum())} of {over.size} pooled values are not the mean rounded "
        f"once (a sum over L in {dtype}?); worst: length {LENGTHS[worst[0]]}, pooled "
        f"{float(np.asarray(pooled)[worst].astype(np.float64))!r} against the mean {float(mean[worst])!r}, error "
        f"{err[worst]:.3g} > {bound[worst]:.3g} (half an ulp + eps32)")


def test_the_pooling_bound_holds_with_the_float32_sum_exact():
    """The premise: these inputs' float32 sums are exact (every partial sum representable), so the bound is tight."""
    for dtype in LOW_DTYPES:
        x = np.random.default_rng(0).uniform(0.5, 2.0, (2, L)).astype(np.float32).astype(NUMPY_DTYPE[dtype])
        partial32 = np.cumsum(x.astype(np.float32), axis=1, dtype=np.float32)
        assert np.array_equal(partial32.astype(np.float64), np.cumsum(x.astype(np.float64), axis=1)), dtype

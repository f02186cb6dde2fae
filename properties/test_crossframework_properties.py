"""PyTorch vs JAX on the same bundles: outputs and the gradients of one scalar loss, every mixer x mode x dtype.

Random bundles (each paper's initialisation, decays reaching 0.9999) and inputs; shapes come from a
small fixed set (odd lengths, bidirectional; L = 1 is in the crosscheck tests) so that JAX compiles each once per process. The
gradient of every part (input and each raw parameter) is judged on its own scale, with an absolute
floor for parts that cancel (`linrnn.verify.crosscheck.compare_gradients`).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.config import modes
from linrnn.impls.init import init
from linrnn.impls.reference import spectral_radius
from linrnn.impls.specs import KINDS
from linrnn.impls.specs.base import MODES as BACKEND_MODES
from linrnn.base.tolerance import assert_close
from linrnn.experiments.crosscheck import QUICK_SHAPES
from linrnn.verify.crosscheck import (MODES, Shape, applicable, compare_gradients, jax_output_and_grads, mixer_config,
                                       torch_output_and_grads)

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

# L = 1: crosscheck tests. The causal shape is the quick report's cross-check shape, so that the run's shared JAX
# compilation cache (the root conftest.py) compiles each mode's program once for this file, the models' tests
# and the report (2026-12-04: 224 -> 189 programs compiled for the three, 20.2 -> 16.3 s of XLA's compiling)
SHAPES = (QUICK_SHAPES[0], Shape(1, 9, 2, 2, True, True))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind,mode", [(k, m) for k in KINDS if k != "attention"        # attention: test_crosscheck.py
                                       for m in MODES if m in BACKEND_MODES["torch"] and m in modes("torch", k)])
@settings(max_examples=4, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**16))
def test_torch_and_jax_agree_on_outputs_and_gradients(kind, mode, dtype, shape, seed):
    cfg = mixer_config(kind, shape)
    if not applicable(cfg, mode):
        cfg = mixer_config(kind, Shape(shape.B, shape.L, shape.H, shape.N, False, shape.near_one))
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((shape.B, shape.L, shape.H))
    w = rng.standard_normal((shape.B, shape.L, shape.H))
    r = spectral_radius(cfg, bundle.params)
    y_t, g_t = torch_output_and_grads(bundle, u, w, mode, dtype)
    y_j, g_j = jax_output_and_grads(bundle, u, w, mode, dtype)
    assert_close(f"{kind} {mode} output", y_t, y_j, "forward", dtype, shape.L, r)
    assert set(g_t) == set(g_j) == {"input", *bundle.params}
    for key, c in compare_gradients(g_t, g_j, dtype, shape.L, r).items():
        assert c.ok, f"{kind} {mode} {c}"

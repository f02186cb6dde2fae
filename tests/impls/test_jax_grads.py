"""Gradients of the JAX layers: autodiff against finite differences, and every mode against `sequential`.

`jax.test_util.check_grads` (reverse mode, JAX's own float64 tolerances for finite differences) on
tiny float64 layers, every mixer x mode, with respect to all raw parameters and the input; then the
gradient of one loss in the scan mode (the associative scan with its own VJP) equals that of the sequential mode
(`lax.scan`), under the project's gradient tolerance.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, layer
from linrnn.impls.reference import spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config
from linrnn.base.tolerance import assert_close

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

L = 5
# one case per JAX route family: `diagonal.run` (RotRNN, LRU; S5 below) and `depthwise.chunkwise` (DLR, S4D);
# attention and the RG-LRU: tests/models/, tests/impls/test_derivatives.py, as any model added later
CONFIGS = {
    "rotrnn": RotRNNConfig(d_model=2, d_state=4, heads=1, gamma_max=0.99),  # N = 2 would make P cancel
    "lru": LRUConfig(d_model=2, d_state=2, r_min=0.5, r_max=0.99),
    "dlr": DLRConfig(d_model=2, d_state=2, dt_min=1e-2, dt_max=0.5),
    "s4d": S4DConfig(d_model=2, d_state=2, dt_min=1e-2, dt_max=0.5),
}


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def case(kind: str, bidirectional: bool = False):
    cfg = CONFIGS[kind]
    if bidirectional:
        cfg = dataclasses.replace(cfg, bidirectional=True)
    bundle = init(cfg, 7)
    u = jnp.asarray(np.random.default_rng(7).standard_normal((1, L, cfg.d_model)))
    return cfg, bundle, from_bundle(bundle, "float64"), u


@pytest.mark.parametrize("mode", layer.MODES)
@pytest.mark.parametrize("kind", list(CONFIGS))
def test_autodiff_matches_finite_differences(kind, mode):
    cfg, _, params, u = case(kind)
    check_grads(lambda p, u: layer.apply(p, cfg, u, mode)[0], (params, u), order=1, modes=("rev",))


@pytest.mark.parametrize("kind", ["lru", "dlr"])   # RotRNN's backward direction is LRU's code (diagonal.run)
def test_autodiff_matches_finite_differences_bidirectional(kind):
    cfg, _, params, u = case(kind, bidirectional=True)
    check_grads(lambda p, u: layer.apply(p, cfg, u, "scan")[0], (params, u), order=1, modes=("rev",))


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_s5_discretisation_has_the_gradients_of_finite_differences(discretization):
    """S5 runs the LRU's routes (checked above) once discretised: its own part is `s5.materialise`, whose
    gradients reach every raw parameter through the sequential mode (clip_eigs on, with nothing clipped)."""
    cfg = S5Config(d_model=2, d_state=2, dt_min=1e-2, dt_max=0.5, discretization=discretization, clip_eigs=True)
    params = from_bundle(init(cfg, 7), "float64")
    u = jnp.asarray(np.random.default_rng(7).standard_normal((1, L, 2)))
    check_grads(lambda p, u: layer.apply(p, cfg, u, "sequential")[0], (params, u), order=1, modes=("rev",))


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_scan_mode_has_the_gradients_of_the_sequential_mode(kind):
    cfg, bundle, params, u = case(kind)
    weights = jnp.asarray(np.random.default_rng(8).standard_normal(u.shape))

    def loss(p, mode):
        return jnp.sum(layer.apply(p, cfg, u, mode)[0] * weights)

    expected = jax.grad(loss)(params, "sequential")
    got = jax.grad(loss)(params, "scan")
    r = spectral_radius(cfg, bundle.params)
    for key in params:
        assert_close(f"{kind} d loss / d {key}, scan vs sequential", expected[key], got[key], "gradient", "float64",
                     L, r)

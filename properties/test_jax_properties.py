"""The JAX layers against the float64 reference, on random bundles and inputs.

Every mixer x mode x dtype x direction: outputs (and final states) equal the reference's
`sequential` from a random non-zero initial state wherever the mode takes one. Streaming: a Python
loop over `layer.step` equals the reference, and running [0:t] then [t:L] from the returned state
equals one full run, in every mode that carries a state.

Sizes come from a few fixed profiles (L = 1 and an odd length), so that the jit compiles, one per
mixer x mode x dtype x shape, stay few and are shared between the tests of this process; the decays
reach 0.9999 through the configs' init ranges (RotRNN gamma_max, LRU r_max, DLR and S4D dt_min); the bulk
arrays come from a drawn seed. Strict dtype promotion is on for the whole module. Outputs are judged
against the size of their summands (`output_terms`), which can cancel; RotRNN states that cross its
rotated basis get the table's basis term (`crossing`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.config import mixer_config
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, layer
from linrnn.impls.jax.layer import complex_dtype
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.base.tolerance import assert_close, basis_scale

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

KINDS = ("rotrnn", "lru", "dlr", "s4d")   # a route of each kind the JAX side has (S5 runs the LRU's, `lanes.py`);
# every registered model: test_crossframework_properties.py and its tests/models file
DTYPES = ("float32", "float64")
# (B, L, H, N, heads): N is RotRNN's state per head; few shapes, few compiles
PROFILES = ((1, 1, 2, 2, 1), (2, 7, 3, 4, 2))
SPLIT_PROFILE = PROFILES[1]
CASES = [(kind, mode, bi) for kind in KINDS for mode in layer.MODES for bi in (False, True)
         if not (bi and mode == "step")]


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def layer_config(kind: str, profile, bidirectional: bool, dtype: str):
    _, _, H, N, heads = profile
    ranges = {"rotrnn": {"gamma_max": 0.9999}, "lru": {"r_min": 0.0, "r_max": 0.9999},
            "dlr": {"dt_min": 1e-5, "dt_max": 1.0}, "s4d": {"init": "inv", "dt_min": 2e-4, "dt_max": 1.0}}[kind]
    return mixer_config(kind, H, N, heads=heads, bidirectional=bidirectional, **ranges)


def crossing(cfg, bundle) -> float:
    """RotRNN's `basis_scale`: its JAX layer holds z = P^T x, so states cross P in and out; 0 otherwise."""
    return basis_scale(bundle.params["M"]) if cfg.kind == "rotrnn" else 0.0


def output_terms(cfg, params, u, x0=None) -> float:
    """The size of the summands of y: D u, the mixer's response to u from a zero state, and its response to
    x0 alone. Rounding is relative to these, and they can cancel far below max|y| (the derandomised CI draw
    found y 18 times smaller than D u at L = 1: S4D, bidirectional, float32), so outputs are compared
    against them (the table's `scale`), as in the PyTorch properties."""
    skip = params["D"] * u
    y_zero, _ = apply_mixer(cfg, params, u, "sequential")
    sizes = [np.max(np.abs(skip)), np.max(np.abs(y_zero - skip))]
    if x0 is not None:
        y_x0, _ = apply_mixer(cfg, params, np.zeros_like(u), "sequential", x0)
        sizes.append(np.max(np.abs(y_x0)))
    return float(max(sizes))


def takes_state(cfg, mode: str) -> bool:
    return not cfg.bidirectional and not (cfg.kind == "dlr" and mode == "conv")


def random_state(rng: np.random.Generator, cfg, B: int, dtype: str):
    """A non-zero state in the reference's convention: float64/complex128 for the reference, and cast."""
    shape = (B,) + layer.MIXERS[cfg.kind].state_shape(cfg)
    x0 = rng.standard_normal(shape)
    if layer.MIXERS[cfg.kind].STATE_IS_COMPLEX:
        x0 = x0 + 1j * rng.standard_normal(shape)
        return x0, jnp.asarray(x0, dtype=complex_dtype(dtype))
    return x0, jnp.asarray(x0, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,mode,bidirectional", CASES)
@settings(max_examples=4, deadline=None)
@given(profile=st.sampled_from(PROFILES), seed=st.integers(0, 2**16))
def test_layer_equals_the_reference(kind, mode, bidirectional, dtype, profile, seed):
    B, L, H = profile[:3]
    cfg = layer_config(kind, profile, bidirectional, dtype)
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((B, L, H))
    x0, state = random_state(rng, cfg, B, dtype) if takes_state(cfg, mode) else (None, None)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    y, x_last = layer.apply(from_bundle(bundle, dtype), cfg, jnp.asarray(u, dtype=dtype), mode, state)
    r = spectral_radius(cfg, bundle.params)
    assert y.dtype == jnp.dtype(dtype)
    basis = crossing(cfg, bundle) if x0 is not None else 0.0
    assert_close(f"{kind} {mode} {dtype} y", y_ref, y, "forward", dtype, L, r, basis=basis,
                 scale=output_terms(cfg, bundle.params, u, x0))
    if cfg.bidirectional or (kind == "dlr" and mode == "conv"):
        assert x_last is None
    else:
        assert_close(f"{kind} {mode} {dtype} final state", x_ref, x_last, "state", dtype, L, r,
                     basis=crossing(cfg, bundle))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=4, deadline=None)
@given(dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_streaming_steps_equal_the_reference(kind, dtype, seed):
    """A Python loop over `layer.step` (one position each, state in and out) from a non-zero state."""
    B, L, H = SPLIT_PROFILE[:3]
    cfg = layer_config(kind, SPLIT_PROFILE, False, dtype)
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((B, L, H))
    x0, state = random_state(rng, cfg, B, dtype)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    params = from_bundle(bundle, dtype)
    ys = []
    for t in range(L):
        y_t, state = layer.step(params, cfg, jnp.asarray(u[:, t], dtype=dtype), state)
        ys.append(y_t)
    r = spectral_radius(cfg, bundle.params)
    basis = crossing(cfg, bundle)
    assert_close(f"{kind} {dtype} streamed y", y_ref, jnp.stack(ys, axis=1), "forward", dtype, L, r, basis=basis,
                 scale=output_terms(cfg, bundle.params, u, x0))
    assert_close(f"{kind} {dtype} streamed state", x_ref, state, "state", dtype, L, r, basis=basis)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=4, deadline=None)
@given(data=st.data(), t=st.sampled_from((1, 3)), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_split_sequence_equals_one_run(kind, data, t, dtype, seed):
    """[0:t] then [t:L] from the returned state == [0:L], outputs and final state (modes with a state)."""
    B, L, H = SPLIT_PROFILE[:3]
    cfg = layer_config(kind, SPLIT_PROFILE, False, dtype)
    mode = data.draw(st.sampled_from([m for m in layer.MODES if takes_state(cfg, m)]), label="mode")
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    u64 = rng.standard_normal((B, L, H))
    u = jnp.asarray(u64, dtype=dtype)
    x0, state = random_state(rng, cfg, B, dtype)
    params = from_bundle(bundle, dtype)
    y_full, x_full = layer.apply(params, cfg, u, mode, state)
    y_head, x_mid = layer.apply(params, cfg, u[:, :t], mode, state)
    y_tail, x_end = layer.apply(params, cfg, u[:, t:], mode, x_mid)
    r = spectral_radius(cfg, bundle.params)
    basis = crossing(cfg, bundle)
    assert_close(f"{kind} {mode} split y", y_full, jnp.concatenate([y_head, y_tail], axis=1), "forward", dtype, L, r,
                 basis=basis, scale=output_terms(cfg, bundle.params, u64, x0))
    assert_close(f"{kind} {mode} split state", x_full, x_end, "state", dtype, L, r, basis=basis)

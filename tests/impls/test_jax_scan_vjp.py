"""The JAX `scan` mode's own backward (`scan.chunked`, a `jax.custom_vjp`) against plain autodiff.

`chunked` runs the associative scan forward and, backward, the adjoint recurrence a_t = g_t + lambda a_{t+1}
over chunks of T positions, recomputing each chunk's states from the saved chunk boundaries. Checked here:

* its states and its VJP (log_lam, v, x0) against `jax.vjp` of `sequential` (a `lax.scan` differentiated by
  JAX) for L = 1, 2, 7, 64, 65, 130 (T from `chunk_length`, so 7, 65 and 130 end in a padded chunk) and two
  forced chunk lengths (T > L, and T = 1), with decays up to 0.999 and phases up to pi by construction;
* the VJP against finite differences (`check_grads`, reverse mode; it projects complex arguments on a
  random complex direction, conj(vjp(conj(ct))) against the numerical JVP, so a conjugation error shows);
* the whole layers, RotRNN, LRU, DLR and S4D (DLR's chunkwise scan with per-channel eigenvalues), causal and
  bidirectional, at an odd L spanning several chunks: the gradients of mode 'scan' equal those of mode
  'sequential' for every parameter, the input and (causal) the initial state;
* the residuals that a jitted `chunked` keeps for its backward: v, the (nc N) boundaries, log_lam, x0, and
  no other array with L rows (plain autodiff of the associative scan keeps several, checked as a contrast);
* a planted bug, the adjoint run with conj(lambda) as in PyTorch's convention, fails both comparisons;
* `scan.blocked` (the `scan` mode of RotRNN, LRU, S5 and DLR: the layer in blocks, a custom_vjp re-running one
  block at a time): the gradients of a toy diagonal layer's weights, initial state and input against plain
  autodiff of one unblocked pass (jitted, and under vmap) and against finite differences; the layers in
  several blocks against mode 'sequential'; a planted misindexed carry fails them.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, layer, scan
from linrnn.impls.reference import spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.base.tolerance import assert_close

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

N = 5
R_MAX = 0.999
LAYER_L = 151       # T = 16: 10 chunks, the last 9 positions padded; DLR and S4D: chunks of 64, the last of 23
LAYERS = {          # tiny float64 layers like test_jax_grads.py's, one per route family (RotRNN: N = 2 would make P cancel)
    "rotrnn": RotRNNConfig(d_model=2, d_state=4, heads=2, gamma_max=0.99),
    "lru": LRUConfig(d_model=2, d_state=3, r_min=0.5, r_max=0.99),
    "dlr": DLRConfig(d_model=2, d_state=3, dt_min=1e-2, dt_max=0.5),   # N = 2: both lambdas real, d / d W_im = 0
    "s4d": S4DConfig(d_model=2, d_state=3, dt_min=1e-2, dt_max=0.5),   # DLR's chunkwise scan, eigenvalues per channel
}


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def recurrence(L: int, seed: int):
    """log_lam (N,), v (L N), x0 (N,), g (L N) complex128: |lambda| in [0.5, 0.999], phases in [-pi, pi]."""
    rng = np.random.default_rng([seed, L])
    r = rng.uniform(0.5, R_MAX, N)
    theta = rng.uniform(-np.pi, np.pi, N)
    r[0], theta[1] = R_MAX, np.pi                                   # the slowest decay, the largest phase

    def normal(*shape):
        return jnp.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))

    return jnp.asarray(np.log(r) + 1j * theta), normal(L, N), normal(N), normal(L, N)


@jax.jit
def sequential_vjp(log_lam, v, x0, g):
    states, vjp = jax.vjp(scan.sequential, log_lam, v, x0)
    return states, vjp(g)


def chunked_vjp(chunk=None):
    """A fresh jitted (states, VJP) of `chunked`: traced anew, so a monkeypatched module is seen."""
    @jax.jit
    def run(log_lam, v, x0, g):
        states, vjp = jax.vjp(lambda *a: scan.chunked(*a, chunk=chunk), log_lam, v, x0)
        return states, vjp(g)
    return run


def assert_matches_sequential(name, L, chunk=None, seed=0):
    log_lam, v, x0, g = recurrence(L, seed)
    expected, expected_ct = sequential_vjp(log_lam, v, x0, g)
    got, got_ct = chunked_vjp(chunk)(log_lam, v, x0, g)
    assert_close(f"{name} states", expected, got, "state", "float64", L, R_MAX)
    for arg, e, o in zip(("log_lam", "v", "x0"), expected_ct, got_ct):
        assert o.dtype == jnp.complex128
        assert_close(f"{name} d<g, states> / d {arg}", e, o, "gradient", "float64", L, R_MAX)


@pytest.mark.parametrize("L, chunk", [(1, None), (2, None), (7, None), (64, None), (65, None), (130, None),
                                      (7, 16), (65, 1)])
def test_states_and_vjp_match_autodiff_of_sequential(L, chunk):
    T = scan.chunk_length(L) if chunk is None else chunk
    assert_matches_sequential(f"chunked L={L} T={T}", L, chunk)


def test_vjp_matches_finite_differences():
    log_lam, v, x0, _ = recurrence(11, 1)                          # T = 4: three chunks, one padded position
    check_grads(jax.jit(scan.chunked), (log_lam, v, x0), order=1, modes=("rev",))


def layer_case(kind: str, bidirectional: bool):
    cfg = dataclasses.replace(LAYERS[kind], bidirectional=bidirectional)
    bundle = init(cfg, 7)
    rng = np.random.default_rng(8)
    u = jnp.asarray(rng.standard_normal((2, LAYER_L, cfg.d_model)))                 # (B L H)
    weights = jnp.asarray(rng.standard_normal(u.shape))                               # (B L H)
    state = None
    if not bidirectional:                                          # a bidirectional layer takes no state
        shape = (2,) + layer.MIXERS[kind].state_shape(cfg)
        state = jnp.asarray(rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                                           if layer.MIXERS[kind].STATE_IS_COMPLEX else 0))
    return cfg, bundle, u, weights, state


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("kind", list(LAYERS))
def test_layer_gradients_of_scan_mode_match_sequential_mode(kind, bidirectional):
    cfg, bundle, u, weights, state = layer_case(kind, bidirectional)
    params = from_bundle(bundle, "float64")

    def loss(p, u, state, mode):
        return jnp.sum(layer.apply(p, cfg, u, mode, state)[0] * weights)

    @jax.jit                                                       # one compilation for both modes
    def gradients(p, u, state):
        argnums = (0, 1) if state is None else (0, 1, 2)
        return [jax.grad(loss, argnums)(p, u, state, mode) for mode in ("sequential", "scan")]

    expected, got = gradients(params, u, state)
    r = spectral_radius(cfg, bundle.params)
    name = f"{kind} {'bidirectional' if bidirectional else 'causal'} L={LAYER_L} d loss / d"
    for key in params:
        assert_close(f"{name} {key}, scan vs sequential", expected[0][key], got[0][key], "gradient", "float64",
                     LAYER_L, r)
    assert_close(f"{name} u, scan vs sequential", expected[1], got[1], "gradient", "float64", LAYER_L, r)
    if state is not None:
        assert_close(f"{name} state, scan vs sequential", expected[2], got[2], "gradient", "float64", LAYER_L, r)


def residuals(route, L):
    """The arrays that `jax.vjp` of the jitted route keeps for its backward (the leaves of the VJP)."""
    log_lam, v, x0, _ = recurrence(L, 2)
    _, vjp = jax.vjp(jax.jit(route), log_lam, v, x0)
    return v, [leaf for leaf in jax.tree_util.tree_leaves(vjp) if hasattr(leaf, "shape")]


def test_residuals_hold_no_state_trajectory():
    L = 130
    T = scan.chunk_length(L)
    n_chunks = -(-L // T)
    v, kept = residuals(scan.chunked, L)
    long = [a for a in kept if a.ndim and a.shape[0] >= L]
    assert len(long) == 1 and np.array_equal(long[0], v), [a.shape for a in kept]     # v, and nothing else
    assert sum(a.size for a in kept) <= (L + n_chunks + 2) * N, [a.shape for a in kept]   # + boundaries, log_lam, x0
    # the contrast: plain autodiff of the associative scan keeps its tree, several (L N)'s worth
    _, tree = residuals(scan.associative, L)
    assert sum(a.size for a in tree) > 2 * L * N


def test_planted_conjugated_adjoint_is_caught(monkeypatch):
    """PyTorch's convention, a_t = g_t + conj(lambda) a_{t+1}, is wrong in JAX: both checks must fail."""
    monkeypatch.setattr(scan, "adjoint_transition", jnp.conj)
    with pytest.raises(AssertionError, match="EXCEEDS"):
        assert_matches_sequential("planted bug", 65)
    log_lam, v, x0, _ = recurrence(11, 1)
    with pytest.raises(AssertionError):
        check_grads(jax.jit(lambda *a: scan.chunked(*a)), (log_lam, v, x0), order=1, modes=("rev",))


def test_bad_chunk_length_is_a_one_line_error():
    log_lam, v, x0, _ = recurrence(7, 0)
    for chunk in (0, -2, 2.5):
        with pytest.raises(LinrnnError, match="expected") as err:
            scan.chunked(log_lam, v, x0, chunk=chunk)
        assert "\n" not in str(err.value)


def test_empty_sequence_has_no_states_and_zero_cotangents():
    log_lam, v, x0, g = recurrence(1, 0)
    states, (ct_log_lam, ct_v, ct_x0) = chunked_vjp()(log_lam, v[:0], x0, g[:0])
    assert states.shape == ct_v.shape == (0, N)
    assert not np.any(ct_log_lam) and not np.any(ct_x0)


# -- scan.blocked: a layer over time in blocks, a custom_vjp that re-runs one block at a time -------------

TOY_H = 3


def toy(L: int, seed: int):
    """A diagonal layer's weights (log_lam, W_in (N H), W_out (H N) complex), x0 (N,), u (L H), and cotangents."""
    log_lam, _, x0, _ = recurrence(1, seed)
    rng = np.random.default_rng([seed, L, 7])

    def normal(*shape, complex_=True):
        return jnp.asarray(rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0))

    weights = (log_lam, normal(N, TOY_H), normal(TOY_H, N))
    return weights, x0, normal(L, TOY_H, complex_=False), normal(L, TOY_H, complex_=False), normal(N)


def toy_block(weights, x, u):
    """One block: v = W_in u, x_t = lambda x_{t-1} + v_t (lax.scan), y = Re(W_out x).  -> y (T H), x_T (N,)"""
    log_lam, W_in, W_out = weights
    states = scan.sequential(log_lam, u.astype(W_in.dtype) @ W_in.T, x)
    return (states @ W_out.T).real, states[-1]


def toy_loss(block, weights, x0, u, g, g_last):
    """sum(y g) + Re(sum(x_L g_last)) with the layer run in blocks of `block` (None: one pass, plain autodiff)."""
    def fn(x, u_b):                                   # closes over the weights: their cotangents go through blocked
        return toy_block(weights, x, u_b)

    y, last = fn(x0, u) if block is None else scan.blocked(fn, x0, u, block)
    return jnp.sum(y * g) + jnp.sum((last * g_last).real)


def toy_gradients(block):
    """A fresh jitted gradient of `toy_loss` w.r.t. the weights, x0 and u (traced anew: a planted bug is seen)."""
    return jax.jit(jax.grad(lambda *a: toy_loss(block, *a), argnums=(0, 1, 2)))


def assert_toy_gradients_match(L, block, seed=0, batched=False):
    weights, x0, u, g, g_last = toy(L, seed)
    expected, got = toy_gradients(None), toy_gradients(block)
    if batched:                                       # two sequences under vmap, the weights shared
        _, *second = toy(L, seed + 1)
        x0, u, g, g_last = (jnp.stack([a, b]) for a, b in zip((x0, u, g, g_last), second))
        expected, got = (jax.vmap(f, in_axes=(None, 0, 0, 0, 0)) for f in (expected, got))
    e, o = expected(weights, x0, u, g, g_last), got(weights, x0, u, g, g_last)
    names = ("log_lam", "W_in", "W_out", "x0", "u")
    for name, a, b in zip(names, jax.tree.leaves(e), jax.tree.leaves(o)):
        assert_close(f"blocked L={L} T={block}{' vmap' if batched else ''} d loss / d {name}", a, b, "gradient",
                     "float64", L, R_MAX)


@pytest.mark.parametrize("L, block", [(12, 4), (13, 4), (5, 8), (7, 1), (9, 3)])
def test_blocked_gradients_match_plain_autodiff(L, block):
    """Exact blocks, a shorter last block, one block longer than L (the tail alone), blocks of one position."""
    assert_toy_gradients_match(L, block)


def test_blocked_gradients_match_plain_autodiff_under_vmap():
    assert_toy_gradients_match(13, 4, batched=True)


def test_blocked_matches_finite_differences():
    weights, x0, u, g, g_last = toy(10, 3)
    check_grads(jax.jit(lambda w, x0, u: toy_loss(4, w, x0, u, g, g_last)), (weights, x0, u), order=1,
                modes=("rev",))


@pytest.fixture
def plant_blocks_backward():
    """Re-register `scan._blocks`' VJP with a planted backward; the true one again at the test's end."""
    backward = scan._blocks_backward
    yield lambda planted: scan._blocks.defvjp(scan._blocks_forward, planted)
    scan._blocks.defvjp(scan._blocks_forward, backward)


def test_planted_block_bug_is_caught(plant_blocks_backward):
    """Planted: the backward re-runs block i from the carry entering block i - 1 (the saved carries misindexed)."""
    backward = scan._blocks_backward

    def planted(fn, T, n, axis, residuals, cotangents):
        entering, xs, consts = residuals
        return backward(fn, T, n, axis, (jnp.roll(entering, 1, axis=0), xs, consts), cotangents)

    plant_blocks_backward(planted)
    with pytest.raises(AssertionError, match="EXCEEDS"):
        assert_toy_gradients_match(12, 4)
    weights, x0, u, g, g_last = toy(10, 3)
    with pytest.raises(AssertionError):
        check_grads(jax.jit(lambda w, x0, u: toy_loss(4, w, x0, u, g, g_last)), (weights, x0, u), order=1,
                    modes=("rev",))


def test_bad_block_length_is_a_one_line_error():
    weights, x0, u, _, _ = toy(6, 0)
    for block in (0, -1, 1.5):
        with pytest.raises(LinrnnError, match="expected") as err:
            scan.blocked(lambda x, u_b: toy_block(weights, x, u_b), x0, u, block)
        assert "\n" not in str(err.value)


def test_block_lengths_are_powers_of_two_between_the_bounds():
    """scan.block_length: near L / BLOCKS, at least MIN_BLOCK, at most MAX_BLOCK (a longer block's working set leaves
    the caches), at most L; DLR's blocks (maximum 0) are not capped."""
    from linrnn.impls.jax import depthwise

    assert [scan.block_length(L) for L in (5, 128, 200, 4096, 8192, 65536)] == [5, 128, 128, 128, 256, 256]
    assert scan.block_length(65536, maximum=1024) == 1024 and scan.block_length(65536, minimum=512) == 512
    assert [scan.block_length(L, depthwise.BLOCKS, depthwise.MIN_BLOCK, 0) for L in (200, 4096, 65536)] == \
        [200, 256, 1024]


BLOCKED_L = 149     # not LAYER_L: a layer traced at LAYER_L with the default blocks is not reused here


@pytest.mark.parametrize("kind, bidirectional", [("rotrnn", False), ("lru", True), ("dlr", False), ("dlr", True),
                                                 ("s4d", False), ("s4d", True)],
                         ids=["rotrnn-causal", "lru-bidirectional", "dlr-causal", "dlr-bidirectional", "s4d-causal",
                              "s4d-bidirectional"])
def test_layer_gradients_in_several_blocks_match_sequential_mode(kind, bidirectional, monkeypatch):
    """The layers' `scan` mode over 9 blocks of 16 positions and one of 5 (DLR and S4D: 4 of 32 and one of 21). RotRNN
    and LRU share `diagonal.run`: one causal case (a state into the first block), one bidirectional; S4D runs DLR's
    chunkwise scan (`depthwise.py`) with an (H N) eigenvalue per channel."""
    from linrnn.impls.jax import depthwise

    monkeypatch.setattr(scan, "MIN_BLOCK", 16)
    monkeypatch.setattr(depthwise, "MIN_BLOCK", 32)
    assert scan.block_length(BLOCKED_L) == 16 and \
        scan.block_length(BLOCKED_L, depthwise.BLOCKS, depthwise.MIN_BLOCK, 0) == 32
    cfg, bundle, u, weights, state = layer_case(kind, bidirectional)
    u, weights = u[:, :BLOCKED_L], weights[:, :BLOCKED_L]
    params = from_bundle(bundle, "float64")

    def loss(p, u, state, mode):
        return jnp.sum(layer.apply(p, cfg, u, mode, state)[0] * weights)

    @jax.jit
    def gradients(p, u, state):
        argnums = (0, 1) if state is None else (0, 1, 2)
        return [jax.grad(loss, argnums)(p, u, state, mode) for mode in ("sequential", "scan")]

    expected, got = gradients(params, u, state)
    r = spectral_radius(cfg, bundle.params)
    name = f"{kind} {'bidirectional' if bidirectional else 'causal'} L={BLOCKED_L} in blocks d loss / d"
    for key in params:
        assert_close(f"{name} {key}", expected[0][key], got[0][key], "gradient", "float64", BLOCKED_L, r)
    assert_close(f"{name} u", expected[1], got[1], "gradient", "float64", BLOCKED_L, r)
    if state is not None:
        assert_close(f"{name} state", expected[2], got[2], "gradient", "float64", BLOCKED_L, r)

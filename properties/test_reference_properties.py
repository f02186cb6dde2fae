"""Properties of the float64 reference that any linear time-invariant recurrence must have.

Each mixer x direction, on random bundles from each paper's initialisation (decays reaching 0.9999
by construction of the init ranges) and random inputs; L = 1 and odd lengths are reachable. Bulk
arrays come from a drawn seed so that Hypothesis shrinks structure (sizes, lengths), not numbers.
"""

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, lru, rotrnn, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

KINDS = ("rotrnn", "lru", "dlr")   # the models whose summands `output_terms` bounds from their equations (every
# registered model: test_crossframework_properties.py and its tests/models file)


@st.composite
def layers(draw, bidirectional=None):
    kind = draw(st.sampled_from(KINDS))
    bi = draw(st.booleans()) if bidirectional is None else bidirectional
    H = draw(st.integers(1, 4))
    if kind == "rotrnn":
        cfg = RotRNNConfig(d_model=H, d_state=2 * draw(st.integers(1, 2)), heads=draw(st.integers(1, 2)),
                           bidirectional=bi, gamma_max=0.9999)
    elif kind == "lru":
        cfg = LRUConfig(d_model=H, d_state=draw(st.integers(1, 4)), bidirectional=bi, r_min=0.0, r_max=0.9999)
    else:
        cfg = DLRConfig(d_model=H, d_state=draw(st.integers(1, 4)), bidirectional=bi, dt_min=1e-5, dt_max=1.0)
    bundle = init(cfg, draw(st.integers(0, 2**16)))
    return cfg, bundle.params, spectral_radius(cfg, bundle.params)


def inputs(seed, B, L, H):
    return np.random.default_rng(seed).standard_normal((B, L, H))


def output_terms(cfg, p, u: np.ndarray) -> float:
    """A bound on the size of the terms summed into any output y_t: rounding is relative to them, and they
    can cancel far below y itself (a fresh seed found y ~ 9e-4 from terms of order 1 at L = 1).

    Every transition is normal with |eigenvalue| <= r, so each state entry is at most
    X = max_t sum_s r^|t-s| ||v_s|| (v the projected input: RotRNN xi B u, LRU gamma B u, DLR u in every
    mode), forward or backward; the read-outs add at most sum_n |C_hn| X each, and the skip |D_h u_t|.
    """
    r = spectral_radius(cfg, p)
    if cfg.kind == "rotrnn":
        v = np.linalg.norm(rotrnn.projected_input(p, u).reshape(*u.shape[:2], -1), axis=-1)   # (B L)
        outs = [p["C"]] + ([p["C_rev"]] if cfg.bidirectional else [])
    elif cfg.kind == "lru":
        v = np.linalg.norm(u @ lru.input_matrix(p).T, axis=-1)                                 # (B L)
        outs = [p["C_re"] + 1j * p["C_im"]] + ([p["C_re_rev"] + 1j * p["C_im_rev"]] if cfg.bidirectional else [])
    else:
        v = np.sqrt(cfg.d_state) * np.abs(u).max(axis=-1)                                       # (B L)
        outs = [p["W_re"] + 1j * p["W_im"]] + ([p["W_re_rev"] + 1j * p["W_im_rev"]] if cfg.bidirectional else [])
    L = u.shape[1]
    lag = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])                                 # (L L)
    X = float((r ** lag @ v.T).max())
    return sum(float(np.abs(C).sum(axis=1).max()) for C in outs) * X + float(np.abs(p["D"]).max() * np.abs(u).max())


common = settings(max_examples=40, deadline=None)

# Coefficients of a linear combination: 0, or of magnitude 1e-100 to 3. Below about 1e-300, alpha * y
# underflows into subnormal numbers, whose rounding error is absolute (up to 2^-1075 ~ 4.9e-324), not
# relative, so no relative bound holds there (a fresh seed drew alpha ~ 1e-314: error 4.9e-324, one
# subnormal ulp, against terms of 5e-314). That is IEEE underflow, not a property of the layer.
coefficients = st.one_of(st.just(0.0), st.floats(1e-100, 3.0), st.floats(-3.0, -1e-100))


@common
@given(layers(), st.integers(1, 3), st.integers(1, 24), st.integers(0, 2**16))
def test_recurrent_view_equals_kernel_view(layer, B, L, seed):
    """The two views' rounding is relative to the terms summed into each output (output_terms), which can cancel:
    a fresh seed (4242) drew RotRNN, bidirectional, L = 1, whose output of 1.6e-3 was left by summands of up to
    0.1 (D u alone 0.036), so a rounding of 1.4e-17 (1.4e-16 of the summands) was 8.8e-15 of max|y|."""
    cfg, p, r = layer
    u = inputs(seed, B, L, cfg.d_model)
    y_seq, _ = apply_mixer(cfg, p, u, "sequential")
    y_conv, _ = apply_mixer(cfg, p, u, "conv")
    assert_close(f"{cfg.kind} conv vs sequential", y_seq, y_conv, "forward", "float64", L, r,
                 scale=output_terms(cfg, p, u))


@common
@given(layers(bidirectional=False), st.integers(2, 24), st.data(), st.integers(0, 2**16))
def test_causality(layer, L, data, seed):
    """Changing the input at t and after leaves every output before t unchanged (bit for bit)."""
    cfg, p, _ = layer
    t = data.draw(st.integers(0, L - 1))
    u = inputs(seed, 1, L, cfg.d_model)
    v = u.copy()
    v[:, t:] = inputs(seed + 1, 1, L - t, cfg.d_model)
    for mode in ("sequential", "conv"):
        y_u, _ = apply_mixer(cfg, p, u, mode)
        y_v, _ = apply_mixer(cfg, p, v, mode)
        assert np.array_equal(y_u[:, :t], y_v[:, :t])
        assert not np.array_equal(y_u[:, t:], y_v[:, t:])


@common
@given(layers(), st.integers(1, 16), coefficients, coefficients, st.integers(0, 2**16))
def test_linearity_in_the_input(layer, L, alpha, beta, seed):
    cfg, p, r = layer
    u, v = inputs(seed, 1, L, cfg.d_model), inputs(seed + 1, 1, L, cfg.d_model)
    y_u, y_v = (apply_mixer(cfg, p, w, "sequential")[0] for w in (u, v))
    y_sum, _ = apply_mixer(cfg, p, alpha * u + beta * v, "sequential")
    # the combination may cancel, and so may the terms inside each output (output_terms)
    terms = max(abs(alpha) * output_terms(cfg, p, u), abs(beta) * output_terms(cfg, p, v))
    assert_close(f"{cfg.kind} linearity", alpha * y_u + beta * y_v, y_sum, "forward", "float64", L, r,
                 scale=terms)


@common
@given(layers(bidirectional=False), st.integers(1, 16), st.integers(1, 8), st.integers(0, 2**16))
def test_time_invariance(layer, L, delay, seed):
    """Delaying the input by d zeros (from a zero state) delays the output by d."""
    cfg, p, r = layer
    u = inputs(seed, 2, L, cfg.d_model)
    delayed = np.concatenate([np.zeros((2, delay, cfg.d_model)), u], axis=1)
    y, _ = apply_mixer(cfg, p, u, "sequential")
    y_delayed, _ = apply_mixer(cfg, p, delayed, "sequential")
    assert np.all(y_delayed[:, :delay] == 0)
    assert_close(f"{cfg.kind} time invariance", y, y_delayed[:, delay:], "forward", "float64", L + delay, r)


@common
@given(layers(bidirectional=True), st.integers(1, 16), st.integers(0, 2**16))
def test_bidirectional_is_forward_plus_reversed_backward(layer, L, seed):
    """y = y_fwd(u) + y_bwd(u) with y_bwd(u) the causal layer read out by the _rev weights on reversed time."""
    cfg, p, r = layer
    u = inputs(seed, 2, L, cfg.d_model)
    causal_cfg = dataclasses.replace(cfg, bidirectional=False)
    forward_params = {k: v for k, v in p.items() if not k.endswith("_rev")}
    backward_params = dict(forward_params)
    for key in [k for k in p if k.endswith("_rev")]:
        backward_params[key[: -len("_rev")]] = p[key]
    backward_params["D"] = np.zeros_like(p["D"])
    y, _ = apply_mixer(cfg, p, u, "sequential")
    y_fwd, _ = apply_mixer(causal_cfg, forward_params, u, "sequential")
    if cfg.kind == "dlr":
        # DLR's backward kernel sees the future only: shift the reversed input by one step
        shifted = np.concatenate([u[:, 1:], np.zeros_like(u[:, :1])], axis=1)
        y_bwd = apply_mixer(causal_cfg, backward_params, shifted[:, ::-1], "sequential")[0][:, ::-1]
        y_bwd = np.concatenate([y_bwd[:, :-1], np.zeros_like(y_bwd[:, -1:])], axis=1)
    else:
        y_bwd = apply_mixer(causal_cfg, backward_params, u[:, ::-1], "sequential")[0][:, ::-1]
    assert_close(f"{cfg.kind} bidirectional split", y, y_fwd + y_bwd, "forward", "float64", L, r)


@common
@given(layers(bidirectional=False), st.integers(2, 24), st.data(), st.integers(0, 2**16))
def test_state_carries_across_a_split_sequence(layer, L, data, seed):
    """Running [0:t] then [t:L] from the returned state equals one run over [0:L]."""
    cfg, p, r = layer
    t = data.draw(st.integers(1, L - 1))
    u = inputs(seed, 2, L, cfg.d_model)
    y_full, x_full = apply_mixer(cfg, p, u, "sequential")
    y_head, x_head = apply_mixer(cfg, p, u[:, :t], "sequential")
    y_tail, x_tail = apply_mixer(cfg, p, u[:, t:], "sequential", x0=x_head)
    assert_close(f"{cfg.kind} split outputs", y_full, np.concatenate([y_head, y_tail], axis=1),
                 "forward", "float64", L, r)
    assert_close(f"{cfg.kind} split state", x_full, x_tail, "state", "float64", L, r)

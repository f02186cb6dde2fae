"""Is the RG-LRU (De et al. 2024, Griffin; RecurrentGemma's layer) right: its three implementations against each other
in every mode, each side against its spec, and the reference against the equations written out again here (the
model's other checks: tests/impls/test_torch_varying_scan.py and test_jax_varying_scan.py, `linrnn crosscheck`,
`linrnn conform`)."""

import numpy as np
import pytest

from linrnn.impls import backends
from linrnn.impls.config import mixer_config, modes
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer
from linrnn.base.tolerance import assert_close

KIND = "rglru"


def test_three_implementations_agree_in_every_mode(crosscheck_kind):
    crosscheck_kind(KIND)


def test_each_side_follows_the_spec(sides_follow_the_spec):
    sides_follow_the_spec(KIND)


def _by_hand(p, c, u, fresh_first=True):
    """The equations of docs/models.md, one row and one position at a time, with scalar arithmetic."""
    B, L, H = u.shape
    K, W, _ = p["W_a"].shape
    y = np.zeros_like(u)
    for b in range(B):
        x = np.zeros(H)
        for t in range(L):
            for h in range(H):
                k, j = divmod(h, W)
                pre_a = sum(p["W_a"][k, j, m] * u[b, t, k * W + m] for m in range(W)) + p["b_a"][h]
                pre_x = sum(p["W_x"][k, j, m] * u[b, t, k * W + m] for m in range(W)) + p["b_x"][h]
                r, i = 1 / (1 + np.exp(-pre_a)), 1 / (1 + np.exp(-pre_x))
                a = (1 / (1 + np.exp(-p["Lambda"][h]))) ** (c * r)
                x[h] = i * u[b, t, h] if (t == 0 and fresh_first) else a * x[h] + np.sqrt(1 - a * a) * i * u[b, t, h]
            y[b, t] = x
    return y


def test_the_reference_is_the_equations():
    for blocks in (1, 2):
        cfg = mixer_config(KIND, 4, 4, blocks=blocks, c=6.0)
        p = init(cfg, 3).params
        u = np.random.default_rng(0).standard_normal((2, 5, 4))
        y, x = apply_mixer(cfg, p, u)
        assert_close("rglru reference vs the equations", _by_hand(p, cfg.c, u), y, "forward", "float64", 5, 1.0)
        assert_close("final state", y[:, -1], x, "state", "float64", 5, 1.0)


def test_a_state_passed_in_continues_and_none_begins_a_sequence():
    cfg = mixer_config(KIND, 3, 4)
    p = init(cfg, 1).params
    u = np.random.default_rng(1).standard_normal((2, 6, 3))
    whole, _ = apply_mixer(cfg, p, u)
    first, x = apply_mixer(cfg, p, u[:, :2])
    second, _ = apply_mixer(cfg, p, u[:, 2:], x0=x)
    assert_close("split", whole, np.concatenate([first, second], 1), "forward", "float64", 6, 1.0)
    zero, _ = apply_mixer(cfg, p, u, x0=np.zeros((2, 3)))        # a zero state continues: its first input normalised
    assert np.max(np.abs(zero[:, 0] - whole[:, 0])) > 1e-3
    r = 1 / (1 + np.exp(-(u[:, 0] @ p["W_a"][0].T + p["b_a"])))
    a = (1 / (1 + np.exp(-p["Lambda"]))) ** (cfg.c * r)
    assert_close("normalised first input", whole[:, 0] * np.sqrt(1 - a ** 2), zero[:, 0], "forward", "float64", 1, 1.0)


def test_packed_sequences_and_the_bidirectional_form_are_each_segment_alone():
    cfg = mixer_config(KIND, 3, 4, bidirectional=True)
    p = init(cfg, 2).params
    u = np.random.default_rng(2).standard_normal((1, 7, 3))
    segments = np.array([[0, 0, 0, 5, 5, 5, 5]])
    packed, _ = apply_mixer(cfg, p, u, segments=segments)
    for lo, hi in ((0, 3), (3, 7)):
        alone, _ = apply_mixer(cfg, p, u[:, lo:hi])
        forward_only = mixer_config(KIND, 3, 4)
        f, _ = apply_mixer(forward_only, p, u[:, lo:hi])
        b, _ = apply_mixer(forward_only, p, u[:, lo:hi][:, ::-1])
        assert_close("segment alone", alone, packed[:, lo:hi], "forward", "float64", 7, 1.0)
        assert_close("bidirectional = forward + the layer reversed", f + b[:, ::-1], alone, "forward", "float64", 7,
                     1.0)


def test_the_initialisation_is_recurrentgemmas_ring():
    cfg = mixer_config(KIND, 512, 4, blocks=4)
    p = init(cfg, 0).params
    sigma = 1 / (1 + np.exp(-p["Lambda"]))
    assert 0.9 <= sigma.min() and sigma.max() <= 0.999 + 1e-8
    assert abs(np.mean(sigma ** 2) - (0.9 ** 2 + 0.999 ** 2) / 2) < 0.01          # uniform on the ring in sigma^2
    assert abs(np.var(p["W_a"]) - 1 / 512) < 0.1 / 512 and not p["b_a"].any() and not p["b_x"].any()


# -- numeric edges (docs/precision.md, "Numeric edges"), the RG-LRU's own: its gates saturate, its state is H wide -----

def _every_route(bundle, u, dtypes=("float32", "float64"), what=""):
    """Every backend x mode x dtype against the float64 reference (r = 1: the RG-LRU's `spectral_radius`)."""
    ref = apply_mixer(bundle.config, bundle.params, u)[0]
    count = 0
    for backend in ("torch", "jax"):
        for mode in modes(backend, KIND):
            for dtype in dtypes:
                y = backends.backend(backend).apply_bundle(bundle, u, mode, dtype)
                assert np.isfinite(y).all(), f"{what} {backend} {mode} {dtype}"
                assert_close(f"rglru {what} {backend} {mode} {dtype}", ref, y, "forward", dtype, u.shape[1], 1.0)
                count += 1
    return count


@pytest.mark.parametrize("B, L", [(1, 1), (2, 5)])
def test_the_smallest_sizes_match_the_reference_in_every_route(B, L):
    bundle = init(mixer_config(KIND, 1, 1), 7)
    u = np.random.default_rng([B, L]).standard_normal((B, L, 1))
    assert _every_route(bundle, u, what=f"H=1 B={B} L={L}") == 12


@pytest.mark.parametrize("Lambda", [-100.0, 30.0, 100.0])
def test_saturated_decays_are_finite_and_within_the_table_in_every_route(Lambda):
    """sigma(Lambda) at 1e-44 (a_t underflows to 0 in float32) and at 1 - 1e-13 and 1 - 4e-44 (a_t rounds to 1 in
    float32, sqrt(1 - a_t^2) = sqrt(-expm1(2 log a_t)) keeps its digits): finite, within the float32 row."""
    base = init(mixer_config(KIND, 2, 1), 3)
    bundle = base.replace(Lambda=np.full_like(base.params["Lambda"], Lambda))
    u = np.random.default_rng(4).standard_normal((2, 9, 2))
    assert _every_route(bundle, u, dtypes=("float32",), what=f"Lambda {Lambda:g}") == 6


def _recurrence_by_numpy(bundle, u):
    """One row of H = 1 (1 L 1) in float64: the gates vectorised, the recurrence a plain loop (independent of the
    reference's code); -> (outputs, the largest a_t, whose memory 1 / (1 - a) sets the tolerance)."""
    p, c = bundle.params, bundle.config.c
    v = u[0, :, 0]
    r = 1 / (1 + np.exp(-(p["W_a"][0, 0, 0] * v + p["b_a"][0])))
    i = 1 / (1 + np.exp(-(p["W_x"][0, 0, 0] * v + p["b_x"][0])))
    log_a = -c * r * np.logaddexp(0.0, -p["Lambda"][0])
    drive = (np.sqrt(-np.expm1(2 * log_a)) * i * v).tolist()
    drive[0] = float(i[0] * v[0])
    a, x, out = np.exp(log_a).tolist(), 0.0, []
    for t in range(len(a)):
        x = a[t] * x + drive[t]
        out.append(x)
    return np.array(out)[None, :, None], max(a[1:], default=0.0)


def test_long_sequences_in_float32_are_finite_and_within_the_table():
    """L = 2^20 at sigma(Lambda) in [0.9999, 0.99999], the recurrence gate held in [0.8, 0.93] (W_a 0.1, b_a 2: an
    r_t near 0 would put a_t at 1 and the row's memory at L, a vacuous bound), so a_t reaches 0.9995 here (a memory
    of about 2,000 positions, the row's bound 8e-3 against errors near 1e-6); the scans of both frameworks in float32
    against a float64 loop; the loops (`sequential`, `step`) at 2^14, as for the others."""
    drawn = init(mixer_config(KIND, 1, 1, r_min=0.9999, r_max=0.99999), 8)
    bundle = drawn.replace(W_a=np.full_like(drawn.params["W_a"], 0.1), b_a=np.full_like(drawn.params["b_a"], 2.0))
    u = np.random.default_rng(9).standard_normal((1, 2 ** 20, 1))
    ref, a_max = _recurrence_by_numpy(bundle, u)
    assert 0.999 < a_max < 0.99999                      # a memory of 10^3 to 10^5 positions
    assert_close("the numpy loop is the reference", apply_mixer(bundle.config, bundle.params, u[:, :300])[0],
                 ref[:, :300], "forward", "float64", 300, a_max)
    for backend, mode, L in [("torch", "scan", 2 ** 20), ("jax", "scan", 2 ** 20), ("jax", "sequential", 2 ** 20),
                             ("torch", "sequential", 2 ** 14), ("torch", "step", 2 ** 14), ("jax", "step", 2 ** 14)]:
        y = backends.backend(backend).apply_bundle(bundle, u[:, :L], mode, "float32")
        assert_close(f"rglru {backend} {mode} float32 L={L}", ref[:, :L], y, "forward", "float32", L, a_max)

"""Is the RG-LRU (De et al. 2024, Griffin; RecurrentGemma's layer) right: its three implementations against each other
in every mode, each side against its spec, and the reference against the equations written out again here (the
model's other checks: tests/impls/test_torch_varying_scan.py and test_jax_varying_scan.py, `linrnn crosscheck`,
`linrnn conform`)."""

import numpy as np

from linrnn.impls.config import mixer_config
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer
from linrnn.impls.tolerance import assert_close

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

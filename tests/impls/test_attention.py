"""Attention (the DLR code's baseline): the reference against the formula written out, the torch and JAX modes
against the reference, chunked against full, rotary's relative positions, the contract's checks, the command line."""

import cmath

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from linrnn.verify import crosscheck
from linrnn.impls.bundle import RECURRENCE_KEYS, load, mixer_shapes
from linrnn.impls.config import mixer_config
from linrnn.impls.specs.attention import AttentionConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import attention as jax_attention
from linrnn.impls.jax import from_bundle as jax_params
from linrnn.impls.jax import layer as jax_layer
from linrnn.impls.jax import precision, recurrence_mask
from linrnn.impls.reference import apply_mixer
from linrnn.impls.reference import attention as ref_attention
from linrnn.impls.reference.model import forward
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import attention as torch_attention
from linrnn.impls.torch import from_bundle, parameter_groups

# (bidirectional, window): full and local attention; L = 7 and 9 are not multiples of the window 3
CASES = [(False, None), (False, 3), (True, None), (True, 3)]


def layer(bidirectional=False, window=None, H=4, heads=2, seed=0):
    cfg = AttentionConfig(d_model=H, heads=heads, bidirectional=bidirectional, window=window)
    return cfg, init(cfg, seed)


def written_out(p, cfg: AttentionConfig, u: np.ndarray) -> np.ndarray:
    """docs/models.md, one output at a time: rotary as complex rotations, the allowed j listed by the rules."""
    B, L, H = u.shape
    d, w = cfg.d_head, cfg.window
    y = np.zeros((B, L, H))
    for b in range(B):
        q, k, v = (u[b] @ p[f"W_{n}"].T + p[f"b_{n}"] for n in "qkv")
        for h in range(cfg.heads):
            cols = slice(h * d, (h + 1) * d)

            def rot(x, i):   # pair (2m, 2m+1) as the complex number x_2m + i x_2m+1, turned by i 10000^(-2m/d)
                z = [complex(x[2 * m], x[2 * m + 1]) * cmath.exp(1j * i * 10000.0 ** (-2 * m / d))
                     for m in range(d // 2)]
                return np.array([part for c in z for part in (c.real, c.imag)])

            for i in range(L):
                seen = [j for j in range(L)
                        if (cfg.bidirectional or j <= i)
                        and (w is None or i // w - j // w in ((-1, 0, 1) if cfg.bidirectional else (0, 1)))]
                s = np.array([np.exp(p["log_temperature"][h]) * rot(q[i, cols], i) @ rot(k[j, cols], j) for j in seen])
                a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                y[b, i, cols] = sum(a_j * v[j, cols] for a_j, j in zip(a, seen))
        y[b] = y[b] @ p["W_o"].T + p["b_o"]
    return y


@pytest.mark.parametrize("bidirectional, window", CASES)
def test_reference_is_the_formula_written_out(bidirectional, window):
    cfg, bundle = layer(bidirectional, window)
    u = np.random.default_rng(1).standard_normal((2, 7, 4))
    y, state = apply_mixer(cfg, bundle.params, u)
    assert state is None
    assert_close("attention reference", written_out(bundle.params, cfg, u), y, "forward", "float64", 7, 1.0)


def test_local_windows_see_their_own_and_the_previous_window_and_bidirectional_the_next():
    rows = {bi: ref_attention.allowed(AttentionConfig(d_model=4, heads=2, bidirectional=bi, window=3), 8)
            for bi in (False, True)}
    #                         positions 0 1 2 | 3 4 5 | 6 7   (windows of 3, the last one short)
    assert rows[False][7].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]      # its window (6, 7) and the previous one
    assert rows[False][4].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]      # causal: nothing after itself
    assert rows[True][0].tolist() == [1, 1, 1, 1, 1, 1, 0, 0]       # its window and the next
    assert rows[True][4].tolist() == [1] * 8
    assert rows[True][7].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert ref_attention.allowed(AttentionConfig(d_model=4, heads=2, window=8), 5).tolist() == \
        np.tril(np.ones((5, 5), dtype=bool)).tolist()                  # L <= window: full causal attention


@pytest.mark.parametrize("bidirectional, window", CASES)
def test_torch_and_jax_modes_match_the_reference(bidirectional, window, dtype="float64"):
    """float64 here at every case (float32: the crosscheck test below)."""
    cfg, bundle = layer(bidirectional, window)
    u = np.random.default_rng(2).standard_normal((2, 9, 4))
    ref, _ = apply_mixer(cfg, bundle.params, u, "full")
    module = from_bundle(bundle, getattr(torch, dtype))
    module.block_size = 2                      # several blocks at L = 9 for full attention too
    with precision(dtype):
        params = jax_params(bundle, dtype)
        for mode in ("full", "chunked"):
            y_t, state = module(torch.tensor(u, dtype=getattr(torch, dtype)), mode=mode)
            assert state is None
            assert_close(f"torch {mode}", ref, y_t.detach().double().numpy(), "forward", dtype, 9, 1.0)
            y_j = jax_layer.apply(params, cfg, u, mode)[0] if mode == "full" else \
                jax_attention.apply(params, cfg, jnp.asarray(u, dtype), "chunked", 2)
            assert_close(f"jax {mode}", ref, np.asarray(y_j, np.float64), "forward", dtype, 9, 1.0)


@pytest.mark.parametrize("bidirectional, window", CASES)
def test_torch_gradients_match_finite_differences_of_the_reference(bidirectional, window):
    """d sum(y w) / d(u, every parameter) in float64, both modes, against central differences of the reference."""
    cfg, bundle = layer(bidirectional, window)
    rng = np.random.default_rng(3)
    u, w = rng.standard_normal((1, 7, 4)), rng.standard_normal((1, 7, 4))
    module = from_bundle(bundle)
    module.block_size = 2
    x = torch.tensor(u, requires_grad=True)
    for mode in ("full", "chunked"):
        module.zero_grad()
        x.grad = None
        (module(x, mode=mode)[0] * torch.tensor(w)).sum().backward()
        grads = {"u": x.grad.numpy(), **{k: p.grad.numpy() for k, p in module.named_parameters()}}

        def loss(key, delta):
            params = dict(bundle.params)
            inputs = u + delta if key == "u" else u
            if key != "u":
                params[key] = params[key] + delta
            return float(np.sum(apply_mixer(cfg, params, inputs, "full")[0] * w))

        for key, grad in grads.items():
            shape = u.shape if key == "u" else bundle.params[key].shape
            index = np.unravel_index(rng.integers(np.prod(shape)), shape)    # one entry of each part
            step = np.zeros(shape)
            step[index] = 1e-6
            numeric = (loss(key, step) - loss(key, -step)) / 2e-6
            assert abs(grad[index] - numeric) <= 1e-6 * max(1.0, abs(numeric)), (mode, key, grad[index], numeric)


def test_crosscheck_matrix_passes_for_attention_in_both_modes_and_dtypes():
    """Outputs (reference, torch, jax) and gradients (torch against jax), full and local, causal and bidirectional."""
    shapes = (crosscheck.Shape(1, 9, 2, 2, False, True), crosscheck.Shape(1, 6, 2, 2, True, False))
    result = crosscheck.run(crosscheck.Selection(kinds=("attention",), modes=crosscheck.MODES, shapes=shapes))
    assert result["ok"], [e for e in result["entries"] if not e["ok"]]
    assert {e["mode"] for e in result["entries"]} == {"full", "chunked"}
    assert {e["quantity"] for e in result["entries"]} >= {"output", "grad input", "grad log_temperature", "grad W_q"}


@pytest.mark.parametrize("bidirectional, window", [(False, None), (True, None), (True, 2)])
def test_chunked_equals_full_and_so_do_their_gradients(bidirectional, window):
    cfg, bundle = layer(bidirectional, window, H=8, heads=2)
    module = from_bundle(bundle)
    module.block_size = 3
    u = torch.tensor(np.random.default_rng(4).standard_normal((2, 10, 8)))
    outputs, grads = {}, {}
    for mode in ("full", "chunked"):
        module.zero_grad()
        y, _ = module(u, mode=mode)
        y.square().sum().backward()
        outputs[mode] = y.detach().numpy()
        grads[mode] = {k: p.grad.clone().numpy() for k, p in module.named_parameters()}
    assert_close("chunked vs full", outputs["full"], outputs["chunked"], "forward", "float64", 10, 1.0)
    for key in grads["full"]:
        assert_close(f"d/d{key}", grads["full"][key], grads["chunked"][key], "gradient", "float64", 10, 1.0)


@pytest.mark.parametrize("rotary, rtol", [
    (ref_attention.rotary, 1e-13),
    (lambda x: torch_attention.rotary(torch.tensor(x)).numpy(), 1e-13),
    (lambda x: np.asarray(jax_attention.rotary(jnp.asarray(x, jnp.float32))), 1e-5),
])
def test_rotary_scores_depend_only_on_the_lag(rotary, rtol):
    """The same q and k at every position: <R_i q, R_j k> is a function of i - j (Toeplitz), and R_i keeps norms."""
    rng = np.random.default_rng(5)
    q, k = (np.repeat(rng.standard_normal((1, 1, 1, 6)), 12, axis=2) for _ in range(2))    # (1 1 L d)
    rq, rk = (np.asarray(rotary(x)[0, 0], np.float64) for x in (q, k))
    scores = rq @ rk.T
    for lag in range(-11, 12):
        assert np.ptp(np.diagonal(scores, offset=lag)) <= rtol * np.abs(scores).max(), lag
    assert np.allclose(np.linalg.norm(rq, axis=-1), np.linalg.norm(q[0, 0], axis=-1), rtol=rtol)
    assert abs(scores[0, 1] - scores[0, 2]) > 1e-3                      # not a constant: the lag does matter


def test_no_state_no_step_and_each_backend_names_its_attention_modes():
    cfg, bundle = layer()
    u = np.zeros((1, 3, 4))
    module = from_bundle(bundle)
    refused = "state: attention has no recurrent state; call it without one"
    with pytest.raises(LinrnnError, match=refused):
        apply_mixer(cfg, bundle.params, u, x0=np.zeros((1, 4)))
    with pytest.raises(LinrnnError, match=refused):
        module(torch.zeros(1, 3, 4, dtype=torch.float64), state=torch.zeros(1, 4))
    with precision("float64"), pytest.raises(LinrnnError, match=refused):
        jax_layer.apply(jax_params(bundle), cfg, u, "full", state=np.zeros((1, 4)))
    with pytest.raises(LinrnnError, match="mode: attention has no streaming step"):
        module.step(torch.zeros(1, 4, dtype=torch.float64))
    with pytest.raises(LinrnnError, match="mode: the torch backend has modes full, chunked for attention, found 'scan'"):
        module(torch.zeros(1, 3, 4, dtype=torch.float64), mode="scan")
    with pytest.raises(LinrnnError, match="mode: the reference backend has modes full for attention, found 'sequential'"):
        apply_mixer(cfg, bundle.params, u, "sequential")
    with pytest.raises(LinrnnError, match="mode: the jax backend has modes full, chunked for attention, found 'step'"):
        jax_layer.step(jax_params(bundle, "float32"), cfg, u[:, 0])
    lru = mixer_config("lru", 4, 2)                                    # the other kinds' messages are unchanged
    with pytest.raises(LinrnnError, match=r"^mode: the reference backend has modes sequential, conv, found 'full'$"):
        apply_mixer(lru, init(lru, 0).params, u, "full")


def test_config_bundle_and_initialisation():
    with pytest.raises(LinrnnError, match="AttentionConfig.heads: expected heads dividing d_model = 6 into an even d_head"):
        AttentionConfig(d_model=6, heads=2)
    with pytest.raises(LinrnnError, match="AttentionConfig.window: expected an integer >= 1, found 0"):
        AttentionConfig(d_model=4, heads=2, window=0)
    cfg = mixer_config("attention", 8, 99, heads=2, window=4)          # N does not apply: dropped
    assert cfg == AttentionConfig(d_model=8, heads=2, window=4) and not hasattr(cfg, "d_state")
    assert RECURRENCE_KEYS["attention"] == ()                            # every parameter an ordinary weight
    bundle = init(cfg, 0)
    assert parameter_groups(from_bundle(bundle))["recurrence"] == []
    assert not any(recurrence_mask(jax_params(bundle, "float32"), cfg).values())
    assert mixer_shapes(cfg) == {"W_q": (8, 8), "b_q": (8,), "W_k": (8, 8), "b_k": (8,), "W_v": (8, 8),
                                 "b_v": (8,), "W_o": (8, 8), "b_o": (8,), "log_temperature": (2,)}
    params = init(AttentionConfig(d_model=64, heads=4), 0).params
    assert np.array_equal(params["log_temperature"], np.full(4, np.log(16 ** -0.5)))
    for key in ("W_q", "b_k", "W_o", "b_v"):                            # PyTorch's Linear: U(-1/sqrt(H), 1/sqrt(H))
        assert np.abs(params[key]).max() <= 1 / 8 and np.abs(params[key]).max() > 0.9 / 8
    for key in ("W_q", "W_k", "W_v", "W_o"):                            # 4096 draws: mean 0, sd 1/(8 sqrt 3), 4 sigma
        assert abs(params[key].mean()) < 0.005 and abs(params[key].std() - 1 / 8 / np.sqrt(3)) < 0.005


@pytest.mark.parametrize("backend", ["reference", "torch", "jax"])
def test_command_line_initialises_and_applies_a_layer_and_a_prenorm_model(cli, tmp_path, backend):
    """Pre-norm here (the default); post-norm: tests/tasks/test_grid.py trains it in both frameworks."""
    layer_path, model_path, u_path, y_path = (tmp_path / n for n in ("l.npz", "m.npz", "u.npy", "y.npy"))
    assert cli.run("params", "init", "--model", "attention", "--layer-only", "--d-model", 4, "--heads", 2,
                   "--window", 3, "--bidirectional", "--seed", 1, "--out", layer_path)[0] == 0
    assert cli.run("params", "init", "--model", "attention", "--d-model", 4, "--heads", 2, "--layers", 2,
                   "--d-input", 3, "--d-output", 2, "--seed", 2, "--out", model_path)[0] == 0
    layer_bundle, model_bundle = load(layer_path), load(model_path)
    assert model_bundle.config.prenorm is True and model_bundle.config.mixer.heads == 2
    u = np.random.default_rng(6).standard_normal((2, 8, 4))
    np.save(u_path, u)
    code, out, _ = cli.run("apply", "--params", layer_path, "--input", u_path, "--out", y_path, "--backend", backend)
    assert code == 0 and "mode full" in out                             # attention's default, not MODES[0]
    assert_close(f"{backend} layer", apply_mixer(layer_bundle.config, layer_bundle.params, u)[0], np.load(y_path),
                 "forward", "float64", 8, 1.0)
    np.save(u_path, u[..., :3])
    modes = ("full",) if backend == "reference" else ("full", "chunked")
    for mode in modes:
        assert cli.run("apply", "--params", model_path, "--input", u_path, "--out", y_path, "--backend", backend,
                       "--mode", mode)[0] == 0
        assert_close(f"{backend} {mode} model", forward(model_bundle, u[..., :3], mode="full"), np.load(y_path),
                     "forward", "float64", 8, 1.0)


ROTARY_FLOAT32 = {
    "torch": lambda x: torch_attention.rotary(torch.tensor(x, dtype=torch.float32)).numpy(),
    "jax": lambda x: np.asarray(jax_attention.rotary(jnp.asarray(x, jnp.float32))),
}


@pytest.mark.parametrize("backend", ROTARY_FLOAT32)
def test_float32_rotary_angles_are_formed_in_float64_at_l_4096(backend):
    """cos and sin of the angles i 10000^(-2m/d), read off the float32 path (rotary of the unit pairs (1, 0)), at
    every position of L = 4,096 against the angles formed and turned in float64: each is float64's value rounded
    once to float32, so the error is a rounding, not one growing with i. Angles formed in float32 are off by
    about eps(float32) i 10000^(-2m/d), which cos and sin pass on: 6.7e-5 here, 9 times the bound."""
    L, d = 4096, 16
    unit = np.zeros((1, 1, L, d))
    unit[..., 0::2] = 1.0
    got = ROTARY_FLOAT32[backend](unit)[0, 0]                                      # (L d): (cos, sin) pairs
    assert got.dtype == np.float32
    angle = np.arange(L, dtype=np.float64)[:, None] * ref_attention.ROPE_BASE ** (-np.arange(0, d, 2) / d)
    assert_close(f"{backend} float32 rotary cos", np.cos(angle), got[:, 0::2], "identity", "float32")
    assert_close(f"{backend} float32 rotary sin", np.sin(angle), got[:, 1::2], "identity", "float32")

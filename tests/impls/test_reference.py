"""The reference against the equations of docs/models.md, written out independently in each test."""

import numpy as np
import pytest

from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_bundle, apply_mixer, dlr, lru, rotrnn, s4d, s5
from linrnn.impls.reference.model import forward
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config
from linrnn.base.tolerance import assert_close

rng = np.random.default_rng(0)


def test_rotrnn_equals_its_equation_written_per_head():
    cfg = RotRNNConfig(d_model=3, d_state=4, heads=2)
    p = init(cfg, 1).params
    u = rng.standard_normal((1, 9, 3))
    import mpmath

    def expm(S):  # 30 digits: SciPy's scaling and squaring is itself off by ~1e-13 at M ~ N(0, 1)
        with mpmath.workdps(30):
            return np.array(mpmath.expm(mpmath.matrix(S.tolist())).tolist(), dtype=float)

    y = np.zeros((9, 3))
    xs = [np.zeros(4), np.zeros(4)]
    for t in range(9):
        for h in range(2):
            P = expm(p["M"][h] - p["M"][h].T)
            gamma = np.exp(-np.exp(p["gamma_log"][h]))
            c, s = np.cos(p["theta"][h]), np.sin(p["theta"][h])
            Theta = np.zeros((4, 4))
            Theta[0:2, 0:2] = [[c[0], -s[0]], [s[0], c[0]]]
            Theta[2:4, 2:4] = [[c[1], -s[1]], [s[1], c[1]]]
            xi = np.sqrt(1 - gamma**2) / np.linalg.norm(p["B"][h])
            xs[h] = gamma * P @ Theta @ P.T @ xs[h] + xi * p["B"][h] @ u[0, t]
        y[t] = p["C"] @ np.concatenate(xs) + p["D"] * u[0, t]
    got, state = apply_mixer(cfg, p, u, "sequential")
    assert_close("rotrnn sequential", y, got[0], "forward", "float64", 9)
    assert_close("rotrnn state", np.stack(xs), state[0], "state", "float64", 9)


def test_rotrnn_rotated_pairs_are_complex_multiplications():
    """Theta's block j acts on (x[2j], x[2j+1]) as multiplication of x[2j] + i x[2j+1] by e^{i theta_j}."""
    theta = rng.uniform(0, 2 * np.pi, (1, 3))
    x = rng.standard_normal(6)
    z = (x[0::2] + 1j * x[1::2]) * np.exp(1j * theta[0])
    rotated = rotrnn.block_rotation(theta)[0] @ x
    assert_close("rotated pairs", z, rotated[0::2] + 1j * rotated[1::2], "identity", "float64")


def test_lru_equals_its_equation_mode_by_mode():
    cfg = LRUConfig(d_model=2, d_state=3)
    p = init(cfg, 2).params
    u = rng.standard_normal((1, 7, 2))
    lam = np.exp(-np.exp(p["nu_log"]) + 1j * np.exp(p["theta_log"]))
    x = np.zeros(3, complex)
    y = np.zeros((7, 2))
    for t in range(7):
        for j in range(3):
            x[j] = lam[j] * x[j] + np.exp(p["gamma_log"][j]) * ((p["B_re"][j] + 1j * p["B_im"][j]) @ u[0, t])
        y[t] = ((p["C_re"] + 1j * p["C_im"]) @ x).real + p["D"] * u[0, t]
    got, state = apply_mixer(cfg, p, u, "sequential")
    assert_close("lru sequential", y, got[0], "forward", "float64", 7)
    assert_close("lru state", x, state[0], "state", "float64", 7)


def test_dlr_equals_its_kernel_equation_channel_by_channel():
    cfg = DLRConfig(d_model=2, d_state=4)
    p = init(cfg, 3).params
    u = rng.standard_normal((1, 6, 2))
    lam = np.exp(-p["a"] ** 2 + 1j * p["theta"])
    y = np.zeros((6, 2))
    for h in range(2):
        K = [np.real(np.sum((p["W_re"][h] + 1j * p["W_im"][h]) * lam**l)) for l in range(6)]
        for t in range(6):
            y[t, h] = sum(K[l] * u[0, t - l, h] for l in range(t + 1)) + p["D"][h] * u[0, t, h]
    for mode in ("sequential", "conv"):
        assert_close(f"dlr {mode}", y, apply_mixer(cfg, p, u, mode)[0][0], "forward", "float64", 6)


def test_dlr_bidirectional_counts_lag_zero_once():
    cfg = DLRConfig(d_model=1, d_state=3, bidirectional=True)
    p = init(cfg, 4).params
    u = np.zeros((1, 5, 1))
    u[0, 2, 0] = 1.0                                   # an impulse at t = 2
    y = apply_mixer(cfg, p, u, "conv")[0][0, :, 0]
    K = dlr.kernel(p, 5)[:, 0]
    K_rev = dlr.kernel(p, 5, "_rev")[:, 0]
    expected = [K_rev[1], K_rev[0], K[0] + p["D"][0], K[1], K[2]]   # y_t += K_rev_j u_{t+1+j}
    assert_close("impulse response", expected, y, "forward", "float64", 5)


def test_s4d_equals_the_s4_kernel_channel_by_channel():
    """K_l = 2 Re(sum_n C_n (exp(dt A_n) - 1)/A_n exp(dt A_n l)), as the s4 code's S4DKernel writes it (dt >= 0.05
    here, where exp - 1 loses nothing that matters), then y = K * u + D u; both views, both initialisations."""
    for init_name in ("lin", "inv"):
        cfg = S4DConfig(d_model=2, d_state=3, init=init_name, dt_min=0.05, dt_max=0.5)
        p = init(cfg, 6).params
        u = rng.standard_normal((1, 7, 2))
        y = np.zeros((7, 2))
        for h in range(2):
            dt = np.exp(p["log_dt"][h])
            A = -np.exp(p["log_A_real"][h]) + 1j * p["A_imag"][h]
            C = (p["C_re"][h] + 1j * p["C_im"][h]) * (np.exp(dt * A) - 1) / A
            K = [2 * np.real(np.sum(C * np.exp(dt * A * l))) for l in range(7)]
            for t in range(7):
                y[t, h] = sum(K[l] * u[0, t - l, h] for l in range(t + 1)) + p["D"][h] * u[0, t, h]
        for mode in ("sequential", "conv"):
            assert_close(f"s4d {init_name} {mode}", y, apply_mixer(cfg, p, u, mode)[0][0], "forward", "float64", 7)


def test_s4d_zoh_factor_keeps_its_precision_at_small_dt_a():
    """C~ = 2 C (exp(dt A) - 1)/A against 40 digits at |dt A| = 5e-5 (mode 0 of S4D-Lin at dt = 1e-4): exp - 1
    written as a difference is off by up to eps / |dt A| relative (8e-13 on these numbers, 60 times the tolerance)."""
    import mpmath

    cfg = S4DConfig(d_model=4, d_state=1, dt_min=1e-4, dt_max=1e-4)
    p = init(cfg, 0).params
    with mpmath.workdps(40):
        exact = []
        for h in range(4):
            A = mpmath.mpc(-mpmath.exp(p["log_A_real"][h, 0]), p["A_imag"][h, 0])
            C = mpmath.mpc(p["C_re"][h, 0], p["C_im"][h, 0])
            exact.append(complex(2 * C * mpmath.expm1(mpmath.exp(p["log_dt"][h]) * A) / A))
    assert_close("C~ = 2 C (exp(dt A) - 1)/A", np.array(exact), s4d.output_weights(p)[:, 0], "identity", "float64")


def test_rotrnn_normalisation_keeps_its_precision_as_gamma_nears_1():
    """xi = sqrt(1 - gamma^2) / ||B||_F against 40 digits at gamma = 0.9999 and 0.999999 (||B||_F = 2 exactly):
    1 - gamma^2 written as a difference is off by about eps / (1 - gamma^2) relative (1.3e-13 and 5.5e-12 here,
    9 and 390 times the tolerance); as -expm1(-2 exp(gamma_log)) it is a few roundings."""
    import mpmath

    gamma_log = np.log(-np.log(np.array([0.9999, 0.999999])))
    with mpmath.workdps(40):
        exact = [float(mpmath.sqrt(-mpmath.expm1(-2 * mpmath.exp(g))) / 2) for g in gamma_log]
    got = rotrnn.normalisation(gamma_log, np.ones((2, 2, 2)))
    for h in range(2):
        assert_close(f"xi at gamma = {rotrnn.decay(gamma_log)[h]:.7g}", exact[h], got[h], "identity", "float64")


def test_s4d_bidirectional_counts_lag_zero_once():
    """The s4 code's two-sided kernel: the backward kernel starts at the next position."""
    cfg = S4DConfig(d_model=1, d_state=3, bidirectional=True)
    p = init(cfg, 4).params
    u = np.zeros((1, 5, 1))
    u[0, 2, 0] = 1.0                                   # an impulse at t = 2
    K, K_rev = s4d.kernel(p, 5)[:, 0], s4d.kernel(p, 5, "_rev")[:, 0]
    expected = [K_rev[1], K_rev[0], K[0] + p["D"][0], K[1], K[2]]   # y_t += K_rev_j u_{t+1+j}
    for mode in ("sequential", "conv"):
        assert_close(f"s4d {mode} impulse response", expected, apply_mixer(cfg, p, u, mode)[0][0, :, 0],
                     "forward", "float64", 5)


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_s5_equals_its_equation_mode_by_mode(discretization):
    """Lambda_bar and B_bar as the S5 code writes them (Delta >= 0.05 here, where exp - 1 loses nothing that
    matters), x_t = Lambda_bar x_{t-1} + B_bar u_t both ways, y = 2 Re(C~ x + C~_rev x_bwd) + D u; both views."""
    cfg = S5Config(d_model=2, d_state=3, discretization=discretization, bidirectional=True, dt_min=0.05, dt_max=0.5)
    p = init(cfg, 7).params
    u = rng.standard_normal((1, 7, 2))
    Lambda, Delta = p["Lambda_re"] + 1j * p["Lambda_im"], np.exp(p["log_step"])
    if discretization == "zoh":
        lam = np.exp(Lambda * Delta)
        B_bar = ((lam - 1) / Lambda)[:, None] * (p["B_re"] + 1j * p["B_im"])
    else:
        lam = (1 + Delta * Lambda / 2) / (1 - Delta * Lambda / 2)
        B_bar = (Delta / (1 - Delta * Lambda / 2))[:, None] * (p["B_re"] + 1j * p["B_im"])
    x, x_bwd = np.zeros((8, 3), complex), np.zeros((8, 3), complex)    # x[t + 1] = x_t; x_bwd[t] = x_bwd_t
    for t in range(7):
        x[t + 1] = lam * x[t] + B_bar @ u[0, t]
    for t in reversed(range(7)):
        x_bwd[t] = lam * x_bwd[t + 1] + B_bar @ u[0, t]
    y = np.stack([2 * ((p["C_re"] + 1j * p["C_im"]) @ x[t + 1] + (p["C_re_rev"] + 1j * p["C_im_rev"]) @ x_bwd[t]).real
                  + p["D"] * u[0, t] for t in range(7)])
    for mode in ("sequential", "conv"):
        assert_close(f"s5 {discretization} {mode}", y, apply_mixer(cfg, p, u, mode)[0][0], "forward", "float64", 7)
    one_way = S5Config(d_model=2, d_state=3, discretization=discretization, dt_min=0.05, dt_max=0.5)
    _, state = apply_mixer(one_way, {k: v for k, v in p.items() if not k.endswith("_rev")}, u, "sequential")
    assert_close(f"s5 {discretization} state", x[7], state[0], "state", "float64", 7)


def test_s5_clip_eigs_uses_a_real_part_of_at_most_minus_1e_4():
    cfg = S5Config(d_model=2, d_state=2, clip_eigs=True)
    p = dict(init(cfg, 8).params)
    u = rng.standard_normal((1, 6, 2))
    unstable = {**p, "Lambda_re": np.array([0.3, -0.5])}             # Re Lambda > 0 in mode 0
    clipped = {**p, "Lambda_re": np.array([-1e-4, -0.5])}
    assert np.array_equal(apply_mixer(cfg, unstable, u, "sequential")[0], apply_mixer(cfg, clipped, u, "sequential")[0])
    free = S5Config(d_model=2, d_state=2)
    assert s5.eigenvalues(unstable, free)[0].real > 1 > abs(s5.eigenvalues(unstable, cfg)[0])


def test_s5_zoh_factor_keeps_its_precision_at_small_delta_lambda():
    """B_bar = (exp(Delta Lambda) - 1)/Lambda B~ against 40 digits at Delta = 1e-4 (|Delta Lambda| down to 7e-5):
    exp - 1 written as a difference is off by up to eps / |Delta Lambda| relative (3e-13 here, 20 times the
    tolerance)."""
    import mpmath

    cfg = S5Config(d_model=1, d_state=4, dt_min=1e-4, dt_max=1e-4)
    p = init(cfg, 0).params
    with mpmath.workdps(40):
        exact = []
        for n in range(4):
            Lambda = mpmath.mpc(p["Lambda_re"][n], p["Lambda_im"][n])
            factor = mpmath.expm1(mpmath.exp(p["log_step"][n]) * Lambda) / Lambda
            exact.append(complex(factor * mpmath.mpc(p["B_re"][n, 0], p["B_im"][n, 0])))
    assert_close("B_bar", np.array(exact), s5.discretise(p, cfg)[1][:, 0], "identity", "float64")


def test_lru_and_rotrnn_bidirectional_include_the_current_input_backwards():
    for cfg in (LRUConfig(d_model=2, d_state=3, bidirectional=True),
                RotRNNConfig(d_model=2, d_state=2, heads=1, bidirectional=True)):
        p = init(cfg, 5).params
        u = np.zeros((1, 4, 2))
        u[0, 0, 0] = 1.0
        y = apply_mixer(cfg, p, u, "sequential")[0][0]
        forward_only = init(type(cfg)(d_model=2, d_state=cfg.d_state, **({"heads": 1} if cfg.kind == "rotrnn" else {})), 5)
        K = (lru.kernel(p, 4) if cfg.kind == "lru" else rotrnn.kernel(p, cfg, 4))
        K_rev = (lru.kernel(p, 4, "_rev") if cfg.kind == "lru" else rotrnn.kernel(p, cfg, 4, "C_rev"))
        # an impulse at t = 0 reaches y_0 through both directions' lag 0
        assert_close("lag 0 of both directions", K[0][:, 0] + K_rev[0][:, 0] + p["D"] * u[0, 0], y[0],
                     "forward", "float64", 4)
        assert forward_only.config.bidirectional is False


def test_dlr_with_truncated_kernel_refuses_the_recurrent_view():
    cfg = DLRConfig(d_model=2, d_state=4, max_kernel_length=5)
    p = init(cfg, 0).params
    with pytest.raises(LinrnnError, match="recurrent view holds only for L <= 5"):
        apply_mixer(cfg, p, rng.standard_normal((1, 8, 2)), "sequential")
    y = apply_mixer(cfg, p, rng.standard_normal((1, 8, 2)), "conv")[0]
    assert y.shape == (1, 8, 2)


def test_dlr_truncated_kernel_forgets_inputs_older_than_the_kernel():
    cfg = DLRConfig(d_model=1, d_state=4, max_kernel_length=3)
    p = init(cfg, 0).params
    u = np.zeros((1, 8, 1))
    u[0, 0, 0] = 1.0
    y = apply_mixer(cfg, p, u, "conv")[0][0, :, 0]
    assert np.all(y[3:] == 0) and np.all(y[:3] != 0)


def test_reference_modes_and_inputs_are_checked():
    cfg = LRUConfig(d_model=3, d_state=2)
    p = init(cfg, 0).params
    with pytest.raises(LinrnnError, match="mode: the reference backend has modes sequential, conv, found 'scan'"):
        apply_mixer(cfg, p, np.zeros((1, 2, 3)), "scan")
    with pytest.raises(LinrnnError, match=r"input: expected shape \(B, L, 3\) with B, L >= 1, found \(1, 2, 4\)"):
        apply_mixer(cfg, p, np.zeros((1, 2, 4)))
    with pytest.raises(LinrnnError, match=r"input: expected finite values, found 1 NaN/Inf entry"):
        apply_mixer(cfg, p, np.array([[[0.0, np.nan, 1.0]]]))
    with pytest.raises(LinrnnError, match="dtype: the reference backend computes in float64 only"):
        apply_bundle(init(cfg, 0), np.zeros((1, 2, 3)), dtype="float32")


# -- the deep model -----------------------------------------------------------------------

def _manual_block(p, x, cfg, i):
    """One block of docs/models.md, written out with the reference mixer as the only shared piece."""
    pre = f"layers.{i}."

    def norm(v):
        if cfg.norm == "layer":
            mu, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
            return (v - mu) / np.sqrt(var + cfg.norm_eps) * p[pre + "norm.scale"] + p[pre + "norm.bias"]
        return ((v - p[pre + "norm.mean"]) / np.sqrt(p[pre + "norm.var"] + cfg.norm_eps)
                * p[pre + "norm.scale"] + p[pre + "norm.bias"])

    from scipy.special import erf
    z = norm(x) if cfg.prenorm else x
    mixer = {k[len(pre + "mixer."):]: v for k, v in p.items() if k.startswith(pre + "mixer.")}
    z = apply_mixer(cfg.mixer, mixer, z, "sequential")[0]
    z = 0.5 * z * (1 + erf(z / np.sqrt(2)))
    a = z @ p[pre + "glu.W1"].T + p[pre + "glu.b1"]
    g = z @ p[pre + "glu.W2"].T + p[pre + "glu.b2"]
    z = a / (1 + np.exp(-g))
    return x + z if cfg.prenorm else norm(x + z)


@pytest.mark.parametrize("norm, prenorm, pooling", [("layer", True, "mean"), ("batch", False, "last"),
                                                     ("layer", False, "none"), ("batch", True, "mean")])
def test_model_forward_equals_the_blocks_written_out(norm, prenorm, pooling):
    cfg = ModelConfig(mixer=RotRNNConfig(d_model=6, d_state=2, heads=2), n_layers=2, d_input=3, d_output=4,
                      norm=norm, prenorm=prenorm, pooling=pooling)
    bundle = init(cfg, 0)
    if norm == "batch":   # stored statistics that are not the identity
        bundle = bundle.replace(**{f"layers.{i}.norm.{s}": rng.uniform(0.5, 2.0, 6) for i in range(2)
                                   for s in ("mean", "var", "scale")})
    p = bundle.params
    u = rng.standard_normal((3, 7, 3))
    lengths = np.array([7, 4, 1])
    x = u @ p["encoder.weight"].T + p["encoder.bias"]
    for i in range(2):
        x = _manual_block(p, x, cfg, i)
    if pooling == "mean":
        pooled = np.stack([x[b, :n].mean(0) for b, n in enumerate(lengths)])
    elif pooling == "last":
        pooled = np.stack([x[b, n - 1] for b, n in enumerate(lengths)])
    else:
        pooled = x
    expected = pooled @ p["decoder.weight"].T + p["decoder.bias"]
    got = forward(bundle, u, lengths if pooling != "none" else None)
    assert_close("model", expected, got, "forward", "float64", 7)


def test_model_with_embedding_and_bad_tokens():
    cfg = ModelConfig(mixer=DLRConfig(d_model=4, d_state=3), vocab_size=5, d_output=2)
    bundle = init(cfg, 0)
    tokens = np.array([[0, 4, 2], [1, 1, 3]])
    emb = bundle.params["encoder.weight"][tokens]
    assert forward(bundle, tokens).shape == (2, 2)
    assert_close("model conv vs sequential", forward(bundle, tokens), forward(bundle, tokens, mode="conv"),
                 "forward", "float64", 3)
    assert emb.shape == (2, 3, 4)
    with pytest.raises(LinrnnError, match=r"expected token ids in \[0, 5\), found ids in \[0, 5\]"):
        forward(bundle, np.array([[0, 5]]))
    with pytest.raises(LinrnnError, match="expected integer token ids"):
        forward(bundle, np.zeros((1, 2)))
    with pytest.raises(LinrnnError, match=r"lengths: expected values in \[1, 3\], found \[0, 3\]"):
        forward(bundle, tokens, lengths=np.array([0, 3]))


def test_trajectory_ends_in_the_final_state():
    for cfg, module in ((RotRNNConfig(d_model=3, d_state=2, heads=2), rotrnn), (LRUConfig(d_model=3, d_state=4), lru)):
        p = init(cfg, 0).params
        u = rng.standard_normal((2, 6, 3))
        states = module.trajectory(p, cfg, u)
        _, last = apply_mixer(cfg, p, u, "sequential")
        assert states.shape[:2] == (2, 6) and np.array_equal(states[:, -1], last)
        _, middle = apply_mixer(cfg, p, u[:, :3], "sequential")
        assert np.array_equal(states[:, 2], middle)

"""Each paper's initialisation (docs/models.md), checked on the numbers a seed gives."""

import numpy as np
import pytest
import scipy.linalg

from linrnn.base.tolerance import assert_close, tolerance

SLACK = tolerance("identity", "float64").rtol   # rounding of exp/log in the parameterisation

from linrnn.impls.config import ModelConfig
from linrnn.impls.init import init
from linrnn.impls.reference import dlr, lru, rotrnn, s4d
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config, hippo_n


def test_rotrnn_initialisation():
    cfg = RotRNNConfig(d_model=32, d_state=16, heads=64, gamma_min=0.9, gamma_max=0.999, max_phase=np.pi)
    p = init(cfg, 0).params
    gamma = rotrnn.decay(p["gamma_log"])
    assert np.all((gamma >= 0.9) & (gamma <= 0.999))
    # -log gamma is log-uniform: log(-log gamma) = gamma_log is uniform on [log(-log 0.999), log(-log 0.9)]
    lo, hi = np.log(-np.log(0.999)), np.log(-np.log(0.9))
    assert abs(np.mean(p["gamma_log"]) - (lo + hi) / 2) < 0.15 * (hi - lo)
    assert np.all((p["theta"] >= 0) & (p["theta"] <= np.pi)) and p["theta"].shape == (64, 8)
    assert abs(np.std(p["M"]) - 1.0) < 0.02                     # M ~ N(0, 1)
    glorot = 1 / np.sqrt(32 + 64 * 16)
    assert abs(np.std(p["B"]) / glorot - 1) < 0.02 and abs(np.std(p["C"]) / glorot - 1) < 0.03
    near = init(RotRNNConfig(d_model=32, d_state=16, heads=64, m_init="near_identity"), 0).params
    assert abs(np.std(near["M"]) * np.sqrt(16 + 64 * 16) - 1) < 0.02


def test_lru_ring_initialisation():
    cfg = LRUConfig(d_model=16, d_state=4000, r_min=0.4, r_max=0.9, max_phase=np.pi / 10)
    p = init(cfg, 0).params
    lam = lru.eigenvalues(p)
    r2 = np.abs(lam) ** 2
    assert np.all((np.abs(lam) >= 0.4 * (1 - SLACK)) & (np.abs(lam) <= 0.9 * (1 + SLACK)))
    # |lambda|^2 uniform on [r_min^2, r_max^2]: mean and variance of a uniform distribution
    assert abs(r2.mean() - (0.16 + 0.81) / 2) < 0.01
    assert abs(r2.var() - (0.81 - 0.16) ** 2 / 12) < 0.003
    assert np.all((np.angle(lam) >= 0) & (np.angle(lam) <= np.pi / 10 * (1 + SLACK)))
    assert_close("exp(gamma_log) = sqrt(1 - |lambda|^2)", np.sqrt(1 - r2), np.exp(p["gamma_log"]), "identity", "float64")
    assert abs(np.std(p["B_re"]) * np.sqrt(2 * 16) - 1) < 0.02      # B ~ (N + iN)/sqrt(2H)
    assert abs(np.std(p["C_im"]) * np.sqrt(4000) - 1) < 0.02         # C ~ (N + iN)/sqrt(N)


def test_lru_initialisation_stays_finite_at_r_min_zero():
    p = init(LRUConfig(d_model=2, d_state=20000, r_min=0.0, r_max=0.5), 7).params
    assert all(np.all(np.isfinite(v)) for v in p.values())


def test_dlr_initialisation_is_the_roots_of_unity_just_inside_the_circle():
    cfg = DLRConfig(d_model=4, d_state=64, dt_min=1e-4, dt_max=1e-1)
    p = init(cfg, 0).params
    lam = dlr.eigenvalues(p)
    delta = -2 * np.log(np.abs(lam))
    assert np.all((delta >= 1e-4 * (1 - SLACK)) & (delta <= 1e-1 * (1 + SLACK)))
    assert_close("phases", np.exp(2j * np.pi * np.arange(64) / 64), lam / np.abs(lam), "identity", "float64")
    synthetic = dlr.eigenvalues(init(DLRConfig(d_model=4, d_state=8, dt_min=1e-5, dt_max=1e-5), 0).params)
    assert_close("|lambda| at dt = 1e-5", np.full(8, np.exp(-0.5e-5)), np.abs(synthetic), "identity", "float64")


def test_s4d_initialisation_is_lin_or_inv_with_dt_per_channel():
    lin = init(S4DConfig(d_model=4000, d_state=3, dt_min=1e-3, dt_max=1e-1), 0).params
    A = s4d.continuous_eigenvalues(lin)
    assert_close("Re A = -1/2", np.full((4000, 3), -0.5), A.real, "identity", "float64")
    assert np.array_equal(A.imag, np.tile(np.pi * np.arange(3), (4000, 1)))           # S4D-Lin: pi n
    # log dt uniform on [log 1e-3, log 1e-1]: its mean and variance, each within 4 standard errors (n = 4000)
    lo, hi = np.log(1e-3), np.log(1e-1)
    assert np.all((lin["log_dt"] >= lo) & (lin["log_dt"] <= hi)) and lin["log_dt"].shape == (4000,)
    assert abs(lin["log_dt"].mean() - (lo + hi) / 2) < 4 * (hi - lo) / np.sqrt(12 * 4000)
    assert abs(lin["log_dt"].var() / ((hi - lo) ** 2 / 12) - 1) < 4 * np.sqrt(0.8 / 4000)   # Var((x - m)^2) = 0.8 var^2
    for key in ("C_re", "C_im"):                                                      # C standard complex normal
        assert abs(np.std(lin[key]) * np.sqrt(2) - 1) < 0.02, key
    assert abs(np.std(lin["D"]) - 1) < 0.03
    inv = init(S4DConfig(d_model=2, d_state=2, init="inv"), 0).params
    # the s4 code's state size is 2N = 4: A_imag_n = (4/pi)(4/(2n+1) - 1) = 12/pi, 4/(3 pi)
    assert_close("S4D-Inv", np.tile([12 / np.pi, 4 / (3 * np.pi)], (2, 1)), inv["A_imag"], "identity", "float64")


@pytest.mark.parametrize("size", [2, 4, 8])
def test_hippo_n_eigenvalues_have_real_part_minus_one_half_and_v_diagonalises_s(size):
    """`hippo_n`'s theory: S = -I/2 + K with K real skew-symmetric, so S V = V diag(Lambda), V unitary,
    Re Lambda = -1/2, conjugate pairs; keeping one of each pair gives a real system's output as 2 Re(...)."""
    S, Lambda, V = hippo_n(size)
    n = np.arange(size)
    half = np.sqrt(np.outer(2 * n + 1, 2 * n + 1)) / 2      # A_LegS + P P^T, entry by entry
    assert_close("S", np.where(n[:, None] > n, -half, np.where(n[:, None] < n, half, -0.5)), S, "identity", "float64")
    assert_close("Re Lambda", np.full(size, -0.5), Lambda.real, "identity", "float64")
    assert_close("S V = V diag(Lambda)", S @ V, V * Lambda, "identity", "float64")
    assert_close("V^H V = I", np.eye(size, dtype=complex), V.conj().T @ V, "identity", "float64")
    k = size // 2                                             # sorted by Im: the first half mirrors the second
    assert np.all(Lambda.imag[:k] < 0)
    assert_close("conjugate pairs", np.conj(Lambda[::-1][:k]), Lambda[:k], "identity", "float64")
    rng = np.random.default_rng(size)
    B, C, t = rng.standard_normal(size), rng.standard_normal(size), 0.3
    exact = C @ scipy.linalg.expm(S * t) @ B                   # a real system's impulse response at time t
    kept = 2 * (C @ V[:, :k] @ (np.exp(Lambda[:k] * t) * (V[:, :k].conj().T @ B))).real
    assert_close("2 Re over the kept half", exact, kept, "identity", "float64")


def test_s5_initialisation_is_hippo_n_in_blocks_with_lecun_normal_b_and_c():
    cfg = S5Config(d_model=64, d_state=32, blocks=4, bidirectional=True, dt_min=1e-3, dt_max=1e-1)
    p = init(cfg, 0).params
    _, Lambda, V = hippo_n(16)                                # blocks of 2N/J = 16 modes, 8 kept in each
    assert np.array_equal(p["Lambda_re"] + 1j * p["Lambda_im"], np.tile(Lambda[:8], 4))
    V_half = np.kron(np.eye(4), V[:, :8])                     # (2N N) block-diagonal
    B_tilde = p["B_re"] + 1j * p["B_im"]
    B = 2 * (V_half @ B_tilde).real                           # the real B whose V_half^H B is B~
    assert_close("B~ = V_half^H B, B real", B_tilde, V_half.conj().T @ B, "identity", "float64")
    # lecun-normal, fan-in 2N = 64: a normal truncated at 2 sigma, rescaled to variance 1/64
    assert abs(B.var() * 64 - 1) < 0.08 and np.abs(B).max() <= 2 / 0.8796 / 8
    for suffix in ("", "_rev"):                               # E|C~|^2 = 2 (parts) x 1/2N: 1/N
        C_tilde = p["C_re" + suffix] + 1j * p["C_im" + suffix]
        assert abs(np.mean(np.abs(C_tilde) ** 2) * 32 - 1) < 0.08, suffix
    assert not np.array_equal(p["C_re"], p["C_re_rev"])
    assert np.all((p["log_step"] >= np.log(1e-3)) & (p["log_step"] <= np.log(1e-1)))
    assert abs(np.std(p["D"]) - 1) < 0.3


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_model_initialisation_follows_torch_defaults(norm):
    cfg = ModelConfig(mixer=LRUConfig(d_model=16, d_state=4), d_input=9, norm=norm)
    p = init(cfg, 0).params
    assert np.all(np.abs(p["encoder.weight"]) <= 1 / 3) and np.all(p["layers.1.norm.scale"] == 1)
    if norm == "batch":
        assert np.all(p["layers.0.norm.var"] == 1) and np.all(p["layers.0.norm.mean"] == 0)

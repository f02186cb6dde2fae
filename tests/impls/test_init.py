"""Each paper's initialisation (docs/models.md), checked on the numbers a seed gives."""

import numpy as np
import pytest

from linrnn.impls.tolerance import assert_close, tolerance

SLACK = tolerance("identity", "float64").rtol   # rounding of exp/log in the parameterisation

from linrnn.impls.config import DLRConfig, LRUConfig, ModelConfig, RotRNNConfig
from linrnn.impls.init import init
from linrnn.impls.reference import dlr, lru, rotrnn


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


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_model_initialisation_follows_torch_defaults(norm):
    cfg = ModelConfig(mixer=LRUConfig(d_model=16, d_state=4), d_input=9, norm=norm)
    p = init(cfg, 0).params
    assert np.all(np.abs(p["encoder.weight"]) <= 1 / 3) and np.all(p["layers.1.norm.scale"] == 1)
    if norm == "batch":
        assert np.all(p["layers.0.norm.var"] == 1) and np.all(p["layers.0.norm.mean"] == 0)

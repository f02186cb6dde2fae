"""RotRNN's spec (Biegun et al. 2024): `heads` rotation heads of state size `d_state`, one real read-out C."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import ModelSpec, check_bool, check_choice, check_float, check_int, log_uniform


@dataclass(frozen=True)
class RotRNNConfig:
    """One RotRNN layer: `heads` heads of state size `d_state`, mixed by one real `C` (Biegun et al. 2024)."""

    kind: ClassVar[str] = "rotrnn"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 8               # N: state size of ONE head; even (2x2 rotation blocks)
    heads: int = 8                 # number of heads; the layer's total state is heads * d_state
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    gamma_min: float = 0.9         # smallest initial decay gamma_h (code default)
    gamma_max: float = 0.999       # largest initial decay gamma_h (code default)
    max_phase: float = 2 * math.pi  # theta ~ U[0, max_phase] at initialisation
    m_init: str = "normal"         # "normal": M ~ N(0, 1) (newest code); "near_identity": N(0,1)/sqrt(N + heads*N)

    def __post_init__(self) -> None:
        for name in ("d_model", "d_state", "heads"):
            check_int(self, name)
        if self.d_state % 2:
            raise LinrnnError(f"RotRNNConfig.d_state: expected an even state size per head (2x2 blocks), "
                              f"found {self.d_state}")
        check_bool(self, "bidirectional")
        check_float(self, "gamma_min", 0.0, 1.0, low_open=True, high_open=True)
        check_float(self, "gamma_max", self.gamma_min, 1.0, high_open=True)
        check_float(self, "max_phase", 0.0, 1e6)
        check_choice(self, "m_init", ("normal", "near_identity"))


def shapes(cfg: RotRNNConfig) -> dict:
    H, N, heads = cfg.d_model, cfg.d_state, cfg.heads
    out = {"M": (heads, N, N), "theta": (heads, N // 2), "gamma_log": (heads,), "B": (heads, N, H),
           "C": (H, heads * N), "D": (H,)}
    if cfg.bidirectional:
        out["C_rev"] = (H, heads * N)
    return out


def init(cfg: RotRNNConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The paper's (authors' code) initialisation: theta ~ U[0, max_phase]; -log gamma log-uniform on [-log
    gamma_max, -log gamma_min]; M ~ N(0, 1) (or N(0, 1)/sqrt(N + heads*N), "near_identity"); B, C ~ N(0, 1)/sqrt(H +
    heads*N); D ~ N(0, 1)."""
    H, N, heads = cfg.d_model, cfg.d_state, cfg.heads
    # -log gamma is log-uniform, and gamma_log = log(-log gamma): uniform in log space
    neg_log_gamma = log_uniform(rng, -np.log(cfg.gamma_max), -np.log(cfg.gamma_min), heads)  # (heads,)
    m_scale = 1.0 if cfg.m_init == "normal" else 1.0 / np.sqrt(N + heads * N)
    glorot = 1.0 / np.sqrt(H + heads * N)
    params = {
        "M": rng.standard_normal((heads, N, N)) * m_scale,
        "theta": rng.uniform(0.0, cfg.max_phase, (heads, N // 2)),
        "gamma_log": np.log(neg_log_gamma),
        "B": rng.standard_normal((heads, N, H)) * glorot,
        "C": rng.standard_normal((H, heads * N)) * glorot,
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_rev"] = rng.standard_normal((H, heads * N)) * glorot
    return params


def task_defaults(n: int) -> dict:
    heads = 8                       # 8 heads of 2n/8 real dimensions: n rotation pairs in all (at least)
    d_state = 2 * n // heads
    return {"heads": heads, "d_state": d_state + d_state % 2,    # even: 2x2 blocks
            "gamma_min": 0.999, "gamma_max": 0.9999}


def validate(cfg: RotRNNConfig, p) -> None:
    """xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F needs ||B_h||_F > 0."""
    norms = np.sqrt(np.sum(p["B"] ** 2, axis=(1, 2)))  # (heads,)
    if np.any(norms == 0):
        head = int(np.flatnonzero(norms == 0)[0])
        raise LinrnnError(f"B: head {head} has ||B_h||_F = 0, so xi_h = sqrt(1 - gamma_h^2)/||B_h||_F "
                          f"is undefined")

def with_radius(cfg: RotRNNConfig, p, r: float) -> dict:
    """Every head's decay gamma_h = r."""
    return {"gamma_log": np.full_like(p["gamma_log"], np.log(-np.log(r)))}

SPEC = ModelSpec(
    kind="rotrnn", config=RotRNNConfig, shapes=shapes, recurrence_keys=("M", "theta", "gamma_log"), init=init,
    implementations={"reference": "linrnn.impls.reference.rotrnn", "torch": "linrnn.impls.torch.rotrnn:RotRNN",
                     "jax": "linrnn.impls.jax.rotrnn"},
    state=lambda cfg: ((cfg.heads, cfg.d_state), "float64"),
    crosscheck=lambda near_one, bi: {"gamma_max": 0.9999 if near_one else 0.999},
    variants={"heads": (2, 1, 4), "m_init": ("normal", "near_identity")},
    task_defaults=task_defaults,
    validate=validate,
    derived={"gamma_log": ("exp(gamma_log) = -log gamma", np.exp)},
    with_radius=with_radius,
)

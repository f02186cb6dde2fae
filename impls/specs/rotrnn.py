"""RotRNN's spec (Biegun et al. 2024): `heads` rotation heads of state size `d_state`, one real read-out C."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import RotRNNConfig
from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init_rotrnn
from linrnn.impls.specs import ModelSpec


def shapes(cfg: RotRNNConfig) -> dict:
    H, N, heads = cfg.d_model, cfg.d_state, cfg.heads
    out = {"M": (heads, N, N), "theta": (heads, N // 2), "gamma_log": (heads,), "B": (heads, N, H),
           "C": (H, heads * N), "D": (H,)}
    if cfg.bidirectional:
        out["C_rev"] = (H, heads * N)
    return out


def task_defaults(n: int) -> dict:
    heads = 8                       # 8 heads of 2n/8 real dimensions: n rotation pairs in all
    return {"heads": heads, "d_state": 2 * n // heads, "gamma_min": 0.999, "gamma_max": 0.9999}


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
    kind="rotrnn", config=RotRNNConfig, shapes=shapes, recurrence_keys=("M", "theta", "gamma_log"), init=init_rotrnn,
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

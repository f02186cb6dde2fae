"""The LRU's spec (Orvieto et al. 2023): a complex diagonal recurrence of `d_state` modes, ring initialisation."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import LRUConfig
from linrnn.impls.init import init_lru
from linrnn.impls.specs import ModelSpec


def shapes(cfg: LRUConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"nu_log": (N,), "theta_log": (N,), "gamma_log": (N,), "B_re": (N, H), "B_im": (N, H),
           "C_re": (H, N), "C_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def with_radius(cfg: LRUConfig, p, r: float) -> dict:
    """Every |lambda_j| = r; the input normalisation gamma_log = log sqrt(1 - r^2) follows, as the initialisation
    sets it."""
    return {"nu_log": np.full_like(p["nu_log"], np.log(-np.log(r))),
            "gamma_log": np.full_like(p["gamma_log"], 0.5 * np.log(-np.expm1(2 * np.log(r))))}

SPEC = ModelSpec(
    kind="lru", config=LRUConfig, shapes=shapes, recurrence_keys=("nu_log", "theta_log", "gamma_log"), init=init_lru,
    implementations={"reference": "linrnn.impls.reference.lru", "torch": "linrnn.impls.torch.lru:LRU",
                     "jax": "linrnn.impls.jax.lru"},
    state=lambda cfg: ((cfg.d_state,), "complex128"),
    crosscheck=lambda near_one, bi: {"r_min": 0.5, "r_max": 0.9999 if near_one else 0.99},
    readout=("C", (("C_re", "C_im"), ("C_re_rev", "C_im_rev")), 1),
    task_defaults=lambda n: {"d_state": n, "r_min": 0.999, "r_max": 0.9999},
    derived={"nu_log": ("exp(nu_log) = -log|lambda|", np.exp), "theta_log": ("exp(theta_log) = arg lambda", np.exp),
             "gamma_log": ("exp(gamma_log), the input normalisation", np.exp)},
    with_radius=with_radius,
)

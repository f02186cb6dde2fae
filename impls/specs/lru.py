"""The LRU's spec (Orvieto et al. 2023): a complex diagonal recurrence of `d_state` modes, ring initialisation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import ModelSpec, check_bool, check_float, check_int


@dataclass(frozen=True)
class LRUConfig:
    """One LRU layer: a complex diagonal recurrence of size `d_state` (Orvieto et al. 2023)."""

    kind: ClassVar[str] = "lru"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 64              # N: number of complex modes
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    r_min: float = 0.9             # ring initialisation: |lambda| in [r_min, r_max] (LRA setting of the paper)
    r_max: float = 0.999           # kept < 1 so that gamma_log = log sqrt(1 - |lambda|^2) stays finite
    max_phase: float = 2 * math.pi  # arg(lambda) ~ U[0, max_phase]

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "d_state")
        check_bool(self, "bidirectional")
        check_float(self, "r_min", 0.0, 1.0, high_open=True)
        check_float(self, "r_max", self.r_min, 1.0, high_open=True)
        if self.r_max <= 0.0:
            raise LinrnnError(f"LRUConfig.r_max: expected a value in (0, 1), found {self.r_max}")
        check_float(self, "max_phase", 0.0, 1e6, low_open=True)


def shapes(cfg: LRUConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"nu_log": (N,), "theta_log": (N,), "gamma_log": (N,), "B_re": (N, H), "B_im": (N, H),
           "C_re": (H, N), "C_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def init(cfg: LRUConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The paper's (authors' code) initialisation: ring initialisation, |lambda|^2 ~ U[r_min^2, r_max^2], arg
    lambda ~ U[0, max_phase]; gamma_log = log sqrt(1 - |lambda|^2); B ~ (N(0,1) + i N(0,1))/sqrt(2H); C ~ (N(0,1) + i
    N(0,1))/sqrt(N)."""
    H, N = cfg.d_model, cfg.d_state
    u1 = rng.uniform(0.0, 1.0, N)
    u2 = rng.uniform(0.0, 1.0, N)
    abs_sq = u1 * (cfg.r_max ** 2 - cfg.r_min ** 2) + cfg.r_min ** 2   # |lambda|^2, uniform on the ring
    abs_sq = np.maximum(abs_sq, np.finfo(np.float64).tiny)             # r_min = 0 and u1 = 0: keep nu_log finite
    phase = np.maximum(cfg.max_phase * u2, np.finfo(np.float64).tiny)  # u2 = 0: keep theta_log finite
    params = {
        "nu_log": np.log(-0.5 * np.log(abs_sq)),
        "theta_log": np.log(phase),
        "gamma_log": 0.5 * np.log(1.0 - abs_sq),                        # log sqrt(1 - |lambda|^2)
        "B_re": rng.standard_normal((N, H)) / np.sqrt(2 * H),
        "B_im": rng.standard_normal((N, H)) / np.sqrt(2 * H),
        "C_re": rng.standard_normal((H, N)) / np.sqrt(N),
        "C_im": rng.standard_normal((H, N)) / np.sqrt(N),
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_re_rev"] = rng.standard_normal((H, N)) / np.sqrt(N)
        params["C_im_rev"] = rng.standard_normal((H, N)) / np.sqrt(N)
    return params


def with_radius(cfg: LRUConfig, p, r: float) -> dict:
    """Every |lambda_j| = r; the input normalisation gamma_log = log sqrt(1 - r^2) follows, as the initialisation
    sets it."""
    return {"nu_log": np.full_like(p["nu_log"], np.log(-np.log(r))),
            "gamma_log": np.full_like(p["gamma_log"], 0.5 * np.log(-np.expm1(2 * np.log(r))))}

SPEC = ModelSpec(
    kind="lru", config=LRUConfig, shapes=shapes, recurrence_keys=("nu_log", "theta_log", "gamma_log"), init=init,
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

"""A seventh model, written as a newcomer would add one: a spec and one small implementation per side.

`tests/models/test_seventh_model.py` copies this file into a temporary package and registers its spec; the
cross-check, `linrnn conform` (its radius checks through `with_radius`), `linrnn train` in both frameworks,
`linrnn tasks grid` and the precision map must then pick it up with no other edit to the project. Its decay fields
have names of its own (`decay_min`, `decay_max`), none of another model's.

The model ("toy"): a real diagonal recurrence with decays |lambda_n| uniform in [decay_min, decay_max],

    x_t = lambda * x_{t-1} + B u_t,     y_t = C x_t + D u_t
    bidirectional:  y_t += C_rev x_bwd_t,   x_bwd_t = lambda x_bwd_{t+1} + B u_t

with raw parameters `log_decay` (lambda = exp(-exp(log_decay))), B (N H), C (H N), D (H,), C_rev (H N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import ModelSpec

PLANTED = {"torch_D": 1.0}   # a test multiplies the PyTorch side's D by this to plant a bug


@dataclass(frozen=True)
class ToyConfig:
    kind: ClassVar[str] = "toy"
    d_model: int = 4
    d_state: int = 4
    bidirectional: bool = False
    decay_min: float = 0.5
    decay_max: float = 0.99

    def __post_init__(self) -> None:
        if not (0 < self.decay_min <= self.decay_max < 1):
            raise LinrnnError(f"ToyConfig.decay_max: expected 0 < decay_min <= decay_max < 1, found {self.decay_min}, "
                              f"{self.decay_max}")


def shapes(cfg: ToyConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"log_decay": (N,), "B": (N, H), "C": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out["C_rev"] = (H, N)
    return out


def init(cfg: ToyConfig, rng: np.random.Generator) -> dict:
    H, N = cfg.d_model, cfg.d_state
    r = rng.uniform(cfg.decay_min, cfg.decay_max, N)
    out = {"log_decay": np.log(-np.log(r)), "B": rng.standard_normal((N, H)) / math.sqrt(H),
           "C": rng.standard_normal((H, N)) / math.sqrt(N), "D": rng.standard_normal(H)}
    if cfg.bidirectional:
        out["C_rev"] = rng.standard_normal((H, N)) / math.sqrt(N)
    return out


def with_radius(cfg: ToyConfig, p, r: float) -> dict:
    """Every decay |lambda_n| = exp(-exp(log_decay_n)) = r."""
    return {"log_decay": np.full_like(p["log_decay"], np.log(-np.log(r)))}


def task_defaults(n: int) -> dict:
    """Its training defaults at n modes (`linrnn train`, `linrnn tasks grid`): n decays reaching 0.999."""
    return {"d_state": n, "decay_min": 0.9, "decay_max": 0.999}


def spec(package: str) -> ModelSpec:
    return ModelSpec(
        kind="toy", config=ToyConfig, shapes=shapes, recurrence_keys=("log_decay",), init=init,
        implementations={"reference": f"{package}.reference", "torch": f"{package}.torch_side:Toy",
                         "jax": f"{package}.jax_side"},
        state=lambda cfg: ((cfg.d_state,), "float64"),
        crosscheck=lambda near_one, bi: {"decay_max": 0.9999 if near_one else 0.99},
        with_radius=with_radius,
        task_defaults=task_defaults,
    )


# -- the reference (float64 NumPy), on the references' shared recurrence and convolutions --------------------

REFERENCE = '''
import numpy as np
from linrnn.impls.reference.conv import anticausal_conv, causal_conv, resets
from linrnn.impls.reference.recurrence import diagonal_scan


def decays(p):
    return np.exp(-np.exp(p["log_decay"]))


def sequential(p, cfg, u, x0=None, segments=None):
    lam, drive = decays(p), u @ p["B"].T
    x0 = np.zeros((u.shape[0], cfg.d_state)) if x0 is None else x0
    forward, backward = resets(segments)                       # packed sequences: restart where a segment begins
    states = diagonal_scan(lam, drive, x0, forward)
    y = states @ p["C"].T + p["D"] * u
    if cfg.bidirectional:
        back = diagonal_scan(lam, drive[:, ::-1], np.zeros_like(x0), backward)[:, ::-1]
        y = y + back @ p["C_rev"].T
    return y, states[:, -1]


def kernel(p, L, C):
    powers = decays(p)[None, :] ** np.arange(L)[:, None]                        # (L N)
    return np.einsum("hn,ln,nk->lhk", C, powers, p["B"])                        # (L H H)


def conv(p, cfg, u, segments=None):
    L = u.shape[1]
    y = causal_conv(kernel(p, L, p["C"]), u, segments) + p["D"] * u
    if cfg.bidirectional:
        y = y + anticausal_conv(kernel(p, L, p["C_rev"]), u, segments)
    return y


def spectral_radius(p, cfg):
    return float(np.max(decays(p)))
'''

# -- PyTorch: the diagonal machinery of the LRU and S5 (`diagonal.py`), with real eigenvalues ----------------

TORCH = '''
import torch
from linrnn.impls.torch import diagonal
from linrnn.impls.torch.diagonal import DiagonalForm
from linrnn.impls.torch.diagonal import pairs
from {package}.spec import ToyConfig, PLANTED


class Toy(diagonal.DiagonalMixer):
    config_type = ToyConfig

    def materialise(self):
        log_lam = torch.complex(-torch.exp(self.log_decay), torch.zeros_like(self.log_decay))
        W_in = pairs(self.B, torch.zeros_like(self.B), dim=0)
        W_out = pairs(self.C, torch.zeros_like(self.C), dim=1)
        W_rev = pairs(self.C_rev, torch.zeros_like(self.C_rev), dim=1) if self.config.bidirectional else None
        return DiagonalForm.build(log_lam, W_in, W_out, W_rev, self.D * PLANTED["torch_D"])

    def to_native(self, f, state, batch):
        self.check_state(state, (batch, self.config.d_state), self.dtype)
        return torch.stack([state, torch.zeros_like(state)], dim=-1)

    def from_native(self, f, x):
        return x[..., 0]
'''

# -- JAX: the diagonal machinery of the LRU, with real eigenvalues -------------------------------------

JAX = '''
import jax.numpy as jnp
from jax import lax
from linrnn.impls.jax import diagonal

STATE_IS_COMPLEX = False


def materialise(p, cfg):
    zeros = jnp.zeros_like
    log_lam = lax.complex(-jnp.exp(p["log_decay"]), zeros(p["log_decay"]))
    rev = (p["C_rev"], zeros(p["C_rev"])) if cfg.bidirectional else (None, None)
    return diagonal.Diagonal(log_lam, p["B"], zeros(p["B"]), p["C"], zeros(p["C"]), p["D"], *rev)


def state_shape(cfg):
    return (cfg.d_state,)


def to_native(sys, x):
    return lax.complex(x, jnp.zeros_like(x))


def from_native(sys, z):
    return z.real


def run(sys, cfg, u, z0, mode):
    return diagonal.run(sys, u, z0, mode, cfg.bidirectional)


def step(sys, cfg, u_t, z):
    return diagonal.step(sys, u_t, z)
'''

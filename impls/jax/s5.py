"""S5, JAX (Smith, Warrington, Linderman 2023; docs/models.md): a complex diagonal recurrence, as `diagonal.Diagonal`.

    Lambda = Lambda_re + i Lambda_im  (clip_eigs: min(Lambda_re, -1e-4)),   Delta = exp(log_step)   (N,)
    zoh:       Lambda_bar = exp(Lambda Delta),                          B_bar = (Lambda_bar - 1)/Lambda B~
    bilinear:  Lambda_bar = (1 + Delta Lambda/2)/(1 - Delta Lambda/2),  B_bar = Delta/(1 - Delta Lambda/2) B~
    x_t = Lambda_bar * x_{t-1} + B_bar u_t,      y_t = 2 Re(C~ x_t) + D * u_t
    bidirectional:  y_t += 2 Re(C~_rev x_bwd_t),  x_bwd_t = Lambda_bar x_bwd_{t+1} + B_bar u_t

Once discretised, S5 is the LRU's system (`lru.py`): log lambda = Lambda Delta (zoh) or
2 atanh(Delta Lambda / 2) (bilinear), B = B_bar, C = 2 C~. So the routes per mode (the associative
scan with its own VJP, the Pallas kernel on a GPU, the state-domain FFT, `step`) and the state, (N,)
complex per sequence, are the LRU's (`lanes.py`, as the LRU's own).
"""

from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
from jax import lax

from linrnn.impls.jax import diagonal
from linrnn.impls.jax.lanes import STATE_IS_COMPLEX, from_native, run, state_shape, step, to_native  # noqa: F401
from linrnn.impls.specs.s5 import S5Config

Params = Mapping[str, jnp.ndarray]


def discretise(p: Params, cfg: S5Config) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(log Lambda_bar (N,) complex, the per-mode factor of B_bar (N,) complex: B_bar = factor * B~).

    ZOH's factor is expm1(Lambda Delta)/Lambda: the difference exp - 1 would cancel for small |Lambda Delta|.
    """
    real = jnp.minimum(p["Lambda_re"], cfg.CLIP_RE) if cfg.clip_eigs else p["Lambda_re"]
    Lambda = lax.complex(real, p["Lambda_im"])                                 # (N,)
    delta = jnp.exp(p["log_step"])                                             # (N,)
    if cfg.discretization == "zoh":
        log_lam = lax.complex(real * delta, p["Lambda_im"] * delta)            # Lambda Delta
        return log_lam, jnp.expm1(log_lam) / Lambda
    half = lax.complex(real * delta / 2, p["Lambda_im"] * delta / 2)          # Delta Lambda / 2
    return 2 * jnp.arctanh(half), delta.astype(half.dtype) / (1 - half)


def materialise(p: Params, cfg: S5Config) -> diagonal.Diagonal:
    """Raw parameters -> the diagonal system: log Lambda_bar, B_bar, 2 C~ (and 2 C~_rev)."""
    log_lam, factor = discretise(p, cfg)
    B_bar = factor[:, None] * lax.complex(p["B_re"], p["B_im"])               # (N H)
    rev = (2 * p["C_re_rev"], 2 * p["C_im_rev"]) if cfg.bidirectional else (None, None)
    return diagonal.Diagonal(log_lam, B_bar.real, B_bar.imag, 2 * p["C_re"], 2 * p["C_im"], p["D"], *rev)

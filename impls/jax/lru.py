"""LRU, JAX (Orvieto et al. 2023; docs/models.md): a complex diagonal recurrence, run as `diagonal.Diagonal`.

    lambda_j = exp(-exp(nu_log_j) + i exp(theta_log_j))
    x_t      = lambda * x_{t-1} + exp(gamma_log) * (B u_t),      x_0 = 0,   B = B_re + i B_im
    y_t      = Re(C x_t) + D * u_t,                               C = C_re + i C_im
    bidirectional:  y_t += Re(C_rev x_bwd_t),  x_bwd_t = lambda x_bwd_{t+1} + exp(gamma_log) B u_t

Routes per mode (`scan.py`, `diagonal.py`); the state is the reference's, (N,) complex per sequence (its
functions: `lanes.py`):

* `sequential`: `lax.scan` over the complex lanes;
* `scan`: the layer over time in blocks (`diagonal.run`, `scan.blocked`): a backward that re-runs one
  block's projection and scan at a time, `lax.scan` inside a block on a CPU (on a GPU the Pallas kernel,
  `scan.block_scan`; the PyTorch side uses a chunked two-level scan);
* `conv`: FFT convolution in the state domain, x = (lambda^l)_l * (gamma B u), then Re(C x). The
  reference convolves u with the H x H kernel K_l = Re(C diag(lambda^l gamma) B) instead: same kernel,
  factored through the diagonal (B L N work instead of L H^2). It also returns the final state and
  accepts an initial one (x_t += lambda^(t+1) x0);
* `step`: one position, O(N H).
"""

from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
from jax import lax

from linrnn.impls.jax import diagonal
from linrnn.impls.jax.lanes import STATE_IS_COMPLEX, from_native, run, state_shape, step, to_native  # noqa: F401
from linrnn.impls.specs.lru import LRUConfig

Params = Mapping[str, jnp.ndarray]


def materialise(p: Params, cfg: LRUConfig) -> diagonal.Diagonal:
    """Raw parameters -> the diagonal system: log lambda, gamma B, C (and C_rev)."""
    log_lam = lax.complex(-jnp.exp(p["nu_log"]), jnp.exp(p["theta_log"]))   # (N,)
    gamma = jnp.exp(p["gamma_log"])[:, None]                                   # (N 1)
    rev = (p["C_re_rev"], p["C_im_rev"]) if cfg.bidirectional else (None, None)
    return diagonal.Diagonal(log_lam, gamma * p["B_re"], gamma * p["B_im"], p["C_re"], p["C_im"], p["D"], *rev)

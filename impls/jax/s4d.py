"""S4D, JAX (Gu, Gupta, Goel, Re 2022; the s4 repo's `S4DKernel`; docs/models.md): depthwise, N modes per channel.

    lambda     = exp(dt A),   dt_h = exp(log_dt_h),   A = -exp(log_A_real) + i A_imag      (H N)
    C~         = 2 C (exp(dt A) - 1) / A                  (exp(dt A) - 1 as expm1: no cancellation at small dt A)
    x_{t,h,n}  = lambda_{h,n} x_{t-1,h,n} + u_{t,h}        (recurrent view, state H x N)
    K_{h,l}    = Re(sum_n C~_{h,n} lambda_{h,n}^l)         (kernel view)
    y_{t,h}    = sum_{l<=t} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}   (future only; lag 0 is counted once)

Routes per mode (one sequence here; `layer.apply` vmaps over the batch). The recurrence runs on H N
complex lanes, lane (h, n) fed by u_{t,h}:

* `sequential`: `scan.sequential` (`lax.scan`) on the lanes, then the read-out Re(sum_n C~ x);
* `scan`: `scan.device_scan` on the lanes (the associative scan with the adjoint VJP; Pallas on a GPU);
* `conv`: lambda^l = exp(l dt A) for l <= L, the kernel K (L H) and a zero-padded real FFT
  (`scan.causal_fft_conv`), plus the free response Re(C~ lambda^(t+1) x0) of the initial state; the
  final state is sum_s lambda^(L-1-s) u_s + lambda^L x0;
* `step`: one position, O(H N).

The backward direction runs the causal route on the time-reversed input u_{t+1}.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

import jax.numpy as jnp
from jax import lax

from linrnn.impls.config import S4DConfig
from linrnn.impls.jax.dlr import STATE_IS_COMPLEX, from_native, state_shape, to_native  # noqa: F401  (DLR's (H, N) state)
from linrnn.impls.jax.scan import ROUTES, causal_fft_conv, exponents, powers

Params = Mapping[str, jnp.ndarray]


class S4DSystem(NamedTuple):
    """A materialised S4D layer."""

    log_lam: jnp.ndarray              # (H N) complex   dt A
    C: jnp.ndarray                    # (H N) complex   C~ = 2 C (exp(dt A) - 1) / A
    D: jnp.ndarray                    # (H,)
    C_rev: Optional[jnp.ndarray]      # (H N) complex or None


def materialise(p: Params, cfg: S4DConfig) -> S4DSystem:
    dt = jnp.exp(p["log_dt"])[:, None]                                      # (H 1)
    A_real = -jnp.exp(p["log_A_real"])
    A = lax.complex(A_real, p["A_imag"])                                    # (H N)
    dtA = lax.complex(dt * A_real, dt * p["A_imag"])
    zoh = jnp.expm1(dtA) / A

    def weights(re, im):
        return 2 * lax.complex(re, im) * zoh

    C_rev = weights(p["C_re_rev"], p["C_im_rev"]) if cfg.bidirectional else None
    return S4DSystem(dtA, weights(p["C_re"], p["C_im"]), p["D"], C_rev)



def _future(u: jnp.ndarray) -> jnp.ndarray:
    """u_{t+1} at position t (zero at the end): the input of the backward state z_t = lambda z_{t+1} + u_{t+1}."""
    return jnp.concatenate([u[1:], jnp.zeros_like(u[:1])])


def _read_out(C: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """Re(sum_n C_{h,n} x_{h,n}), a product over n (no (... H N) temporary).     x (... H N) -> (... H)"""
    return jnp.einsum("...hn,hn->...h", x, C).real


# -- the recurrent views on the H N lanes ---------------------------------------------------------

def _lanes(route, log_lam: jnp.ndarray, u: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_t = lambda x_{t-1} + u_t on every lane (h, n) by `route`.     u (L H), x0 (H N) -> states (L H N)"""
    L, (H, N) = u.shape[0], log_lam.shape
    v = jnp.broadcast_to(u[:, :, None], (L, H, N)).astype(x0.dtype).reshape(L, H * N)
    return route(log_lam.reshape(-1), v, x0.reshape(-1)).reshape(L, H, N)


def recurrent(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray, mode: str):
    """Mode 'sequential' or 'scan'.     u (L H), x0 (H N) complex -> y (L H), x_L (H N)"""
    route = ROUTES[mode]
    states = _lanes(route, sys.log_lam, u, x0)                              # (L H N)
    y = _read_out(sys.C, states) + sys.D * u
    if cfg.bidirectional:
        backward = _lanes(route, sys.log_lam, _future(u)[::-1], jnp.zeros_like(x0))[::-1]
        y = y + _read_out(sys.C_rev, backward)
    return y, states[-1]


# -- the kernel view ------------------------------------------------------------------------------

def conv(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """The kernel by FFT and the free response of x0.     u (L H), x0 (H N) complex -> y (L H), x_L (H N)"""
    L = u.shape[0]
    p = powers(sys.log_lam.reshape(-1), exponents(0, L + 1, sys.log_lam)).reshape((L + 1,) + x0.shape)  # lambda^l
    y = causal_fft_conv(_read_out(sys.C, p[:L]), u) + sys.D * u + _read_out(sys.C * x0, p[1:])
    if cfg.bidirectional:
        y = y + causal_fft_conv(_read_out(sys.C_rev, p[:L]), _future(u)[::-1])[::-1]
    # the final state: sum_s lambda^(L-1-s) u_s + lambda^L x0
    return y, jnp.einsum("sh,shn->hn", u.astype(p.dtype), p[:L][::-1]) + p[L] * x0


def run(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray, mode: str):
    """One sequence by the route of `mode`.     u (L H), x0 (H N) complex -> y (L H), x_L (H N)"""
    if mode == "conv":
        return conv(sys, cfg, u, x0)
    return recurrent(sys, cfg, u, x0, mode)


def step(sys: S4DSystem, cfg: S4DConfig, u_t: jnp.ndarray, x: jnp.ndarray):
    """One position.     u_t (H,), x (H N) -> y_t (H,), x (H N)"""
    x = jnp.exp(sys.log_lam) * x + u_t[:, None].astype(x.dtype)
    return _read_out(sys.C, x) + sys.D * u_t, x

"""S4D, JAX (Gu, Gupta, Goel, Re 2022; the s4 repo's `S4DKernel`; docs/models.md): depthwise, N modes per channel.

    lambda     = exp(dt A),   dt_h = exp(log_dt_h),   A = -exp(log_A_real) + i A_imag      (H N)
    C~         = 2 C (exp(dt A) - 1) / A                  (exp(dt A) - 1 as expm1: no cancellation at small dt A)
    x_{t,h,n}  = lambda_{h,n} x_{t-1,h,n} + u_{t,h}        (recurrent view, state H x N)
    K_{h,l}    = Re(sum_n C~_{h,n} lambda_{h,n}^l)         (kernel view)
    y_{t,h}    = sum_{l<=t} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}   (future only; lag 0 is counted once)

Routes per mode (`run_batch`: the whole batch; `sequential` vmapped over it, `scan` and `conv` on it). The recurrence runs on H N
complex lanes, lane (h, n) fed by u_{t,h}: DLR's recurrence with eigenvalues per channel, so the `scan`
and `conv` routes are DLR's (`depthwise.py`, which both run), given S4D's (H N) eigenvalues and C~ as the read-out weights:

* `sequential`: `scan.sequential` (`lax.scan`) on the lanes, then the read-out Re(sum_n C~ x) (the naive
  path, differentiated by plain autodiff: it keeps the (L H N) trajectory);
* `scan`: `depthwise.chunkwise`: chunks of T positions (a T x T Toeplitz product inside, the (H N) state carried
  across), over time in blocks whose forward the backward recomputes (`scan.blocked`). It replaced the
  associative scan on the H N lanes, whose training step kept (L H N) complex arrays: XLA's account at
  B = 8, L = 4096, H = N = 128 fell from 1,796 to 9.6 B L H 4 bytes (4.05 at L = 65536; docs/speed.md);
* `conv`: the kernel K (L H) by `depthwise.kernel` (blocks of lags, each block's powers exp(l dt A)
  recomputed in the backward) and a zero-padded real FFT (`scan.causal_fft_conv`), plus the free
  response Re(C~ lambda^(t+1) x0) of the initial state the same way; the final state
  sum_s lambda^(L-1-s) u_s + lambda^L x0 in blocks of lags too;
* `step`: one position, O(H N).

The backward direction runs the causal route on the time-reversed input u_{t+1}.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.jax import depthwise, scan
from linrnn.impls.jax.depthwise import STATE_IS_COMPLEX, from_native, state_shape, to_native  # noqa: F401  ((H, N) state)
from linrnn.impls.jax.scan import exponents, powers

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



def _read_out(C: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """Re(sum_n C_{h,n} x_{h,n}), a product over n (no (... H N) temporary).     x (... H N) -> (... H)"""
    return jnp.einsum("...hn,hn->...h", x, C).real


# -- the recurrent views on the H N lanes ---------------------------------------------------------

def _lanes(route, log_lam: jnp.ndarray, u: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_t = lambda x_{t-1} + u_t on every lane (h, n) by `route`.     u (L H), x0 (H N) -> states (L H N)"""
    L, (H, N) = u.shape[0], log_lam.shape
    v = jnp.broadcast_to(u[:, :, None], (L, H, N)).astype(x0.dtype).reshape(L, H * N)
    return route(log_lam.reshape(-1), v, x0.reshape(-1)).reshape(L, H, N)


def sequential(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """Mode 'sequential': `lax.scan` on the lanes, then the read-out.     u (L H), x0 (H N) -> y (L H), x_L (H N)"""
    states = _lanes(scan.sequential, sys.log_lam, u, x0)                    # (L H N)
    y = _read_out(sys.C, states) + sys.D * u
    if cfg.bidirectional:
        backward = _lanes(scan.sequential, sys.log_lam, depthwise.backward_inputs(u)[::-1], jnp.zeros_like(x0))[::-1]
        y = y + _read_out(sys.C_rev, backward)
    return y, states[-1]


def chunkwise(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """Mode 'scan': DLR's chunkwise scan in blocks with S4D's per-channel eigenvalues, on the whole batch.

    u (B L H), x0 (B H N) -> y (B L H), x_L (B H N)
    """
    rev = (sys.C_rev.real, sys.C_rev.imag) if cfg.bidirectional else None
    return depthwise.chunkwise(sys.log_lam, (sys.C.real, sys.C.imag), rev, sys.D, u, x0)


# -- the kernel view ------------------------------------------------------------------------------

def _final_state(log_lam: jnp.ndarray, u: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_L = sum_s lambda^(L-1-s) u_s + lambda^L x0, in blocks of lags recomputed in the backward (no (L H N) array).

    u (B L H), x0 (B H N) -> (B H N)
    """
    B, L, H = u.shape
    size = min(depthwise.kernel_chunk(log_lam), L)
    n_blocks = -(-L // size)
    lagged = jnp.pad(u[:, ::-1], ((0, 0), (0, n_blocks * size - L), (0, 0)))   # (B L' H)  u_{L-1-l} at lag l

    def block(first):
        p = powers(log_lam.reshape(-1), exponents(first, size, log_lam)).reshape((size,) + log_lam.shape)
        u_b = lax.dynamic_slice_in_dim(lagged, first, size, axis=1)            # (B size H)
        return lax.complex(jnp.einsum("lhn,blh->bhn", p.real, u_b), jnp.einsum("lhn,blh->bhn", p.imag, u_b))

    firsts = jnp.arange(n_blocks, dtype=jnp.int32) * size
    parts = lax.map(jax.checkpoint(block), firsts)                          # (n_blocks B H N)
    return jnp.sum(parts, axis=0) + jnp.exp(L * log_lam) * x0


def conv(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """The kernel by FFT (`depthwise.convolve`) and the free response of x0.     u (B L H), x0 (B H N) complex
    -> y (B L H), x_L (B H N)

    The kernel K_l and the free response Re(C~ lambda^(t+1) x0) are `depthwise.kernel` with S4D's (H N) eigenvalues,
    in blocks of lags (no (L H N) array of powers, whose autodiff kept it for the backward); one kernel for the
    batch.
    """
    L = u.shape[1]

    def taps(C, start=0):
        return depthwise.kernel(sys.log_lam, C.real, C.imag, L, start)            # (L H), or (B L H) for C (B H N)

    K_rev = taps(sys.C_rev) if cfg.bidirectional else None
    y = depthwise.convolve(taps(sys.C), K_rev, u) + sys.D * u + taps(sys.C * x0, 1)
    return y, _final_state(sys.log_lam, u, x0)


def run_batch(sys: S4DSystem, cfg: S4DConfig, u: jnp.ndarray, x0: jnp.ndarray, mode: str):
    """The whole batch by the route of `mode` (`layer` calls this rather than vmapping a one-sequence `run`):
    'sequential' is vmapped over it, 'scan' and 'conv' run on it (the FFT mapped over its sequences).

    u (B L H), x0 (B H N) complex -> y (B L H), x_L (B H N)
    """
    if mode == "sequential":
        return jax.vmap(lambda u1, x1: sequential(sys, cfg, u1, x1))(u, x0)
    return (conv if mode == "conv" else chunkwise)(sys, cfg, u, x0)


def step(sys: S4DSystem, cfg: S4DConfig, u_t: jnp.ndarray, x: jnp.ndarray):
    """One position.     u_t (H,), x (H N) -> y_t (H,), x (H N)"""
    x = jnp.exp(sys.log_lam) * x + u_t[:, None].astype(x.dtype)
    return _read_out(sys.C, x) + sys.D * u_t, x

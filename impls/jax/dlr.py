"""DLR, JAX (Gupta, Mehta, Berant 2022; docs/models.md): N eigenvalues shared by H channels, depthwise.

    lambda_n  = exp(-a_n^2 + i theta_n)
    x_{t,h,n} = lambda_n x_{t-1,h,n} + u_{t,h}                 (recurrent view, state H x N)
    K_{h,l}   = Re(sum_n W_{h,n} lambda_n^l),  l < L_k          (kernel view, L_k = min(max_kernel_length, L))
    y_{t,h}   = sum_{l<=t, l<L_k} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}   (future only; lag 0 counted once, causally)

Routes per mode (one sequence here; `layer.apply` vmaps over the batch), with the depthwise machinery S4D shares in
`depthwise.py` (the constants `CHUNK`, `KERNEL_CHUNK`, `BLOCKS` named below are its):

* `sequential`: `lax.scan` over the (H N) state with the read-out Re(W x_t) inside the step, so the
  (L H N) trajectory is never stored;
* `scan`: chunkwise (chunks of T = `CHUNK` positions): inside a chunk the output is a dense causal
  T x T Toeplitz product with the first T kernel taps (the matrix built once per call); across chunks
  the (H N) state S_c = lambda^T S_{c-1} + sum_tau lambda^(T-1-tau) u_tau is carried by a `lax.scan` over
  the chunks (a diagonal recurrence on H N lanes) and read out as Re(sum_n lambda_n^(t+1) (W S_{c-1})_{h,n}).
  All but the carry are GEMMs. The whole runs over time in blocks of about L / `BLOCKS` positions
  (`scan.blocked`): the backward keeps u and the (H N) state entering each block, and re-runs one block's
  forward at a time; plain autodiff of the chunkwise route kept several (L/T H N) arrays (32 B L H 4 bytes
  at L = 4096, docs/speed-log.md, "2026-12-03: JAX, a chunked backward");
* `conv`: the kernel K computed as Re(exp(l log lambda) W^T) in chunks of `KERNEL_CHUNK` lags
  (`lax.map`; never an N x L matrix), then a zero-padded real FFT of length >= L + L_k;
* `step`: one position, O(H N).

The recurrent views (sequential, scan, step) equal the kernel view only while L <= L_k; `layer`
refuses them otherwise, like the reference. `conv` takes no initial state and returns none.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from linrnn.impls.jax.depthwise import (STATE_IS_COMPLEX, backward_inputs, chunkwise, convolve,  # noqa: F401
                                        from_native, kernel, loop, state_shape, to_native)
from linrnn.impls.specs.dlr import DLRConfig

Params = Mapping[str, jnp.ndarray]


class DLRSystem(NamedTuple):
    """A materialised DLR layer."""

    log_lam: jnp.ndarray              # (N,) complex   -a^2 + i theta
    W_re: jnp.ndarray                 # (H N)
    W_im: jnp.ndarray                 # (H N)
    D: jnp.ndarray                    # (H,)
    W_re_rev: Optional[jnp.ndarray]   # (H N) or None
    W_im_rev: Optional[jnp.ndarray]   # (H N) or None


def materialise(p: Params, cfg: DLRConfig) -> DLRSystem:
    log_lam = lax.complex(-p["a"] ** 2, p["theta"])
    rev = (p["W_re_rev"], p["W_im_rev"]) if cfg.bidirectional else (None, None)
    return DLRSystem(log_lam, p["W_re"], p["W_im"], p["D"], *rev)


# the state (H, N) complex and its conversions: `depthwise.py`'s
CONV_TAKES_STATE = False   # the conv mode here is the kernel alone (no free response of a state)


# -- the kernel view ------------------------------------------------------------------------------

def conv(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray) -> jnp.ndarray:
    """y = K * u + D u (+ the strictly anti-causal K^rev): the kernels once, then `convolve`.     u (B L H) -> (B L H)"""
    Lk = cfg.kernel_length(u.shape[1])
    K_rev = kernel(sys.log_lam, sys.W_re_rev, sys.W_im_rev, Lk) if cfg.bidirectional else None
    return convolve(kernel(sys.log_lam, sys.W_re, sys.W_im, Lk), K_rev, u) + sys.D * u


# -- the recurrent views ----------------------------------------------------------------------------

def sequential(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """One step at a time.     u (L H), x0 (H N) complex -> y (L H), x_L (H N)"""
    y, x_last = loop(sys.log_lam, sys.W_re, sys.W_im, u, x0)
    y = y + sys.D * u
    if cfg.bidirectional:
        y_rev, _ = loop(sys.log_lam, sys.W_re_rev, sys.W_im_rev, backward_inputs(u), jnp.zeros_like(x0),
                        reverse=True)
        y = y + y_rev
    return y, x_last


def scan(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """Chunkwise, over time in blocks (`scan.blocked`: each block's forward recomputed in its backward).

    u (B L H), x0 (B H N) complex -> y (B L H), x_L (B H N)
    """
    rev = (sys.W_re_rev, sys.W_im_rev) if cfg.bidirectional else None
    return chunkwise(sys.log_lam, (sys.W_re, sys.W_im), rev, sys.D, u, x0)


def run_batch(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray, mode: str):
    """The whole batch by the route of `mode` (`layer` calls this rather than vmapping a one-sequence `run`):
    'sequential' is vmapped over it, 'scan' runs on it, 'conv' maps the FFT over its sequences.

    u (B L H), x0 (B H N) -> y (B L H), x_L (B H N) or None for 'conv'
    """
    if mode == "sequential":
        return jax.vmap(lambda u1, x1: sequential(sys, cfg, u1, x1))(u, x0)
    return (conv(sys, cfg, u), None) if mode == "conv" else scan(sys, cfg, u, x0)


def step(sys: DLRSystem, cfg: DLRConfig, u_t: jnp.ndarray, x: jnp.ndarray):
    """One position.     u_t (H,), x (H N) -> y_t (H,), x (H N)"""
    x = jnp.exp(sys.log_lam) * x + u_t[:, None].astype(x.dtype)
    y_t = jnp.sum(sys.W_re * x.real - sys.W_im * x.imag, axis=-1) + sys.D * u_t
    return y_t, x

"""The complex diagonal layer under RotRNN and LRU, JAX: projection -> diagonal recurrence -> read-out.

Both mixers materialise their raw parameters into one `Diagonal` system (RotRNN through its rotated
basis, each 2x2 block a complex lane; LRU directly):

    v_t = B u_t                       B = B_re + i B_im      (N H), u_t real (H,)
    x_t = lambda * x_{t-1} + v_t      lambda = exp(log_lam)  (N,)       `scan.ROUTES[mode]`
    y_t = Re(C x_t) + D * u_t         C = C_re + i C_im      (H N)
    bidirectional:  y_t += Re(C_rev x_bwd_t),  x_bwd_t = lambda * x_bwd_{t+1} + v_t  (current input included)

The projections are real GEMMs on the real and imaginary parts (XLA's CPU complex GEMM measured
about 3x slower than two real ones). Everything here is for one sequence; `layer.apply` vmaps it.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax.numpy as jnp
from jax import lax

from linrnn.impls.jax import scan


class Diagonal(NamedTuple):
    """A materialised complex diagonal layer (real arrays, one dtype; `log_lam` complex)."""

    log_lam: jnp.ndarray             # (N,) complex    log lambda
    B_re: jnp.ndarray                # (N H)
    B_im: jnp.ndarray                # (N H)
    C_re: jnp.ndarray                # (H N)
    C_im: jnp.ndarray                # (H N)
    D: jnp.ndarray                   # (H,)
    C_re_rev: Optional[jnp.ndarray]  # (H N) or None (unidirectional)
    C_im_rev: Optional[jnp.ndarray]  # (H N) or None


def project(sys: Diagonal, u: jnp.ndarray) -> jnp.ndarray:
    """v_t = B u_t.     u (L H) real -> v (L N) complex"""
    return lax.complex(u @ sys.B_re.T, u @ sys.B_im.T)


def read_out(C_re: jnp.ndarray, C_im: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """Re(C x_t).     x (L N) complex -> (L H) real"""
    return x.real @ C_re.T - x.imag @ C_im.T


def run(sys: Diagonal, u: jnp.ndarray, x0: jnp.ndarray, mode: str, bidirectional: bool):
    """The layer on one sequence by the route of `mode` ('sequential', 'scan' or 'conv').

    u  (L H) real            the input sequence
    x0 (N,) complex          the forward state before u
    -> y (L H) real, x_L (N,) complex: the output and the forward state after the last position

    Mode 'scan' goes over time in blocks (`scan.blocked`): each block projects, scans from the state
    entering it and reads out, under `jax.checkpoint`, so that its backward keeps u and one state per
    block and recomputes a block's v and states while the adjoint passes through it.
    """
    if mode == "scan":
        return _blocked(sys, u, x0, bidirectional)
    route = scan.ROUTES[mode]
    v = project(sys, u)                                                # (L N)
    states = route(sys.log_lam, v, x0)                                 # (L N)
    y = read_out(sys.C_re, sys.C_im, states) + sys.D * u               # (L H)
    if bidirectional:
        backward = route(sys.log_lam, v[::-1], jnp.zeros_like(x0))[::-1]  # (L N)
        y = y + read_out(sys.C_re_rev, sys.C_im_rev, backward)
    return y, states[-1]


def _blocked(sys: Diagonal, u: jnp.ndarray, x0: jnp.ndarray, bidirectional: bool):
    """Mode 'scan': `scan.blocked` over the blocks, `scan.block_scan` inside each.     -> y (L H), x_L (N,)"""
    def forward(x, u_b):                                               # u_b (T H), x (N,)
        states = scan.block_scan(sys.log_lam, project(sys, u_b), x)   # (T N)
        return read_out(sys.C_re, sys.C_im, states) + sys.D * u_b, states[-1]

    y, x_last = scan.blocked(forward, x0, u)
    if bidirectional:                                                  # r_t = lambda r_{t+1} + v_t, from r_L = 0
        def backward(r, u_b):                                          # u_b: a block of u reversed in time
            states = scan.block_scan(sys.log_lam, project(sys, u_b), r)
            return read_out(sys.C_re_rev, sys.C_im_rev, states), states[-1]

        y = y + scan.blocked(backward, jnp.zeros_like(x0), u[::-1])[0][::-1]
    return y, x_last


def step(sys: Diagonal, u_t: jnp.ndarray, x: jnp.ndarray):
    """One position: x <- lambda x + B u_t, y_t = Re(C x) + D u_t.     u_t (H,), x (N,) -> y_t (H,), x (N,)"""
    x = jnp.exp(sys.log_lam) * x + lax.complex(sys.B_re @ u_t, sys.B_im @ u_t)
    y_t = sys.C_re @ x.real - sys.C_im @ x.imag + sys.D * u_t
    return y_t, x

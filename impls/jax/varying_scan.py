"""Diagonal linear recurrences with a transition per position, JAX: one sequence, three routes.

The gated recurrences (Griffin's RG-LRU, Mamba's S6, HGRN) choose their decay from the input:

    x_t = a_t * x_{t-1} + v_t,      a_t = exp(log_a_t),  |a_t| <= 1,   x_{-1} = x0

    log_a (L N), v (L N), x0 (N,): real (0 < a_t <= 1) or complex  ->  states (L N)

on one sequence; a layer batches it once with `jax.vmap`. Routes with one signature `(log_a, v, x0) -> states`
(`scan.py` has the same three for one transition per lane):

* `sequential`: `lax.scan`, one step per position, plain autodiff (the naive path the others must equal);
* `associative`: `lax.associative_scan` on the pairs (a_t, v_t), (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2):
  log-depth, the route that parallelises over L on a GPU;
* `chunked`: the two-level scan with per-chunk products in log space and a backward of its own:
      1. inside every chunk of T positions, all chunks at once, the recurrence from a zero state (`lax.scan` over T);
      2. the chunk products P_{c,t} = exp(cumsum of log a) (a product of transitions near 1 keeps its digits as a
         sum of logs; one near 0 underflows to 0, never to a NaN);
      3. the carries over the nc = ceil(L / T) chunks, S_{c+1} = P_{c,T-1} S_c + (end of chunk c) (`lax.scan`);
      4. the fix-up x_{cT+t} = local_{cT+t} + P_{c,t} S_c.
  Its `jax.custom_vjp` runs the adjoint recurrence as the same chunked scan in reverse, with the transitions
  shifted by one position. In JAX's cotangent convention (no conjugate: `scan.adjoint_transition`):

      adj_t = g_t + a_{t+1} adj_{t+1},   ct v_t = adj_t,   ct x0 = a_0 adj_0,   ct log_a_t = adj_t a_t x_{t-1}

  The forward saves its output (a gated layer reads its states out, so they are alive anyway). The backward is
  written in plain jnp operations, so JAX differentiates it again (a gradient of a gradient, `jax.hessian`); forward
  mode through it alone (`jax.jvp`) is JAX's refusal of a custom_vjp.
* `device_scan`: the Pallas kernel (`pallas_varying.scan`) on a GPU, else `chunked`; `block_scan`, the recurrence
  inside a block of the RG-LRU's `scan` mode (`rglru.py`, over `scan.blocked`): the Pallas kernel on a GPU, else
  `sequential`. On a CPU the plain `lax.scan` is the fastest (B 8, L 4096, n 128 complex64: 117 ms of CPU forward,
  248 forward+backward, against `chunked`'s 213 and 451 and `associative`'s 617 and 382; `linrnn bench peers`), as
  for one transition per lane (`scan.py`); `chunked` is the route that parallelises over L and the CPU twin of the
  Pallas kernel's backward.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from linrnn.base.errors import LinrnnError
from linrnn.impls.jax.scan import chunk_length


def sequential(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_t = a_t x_{t-1} + v_t, one step at a time.     log_a, v (L N), x0 (N,) -> states (L N)"""
    def step(x, inputs):
        a_t, v_t = inputs
        x = a_t * x + v_t
        return x, x

    _, states = lax.scan(step, x0, (jnp.exp(log_a), v))
    return states


def associative(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The same recurrence as a log-depth associative scan.     log_a, v (L N), x0 (N,) -> states (L N)"""
    if v.shape[0] == 0:
        return jnp.zeros_like(v)
    a = jnp.exp(log_a)
    v = v.at[0].add(a[0] * x0)                                         # x0 enters as part of v_0

    def compose(earlier, later):
        a1, b1 = earlier
        a2, b2 = later
        return a1 * a2, a2 * b1 + b2

    _, states = lax.associative_scan(compose, (a, v), axis=0)
    return states


def two_level(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, T: int) -> jnp.ndarray:
    """Steps 1-4 of the module docstring, forward only.     log_a, v (L N), x0 (N,) -> states (L N)"""
    L, N = v.shape
    nc = -(-L // T)
    pad = ((0, nc * T - L), (0, 0))                                    # after the end: a = 1, v = 0
    la = jnp.pad(log_a, pad).reshape(nc, T, N)
    w = jnp.pad(v, pad).reshape(nc, T, N)                               # (nc T N)

    def inside(x, inputs):                                             # x (nc N): every chunk at once
        a_t, w_t = inputs
        x = a_t * x + w_t
        return x, x

    _, local = lax.scan(inside, jnp.zeros_like(w[:, 0]), (jnp.exp(jnp.swapaxes(la, 0, 1)), jnp.swapaxes(w, 0, 1)))
    local = jnp.swapaxes(local, 0, 1)                                  # (nc T N)
    products = jnp.exp(jnp.cumsum(la, axis=1))                         # (nc T N)

    def carry(s, inputs):                                              # s: the state entering chunk c
        product, end = inputs
        return product * s + end, s

    _, entering = lax.scan(carry, x0, (products[:, -1], local[:, -1]))  # (nc N)
    states = local + products * entering[:, None]
    return states.reshape(nc * T, N)[:L]


def adjoint(log_a: jnp.ndarray, g: jnp.ndarray, T: int) -> jnp.ndarray:
    """adj_t = g_t + a_{t+1} adj_{t+1} (adj after the end 0): the two-level scan on the reversed sequence, whose
    transition at reversed position s is a at the original position L - s.     -> (L N)"""
    shifted = jnp.concatenate([log_a[1:], jnp.zeros_like(log_a[:1])])[::-1]       # log a_{t+1}, reversed
    return two_level(shifted, g[::-1], jnp.zeros_like(g[0]), T)[::-1]


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _chunked(log_a, v, x0, T):
    return two_level(log_a, v, x0, T)


def _chunked_forward(log_a, v, x0, T):
    states = two_level(log_a, v, x0, T)
    return states, (log_a, x0, states)


def _chunked_backward(T, residuals, g):
    log_a, x0, states = residuals
    adj = adjoint(log_a, g, T)                                         # (L N)
    a = jnp.exp(log_a)
    before = jnp.concatenate([x0[None], states[:-1]])                  # x_{t-1}
    return adj * a * before, adj, a[0] * adj[0]


_chunked.defvjp(_chunked_forward, _chunked_backward)


def chunked(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, chunk: int | None = None) -> jnp.ndarray:
    """The two-level scan with the adjoint as its backward (module docstring).

    log_a, v (L N), x0 (N,) of one dtype (real or complex); chunk: T, or None for `scan.chunk_length(L)`
    """
    T = chunk_length(v.shape[0]) if chunk is None else chunk
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise LinrnnError(f"chunk: expected a whole number of positions >= 1 (or None), found {chunk!r}")
    if log_a.shape != v.shape or x0.shape != v.shape[1:]:
        raise LinrnnError(f"varying scan: expected log_a and v of one shape (L N) and x0 (N,), found {log_a.shape}, "
                          f"{v.shape}, {x0.shape}")
    if v.shape[0] == 0:
        return jnp.zeros_like(v)
    return _chunked(log_a, v, x0, T)


def device_scan(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The parallel route: the Pallas kernel (`pallas_varying.scan`) when JAX runs on a GPU, else `chunked` (both with
    the adjoint as their backward). The Pallas module is imported on a GPU only."""
    if jax.default_backend() == "gpu":
        from linrnn.impls.jax import pallas_varying
        return pallas_varying.scan(log_a, v, x0)
    return chunked(log_a, v, x0)


def block_scan(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The recurrence inside one block of a gated layer's `scan` mode (`scan.blocked`, which recomputes a block in its
    backward): the Pallas kernel on a GPU, else `sequential`, plain autodiff (as `scan.block_scan`)."""
    if jax.default_backend() == "gpu":
        return device_scan(log_a, v, x0)
    return sequential(log_a, v, x0)

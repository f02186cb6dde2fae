"""Diagonal linear recurrences over time, JAX: one sequence, complex lanes, three routes.

RotRNN (in its rotated basis, pairs as complex numbers) and LRU reduce to one diagonal recurrence

    x_t = lambda * x_{t-1} + v_t,      lambda = exp(log_lambda) in C^N,  |lambda| <= 1

on one sequence: v (L N) complex, x0 (N,) complex -> states (L N). The layers batch these functions
once with `jax.vmap`. Routes with one signature `(log_lam, v, x0) -> states`:

* `sequential`: `lax.scan`, one step per position, differentiated by plain autodiff (the naive path,
  the one the others must equal, values and gradients);
* `associative`: `lax.associative_scan` on the pairs (lambda, v) with the composition
  (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2): log-depth, about twice the arithmetic;
* `chunked` (`device_scan` off a GPU): `associative` forward, with a `jax.custom_vjp` backward that is
  itself a diagonal recurrence, the adjoint a_t = g_t + lambda a_{t+1} run in reverse over chunks of T
  positions. It was S4D's `scan` mode on its H N lanes until that mode moved to DLR's chunkwise route
  (`s4d.py`); no layer mode runs it on a CPU now, and it stays as the CPU twin of the Pallas kernel's VJP,
  checked in tests/impls/test_jax_scan_vjp.py;
* `blocked`: not a route but the `scan` mode of RotRNN, LRU, S5 (`diagonal.run`), DLR and S4D (`depthwise.chunkwise`,
  on the whole batch: `axis=1`): the whole layer
  (projection, recurrence, read-out) over time in blocks, a `jax.custom_vjp` whose backward re-runs one
  block at a time from the state saved at its start; inside a block `block_scan` (`lax.scan` on a CPU,
  the Pallas kernel on a GPU). docs/speed-log.md, "2026-12-03: JAX, a chunked backward", has why and what it measured;
* `convolution`: the kernel view in the state domain, x = (lambda^l)_l * v: a causal convolution of
  every lane with its impulse response lambda^l = exp(l log lambda), by a zero-padded FFT of length
  >= 2L (linear, not circular), plus lambda^(t+1) x0.

Why the routes besides `blocked` stay: every layer's `scan` mode on a CPU is `blocked` with `lax.scan` inside a
block (on a few CPU cores no log-depth or two-level scan beats the plain `lax.scan` reliably: every step is already
vectorised over the B x N lanes, and a layer is dominated by its projections; docs/speed-log.md). `associative` is
the route that parallelises over L on a GPU, and `chunked`, its custom VJP, is the CPU twin of the Pallas kernel's
(`pallas_scan.py`), tested against plain autodiff in tests/impls/test_jax_scan_vjp.py; `pytest --benchmark -k "jax
and (scan_alone or layer_forward)"` (tests/bench/test_bench_jax.py) times the routes alone.

Why `chunked` has a backward of its own: autodiff of the associative scan saves every level of
its tree (several (L N) arrays) and replays the tree in reverse; autodiff of `lax.scan` saves the
whole trajectory. `chunked` saves log lambda, v, x0 and the (L/T N) states at the chunk boundaries,
and its backward recomputes one chunk's states at a time while the adjoint passes through it (see
`chunked`). The PyTorch side's `scan` has the same backward (impls/torch/scan.py, `DiagonalScan`),
written in PyTorch's gradient convention, which conjugates where JAX's does not (`adjoint_transition`):
the two agree by the mathematics, not by shared code.

Precision: powers are always exp(l log lambda) from the raw log-eigenvalue (never repeated products,
never 1 - |lambda| formed by subtraction), so the modulus stays accurate for |lambda| close to 1.
An honest warning: the phase l * theta is rounded once in the working precision, an absolute error of
about l |theta| eps (in float32 up to 1.5e-3 rad at l = 4096, theta near 2 pi), larger than a
sequential scan's accumulated phase error; `conv` in float32 at long L is the least precise mode.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from linrnn.base.errors import LinrnnError


def exponents(start, length: int, log_lam: jnp.ndarray) -> jnp.ndarray:
    """The exponents start .. start+length-1 in the real dtype of `log_lam` (start may be traced).     -> (length,)"""
    real = jnp.finfo(log_lam.dtype).dtype
    return jnp.arange(length, dtype=real) + jnp.asarray(start, dtype=real)


def powers(log_lam: jnp.ndarray, steps: jnp.ndarray) -> jnp.ndarray:
    """lambda^k = exp(k log lambda) for every k in `steps` (the torch side's signature).

    log_lam (N,) complex, steps (S,) real -> (S N) complex
    """
    k = jnp.asarray(steps, dtype=jnp.finfo(log_lam.dtype).dtype)[:, None]   # (S 1)
    return jnp.exp(lax.complex(k * log_lam.real, k * log_lam.imag))        # (S N)


def sequential(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_t = lambda x_{t-1} + v_t, one step at a time.     v (L N), x0 (N,) -> states (L N)"""
    lam = jnp.exp(log_lam)                                            # (N,)

    def step(x, v_t):
        x = lam * x + v_t
        return x, x

    _, states = lax.scan(step, x0, v)
    return states


def associative(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The same recurrence as a log-depth associative scan.     v (L N), x0 (N,) -> states (L N)"""
    if v.shape[0] == 0:                                                # no positions, no states
        return jnp.zeros_like(v)
    lam = jnp.exp(log_lam)
    v = v.at[0].add(lam * x0)                                          # x0 enters as part of v_0

    def compose(earlier, later):
        a1, b1 = earlier
        a2, b2 = later
        return a1 * a2, a2 * b1 + b2

    _, states = lax.associative_scan(compose, (jnp.broadcast_to(lam, v.shape), v), axis=0)
    return states


# -- the `scan` mode: the associative scan, with a backward that is a chunked reverse scan ------------

def chunk_length(length: int) -> int:
    """T = 2^round(log2 sqrt(L)), at least 1: about sqrt(L) chunks of about sqrt(L) positions.

    It balances the residual chunk boundaries (L/T N) against the states that the backward of `chunked`
    recomputes at once (T N).
    """
    return 1 << max(0, round(math.log2(max(length, 1)) / 2))


def adjoint_transition(log_lam: jnp.ndarray) -> jnp.ndarray:
    """The log-transition of the adjoint recurrence in JAX's cotangent convention: log lambda itself.

    JAX's VJPs are linear in the cotangent: for z = lambda x they return ct_x = lambda ct_z and
    ct_lambda = x ct_z, with no conjugate. (Under a real loss the cotangent of a complex z is
    dLoss/dRe z - i dLoss/dIm z, the conjugate of PyTorch's gradient, whose adjoint runs with conj(lambda).)
    """
    return log_lam


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _chunked(log_lam, v, x0, chunk):
    return associative(log_lam, v, x0)


def _chunked_forward(log_lam, v, x0, chunk):
    """The associative scan, saving log lambda, v, x0 and the state entering each chunk: no trajectory."""
    states = associative(log_lam, v, x0)                              # (L N)
    n_chunks = -(-v.shape[0] // chunk)
    boundaries = jnp.concatenate([x0[None], states[chunk - 1:(n_chunks - 1) * chunk:chunk]])  # (nc N)
    return states, (log_lam, v, x0, boundaries)


def _chunked_backward(chunk, residuals, ct_states):
    """The adjoint recurrence in reverse, a chunk at a time; see `chunked`.     ct_states (L N) -> cotangents"""
    log_lam, v, x0, boundaries = residuals
    L, N = v.shape
    T, n_chunks = chunk, boundaries.shape[0]
    log_adj = adjoint_transition(log_lam)                              # (N,)
    pad = ((0, n_chunks * T - L), (0, 0))                              # zeros after the end: the adjoint
    v_chunks = jnp.pad(v, pad).reshape(n_chunks, T, N)                # stays 0 there, so the padding drops out
    ct_chunks = jnp.pad(ct_states, pad).reshape(n_chunks, T, N)       # (nc T N)

    def one_chunk(carry, chunk_inputs):
        a_after, total = carry                                         # (N,) adjoint entering from the right
        S, v_c, ct_c = chunk_inputs                                    # (N,), (T N), (T N)
        x = associative(log_lam, v_c, S)                               # (T N)  the chunk's states, recomputed
        x_before = jnp.concatenate([S[None], x[:-1]])                  # (T N)  x_{t-1}
        a = associative(log_adj, ct_c[::-1], a_after)[::-1]            # (T N)  a_t = ct_t + lambda a_{t+1}
        return (a[0], total + jnp.sum(a * x_before, axis=0)), a

    zero = jnp.zeros_like(x0)
    (a_first, total), adjoint = lax.scan(one_chunk, (zero, zero), (boundaries, v_chunks, ct_chunks), reverse=True)
    lam_adj = jnp.exp(log_adj)
    ct_v = adjoint.reshape(n_chunks * T, N)[:L]                       # (L N)
    return lam_adj * total, ct_v, lam_adj * a_first


_chunked.defvjp(_chunked_forward, _chunked_backward)


def chunked(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, chunk: int | None = None) -> jnp.ndarray:
    """The associative scan with a backward of its own: the adjoint recurrence over chunks of T positions.

    log_lam (N,), v (L N), x0 (N,) complex; chunk: T, or None for `chunk_length(L)` -> states (L N)

    For x_t = lambda x_{t-1} + v_t (x_{-1} = x0) and cotangents g_t of the states, in JAX's convention
    (`adjoint_transition`), the adjoint

        a_t = g_t + lambda a_{t+1},   a_L = 0                          (the same recurrence, in reverse)

    gives every cotangent: ct v_t = a_t, ct x0 = lambda a_0 and, lambda = exp(log lambda) being
    holomorphic, ct log lambda = lambda sum_t a_t x_{t-1}.

    The forward is `associative`; it saves log lambda, v, x0 and the state entering each chunk, S_c =
    x_{cT-1} (nc N): no array of size (L N) but v. The backward is one reverse `lax.scan` over the chunks:
    chunk c recomputes its T states from S_c and runs the adjoint through them from the adjoint entering
    at its right end (both by `associative`, log-depth in T), adds sum_t a_t x_{t-1} and emits its
    a_t. It holds (T N) of states at a time besides its outputs; its depth is nc log T, not L. v and the
    cotangents are zero-padded after position L - 1 to nc T positions: a reverse scan from a zero carry
    through zero cotangents keeps the adjoint exactly 0 there, so the padding adds nothing.
    """
    T = chunk_length(v.shape[0]) if chunk is None else chunk
    if not (isinstance(T, int) and T >= 1):
        raise LinrnnError(f"chunk: expected a whole number of positions >= 1 (or None), found {chunk!r}")
    if v.shape[0] == 0:                                                # no positions: no states, no chunks
        return jnp.zeros_like(v)
    return _chunked(log_lam, v, x0, T)


# -- a layer over time in blocks, each block's forward recomputed in the backward ------------------

BLOCKS = 32         # a layer's `scan` mode goes over time in about this many blocks
MIN_BLOCK = 128     # of at least this many positions (a power of two), or all of L when that is shorter,
MAX_BLOCK = 256     # and at most this many: a longer block's working set leaves the caches (LRU fwd+bwd at B 8,
                    # L 65536, H = N = 128: 2.8-3.0 s in blocks of 2,048, 1.9-2.0 s in blocks of 256; RotRNN
                    # 1.5-1.9 s against 1.3-1.4 s); each block saves one state, 2 positions' worth of u for the LRU


def block_length(length: int, blocks: int | None = None, minimum: int | None = None,
                 maximum: int | None = None) -> int:
    """Positions per block of `blocked`: a power of two near L / blocks, at least `minimum`, at most `maximum`
    (when that is >= minimum) and at most L.

    blocks, minimum, maximum: None for this module's BLOCKS, MIN_BLOCK and MAX_BLOCK (read at the call); a
    `maximum` of 0 caps nothing (DLR's blocks, which save an (H N) state each, `dlr.py`).
    """
    blocks, minimum = blocks or BLOCKS, minimum or MIN_BLOCK
    maximum = MAX_BLOCK if maximum is None else maximum
    fits = max(1, length // blocks)
    block = max(minimum, 1 << (fits.bit_length() - 1))
    if maximum:
        block = max(minimum, min(block, maximum))
    return min(max(length, 1), block)


def blocked(fn, carry, xs: jnp.ndarray, block: int | None = None, axis: int = 0):
    """fn over time in blocks of `block` positions, with a backward that recomputes one block at a time.

    fn(carry, x_block) -> (y_block, carry): one block of a causal layer from the state entering it
    (arrays it closes over, such as the layer's weights, are differentiated too); xs with time on `axis`
    (L ... for axis 0; B L ... for axis 1, a whole batch), carry a pytree -> (ys, time on `axis`, the carry
    after the last position).

    The full blocks run as a `lax.scan` over their indices with a `jax.custom_vjp` (`_blocks`): the
    forward reads each block out of xs in place and keeps only the carry entering each block (L / block
    of them); the backward is a reverse scan over the blocks that re-runs one block's forward from its
    saved carry and pulls the cotangents through it (`jax.vjp` of fn), so one block's intermediates
    (projections, states, read-out) are alive at a time, where plain autodiff keeps all of them for all
    of L. The price is one more forward pass per block in the backward. A shorter last block runs once
    more after them, under `jax.checkpoint`. (A `jax.checkpoint` of fn inside a scan over xs has the
    same backward, but needs xs and its cotangent laid out block-major: under `vmap` two more copies of
    (B L ...) in XLA's memory account.)
    """
    L = xs.shape[axis]
    if L == 0:
        return fn(carry, xs)
    T = block_length(L) if block is None else block
    if not (isinstance(T, int) and T >= 1):
        raise LinrnnError(f"block: expected a whole number of positions >= 1 (or None), found {block!r}")
    n_full, parts = L // T, []
    if n_full:
        one, consts = jax.closure_convert(fn, carry, _block(xs, 0, T, axis))
        ys, carry = _blocks(one, T, n_full, axis, carry, xs, *consts)
        parts.append(ys)
    if n_full * T < L:
        y, carry = jax.checkpoint(fn)(carry, lax.slice_in_dim(xs, n_full * T, L, axis=axis))
        parts.append(y)
    return (parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)), carry


def _block(xs, i, T: int, axis: int):
    return lax.dynamic_slice_in_dim(xs, i * T, T, axis=axis)


def _unstack(blocks, axis: int):
    """(n ... T ...) stacked by `lax.scan`, T at 1 + axis -> the blocks joined along `axis` (n T positions)."""
    joined = jnp.moveaxis(blocks, 0, axis)                             # (... n T ...)
    return joined.reshape(joined.shape[:axis] + (-1,) + joined.shape[axis + 2:])


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3))
def _blocks(fn, T, n, axis, carry, xs, *consts):
    return _blocks_forward(fn, T, n, axis, carry, xs, *consts)[0]


def _blocks_forward(fn, T, n, axis, carry, xs, *consts):
    """Blocks 0 .. n-1 of T positions of xs, in order. -> ((ys (n T positions on `axis`), carry), residuals)"""
    def body(c, i):
        y, after = fn(c, _block(xs, i, T, axis), *consts)
        return after, (y, c)

    last, (ys, entering) = lax.scan(body, carry, jnp.arange(n))
    return (_unstack(ys, axis), last), (entering, xs, consts)


def _blocks_backward(fn, T, n, axis, residuals, cotangents):
    """The blocks in reverse: re-run block i from its saved carry, pull (ct y_i, ct carry) back through it."""
    entering, xs, consts = residuals
    ct_ys, ct_last = cotangents

    def body(acc, i):
        ct_carry, ct_consts = acc
        c = jax.tree.map(lambda a: a[i], entering)
        _, vjp = jax.vjp(fn, c, _block(xs, i, T, axis), *consts)
        ct_c, ct_x, *ct_k = vjp((_block(ct_ys, i, T, axis), ct_carry))
        return (ct_c, jax.tree.map(jnp.add, ct_consts, tuple(ct_k))), ct_x

    zeros = jax.tree.map(jnp.zeros_like, consts)
    (ct_carry, ct_consts), ct_xs = lax.scan(body, (ct_last, zeros), jnp.arange(n), reverse=True)
    ct_xs = _unstack(ct_xs, axis)
    if n * T < xs.shape[axis]:                                         # the positions after the full blocks:
        pad = [(0, 0)] * ct_xs.ndim                                    # not read here
        pad[axis] = (0, xs.shape[axis] - n * T)
        ct_xs = jnp.pad(ct_xs, pad)
    return (ct_carry, ct_xs, *ct_consts)


_blocks.defvjp(_blocks_forward, _blocks_backward)


def fft_length(length: int, kernel_length: int) -> int:
    """A power of two >= L + L_k: no wrap-around in the FFT's circular convolution."""
    return 1 << max(0, (length + kernel_length - 1).bit_length())


def causal_fft_conv(k: jnp.ndarray, u: jnp.ndarray) -> jnp.ndarray:
    """y_t = sum_{l<=t, l<L_k} k_l * u_{t-l} per lane, by zero-padded FFT.

    k (L_k ...) and u (L ...) of one dtype, lanes broadcast -> y (L ...); real inputs use rfft.
    """
    L, Lk = u.shape[0], k.shape[0]
    n = fft_length(L, Lk)
    if jnp.iscomplexobj(u):
        return jnp.fft.ifft(jnp.fft.fft(k, n, axis=0) * jnp.fft.fft(u, n, axis=0), axis=0)[:L]
    return jnp.fft.irfft(jnp.fft.rfft(k, n, axis=0) * jnp.fft.rfft(u, n, axis=0), n, axis=0)[:L]


def convolution(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """x_t = sum_{l<=t} lambda^l v_{t-l} + lambda^(t+1) x0 by FFT.     v (L N), x0 (N,) -> states (L N)"""
    L = v.shape[0]
    return causal_fft_conv(powers(log_lam, exponents(0, L, log_lam)), v) + powers(log_lam, exponents(1, L, log_lam)) * x0


def device_scan(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The `scan` mode: the Pallas kernel (`pallas_scan.scan`) when JAX runs on a GPU, else `chunked`.

    Both have their own VJP (the adjoint recurrence). The Pallas module is imported only on a GPU, so a
    CPU installation never needs Pallas' GPU lowering.
    """
    if jax.default_backend() == "gpu":
        from linrnn.impls.jax import pallas_scan
        return pallas_scan.scan(log_lam, v, x0)
    return chunked(log_lam, v, x0)


def block_scan(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> jnp.ndarray:
    """The recurrence inside one block of the `scan` mode's layers (`blocked`): the Pallas kernel on a GPU,
    else `associative`, differentiated by plain autodiff: `blocked`'s backward already recomputes one block at
    a time, and a route without a custom_vjp inside it keeps the mode's second derivatives (forward over
    reverse, `jax.hessian`) on a CPU."""
    if jax.default_backend() == "gpu":
        return device_scan(log_lam, v, x0)
    return sequential(log_lam, v, x0)


ROUTES = {"sequential": sequential, "scan": device_scan, "conv": convolution}

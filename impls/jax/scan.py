"""Diagonal linear recurrences over time, JAX: one sequence, complex lanes, three routes.

RotRNN (in its rotated basis, pairs as complex numbers) and LRU reduce to one diagonal recurrence

    x_t = lambda * x_{t-1} + v_t,      lambda = exp(log_lambda) in C^N,  |lambda| <= 1

on one sequence: v (L N) complex, x0 (N,) complex -> states (L N). The layers batch these functions
once with `jax.vmap`. Three routes with one signature `(log_lam, v, x0) -> states`:

* `sequential`: `lax.scan`, one step per position (the naive path, the one the others must equal);
* `associative`: `lax.associative_scan` on the pairs (lambda, v) with the composition
  (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2): log-depth, about twice the arithmetic;
* `convolution`: the kernel view in the state domain, x = (lambda^l)_l * v: a causal convolution of
  every lane with its impulse response lambda^l = exp(l log lambda), by a zero-padded FFT of length
  >= 2L (linear, not circular), plus lambda^(t+1) x0.

Why `associative` is the `scan` mode: every step of `lax.scan` is already vectorised over the B x N
lanes and a layer is dominated by its projections, so on a few CPU cores no log-depth or two-level
scan beats the plain `lax.scan` reliably. The associative scan is still the `scan` mode because
(1) the PyTorch side runs the chunked two-level scan, so the two sides check each other through
different algorithms, and (2) it is the route that parallelises over L on a GPU. On a CPU,
`sequential` is the mode to use for speed. The timings behind this are in docs/speed.md (measured
once on this project's machine); `pytest --benchmark -k "jax and (scan_alone or layer_forward)"`
(tests/bench/test_bench_jax.py) reproduces them into the benchmark JSON.

Precision: powers are always exp(l log lambda) from the raw log-eigenvalue (never repeated products,
never 1 - |lambda| formed by subtraction), so the modulus stays accurate for |lambda| close to 1.
An honest warning: the phase l * theta is rounded once in the working precision, an absolute error of
about l |theta| eps (in float32 up to 1.5e-3 rad at l = 4096, theta near 2 pi), larger than a
sequential scan's accumulated phase error; `conv` in float32 at long L is the least precise mode.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax


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
    lam = jnp.exp(log_lam)
    v = v.at[0].add(lam * x0)                                          # x0 enters as part of v_0

    def compose(earlier, later):
        a1, b1 = earlier
        a2, b2 = later
        return a1 * a2, a2 * b1 + b2

    _, states = lax.associative_scan(compose, (jnp.broadcast_to(lam, v.shape), v), axis=0)
    return states


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


ROUTES = {"sequential": sequential, "scan": associative, "conv": convolution}

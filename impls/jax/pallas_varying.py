"""The scan with a transition per position as a Pallas kernel (GPU, Triton lowering), forward and backward, JAX.

The recurrence of `varying_scan.py`, one sequence, with its routes' signature:

    x_t = a_t * x_{t-1} + v_t,    a_t = exp(log_a_t),   x_{-1} = x0

    log_a (L N), v (L N), x0 (N,): one dtype, real (float32, float64) or complex (complex64, complex128)
    -> states (L N)

The kernel is `pallas_scan.py`'s with the transition loaded per position: the grid is parallel over blocks of
`block_n` lanes; one program walks the L positions in order (`fori_loop`), its lanes' state in registers, loading one
row of a_t and v_t and storing one row of x_t per step. Pallas' GPU lowering has no complex dtype: a complex scan
passes real and imaginary parts as separate arrays and multiplies by hand (flag `complex_`); a real one half of them.
a_t = exp(log a_t) is formed by XLA outside the kernel, once. A batch is a `jax.vmap` of `scan` (Pallas' batching
rule adds a grid axis).

The backward (`jax.custom_vjp`), in JAX's cotangent convention (no conjugate; `scan.adjoint_transition`):

    adj_t = g_t + a_{t+1} adj_{t+1}      the same kernel run in reverse, on the transitions shifted by one position
    ct v = adj,   ct x0 = a_0 adj_0,   ct log_a_t = adj_t a_t x_{t-1}

The kernel in either direction is one custom_vjp function (`_directed`) whose backward calls it in the other
direction, so the backward differentiates again in reverse mode (a gradient of a gradient runs the kernel again), as
`pallas_scan`'s; forward mode (`jax.jvp`, `jax.jacfwd`) through a custom_vjp is JAX's refusal.
Residuals: the states themselves (a gated layer reads them out: alive anyway). Without a GPU it runs in Pallas'
interpreter (`interpret=True`; tests/impls/test_jax_varying_scan.py).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from linrnn.base.errors import LinrnnError
from linrnn.impls.jax.pallas_scan import available, default_block_n, unavailable_reason
from linrnn.impls.jax.params import check_dtype

__all__ = ["available", "scan", "unavailable_reason"]


def _kernel(*refs, length: int, n: int, block_n: int, reverse: bool, complex_: bool):
    """One program: block_n lanes, all L positions (reversed: L-1 .. 0). refs: a, x0, v (re[, im] each), then the
    outputs x (re[, im]); this program's blocks: x0 (block_n,), a, v, x (L block_n)."""
    parts = 2 if complex_ else 1
    a_ref, x0_ref, v_ref, x_ref = (refs[i * parts:(i + 1) * parts] for i in range(4))
    lanes = pl.program_id(0) * block_n + lax.iota(jnp.int32, block_n)   # (block_n,)
    mask = lanes < n
    x = tuple(plgpu.load(r, mask=mask, other=0) for r in x0_ref)

    def step(i, x):
        t = length - 1 - i if reverse else i
        a = tuple(plgpu.load(r.at[t], mask=mask, other=0) for r in a_ref)
        v = tuple(plgpu.load(r.at[t], mask=mask, other=0) for r in v_ref)
        if complex_:
            x = (a[0] * x[0] - a[1] * x[1] + v[0], a[0] * x[1] + a[1] * x[0] + v[1])
        else:
            x = (a[0] * x[0] + v[0],)
        for r, value in zip(x_ref, x):
            plgpu.store(r.at[t], value, mask=mask)
        return x

    lax.fori_loop(0, length, step, x)


def _split(z: jnp.ndarray, complex_: bool) -> tuple:
    return (z.real, z.imag) if complex_ else (z,)


def _pallas(a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, reverse: bool, interpret: bool, block_n: int):
    """x_t = a_t x_{t-1} + v_t (reverse: a_t x_{t+1} + v_t, x_L = x0) by the kernel.     a, v (L N), x0 (N,)"""
    L, N = v.shape
    complex_ = jnp.iscomplexobj(v)
    real = jnp.finfo(v.dtype).dtype
    lane = pl.BlockSpec((block_n,), lambda j: (j,))
    rows = pl.BlockSpec((L, block_n), lambda j: (0, j))
    parts = 2 if complex_ else 1
    kernel = functools.partial(_kernel, length=L, n=N, block_n=block_n, reverse=reverse, complex_=complex_)
    out = pl.pallas_call(
        kernel,
        out_shape=(jax.ShapeDtypeStruct((L, N), real),) * parts,
        grid=(pl.cdiv(N, block_n),),
        in_specs=[rows] * parts + [lane] * parts + [rows] * parts,
        out_specs=(rows,) * parts,
        compiler_params=plgpu.CompilerParams(num_warps=max(1, min(4, block_n // 32))),
        interpret=interpret,
        name="varying_scan_reverse" if reverse else "varying_scan",
    )(*_split(a, complex_), *_split(x0, complex_), *_split(v, complex_))
    return lax.complex(*out) if complex_ else out[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _directed(log_a, v, x0, reverse, interpret, block_n):
    """The kernel's recurrence in either direction; its VJP is the same function in the other direction."""
    return _pallas(jnp.exp(log_a), v, x0, reverse, interpret, block_n)


def _directed_fwd(log_a, v, x0, reverse, interpret, block_n):
    states = _directed(log_a, v, x0, reverse, interpret, block_n)
    return states, (log_a, x0, states)


def _directed_bwd(reverse, interpret, block_n, residuals, g):
    log_a, x0, states = residuals
    zero = jnp.zeros_like(log_a[:1])
    if not reverse:                                   # adj_t = g_t + a_{t+1} adj_{t+1}: a reverse scan
        shifted, before, first = jnp.concatenate([log_a[1:], zero]), jnp.concatenate([x0[None], states[:-1]]), 0
    else:                                             # adj_t = g_t + a_{t-1} adj_{t-1}: a forward scan
        shifted, before, first = jnp.concatenate([zero, log_a[:-1]]), jnp.concatenate([states[1:], x0[None]]), -1
    adj = _directed(shifted, g, jnp.zeros_like(x0), not reverse, interpret, block_n)
    a = jnp.exp(log_a)
    return adj * a * before, adj, a[first] * adj[first]


_directed.defvjp(_directed_fwd, _directed_bwd)


DTYPES = ("float32", "float64", "complex64", "complex128")


def check_inputs(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> None:
    """log_a, v (L N), x0 (N,) of one dtype (float32, float64, complex64, complex128); else a one-line LinrnnError."""
    if v.ndim != 2 or log_a.shape != v.shape or x0.shape != (v.shape[1],):
        raise LinrnnError(f"pallas varying scan: expected log_a, v (L N) and x0 (N,) of one sequence (vmap for a "
                          f"batch), found {log_a.shape}, {v.shape}, {x0.shape}")
    dtypes = {jnp.dtype(x.dtype).name for x in (log_a, v, x0)}
    if len(dtypes) != 1 or not dtypes <= set(DTYPES):
        raise LinrnnError(f"pallas varying scan: expected log_a, v, x0 of one dtype ({', '.join(DTYPES)}), found "
                          f"{log_a.dtype}, {v.dtype}, {x0.dtype}")
    if dtypes & {"float64", "complex128"}:
        check_dtype("float64")             # outside `float64()` JAX would cut it to 32 bits


def scan(log_a: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, *, interpret: bool = False,
         block_n: int | None = None, reverse: bool = False) -> jnp.ndarray:
    """x_t = a_t x_{t-1} + v_t by the Pallas kernel, differentiable (reverse: x_t = a_t x_{t+1} + v_t, x_L = x0).

    interpret: run the kernel in Pallas' interpreter (any backend); block_n: lanes per program, a power of two
    (default `pallas_scan.default_block_n(N)`)."""
    check_inputs(log_a, v, x0)
    reason = unavailable_reason(interpret)
    if reason:
        raise LinrnnError(reason.replace("diagonal scan", "varying scan"))
    block_n = default_block_n(v.shape[1]) if block_n is None else block_n
    if block_n < 1 or block_n & (block_n - 1):
        raise LinrnnError(f"pallas varying scan: block_n must be a power of two (Triton's block shapes), found "
                          f"{block_n}")
    if v.size == 0:
        return v
    return _directed(log_a, v, x0, reverse, interpret, block_n)

"""The diagonal scan as a Pallas kernel (GPU, Triton lowering), forward and backward, JAX.

The recurrence of `scan.py`, one sequence, with the routes' signature `(log_lam, v, x0) -> states`:

    x_t = lambda * x_{t-1} + v_t,      lambda = exp(log_lambda) in C^N,  |lambda| <= 1,  x_{-1} = x0

    log_lam (N,) complex,  v (L N) complex,  x0 (N,) complex  ->  states (L N) complex

The kernel. Pallas' GPU lowering (Triton) has no complex dtype, so the kernel sees real and imaginary
parts as separate float arrays and multiplies by hand:

    x_re <- lam_re x_re - lam_im x_im + v_re,      x_im <- lam_re x_im + lam_im x_re + v_im

The grid is parallel over blocks of `block_n` lanes (a power of two, as Triton wants for every loaded
shape); one program walks the L positions in order with a `fori_loop` (Triton's `scf.for`), carrying
its lanes' state in registers and loading / storing one row (block_n,) per step. The last lane block
is ragged when block_n does not divide N: its loads and stores are masked. A batch is a `jax.vmap` of
`scan`: Pallas' batching rule adds the batch as one more grid axis, so a layer's B x H sequences and
N / block_n lane blocks are all programs of one launch. One level only (no chunking over L): on a GPU
the B x H x N lanes of a layer give enough programs, and every number is read and written once.

The backward (`jax.custom_vjp`). JAX's VJP of a holomorphic map is its transpose, without the complex
conjugation of PyTorch's convention (the VJP of z -> c z maps the cotangent g to c g, PyTorch's to
conj(c) g). The recurrence is holomorphic in (log_lam, v, x0), so with g = d loss / d states (L N):

    a_t = g_t + lambda a_{t+1},   a_L = 0          the same recurrence in reverse time: the same kernel
    grad_v = a,   grad_x0 = lambda a_0,   grad_log_lam = lambda * sum_t a_t x_{t-1}

(in PyTorch's convention every lambda here would be conj(lambda)). The reverse recurrence runs the
forward kernel with its time index reversed (no flipped copies of g or a). The sum over t is an XLA
reduction of a_t x_{t-1}, fused into one pass. The kernel in either direction is one `custom_vjp`
function (`_directed`) whose backward calls it in the other direction, so the backward is itself
differentiable by the same rule: second derivatives (`jax.hessian`, a gradient of a gradient) run the
kernel again. Reverse mode only: a `custom_vjp` has no JVP, so `jax.jvp` / `jax.jacfwd` through `scan`
raise (the layer's `scan` mode turns that into a one-line LinrnnError naming the modes that have one).

Residuals: the forward output itself, not chunk boundaries to recompute from. The states are needed
by the read-out's own backward (d loss / d C = sum_t g_y x_t), so a layer keeps them alive anyway:
saving them costs no memory, and recomputing would cost a second forward scan.

Memory traffic: JAX cannot view a complex array as float pairs (`lax.bitcast_convert_type` refuses
complex), so splitting v into v.real, v.imag before the kernel and joining the states after it are
XLA passes of their own: about three times the kernel's one read of v and one write of the states.

Precision: lambda = exp(log_lam) is formed once by XLA outside the kernel; the kernel then rounds the
same few products per step as `scan.sequential`, so the two agree to the tolerance table's forward
bound. Float32 and float64 both run (float64 inside `linrnn.impls.jax.float64()`). Without a GPU the
kernel runs in Pallas' interpreter (`interpret=True`); tests/impls/test_jax_pallas_scan.py also lowers
it for CUDA on a CPU (Triton IR built, not compiled to PTX) and runs it compiled where a GPU is present.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from linrnn.base.errors import LinrnnError
from linrnn.impls.jax.params import check_dtype

MAX_BLOCK_N = 128   # lanes per program: one float per thread per row at 4 warps


def unavailable_reason(interpret: bool = False) -> str:
    """Why `scan` cannot run here, in one line; '' when it can (a GPU backend, or interpret mode)."""
    if interpret:
        return ""
    try:
        jax.devices("gpu")
    except RuntimeError:
        return ("the Pallas diagonal scan needs a JAX GPU backend (Triton lowering); none is present "
                f"(devices: {', '.join(d.platform for d in jax.devices())}); pass interpret=True to run it on the CPU")
    return ""


def available(interpret: bool = False) -> bool:
    """Whether `scan(..., interpret=interpret)` can run here."""
    return not unavailable_reason(interpret)


def default_block_n(n: int) -> int:
    """The lanes per program: the power of two >= N, at most MAX_BLOCK_N."""
    return min(MAX_BLOCK_N, pl.next_power_of_2(max(n, 1)))


def _scan_kernel(lam_re_ref, lam_im_ref, x0_re_ref, x0_im_ref, v_re_ref, v_im_ref,    # in
                 x_re_ref, x_im_ref,                                                  # out
                 *, length: int, n: int, block_n: int, reverse: bool):
    """One program: block_n lanes, all L positions in order (reversed: L-1 .. 0).

    refs are this program's blocks: lam_*, x0_* (block_n,); v_*, x_* (L block_n).
    """
    lanes = pl.program_id(0) * block_n + lax.iota(jnp.int32, block_n)   # (block_n,)
    mask = lanes < n                                                     # the ragged last block
    lam_re = plgpu.load(lam_re_ref, mask=mask, other=0)
    lam_im = plgpu.load(lam_im_ref, mask=mask, other=0)
    x_re = plgpu.load(x0_re_ref, mask=mask, other=0)
    x_im = plgpu.load(x0_im_ref, mask=mask, other=0)

    def step(i, x):
        x_re, x_im = x
        t = length - 1 - i if reverse else i
        v_re = plgpu.load(v_re_ref.at[t], mask=mask, other=0)             # (block_n,)
        v_im = plgpu.load(v_im_ref.at[t], mask=mask, other=0)
        x_re, x_im = lam_re * x_re - lam_im * x_im + v_re, lam_re * x_im + lam_im * x_re + v_im
        plgpu.store(x_re_ref.at[t], x_re, mask=mask)
        plgpu.store(x_im_ref.at[t], x_im, mask=mask)
        return x_re, x_im

    lax.fori_loop(0, length, step, (x_re, x_im))


def _scan_pallas(lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, reverse: bool, interpret: bool,
                 block_n: int) -> jnp.ndarray:
    """x_t = lam x_{t-1} + v_t (reverse: x_t = lam x_{t+1} + v_t, x_L = x0) by the kernel.

    lam (N,), v (L N), x0 (N,) complex -> (L N) complex
    """
    L, N = v.shape
    real = jnp.finfo(v.dtype).dtype
    lane = pl.BlockSpec((block_n,), lambda j: (j,))
    rows = pl.BlockSpec((L, block_n), lambda j: (0, j))
    kernel = functools.partial(_scan_kernel, length=L, n=N, block_n=block_n, reverse=reverse)
    x_re, x_im = pl.pallas_call(
        kernel,
        out_shape=(jax.ShapeDtypeStruct((L, N), real),) * 2,
        grid=(pl.cdiv(N, block_n),),
        in_specs=[lane, lane, lane, lane, rows, rows],
        out_specs=(rows, rows),
        compiler_params=plgpu.CompilerParams(num_warps=max(1, min(4, block_n // 32))),
        interpret=interpret,
        name="diagonal_scan_reverse" if reverse else "diagonal_scan",
    )(lam.real, lam.imag, x0.real, x0.imag, v.real, v.imag)
    return lax.complex(x_re, x_im)                                      # (L N)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _directed(log_lam, v, x0, reverse, interpret, block_n):
    """The kernel's recurrence in either direction: x_t = lambda x_{t-1} + v_t from x_{-1} = x0, or (reverse)
    x_t = lambda x_{t+1} + v_t from x_L = x0. Its VJP is the same function in the other direction, so the
    backward is differentiable again, to any order (jax.hessian; module docstring)."""
    return _scan_pallas(jnp.exp(log_lam), v, x0, reverse, interpret, block_n)


def _directed_fwd(log_lam, v, x0, reverse, interpret, block_n):
    states = _directed(log_lam, v, x0, reverse, interpret, block_n)    # (L N)
    return states, (log_lam, x0, states)


def _directed_bwd(reverse, interpret, block_n, residuals, g):
    """JAX's cotangents (the transpose, no conjugation): see the module docstring."""
    log_lam, x0, states = residuals
    lam = jnp.exp(log_lam)                                              # (N,)
    a = _directed(log_lam, g, jnp.zeros_like(x0), not reverse, interpret, block_n)   # the adjoint, the other way
    if not reverse:                                                     # a_t = g_t + lam a_{t+1}
        neighbour, first = jnp.concatenate([x0[None], states[:-1]], axis=0), a[0]      # x_{t-1}
    else:                                                               # a_t = g_t + lam a_{t-1}
        neighbour, first = jnp.concatenate([states[1:], x0[None]], axis=0), a[-1]      # x_{t+1}
    return lam * jnp.sum(a * neighbour, axis=0), a, lam * first


_directed.defvjp(_directed_fwd, _directed_bwd)


def _scan(log_lam, v, x0, interpret, block_n):
    return _directed(log_lam, v, x0, False, interpret, block_n)





def check_inputs(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray) -> None:
    """log_lam (N,), v (L N), x0 (N,), all of one complex dtype; else a one-line LinrnnError."""
    if v.ndim != 2 or log_lam.shape != (v.shape[1],) or x0.shape != (v.shape[1],):
        raise LinrnnError(f"pallas scan: expected log_lam (N,), v (L N), x0 (N,) of one sequence (vmap for a batch), "
                          f"found {log_lam.shape}, {v.shape}, {x0.shape}")
    dtypes = {jnp.dtype(a.dtype) for a in (log_lam, v, x0)}
    if dtypes not in ({jnp.dtype(jnp.complex64)}, {jnp.dtype(jnp.complex128)}):
        raise LinrnnError(f"pallas scan: expected log_lam, v, x0 of one complex dtype (complex64 or complex128), "
                          f"found {log_lam.dtype}, {v.dtype}, {x0.dtype}; a bfloat16 or float16 layer keeps its scan "
                          f"in complex64 (docs/precision.md, 'Low precision'): cast to complex64, or use the layer's "
                          f"scan mode")
    if dtypes == {jnp.dtype(jnp.complex128)}:
        check_dtype("float64")             # NumPy complex128 outside `float64()` would be cut to complex64


def scan(log_lam: jnp.ndarray, v: jnp.ndarray, x0: jnp.ndarray, *, interpret: bool = False,
         block_n: int | None = None) -> jnp.ndarray:
    """x_t = lambda x_{t-1} + v_t by the Pallas kernel, differentiable.

    log_lam    (N,) complex    log lambda
    v          (L N) complex   the drive
    x0         (N,) complex    the state before v_0
    interpret  bool            run the kernel in Pallas' interpreter (any backend, e.g. the CPU)
    block_n    int or None     lanes per program, a power of two (default: `default_block_n(N)`)
    -> states  (L N) complex
    """
    check_inputs(log_lam, v, x0)
    reason = unavailable_reason(interpret)
    if reason:
        raise LinrnnError(reason)
    N = v.shape[1]
    block_n = default_block_n(N) if block_n is None else block_n
    if block_n < 1 or block_n & (block_n - 1):
        raise LinrnnError(f"pallas scan: block_n must be a power of two (Triton's block shapes), found {block_n}")
    if v.size == 0:                        # L = 0 or N = 0: no states, and no grid to launch
        return v
    return _scan(log_lam, v, x0, interpret, block_n)

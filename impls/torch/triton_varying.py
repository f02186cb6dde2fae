"""The scan with a transition per position as Triton kernels: forward and backward, chunk-parallel, for CUDA tensors.

The recurrence of `varying_scan.py`, with its signature:

    x_t = a_t * x_{t-1} + v_t,    a_t = exp(log_a_t)      (reverse: x_t = a_t * x_{t+1} + v_t)

    log_a, v (B L n) real or complex (both of one dtype: float32, float64, complex64, complex128), x0 (B n) or None
    -> states (B L n)

Triton has no complex dtype: a complex tensor is read as its (Re, Im) pairs (`torch.view_as_real`), and the kernels
multiply by hand under the compile-time flag COMPLEX; a real one is read as it is, at half the traffic.

Forward, over nc = ceil(L / T) chunks of T positions, in three launches (`chunk_scan`), as `triton_scan.py`'s:

    1. reduce  grid (nc, n/K, B): each program runs its chunk from a zero state, writes the chunk's end E_c and the
               chunk's log-product, the sum of its log a_t (B nc n [2]): the product in log space, never a running
               product of T factors;
    2. carry   grid (n/K, B): S_0 = x0, S_{c+1} = exp(sum_c log a) S_c + E_c, chunk by chunk; writes S_c;
    3. rescan  grid (nc, n/K, B): each chunk again from S_c, writing the states.

Each step forms a_t = exp(log a_t) (complex: exp(Re) (cos Im, sin Im)) from the log it loads. Positions after L - 1
read log a = 0 and v = 0 (a = 1 passes a carry unchanged, so a reverse scan enters position L - 1 with its x0).

Backward (`VaryingTriton.backward`; the derivation is `varying_scan`'s): the adjoint adj_t = g_t + conj(a_{t+1})
adj_{t+1} is the same three launches in reverse, on the transitions shifted by one position and conjugated (formed
on the host, one copy of log a); grad v = adj, grad log_a_t = adj_t conj(a_t x_{t-1}) and grad x0 = conj(a_0) adj_0
are elementwise products on the host, with the states the forward returned (saved: a gated layer keeps them anyway).
Under `create_graph=True` or a torch.func transform the plain loop's derivative is used instead (`autodiff`).

Defaults: T = `scan.chunk_length(L)`, K = 32 lanes per program (one warp). Not yet run on a GPU: the kernels run under
Triton's interpreter (TRITON_INTERPRET=1) in tests/impls/test_torch_varying_scan.py, and `linrnn gpucheck` runs them
compiled where a GPU is. They are plain functions decorated at first launch, per mode (`kernels`), as in
`triton_scan.py`, so that TRITON_INTERPRET is read at call time.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from linrnn.base.errors import LinrnnError
from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through
from linrnn.impls.torch.scan import chunk_length
from linrnn.impls.torch.triton_scan import MAX_GRID, available, interpreted, triton, unavailable_reason
from linrnn.impls.torch.varying_scan import (adjoint_gradients, adjoint_transitions, check_inputs, floored_exp,
                                              sequential)

tl = None if triton is None else triton.language
LANES = 32                 # K: lanes per program (a power of two)

__all__ = ["available", "interpreted", "scan", "unavailable_reason"]


# -- the kernels: plain functions, decorated by `kernels` at first use (the rules of `triton_scan.py`) --------------

def chunk_kernel(la_ptr, w_ptr, start_ptr, out_ptr, logprod_ptr, L, n, T,
                 K: tl.constexpr, REVERSE: tl.constexpr, RESCAN: tl.constexpr, COMPLEX: tl.constexpr):
    """One chunk of one batch row, K lanes. la, w, out (B L n [2]); start, logprod (B nc n [2]); program ids
    (chunk c, lane block, batch row b). RESCAN false: from zero, writes the end into out (B nc n [2]) and the sum of
    log a into logprod. RESCAN true: from start[b, c], writes every state into out (B L n [2])."""
    c = tl.program_id(0)
    lanes = tl.program_id(1) * K + tl.arange(0, K)                   # (K,)
    b = tl.program_id(2).to(tl.int64)
    nc = tl.num_programs(0)
    live = lanes < n
    if COMPLEX:
        S = 2
    else:
        S = 1
    boundary = ((b * nc + c) * n + lanes) * S                        # (K,) offsets into (B nc n [2])
    if RESCAN:
        x_re = tl.load(start_ptr + boundary, mask=live, other=0.0)
        if COMPLEX:
            x_im = tl.load(start_ptr + boundary + 1, mask=live, other=0.0)
    else:
        probe = tl.load(la_ptr + lanes * 0, mask=live, other=0.0)        # for its dtype: the inputs'
        zero = tl.full([K], 0.0, probe.dtype)
        x_re = zero
        sum_re = zero
        if COMPLEX:
            x_im = zero
            sum_im = zero
    for i in range(T):
        if REVERSE:
            t = c * T + (T - 1 - i)
        else:
            t = c * T + i
        at = ((b * L + t) * n + lanes) * S                           # (K,) offsets into (B L n [2])
        inside = live & (tl.full([K], t, tl.int32) < L)              # (*) of triton_scan.py
        la_re = tl.load(la_ptr + at, mask=inside, other=0.0)
        w_re = tl.load(w_ptr + at, mask=inside, other=0.0)
        modulus = tl.exp(la_re)
        if COMPLEX:
            la_im = tl.load(la_ptr + at + 1, mask=inside, other=0.0)
            w_im = tl.load(w_ptr + at + 1, mask=inside, other=0.0)
            a_re = modulus * tl.cos(la_im)
            a_im = modulus * tl.sin(la_im)
            y_re = a_re * x_re - a_im * x_im + w_re
            x_im = a_re * x_im + a_im * x_re + w_im
            x_re = y_re
        else:
            x_re = modulus * x_re + w_re
        if RESCAN:
            tl.store(out_ptr + at, x_re, mask=inside)
            if COMPLEX:
                tl.store(out_ptr + at + 1, x_im, mask=inside)
        else:
            sum_re += la_re
            if COMPLEX:
                sum_im += la_im
    if not RESCAN:
        tl.store(out_ptr + boundary, x_re, mask=live)
        tl.store(logprod_ptr + boundary, sum_re, mask=live)
        if COMPLEX:
            tl.store(out_ptr + boundary + 1, x_im, mask=live)
            tl.store(logprod_ptr + boundary + 1, sum_im, mask=live)


def carry_kernel(logprod_ptr, ends_ptr, x0_ptr, starts_ptr, nc, n,
                 K: tl.constexpr, REVERSE: tl.constexpr, HAS_X0: tl.constexpr, COMPLEX: tl.constexpr):
    """The carries of one batch row, K lanes: S_first = x0 (or 0), S_next = exp(sum log a) S + E, chunk by chunk.
    logprod, ends, starts (B nc n [2]), x0 (B n [2]); program ids (lane block, batch row b)."""
    lanes = tl.program_id(0) * K + tl.arange(0, K)                   # (K,)
    b = tl.program_id(1).to(tl.int64)
    live = lanes < n
    if COMPLEX:
        S = 2
    else:
        S = 1
    probe = tl.load(logprod_ptr + lanes * 0, mask=live, other=0.0)       # for its dtype: the inputs'
    zero = tl.full([K], 0.0, probe.dtype)
    if HAS_X0:
        s_re = tl.load(x0_ptr + (b * n + lanes) * S, mask=live, other=0.0)
        if COMPLEX:
            s_im = tl.load(x0_ptr + (b * n + lanes) * S + 1, mask=live, other=0.0)
    else:
        s_re = zero
        if COMPLEX:
            s_im = zero
    for j in range(nc):
        if REVERSE:
            c = nc - 1 - j
        else:
            c = j
        at = ((b * nc + c) * n + lanes) * S                          # (K,) offsets into (B nc n [2])
        tl.store(starts_ptr + at, s_re, mask=live)
        p_re = tl.load(logprod_ptr + at, mask=live, other=0.0)
        e_re = tl.load(ends_ptr + at, mask=live, other=0.0)
        modulus = tl.exp(p_re)
        if COMPLEX:
            tl.store(starts_ptr + at + 1, s_im, mask=live)
            p_im = tl.load(logprod_ptr + at + 1, mask=live, other=0.0)
            e_im = tl.load(ends_ptr + at + 1, mask=live, other=0.0)
            q_re = modulus * tl.cos(p_im)
            q_im = modulus * tl.sin(p_im)
            y_re = q_re * s_re - q_im * s_im + e_re
            s_im = q_re * s_im + q_im * s_re + e_im
            s_re = y_re
        else:
            s_re = modulus * s_re + e_re


_BUILT: dict[bool, SimpleNamespace] = {}


def kernels() -> SimpleNamespace:
    """The kernels decorated by `triton.jit` for the current mode (compiled or interpreted), built once per mode."""
    mode = interpreted()
    if mode not in _BUILT:
        _BUILT[mode] = SimpleNamespace(chunk=triton.jit(chunk_kernel), carry=triton.jit(carry_kernel))
    return _BUILT[mode]


# -- host side ----------------------------------------------------------------------------------------

def _flat(x: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor the kernels index: complex as its (Re, Im) pairs."""
    x = x.contiguous()
    return torch.view_as_real(x).contiguous() if x.is_complex() else x


def chunk_scan(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None, T: int, K: int,
               reverse: bool = False) -> torch.Tensor:
    """Reduce, carry, rescan (module docstring).     log_a, v (B L n) of one dtype, x0 (B n) or None -> (B L n)"""
    B, L, n = v.shape
    complex_ = v.is_complex()
    nc, blocks = triton.cdiv(L, T), triton.cdiv(n, K)
    la, w = _flat(log_a), _flat(v)
    k = kernels()
    launch = {"num_warps": max(1, K // 32), "enable_fp_fusion": True}
    shape = (B, nc, n, 2) if complex_ else (B, nc, n)
    ends, logprod = w.new_empty(shape), w.new_empty(shape)
    k.chunk[(nc, blocks, B)](la, w, ends, ends, logprod, L, n, T, K=K, REVERSE=reverse, RESCAN=False,
                             COMPLEX=complex_, **launch)
    starts = torch.empty_like(ends)
    k.carry[(blocks, B)](logprod, ends, ends if x0 is None else _flat(x0), starts, nc, n, K=K, REVERSE=reverse,
                         HAS_X0=x0 is not None, COMPLEX=complex_, **launch)
    states = torch.empty_like(w)
    k.chunk[(nc, blocks, B)](la, w, starts, states, logprod, L, n, T, K=K, REVERSE=reverse, RESCAN=True,
                             COMPLEX=complex_, **launch)
    return torch.view_as_complex(states) if complex_ else states


class VaryingTriton(torch.autograd.Function):
    """The kernels' scan with the adjoint, itself the kernels' reverse scan, as its backward (module docstring)."""

    @staticmethod
    def forward(ctx, log_a, v, x0, T, K, reverse):
        states = chunk_scan(log_a, v, x0, T, K, reverse)
        ctx.save_for_backward(log_a, v, x0, states)
        ctx.T, ctx.K, ctx.reverse = T, K, reverse
        return states

    @staticmethod
    def backward(ctx, grad_states):
        log_a, v, x0, states = ctx.saved_tensors
        if recorded(grad_states):
            return vjp_through(lambda la, w, s, *_: sequential(la, w, s, ctx.reverse),
                               (log_a, v, x0, ctx.T, ctx.K, ctx.reverse), ctx.needs_input_grad, (grad_states,))
        with torch.no_grad():
            adj = chunk_scan(adjoint_transitions(log_a, ctx.reverse), grad_states.contiguous(), None, ctx.T, ctx.K,
                             not ctx.reverse)
            found = adjoint_gradients(adj, floored_exp(log_a), v, x0, states, ctx.reverse, ctx.needs_input_grad)
        return (*found, None, None, None)


def scan(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None, *, chunk: int | None = None,
         lanes: int = LANES, reverse: bool = False) -> torch.Tensor:
    """x_t = a_t x_{t-1} + v_t by the Triton kernels, differentiable in log_a, v and x0 (`varying_scan.chunked`'s
    signature, and its inputs' checks); chunk: T (None: `scan.chunk_length(L)`); lanes: K, a power of two."""
    if not available():
        raise LinrnnError(f"the Triton scan cannot run here: {unavailable_reason()}")
    log_a, v, x0 = check_inputs(log_a, v, x0)
    if v.device.type != "cuda" and not interpreted():
        raise LinrnnError(f"the Triton scan needs CUDA tensors, got {v.device} (set TRITON_INTERPRET=1 to run it in "
                          "Triton's interpreter on the CPU)")
    T = chunk_length(v.shape[1]) if chunk is None else chunk
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise LinrnnError(f"chunk must be None or a positive int (positions per chunk), got {chunk!r}")
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1 or lanes & (lanes - 1):
        raise LinrnnError(f"lanes must be a power of two (lanes per program), got {lanes!r}")
    if v.shape[0] > MAX_GRID or triton.cdiv(v.shape[2], lanes) > MAX_GRID:
        raise LinrnnError(f"at most {MAX_GRID} batch rows and {MAX_GRID} lane blocks, got B = {v.shape[0]}, "
                          f"{triton.cdiv(v.shape[2], lanes)} blocks of {lanes} lanes")
    if v.numel() == 0:
        return v.clone()
    if transformed(log_a, v, x0):
        return sequential(log_a, v, x0, reverse)
    return VaryingTriton.apply(log_a, v, x0, T, lanes, reverse)

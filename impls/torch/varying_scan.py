"""Diagonal linear recurrences with a transition per position, PyTorch: the naive loop and the chunked two-level scan.

The gated recurrences (Griffin's RG-LRU, Mamba's S6, HGRN) choose their decay from the input, so the transition
changes along the sequence and across the batch:

    x_t = a_t * x_{t-1} + v_t,        a_t = exp(log_a_t),  |a_t| <= 1,   x_{-1} = x0 (zeros if None)

    log_a  (B L n) real or complex   the log of each position's transition (real: 0 < a_t <= 1, a real scan)
    v      (B L n) real or complex   the drive
    x0     (B n) or None             the state before position 0
    -> states (B L n), x_t for t = 0..L-1       (complex when either input is; reverse: x_t = a_t x_{t+1} + v_t)

The transition is taken as its logarithm because that is how a gated layer forms it (RG-LRU: log a_t =
-c r_t softplus(-Lambda)), and because a product of many transitions near 1 is exact only as a sum of their
logs: a = 0.9999 in float32 keeps 1 - a to 4 digits, log a to 7.

Two algorithms with one signature `(log_a, v, x0) -> states`:

* `sequential`: the plain step loop, differentiated by autograd (the naive path the other must equal);
* `chunked`: the two-level scan of `scan.py` with the transition varying:
      1. inside every chunk of T positions, all chunks at once, the recurrence from a zero state (T steps);
      2. the chunk products P_{c,t} = a_{cT} ... a_{cT+t} = exp(cumulative sum of log a): in log space, so a product
         of transitions near 1 keeps its digits and one near 0 stops at a floor of tiny / eps (no subnormal forms);
      3. the carries over the nc = ceil(L / T) chunks,  S_{c+1} = P_{c,T-1} S_c + (end of chunk c)  (nc steps);
      4. one fix-up,  x_{cT+t} += P_{c,t} S_c.
  T + nc Python-level steps instead of L, each on nc times more lanes; T = `scan.chunk_length(L)` as there.

Gradients: under autograd `chunked` is `VaryingScan`, whose backward is itself a chunked scan, the adjoint
recurrence in reverse time with the transitions shifted by one position and conjugated (PyTorch's convention):

    g_t = dLoss/dx_t:   adj_t = g_t + conj(a_{t+1}) adj_{t+1},   adj_{L-1} = g_{L-1}
    grad v_t = adj_t,   grad x0 = conj(a_0) adj_0,   grad log_a_t = adj_t conj(a_t x_{t-1})   (x_{-1} = x0)

(x_t is holomorphic in log a_t, d x_t / d log a_t = a_t x_{t-1}.) The forward saves its own output, the states:
a gated layer reads them out (RG-LRU's output is its state), so keeping them costs no memory and recomputing
would cost a second scan. Under `create_graph=True` or a torch.func transform the plain route's derivative is
used (`linrnn.impls.torch.autodiff`). On CUDA with Triton, `fast_scan.varying` runs the Triton kernels of
`triton_varying.py` instead.

Precision: step 1 rounds as the loop does; steps 2-4 use exp(sum of logs), accurate to a few ulps of the sum, so the
error grows with the memory min(L, 1/(1 - max |a_t|)) as the loop's does (the tolerance table's `memory`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from linrnn.base.errors import LinrnnError
from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through
from linrnn.impls.torch.scan import chunk_length


def check_inputs(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None) -> tuple:
    """log_a and v of one shape (B L n), x0 (B n) or None; -> the three in one dtype (complex if either input is)."""
    if not isinstance(log_a, torch.Tensor) or not isinstance(v, torch.Tensor) or log_a.ndim != 3 or \
            log_a.shape != v.shape:
        raise LinrnnError(f"varying scan: expected log_a and v of one shape (B L n), found "
                          f"{_shape(log_a)} and {_shape(v)}")
    dtype = torch.promote_types(log_a.dtype, v.dtype)
    if x0 is not None:
        if not isinstance(x0, torch.Tensor) or tuple(x0.shape) != (v.shape[0], v.shape[2]):
            raise LinrnnError(f"varying scan: expected x0 of shape ({v.shape[0]}, {v.shape[2]}) (B n) or None, found "
                              f"{_shape(x0)}")
        dtype = torch.promote_types(dtype, x0.dtype)
    if dtype not in (torch.float32, torch.float64, torch.complex64, torch.complex128):
        raise LinrnnError(f"varying scan: expected float32, float64, complex64 or complex128 inputs, found {dtype}")
    return log_a.to(dtype), v.to(dtype), (None if x0 is None else x0.to(dtype))


def _shape(x) -> str:
    return f"{tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def sequential(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None,
               reverse: bool = False) -> torch.Tensor:
    """x_t = a_t x_{t-1} + v_t one step at a time (reverse: x_t = a_t x_{t+1} + v_t), autograd's derivative."""
    log_a, v, x0 = check_inputs(log_a, v, x0)
    a = torch.exp(log_a)                                              # (B L n)
    x = torch.zeros_like(v[:, 0]) if x0 is None else x0               # (B n)
    steps = range(v.shape[1] - 1, -1, -1) if reverse else range(v.shape[1])
    states = [None] * v.shape[1]
    for t in steps:
        x = a[:, t] * x + v[:, t]
        states[t] = x
    return torch.stack(states, dim=1) if states else v.clone()


def chunked(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None, chunk: int | None = None,
            reverse: bool = False) -> torch.Tensor:
    """x_t = a_t x_{t-1} + v_t by the chunked two-level scan (module docstring); reverse: from the end.

    chunk: T, or None for `scan.chunk_length(L)`. Under autograd this is `VaryingScan` (its backward a chunked scan).
    """
    log_a, v, x0 = check_inputs(log_a, v, x0)
    T = chunk_length(v.shape[1]) if chunk is None else chunk
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise LinrnnError(f"chunk: expected a whole number of positions >= 1 (or None), found {chunk!r}")
    if v.shape[1] == 0:
        return v.clone()
    if transformed(log_a, v, x0):
        return sequential(log_a, v, x0, reverse)                      # the plain route (`autodiff`)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (log_a, v, x0)):
        return VaryingScan.apply(log_a, v, x0, T, reverse)
    return scan(log_a, v, x0, T, reverse)


# -- the chunked scan, without a graph ---------------------------------------------------------------

def floored_exp(z: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """exp(z) with |exp(z)| at least finfo.tiny / finfo.eps (1e-31 in float32, 1e-292 in float64): a transition or a
    product below it acts as that floor, a difference far below any output's precision, and no subnormal number forms
    (one slows every product that touches it several times over; `scan.powers` flushes them for the same reason).
    Real or complex z; `inplace`: z (real) is overwritten with the result."""
    real = z.real if z.is_complex() else z
    finfo = torch.finfo(real.dtype)
    floor = math.log(finfo.tiny / finfo.eps)
    if not z.is_complex():
        return (z.clamp_(min=floor) if inplace else z.clamp(min=floor)).exp_()
    return torch.polar(real.clamp(min=floor).exp_(), z.imag)


def cumulative(la: torch.Tensor, reverse: bool) -> torch.Tensor:
    """The running sum of log a inside each chunk (from the chunk's end, reverse), by T in-place adds of (B nc n)
    slices: `torch.cumsum` along a middle axis took 4 times the whole scan (B 8, L 4096, n 256, float32).
    la (B nc T n) -> (B nc T n)"""
    out = la.clone()
    steps = out.unbind(2)
    order = range(1, len(steps)) if not reverse else range(len(steps) - 2, -1, -1)
    for t in order:
        steps[t].add_(steps[t - 1] if not reverse else steps[t + 1])
    return out


def to_chunks(x: torch.Tensor, T: int) -> torch.Tensor:
    """(B L n) -> (B nc T n), zero-padded after position L - 1 (a log-transition of 0 there: a = 1 passes a carry
    through unchanged, so a reverse scan enters position L - 1 with the state it was given)."""
    B, L, n = x.shape
    nc = -(-L // T)
    x = F.pad(x, (0, 0, 0, nc * T - L)) if nc * T != L else x.contiguous()
    return x.view(B, nc, T, n)


def scan(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None, T: int, reverse: bool = False) -> torch.Tensor:
    """Steps 1-4 of the module docstring on one dtype of inputs.     -> states (B L n)"""
    L = v.shape[1]
    la, w = to_chunks(log_a, T), to_chunks(v, T)                       # (B nc T n)
    a = floored_exp(la)
    products = floored_exp(cumulative(la, reverse), inplace=True)      # (B nc T n): 2. the chunk products
    states = torch.empty_like(w)
    first, order, prev = (0, range(1, T), -1) if not reverse else (T - 1, range(T - 2, -1, -1), 1)
    w_t, a_t, x_t = w.unbind(2), a.unbind(2), states.unbind(2)
    x_t[first].copy_(w_t[first])
    for t in order:                                                    # 1. inside every chunk, all chunks at once
        torch.addcmul(w_t[t], a_t[t], x_t[t + prev], out=x_t[t])
    last = T - 1 if not reverse else 0
    ends, totals = states[:, :, last], products[:, :, last]           # (B nc n): each chunk's end and product
    nc = ends.shape[1]
    boundaries = torch.empty_like(ends)                                # (B nc n): the state entering each chunk
    first_c, order_c, prev_c = (0, range(1, nc), -1) if not reverse else (nc - 1, range(nc - 2, -1, -1), 1)
    e_c, p_c, s_c = ends.unbind(1), totals.unbind(1), boundaries.unbind(1)
    if x0 is None:
        s_c[first_c].zero_()
    else:
        s_c[first_c].copy_(x0)
    for c in order_c:                                                  # 3. the carries
        torch.addcmul(e_c[c + prev_c], p_c[c + prev_c], s_c[c + prev_c], out=s_c[c])
    states.addcmul_(boundaries.unsqueeze(2), products)                 # 4. the fix-up
    return states.view(v.shape[0], -1, v.shape[2])[:, :L]


# -- the backward: the adjoint recurrence, itself a chunked scan --------------------------------------

def adjoint_transitions(log_a: torch.Tensor, reverse: bool) -> torch.Tensor:
    """log conj(a_{t+1}) at t (reverse: log conj(a_{t-1})), 0 where there is no neighbour (it meets a zero carry)."""
    shifted = log_a.conj().resolve_conj()
    zero = torch.zeros_like(log_a[:, :1])
    return torch.cat([shifted[:, 1:], zero], 1) if not reverse else torch.cat([zero, shifted[:, :-1]], 1)


def gradients(log_a, v, x0, states, grad_states, T: int, reverse: bool, needs) -> tuple:
    """The adjoint (module docstring) -> grad log_a, grad v, grad x0 (None where not needed)."""
    adjoint = scan(adjoint_transitions(log_a, reverse), grad_states, None, T, not reverse)    # (B L n)
    return adjoint_gradients(adjoint, floored_exp(log_a), v, x0, states, reverse, needs)


def adjoint_gradients(adjoint, a, v, x0, states, reverse: bool, needs) -> tuple:
    """grad log_a_t = adj_t conj(a_t x_{t-1}) (x_{-1} = x0 or 0), grad v = adj, grad x0 = conj(a_0) adj_0 (reverse: the
    neighbour x_{t+1}, and the last position), without a shifted copy of the states.     -> three (or None)"""
    first = 0 if not reverse else -1
    grad_log_a = None
    if needs[0]:
        grad_log_a = torch.empty_like(adjoint)                         # a_t x_{t-1}, then conjugated, then adj_t
        now, before = (slice(1, None), slice(None, -1)) if not reverse else (slice(None, -1), slice(1, None))
        torch.mul(a[:, now], states[:, before], out=grad_log_a[:, now])
        if x0 is None:
            grad_log_a[:, first].zero_()
        else:
            torch.mul(a[:, first], x0, out=grad_log_a[:, first])
        if grad_log_a.is_complex():
            grad_log_a = grad_log_a.conj_physical_()
        grad_log_a.mul_(adjoint)
    grad_x0 = a[:, first].conj() * adjoint[:, first] if x0 is not None and needs[2] else None
    return grad_log_a, (adjoint if needs[1] else None), grad_x0


class VaryingScan(torch.autograd.Function):
    """`chunked` with its own backward, the adjoint recurrence as a chunked scan (module docstring)."""

    @staticmethod
    def forward(ctx, log_a, v, x0, T, reverse):
        states = scan(log_a, v, x0, T, reverse)
        ctx.save_for_backward(log_a, v, x0, states)
        ctx.T, ctx.reverse = T, reverse
        return states

    @staticmethod
    def backward(ctx, grad_states):
        log_a, v, x0, states = ctx.saved_tensors
        if recorded(grad_states):                   # a derivative of the backward: the plain route's (`autodiff`)
            return vjp_through(lambda la, w, s, *_: sequential(la, w, s, ctx.reverse), (log_a, v, x0, ctx.T,
                               ctx.reverse), ctx.needs_input_grad, (grad_states,))
        with torch.no_grad():
            found = gradients(log_a, v, x0, states, grad_states.contiguous(), ctx.T, ctx.reverse,
                              ctx.needs_input_grad)
        return (*found, None, None)

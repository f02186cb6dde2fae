"""Diagonal linear recurrences over time, PyTorch: the naive loop and the chunked two-level scan.

Every mixer of this package reduces its recurrence to one diagonal recurrence over `n` lanes,

    x_t = lambda * x_{t-1} + v_t,        lambda = exp(log_lambda) in C^n,  |lambda| <= 1

stored as interleaved real pairs: a lane is (x[..., k, 0], x[..., k, 1]) = (Re, Im). That is exactly
RotRNN's rotated basis P^T x, whose 2x2 blocks act on (x[2j], x[2j+1]); for LRU and DLR it is the
complex state split into real and imaginary parts. Parameters and buffers stay real (see
docs/precision.md, "Dtype traps"); complex numbers appear only as views inside `chunked`.

Two algorithms with one signature `(log_lambda, v, x0) -> states`:

* `sequential`: the plain step loop, written with real 2x2 rotation-scalings on the pairs,
      [x_re; x_im] <- |lambda| [[cos, -sin], [sin, cos]] [x_re; x_im] + v_t
  (the naive path: L steps of O(n) work each).
* `chunked`: the two-level scan, in complex arithmetic on the same buffers (viewed as complex):
      1. a sequential scan of length T inside every chunk of T steps, all chunks at once;
      2. a scan over the nc = ceil(L / T) chunk carries,  S_c = lambda^T S_{c-1} + (end of chunk c-1);
      3. one fix-up,  x_{cT+t} += lambda^(t+1) S_c,  with lambda^k = exp(k log lambda).
  T + nc Python-level steps instead of L, each on nc times more lanes.

Why `scan` uses `chunked`: the plain loop pays PyTorch's per-op overhead at each of the L steps on
ops only n lanes wide, while the chunked scan pays it T + nc times on ops nc times wider, plus one
extra pass over the states (the fix-up), so on a CPU it wins whenever the per-op overhead dominates
the arithmetic of one step. T = 2^round(log2(sqrt(L))) minimises those T + L/T steps (the measured
optimum is flat around it). A log-depth tree scan does more arithmetic and, on a few cores, lost even
to the plain loop, so none is offered. On CUDA the same algorithm launches T + nc kernels of B nc n
lanes each; the same rule is used there, unmeasured. The loop stays as `sequential`: the naive path,
the one the chunked scan must equal. The timings behind this choice are in docs/speed-log.md (measured
once on this project's machine); `pytest --benchmark -k torch_scan_alone` (tests/bench/test_bench_torch.py,
via `linrnn.verify.bench_torch.scan_timings`) reproduces them into the benchmark JSON.

Gradients: under autograd `chunked` is `DiagonalScan`, whose backward is the adjoint recurrence run as the
same chunked scan in reverse time with the transition conjugated, the states recomputed from the saved
chunk boundaries (the derivation is in its docstring). Autograd through the Python loop instead made
every slice's backward allocate a zero buffer the size of the whole input, O(L^1.5) work and memory:
fwd+bwd grew 13x from L = 1024 to 4096 (docs/speed-log.md, "Training: the backward of the scans"). The
layers' `scan` view goes one step further (`layer_scan.py`): projections, scan and read-out in one Function.

Precision: step 2 multiplies carries by lambda^T = exp(T log lambda) and step 3 by exp(k log lambda),
each accurate to a few ulps, so the error grows with min(L, 1/(1 - |lambda|)) as the loop's does
(the tolerance table's `memory`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through

COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def complex_dtype(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype of the same precision (float32 -> complex64, float64 -> complex128)."""
    return COMPLEX[dtype]


def chunk_length(length: int) -> int:
    """T = 2^round(log2(sqrt(L))): minimises the T + L/T sequential steps of `chunked`."""
    return 2 ** max(0, round(0.5 * math.log2(max(length, 1))))


def powers(log_lam: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """lambda^k = exp(k log lambda) for every k in `steps`, flushed to exact zero where |lambda^k| < tiny / eps.

    log_lam (n,) complex, steps (S,) real -> (S n) complex.
    Powers under finfo.tiny / finfo.eps (1e-31 in float32, 1e-292 in float64) are far below the
    precision of any output, while they or their products with the inputs would be subnormal, which
    makes every matrix product and FFT that touches them several times slower on x86 CPUs (measured
    on the DLR kernel-form products at L = 4096, float32: 80 ms instead of 15 ms). The test is on the
    modulus only: a part that is exactly zero (sin 0) must keep its derivative.
    Differentiable in log_lam through `Powers`, which keeps no (S n) intermediate for the backward.
    """
    if torch.is_grad_enabled() and log_lam.requires_grad and not transformed(log_lam, steps):
        return Powers.apply(log_lam, steps)
    return _powers(log_lam, steps)


def _powers(log_lam: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    finfo = torch.finfo(steps.dtype)
    log_threshold = math.log(finfo.tiny / finfo.eps)
    exponent = steps[:, None] * log_lam                                # (S n)
    underflow = exponent.real < log_threshold
    modulus = torch.exp(exponent.real.clamp(min=log_threshold))        # no subnormals inside exp either
    modulus = torch.where(underflow, torch.zeros_like(modulus), modulus)
    return torch.polar(modulus, exponent.imag)                         # real exp, cos, sin: vectorised


class Powers(torch.autograd.Function):
    """`powers` with the derivative d lambda^k / d log lambda = k lambda^k, the powers recomputed in the backward.

    Autograd through `_powers` would keep five (S n) intermediates (the exponent, the clamp, the mask,
    the modulus, the polar form): for DLR's kernel at L = 16384, N = 128, more than the layer's input.
    A flushed power is a constant zero, as in `_powers` (its derivative is zero there too). The backward is
    made of differentiable operations, so autograd records it when asked (`create_graph=True`).
    """

    @staticmethod
    def forward(ctx, log_lam, steps):
        ctx.save_for_backward(log_lam, steps)
        return _powers(log_lam, steps)

    @staticmethod
    def backward(ctx, grad):
        log_lam, steps = ctx.saved_tensors
        return power_gradient(log_lam, steps, grad), None


def power_gradient(log_lam: torch.Tensor, steps: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """The gradient of log lambda from `grad`, that of lambda^k for every k in steps: sum_k conj(k lambda^k) grad_k.

    log_lam (n,) complex, steps (S,) real, grad (S n) complex (PyTorch's convention) -> (n,) complex
    """
    derivative = _powers(log_lam, steps) * steps[:, None]                  # (S n)  k lambda^k
    return (grad * derivative.conj()).sum(0)


def rotation_scaling(log_lam: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The real 2x2 form of lambda on interleaved pairs, as two multipliers for `rotate`.

    log_lam (n,) complex -> A1, A2 (n 2) real with  rotate(x) = A1 * x + A2 * swap(x):
        A1 = |lambda| (cos, cos),   A2 = |lambda| (-sin, sin),   swap(x) = (x_im, x_re)
    """
    modulus = torch.exp(log_lam.real)                                # (n,)
    c, s = modulus * torch.cos(log_lam.imag), modulus * torch.sin(log_lam.imag)
    return torch.stack([c, c], -1).to(dtype), torch.stack([-s, s], -1).to(dtype)


def rotate(A1: torch.Tensor, A2: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """lambda * x on interleaved pairs, as a real 2x2 rotation-scaling.     x (... n 2) -> (... n 2)"""
    return torch.addcmul(A1 * x, A2, x.flip(-1))


def sequential(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None) -> torch.Tensor:
    """x_t = lambda * x_{t-1} + v_t, one step at a time, with real 2x2 rotation-scalings.

    log_lam  (n,) complex           log of the diagonal transition
    v        (B L n 2) real         inputs, interleaved (Re, Im) pairs
    x0       (B n 2) real or None   state before v_0 (zeros if None)
    -> states (B L n 2) real, x_t for t = 0..L-1
    """
    A1, A2 = rotation_scaling(log_lam, v.dtype)                      # (n 2), (n 2)
    x = torch.zeros_like(v[:, 0]) if x0 is None else x0              # (B n 2)
    if not differentiable(v, log_lam, x0):
        states = torch.empty_like(v)
        for t in range(v.shape[1]):
            x = torch.add(rotate(A1, A2, x), v[:, t], out=states[:, t])
        return states
    states = []
    for t in range(v.shape[1]):
        x = rotate(A1, A2, x) + v[:, t]
        states.append(x)
    return torch.stack(states, dim=1)                                # (B L n 2)


def chunked(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None,
            chunk: int | None = None) -> torch.Tensor:
    """x_t = lambda * x_{t-1} + v_t by the chunked two-level scan (module docstring), complex arithmetic.

    log_lam  (n,) complex           log of the diagonal transition
    v        (B L n 2) real         inputs, interleaved (Re, Im) pairs
    x0       (B n 2) real or None   state before v_0 (zeros if None)
    chunk    T, or None for `chunk_length(L)`
    -> states (B L n 2) real, x_t for t = 0..L-1

    Under autograd this is `DiagonalScan`: the same forward arithmetic, and a backward that is itself a
    chunked scan (the adjoint recurrence, below), not autograd through the Python loop.
    """
    T = chunk_length(v.shape[1]) if chunk is None else chunk
    log_lam = log_lam.to(complex_dtype(v.dtype))
    if transformed(log_lam, v, x0):
        return sequential(log_lam, v, x0)               # the plain route (`autodiff`)
    if differentiable(v, log_lam, x0):
        return DiagonalScan.apply(log_lam, v, x0, T)
    return _forward(log_lam, v, x0, T)[0]


def differentiable(*tensors) -> bool:
    """Whether autograd records this call, or a torch.func transform or forward-mode AD sees it (then no `out=`
    buffers, which none of them supports)."""
    return (torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)) or transformed(*tensors)


# -- the chunked scan on complex chunks (B nc T n), forward or reverse in time ------------------------

def to_chunks(x: torch.Tensor, T: int) -> torch.Tensor:
    """Pairs (B L n 2) -> complex chunks (B nc T n), zero-padded after the sequence to nc T positions.

    A forward scan meets the padding last. A reverse scan meets it first, from a zero state, so it stays
    zero there and the scan enters position L - 1 with the state it would have had without padding: every
    reverse scan of this package enters the padded end with a zero carry.
    """
    B, L, n, _ = x.shape
    nc = -(-L // T)
    x = F.pad(x, (0, 0, 0, 0, 0, nc * T - L)) if nc * T != L else x.contiguous()
    return torch.view_as_complex(x).view(B, nc, T, n)


def from_chunks(chunks: torch.Tensor, L: int) -> torch.Tensor:
    """Complex chunks (B nc T n) -> pairs (B L n 2), the padding dropped (a view)."""
    B, nc, T, n = chunks.shape
    return torch.view_as_real(chunks.reshape(B, nc * T, n)[:, :L])


def local_scan(lam: torch.Tensor, w: torch.Tensor, out: torch.Tensor, reverse: bool = False,
               time_dim: int = 2) -> torch.Tensor:
    """Step 1: the recurrence inside every chunk from a zero state, all chunks at once, written into `out`.

    lam (n,), w and out complex chunks: (B nc T n) (time_dim 2) or time-major (T B nc n) (time_dim 0);
    `out` may be `w` itself (in place). Reverse: out_t = w_t + lambda out_{t+1} from the chunk's end.
    """
    T = w.shape[time_dim]
    first, order, prev = (0, range(1, T), -1) if not reverse else (T - 1, range(T - 2, -1, -1), 1)
    steps_in, steps = _steps(w, out, time_dim)
    if out is not w:
        steps[first].copy_(steps_in[first])
    for t in order:
        torch.addcmul(steps_in[t], lam, steps[t + prev], out=steps[t])
    return out


def _steps(w: torch.Tensor, out: torch.Tensor, dim: int) -> tuple[tuple, tuple]:
    """The slices of w and out along `dim`, as views made by one call each (`unbind`).

    A loop of steps indexes them once per step; `select` from Python costs about 4 us a call, three calls
    a step, while the step itself is 10-30 us at the layer's block sizes. With the views made up front,
    RotRNN's and LRU's `scan` layers took about 12 % less time, forward and fwd+bwd (docs/speed-log.md).
    """
    steps_in = w.unbind(dim)
    return steps_in, (steps_in if out is w else out.unbind(dim))


def scan_chunks(lam_powers: torch.Tensor, w: torch.Tensor, carry: torch.Tensor | None,
                reverse: bool = False, time_dim: int = 2,
                out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps 1-3 on complex chunks: the states and the state entering every chunk (its boundary).

    lam_powers (T+1 n)   lambda^k for k = 0..T
    w          (B nc T n) inputs, or time-major (T B nc n) with time_dim 0
    carry      (B n) or None: the state entering the first chunk (the last one, reverse)
    out        where the states go (w itself: in place), or None for a new buffer
    -> states (shaped as w), boundaries (B nc n)

    Why two layouts: the chunks of a (B L n) sequence are views of it batch-major, and the states read
    as (B L n) again without a copy (`chunked`). A step's slice is then B nc rows of n lanes T n entries
    apart; where the inputs are formed anyway (the layer's projection, `layer_scan`), time-major chunks
    make it one contiguous block, and a step took half the time (B 8, nc 16, T 16, n 128, complex64:
    30 against 60 us on the development machine).
    """
    if time_dim not in (0, 2):
        raise ValueError(f"time_dim: expected 2 (B nc T n) or 0 (T B nc n), found {time_dim}")
    T = w.shape[time_dim]
    lam, lam_T = lam_powers[1], lam_powers[T]
    states = local_scan(lam, w, torch.empty_like(w) if out is None else out, reverse, time_dim)
    ends = states.select(time_dim, T - 1 if not reverse else 0)       # (B nc n): the end of every chunk
    boundaries, nc = torch.empty_like(ends), ends.shape[1]            # (B nc n)
    first, order, prev = (0, range(1, nc), -1) if not reverse else (nc - 1, range(nc - 2, -1, -1), 1)
    chunk_ends, chunk_bounds = _steps(ends, boundaries, 1)
    if carry is None:
        chunk_bounds[first].zero_()
    else:
        chunk_bounds[first].copy_(carry)
    for c in order:                                                   # 2. the carries
        torch.addcmul(chunk_ends[c + prev], lam_T, chunk_bounds[c + prev], out=chunk_bounds[c])
    fixup = lam_powers[1:] if not reverse else lam_powers[1:].flip(0) # lambda^(t+1), reverse lambda^(T-t)
    fixup = fixup.view(T, *[1] * (w.dim() - 2 - time_dim), -1)        # (T n) or (T 1 1 n): along the time axis
    states.addcmul_(boundaries.unsqueeze(time_dim), fixup)            # 3. the fix-up
    return states, boundaries


def _forward(log_lam, v, x0, T):
    """The chunked scan without a graph.     -> states (B L n 2), boundaries (B nc n) complex"""
    L = v.shape[1]
    lam_powers = powers(log_lam, torch.arange(T + 1, device=v.device, dtype=v.dtype))   # (T+1 n)
    carry = None if x0 is None else torch.view_as_complex(x0.contiguous())
    states, boundaries = scan_chunks(lam_powers, to_chunks(v, T), carry)
    return from_chunks(states, L), boundaries


# -- the backward: the adjoint recurrence, itself a scan -------------------------------------------

BLOCK = 2**21       # complex entries of the states recomputed at once in the backward (32 MiB in complex128)


class DiagonalScan(torch.autograd.Function):
    """`chunked` with its own backward: the adjoint of a diagonal recurrence is a diagonal recurrence.

    For a real loss and x_t = lambda x_{t-1} + v_t (PyTorch's convention: the gradient of a complex z is
    dLoss/dRe z + i dLoss/dIm z), with g_t the gradient arriving at x_t, the adjoint

        a_t = g_t + conj(lambda) a_{t+1},   a_L = 0                    (a scan in reverse time)

    gives every gradient:

        grad v_t = a_t,   grad x0 = conj(lambda) a_0,
        grad lambda = sum_{b,t} a_t conj(x_{t-1})  (x_{-1} = x0),   grad log lambda = conj(lambda) grad lambda

    (lambda = exp(log lambda) is holomorphic). The adjoint runs as the same chunked scan in reverse, with
    the transition conjugated. The states x_{t-1} are not stored: the forward saves only the state entering
    each chunk (B nc n), and the backward recomputes the states a block of chunks at a time (at most
    `BLOCK` entries), so the backward holds v, the adjoint and one block, not a second trajectory.
    """

    @staticmethod
    def forward(ctx, log_lam, v, x0, T):
        states, boundaries = _forward(log_lam, v, x0, T)
        ctx.save_for_backward(log_lam, v, boundaries, x0)
        ctx.T, ctx.has_x0 = T, x0 is not None
        return states

    @staticmethod
    def backward(ctx, grad_states):
        log_lam, v, boundaries, x0 = ctx.saved_tensors
        if recorded(grad_states):                   # a derivative of the backward: the plain route's (`autodiff`)
            return vjp_through(lambda *a: sequential(*a[:3]), (log_lam, v, x0, ctx.T), ctx.needs_input_grad,
                               (grad_states,))
        with torch.no_grad():
            return DiagonalScan._adjoint(ctx, grad_states, log_lam, v, boundaries)

    @staticmethod
    def _adjoint(ctx, grad_states, log_lam, v, boundaries):
        T, L = ctx.T, v.shape[1]
        lam_powers = powers(log_lam, torch.arange(T + 1, device=v.device, dtype=v.dtype))   # (T+1 n)
        adjoint, _ = scan_chunks(lam_powers.conj(), to_chunks(grad_states, T), None, reverse=True)  # (B nc T n)
        lam = lam_powers[1]
        grad_x0 = None
        if ctx.has_x0 and ctx.needs_input_grad[2]:
            grad_x0 = torch.view_as_real(adjoint[:, 0, 0] * lam.conj())
        grad_log_lam = None
        if ctx.needs_input_grad[0]:
            grad_log_lam = lam.conj() * transition_gradient(lam_powers, to_chunks(v, T), boundaries, adjoint)
        grad_v = from_chunks(adjoint, L) if ctx.needs_input_grad[1] else None
        return grad_log_lam, grad_v, grad_x0, None


def transition_gradient(lam_powers: torch.Tensor, w: torch.Tensor, boundaries: torch.Tensor,
                        adjoint: torch.Tensor) -> torch.Tensor:
    """sum_{b,t} a_t conj(x_{t-1}), with the states recomputed from the chunk boundaries a block at a time.

    lam_powers (T+1 n), w and adjoint (B nc T n) complex (forward chunking), boundaries (B nc n) -> (n,)
    Inside chunk c, x_{cT+t} = local_t + lambda^(t+1) S_c, and x_{cT-1} = S_c is the boundary itself.
    """
    B, nc, T, n = w.shape
    lam, fixup = lam_powers[1], lam_powers[1:]
    total = torch.zeros_like(lam)
    per_block = max(1, BLOCK // (B * T * n))
    for c0 in range(0, nc, per_block):
        c1 = min(nc, c0 + per_block)
        S, a = boundaries[:, c0:c1], adjoint[:, c0:c1]                            # (B nb n), (B nb T n)
        x = local_scan(lam, w[:, c0:c1], torch.empty_like(a)).addcmul_(S[:, :, None], fixup)
        total += (a[:, :, 1:] * x[:, :, :-1].conj()).sum((0, 1, 2))     # not einsum: n one-row products (bmm)
        total += (a[:, :, 0] * S.conj()).sum((0, 1))
    return total

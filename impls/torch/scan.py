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
the one the chunked scan must equal. The timings behind this choice are in docs/speed.md (measured
once on this project's machine); `pytest --benchmark -k torch_scan_alone` (tests/bench/test_bench_torch.py,
via `linrnn.impls.torch.bench.scan_timings`) reproduces them into the benchmark JSON.

Precision: step 2 multiplies carries by lambda^T = exp(T log lambda) and step 3 by exp(k log lambda),
each accurate to a few ulps, so the error grows with min(L, 1/(1 - |lambda|)) as the loop's does
(the tolerance table's `memory`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

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
    """
    finfo = torch.finfo(steps.dtype)
    log_threshold = math.log(finfo.tiny / finfo.eps)
    exponent = steps[:, None] * log_lam                                # (S n)
    underflow = exponent.real < log_threshold
    modulus = torch.exp(exponent.real.clamp(min=log_threshold))        # no subnormals inside exp either
    modulus = torch.where(underflow, torch.zeros_like(modulus), modulus)
    return torch.polar(modulus, exponent.imag)                         # real exp, cos, sin: vectorised


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
    """
    B, L, n, _ = v.shape
    T = chunk_length(L) if chunk is None else chunk
    nc = -(-L // T)
    cdtype = complex_dtype(v.dtype)
    log_lam = log_lam.to(cdtype)
    padded = F.pad(v, (0, 0, 0, 0, 0, nc * T - L)) if nc * T != L else v.contiguous()
    w = torch.view_as_complex(padded).view(B, nc, T, n)               # (B nc T n)

    steps = torch.arange(T + 1, device=v.device, dtype=v.dtype)
    lam_powers = powers(log_lam, steps)                               # (T+1 n)  lambda^t, t = 0..T
    lam, lam_T = lam_powers[1], lam_powers[T]                         # (n,), (n,)
    carry = torch.zeros(B, n, dtype=cdtype, device=v.device) if x0 is None else torch.view_as_complex(x0.contiguous())
    if differentiable(v, log_lam, x0):
        states = _chunked_autograd(lam, lam_T, lam_powers[1:], w, carry)
    else:
        states = _chunked_inplace(lam, lam_T, lam_powers[1:], w, carry)
    return torch.view_as_real(states.reshape(B, nc * T, n)[:, :L])    # (B L n 2)


def differentiable(*tensors) -> bool:
    """Whether autograd records this call (then no `out=` buffers, which autograd does not support)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _chunked_autograd(lam, lam_T, fixup, w, carry):
    """Steps 1-3 out of place, for autograd.     w (B nc T n) complex -> states (B nc T n)"""
    T, nc = w.shape[2], w.shape[1]
    h = w[:, :, 0]                                                    # (B nc n)
    local = [h]
    for t in range(1, T):                                             # 1. inside every chunk, from zero
        h = torch.addcmul(w[:, :, t], lam, h)
        local.append(h)
    local = torch.stack(local, dim=2)                                 # (B nc T n)
    carries = [carry]
    for c in range(nc - 1):                                           # 2. the state before each chunk
        carry = torch.addcmul(local[:, c, -1], lam_T, carry)
        carries.append(carry)
    carries = torch.stack(carries, dim=1)                             # (B nc n)
    return torch.addcmul(local, carries[:, :, None], fixup)           # 3. the fix-up, lambda^(t+1) S_c


def _chunked_inplace(lam, lam_T, fixup, w, carry):
    """Steps 1-3 written into one buffer (inference: no autograd graph); the same arithmetic as above."""
    T, nc = w.shape[2], w.shape[1]
    states = torch.empty_like(w)                                      # (B nc T n)
    states[:, :, 0] = w[:, :, 0]
    for t in range(1, T):                                             # 1.
        torch.addcmul(w[:, :, t], lam, states[:, :, t - 1], out=states[:, :, t])
    carries = torch.empty_like(w[:, :, 0])                            # (B nc n)
    carries[:, 0] = carry
    for c in range(1, nc):                                            # 2.
        torch.addcmul(states[:, c - 1, -1], lam_T, carries[:, c - 1], out=carries[:, c])
    return states.addcmul_(carries[:, :, None], fixup)                # 3.


def scan(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None) -> torch.Tensor:
    """The fast scan of this package: `chunked` on every device (module docstring for the numbers)."""
    return chunked(log_lam, v, x0)

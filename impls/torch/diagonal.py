"""The diagonal form shared by RotRNN and LRU: project, run a diagonal recurrence, read out.

Both layers become, once their raw parameters are materialised (`rotrnn.materialise`, `lru.materialise`),

    v_t = W_in u_t                          (n lanes of interleaved (Re, Im) pairs: W_in is (2n H))
    x_t = lambda * x_{t-1} + v_t            (diagonal in C^n, stored as real pairs)
    y_t = W_out x_t + D * u_t               (W_out is (H 2n): the real part of a complex read-out)
    bidirectional:  y_t += W_out_rev x_bwd_t,  x_bwd_t = lambda * x_bwd_{t+1} + v_t  (current input included)

The views, one signature `(form, u, x0) -> (y (B L H), x_L (B n 2))`:

* `sequential`: the plain loop of real 2x2 rotation-scalings (`scan.sequential`);
* `scan`:       the chunked two-level scan (`fast_scan.scan`);
* `conv`:       each lane's impulse response lambda^l (computed as exp(l log lambda)) applied by a
                zero-padded FFT along time, plus lambda^(t+1) x0 for a given state. The layer's kernel
                K_l = W_out diag(lambda^l) W_in factorises through the lanes, so the H x H kernel is never
                formed: the FFT costs O(B n L log L) instead of O(B H^2 L log L);
* `step_once`:  one position with the projections done per position (streaming).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linrnn.impls.torch import fast_scan, scan as scans
from linrnn.impls.torch.conv import causal_conv
from linrnn.impls.torch.layer import Mixer
from linrnn.impls.torch.layer_scan import layer_scan


@dataclass
class DiagonalForm:
    """The derived tensors of one forward pass (all in the layer's dtype; log_lam in its complex dtype)."""

    log_lam: torch.Tensor            # (n,) complex       log lambda of every lane
    W_in: torch.Tensor               # (2n H)             rows (Re, Im) of lane k at 2k, 2k+1
    W_out: torch.Tensor              # (H 2n)
    W_out_rev: torch.Tensor | None   # (H 2n) or None     read-out of the backward scan
    D: torch.Tensor                  # (H,)
    A1: torch.Tensor                 # (n 2)              lambda as a real 2x2 rotation-scaling (`scan.rotate`)
    A2: torch.Tensor                 # (n 2)
    basis: torch.Tensor | None       # RotRNN: P (heads N N), to move states to the original basis; LRU: None

    @classmethod
    def build(cls, log_lam, W_in, W_out, W_out_rev, D, basis=None) -> "DiagonalForm":
        return cls(log_lam, W_in, W_out, W_out_rev, D, *scans.rotation_scaling(log_lam, D.dtype), basis)

    @property
    def lanes(self) -> int:
        return self.log_lam.shape[0]


def project(f: DiagonalForm, u: torch.Tensor) -> torch.Tensor:
    """v = W_in u.     u (B L H) -> v (B L n 2)"""
    return (u @ f.W_in.T).unflatten(-1, (f.lanes, 2))


def read_out(f: DiagonalForm, u: torch.Tensor, states: torch.Tensor, backward: torch.Tensor | None) -> torch.Tensor:
    """y = W_out x + D * u (+ W_out_rev x_bwd).     states (B L n 2) -> y (B L H)"""
    y = (states.flatten(-2) @ f.W_out.T).addcmul_(f.D, u)           # in place: mm's backward needs no output
    if backward is not None:
        y = y + backward.flatten(-2) @ f.W_out_rev.T
    return y


def lane_conv(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None) -> torch.Tensor:
    """x_t = sum_{l<=t} lambda^l v_{t-l} + lambda^(t+1) x0, by FFT: the `scan` signature, the kernel route.

    log_lam (n,) complex, v (B L n 2) real, x0 (B n 2) real or None -> states (B L n 2) real
    """
    L = v.shape[1]
    steps = torch.arange(L + 1, dtype=v.dtype, device=v.device)
    powers = scans.powers(log_lam, steps)                                     # (L+1 n)  lambda^l
    x = causal_conv(powers[:L], torch.view_as_complex(v.contiguous()))        # (B L n)
    if x0 is not None:
        x = x + torch.view_as_complex(x0.contiguous())[:, None] * powers[1:]   # the free response
    return torch.view_as_real(x)


def _run(recurrence, f: DiagonalForm, u: torch.Tensor, x0: torch.Tensor | None):
    v = project(f, u).to(f.D.dtype)                                           # (B L n 2) (float32 under autocast)
    states = recurrence(f.log_lam, v, x0)                                     # (B L n 2)
    backward = None
    if f.W_out_rev is not None:
        backward = recurrence(f.log_lam, v.flip(1), None).flip(1)
    return read_out(f, u, states, backward), states[:, -1]


def sequential(f: DiagonalForm, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The plain loop.     u (B L H), x0 (B n 2) or None -> y (B L H), x_L (B n 2)"""
    return _run(scans.sequential, f, u, x0)


def scan(f: DiagonalForm, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The chunked two-level scan: on CUDA with Triton the fused kernel (`triton_scan`), elsewhere the
    block-by-block Function of `layer_scan`, both with their own backward.

    u (B L H), x0 (B n 2) or None -> y (B L H), x_L (B n 2)
    """
    kernel = fast_scan.device_kernel(u.device)
    if kernel is not None:
        return _run(kernel, f, u, x0)
    return layer_scan(f.log_lam, f.W_in, f.W_out, f.W_out_rev, f.D, u, x0)


def conv(f: DiagonalForm, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The per-lane kernels by FFT.     u (B L H), x0 (B n 2) or None -> y (B L H), x_L (B n 2)"""
    return _run(lane_conv, f, u, x0)


def step_once(f: DiagonalForm, u_t: torch.Tensor, x: torch.Tensor):
    """One position.     u_t (B H), x (B n 2) -> y_t (B H), x (B n 2)"""
    v_t = (u_t @ f.W_in.T).unflatten(-1, (f.lanes, 2))                       # (B n 2)
    x = scans.rotate(f.A1, f.A2, x) + v_t
    return torch.addcmul(x.flatten(-2) @ f.W_out.T, f.D, u_t), x


def zero_state(f: DiagonalForm, batch: int) -> torch.Tensor:
    return torch.zeros(batch, f.lanes, 2, dtype=f.D.dtype, device=f.D.device)


def pairs(re: torch.Tensor, im: torch.Tensor, dim: int) -> torch.Tensor:
    """Interleave re and im along `dim` (re[0], im[0], re[1], im[1], ...): a complex projection's rows or columns as
    the form's real pairs (`W_in`, `W_out`)."""
    return torch.stack([re, im], dim=dim + 1).flatten(dim, dim + 1)


def lanes_to_native(self: "DiagonalMixer", f: DiagonalForm, state: torch.Tensor, batch: int) -> torch.Tensor:
    """A `to_native` for a mixer whose state is its complex lanes themselves (LRU, S5): x (B n) complex -> pairs
    (B n 2)."""
    self.check_state(state, (batch, f.lanes), scans.complex_dtype(self.dtype))
    return torch.view_as_real(state.resolve_conj())


def lanes_from_native(self: "DiagonalMixer", f: DiagonalForm, x: torch.Tensor) -> torch.Tensor:
    """The `from_native` beside `lanes_to_native`: pairs (B n 2) -> x (B n) complex."""
    return torch.view_as_complex(x.contiguous())


class DiagonalMixer(Mixer):
    """A mixer that materialises into a `DiagonalForm` (RotRNN, LRU): every view comes from this module.

    A subclass defines `config_type`, `materialise` and the state conversions (`to_native`, `from_native`; a state
    that is the complex lanes themselves: `lanes_to_native`, `lanes_from_native`).
    """

    autocast_modes = ("scan",)            # the projections of `layer_scan` in bf16 under autocast
    sequential = staticmethod(sequential)
    scan = staticmethod(scan)
    conv = staticmethod(conv)
    step_once = staticmethod(step_once)
    zero_state = staticmethod(zero_state)

"""S4D, PyTorch (Gu, Gupta, Goel, Re 2022; the s4 repo's `S4DKernel`; docs/models.md).

Per channel h, N complex modes, discretised by zero-order hold with B = 1 (folded into C):

    lambda     = exp(dt A),   dt_h = exp(log_dt_h),   A = -exp(log_A_real) + i A_imag      (H N)
    C~         = 2 C (exp(dt A) - 1) / A                  (exp(dt A) - 1 as expm1: no cancellation at small dt A)
    x_{t,h,n}  = lambda_{h,n} x_{t-1,h,n} + u_{t,h}        (recurrent view, state H x N)
    K_{h,l}    = Re(sum_n C~_{h,n} lambda_{h,n}^l)         (kernel view)
    y_{t,h}    = sum_{l<=t} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}   (future only; lag 0 is counted once)

The recurrence is depthwise: H N lanes, lane (h, n) with its own lambda_{h,n} and fed by its channel's
u_{t,h} (`lanes`). Routes of the views:

* `sequential`, `scan`: the lanes run through `scan.sequential` (the plain loop of real 2x2
  rotation-scalings) or `fast_scan.scan` (the chunked two-level scan with its adjoint backward; the Triton
  kernel on CUDA), then read out as Re(sum_n C~ x). They store the (B L H N) trajectory;
* `conv` (the route of the s4 code, and the one to train with): lambda^l = exp(l dt A) for l <= L, the
  kernel K (L H) and a real FFT convolution per channel (`conv.depthwise_conv`); a given state adds its
  free response Re(C~ lambda^(t+1) x0), and the final state, unless the caller drops it (`final_state`),
  is sum_s lambda^(L-1-s) u_s + lambda^L x0.
  The powers are one (L+1 H N) tensor, as in the s4 code's plain Vandermonde product (16.8M complex
  numbers at L = 4096, H = 128, N = 32), kept by autograd for the kernel's backward;
* `step`: one position on the lanes as real pairs.

The backward direction is the causal machinery on the time-reversed input u_{t+1}. States cross the
boundary as (B H N) complex tensors (the reference's convention); inside, (B H*N 2) real pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.torch import fast_scan, scan as scans
from linrnn.impls.torch.conv import depthwise_conv
from linrnn.impls.torch.layer import Mixer
from linrnn.impls.torch.scan import complex_dtype


# -- materialise the raw parameters -------------------------------------------------------------

@dataclass
class S4DForm:
    """The derived tensors of one forward pass."""

    log_lam: torch.Tensor              # (H*N,) complex     dt A of every lane, lane h N + n
    C: torch.Tensor                    # (H N) complex      C~ = 2 C (exp(dt A) - 1) / A
    C_rev: torch.Tensor | None         # (H N) complex or None
    D: torch.Tensor                    # (H,)
    A1: torch.Tensor                   # (H*N 2)            lambda as a real 2x2 rotation-scaling (`scan.rotate`)
    A2: torch.Tensor                   # (H*N 2)


def materialise(layer: "S4D") -> S4DForm:
    A = torch.complex(-torch.exp(layer.log_A_real), layer.A_imag)           # (H N)
    dtA = torch.exp(layer.log_dt)[:, None] * A
    zoh = torch.expm1(dtA) / A

    def weights(re, im):
        return 2 * torch.complex(re, im) * zoh

    C_rev = weights(layer.C_re_rev, layer.C_im_rev) if layer.config.bidirectional else None
    log_lam = dtA.flatten()
    return S4DForm(log_lam, weights(layer.C_re, layer.C_im), C_rev, layer.D,
                   *scans.rotation_scaling(log_lam, layer.D.dtype))


def lanes(u: torch.Tensor, N: int) -> torch.Tensor:
    """The input of lane (h, n) is u_h + 0i, as real pairs.     u (... H) -> (... H*N 2)"""
    return F.pad(u[..., None, None].expand(*u.shape, N, 1), (0, 1)).flatten(-3, -2)


def read_out(C: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Re(sum_n C_{h,n} x_{h,n}).     C (H N) complex, x (... H*N 2) real pairs -> (... H)"""
    return torch.einsum("...hn,hn->...h", torch.view_as_complex(x).unflatten(-1, C.shape), C).real


def kernel(powers: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """K_{l,h} = Re(sum_n C_{h,n} lambda_{h,n}^l).     powers (L H N) complex, C (H N) complex -> (L H)"""
    return torch.einsum("lhn,hn->lh", powers, C).real


def future(u: torch.Tensor) -> torch.Tensor:
    """u_{t+1} at position t, zero at the end: the input of the backward state z_t = lambda z_{t+1} + u_{t+1}."""
    return F.pad(u[:, 1:], (0, 0, 0, 1))


# -- the views: (form, u, x0) -> (y (B L H), x_L (B H*N 2)) ------------------------------------------

def _recurrent(recurrence, f: S4DForm, u: torch.Tensor, x0: torch.Tensor | None):
    N = f.C.shape[-1]
    states = recurrence(f.log_lam, lanes(u, N), x0)                        # (B L HN 2)
    y = torch.addcmul(read_out(f.C, states), f.D, u)
    if f.C_rev is not None:
        backward = recurrence(f.log_lam, lanes(future(u).flip(1), N), None).flip(1)
        y = y + read_out(f.C_rev, backward)
    return y, states[:, -1]


def sequential(f: S4DForm, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The plain loop on the lanes.     u (B L H), x0 (B H*N 2) or None -> y (B L H), x_L (B H*N 2)"""
    return _recurrent(scans.sequential, f, u, x0)


def scan(f: S4DForm, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The fast scan on the lanes (`fast_scan.scan`).     u (B L H), x0 (B H*N 2) or None -> y (B L H), x_L (B H*N 2)"""
    return _recurrent(fast_scan.scan, f, u, x0)


def conv(f: S4DForm, u: torch.Tensor, x0: torch.Tensor | None = None, final_state: bool = True):
    """The kernel by FFT (module docstring); the final state only if `final_state` (one more product over u).

    u (B L H), x0 (B H*N 2) or None -> y (B L H), x_L (B H*N 2) or None
    """
    L = u.shape[1]
    steps = torch.arange(L + 1, dtype=u.dtype, device=u.device)
    powers = scans.powers(f.log_lam, steps).unflatten(-1, f.C.shape)        # (L+1 H N)  lambda^l
    y = torch.addcmul(depthwise_conv(kernel(powers[:L], f.C), u), f.D, u)
    if f.C_rev is not None:                                                 # bidirectional: no state in or out
        return y + depthwise_conv(kernel(powers[:L], f.C_rev), future(u).flip(1)).flip(1), None
    if x0 is not None:
        x0 = torch.view_as_complex(x0.contiguous()).unflatten(-1, f.C.shape)  # (B H N)
        y = y + torch.einsum("lhn,bhn->blh", powers[1:], f.C * x0).real        # the free response
    if not final_state:
        return y, None
    x = torch.einsum("bsh,shn->bhn", u.to(powers.dtype), powers[:L].flip(0))   # sum_s lambda^(L-1-s) u_s
    if x0 is not None:
        x = x + powers[L] * x0
    return y, torch.view_as_real(x).flatten(1, 2)


def step_once(f: S4DForm, u_t: torch.Tensor, x: torch.Tensor):
    """One position.     u_t (B H), x (B H*N 2) -> y_t (B H), x (B H*N 2)"""
    x = scans.rotate(f.A1, f.A2, x) + lanes(u_t, f.C.shape[-1])
    return torch.addcmul(read_out(f.C, x), f.D, u_t), x


# -- the layer ----------------------------------------------------------------------------------

class S4D(Mixer):
    """One S4D layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = S4DConfig
    optional_state_modes = ("conv",)      # training drops the state: conv then skips its product over u

    materialise = materialise
    sequential = staticmethod(sequential)
    scan = staticmethod(scan)
    conv = staticmethod(conv)
    step_once = staticmethod(step_once)

    def zero_state(self, f: S4DForm, batch: int) -> torch.Tensor:
        return torch.zeros(batch, f.log_lam.shape[0], 2, dtype=self.dtype, device=self.D.device)

    def to_native(self, f: S4DForm, state: torch.Tensor, batch: int) -> torch.Tensor:
        """x (B H N) complex -> pairs (B H*N 2)."""
        cfg = self.config
        self.check_state(state, (batch, cfg.d_model, cfg.d_state), complex_dtype(self.dtype))
        return torch.view_as_real(state.resolve_conj()).flatten(1, 2)

    def from_native(self, f: S4DForm, x: torch.Tensor) -> torch.Tensor:
        """pairs (B H*N 2) -> x (B H N) complex."""
        return torch.view_as_complex(x.contiguous()).unflatten(1, (self.config.d_model, self.config.d_state))

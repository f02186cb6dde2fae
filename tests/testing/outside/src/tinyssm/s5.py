"""S5: one MIMO diagonal SSM, discretised per mode, kept modes read out as 2 Re(C x) (conjugate symmetry)."""

import torch
from torch import nn

from tinyssm.scan import diagonal_scan, packing

CLIP_RE = -1e-4          # clip_eigs: Re(Lambda) <= -1e-4 in the forward pass


def expm1(z: torch.Tensor) -> torch.Tensor:
    """exp(z) - 1 without the cancellation at small |z|: expm1(a) cos(b) - 2 sin(b/2)^2 + i exp(a) sin(b)."""
    a, b = z.real, z.imag
    return torch.complex(torch.expm1(a) * torch.cos(b) - 2 * torch.sin(b / 2) ** 2, torch.exp(a) * torch.sin(b))


class S5(nn.Module):
    def __init__(self, d_model: int, d_state: int, discretization: str = "zoh", clip_eigs: bool = False,
                 bidirectional: bool = False, dtype=torch.float32):
        super().__init__()
        if discretization not in ("zoh", "bilinear"):
            raise ValueError(f"discretization: expected 'zoh' or 'bilinear', found {discretization!r}")
        self.discretization, self.clip_eigs, self.bidirectional = discretization, clip_eigs, bidirectional

        def zeros(*shape):
            return nn.Parameter(torch.zeros(*shape, dtype=dtype))

        self.Lambda_re, self.Lambda_im, self.log_step = zeros(d_state), zeros(d_state), zeros(d_state)
        self.B_re, self.B_im = zeros(d_state, d_model), zeros(d_state, d_model)
        self.C_re, self.C_im = zeros(d_model, d_state), zeros(d_model, d_state)
        self.D = zeros(d_model)
        if bidirectional:
            self.C_re_rev, self.C_im_rev = zeros(d_model, d_state), zeros(d_model, d_state)

    def discretize(self):
        """(Lambda_bar (N,), B_bar (N, H)) by the zero-order hold or the bilinear transform."""
        re = torch.clamp(self.Lambda_re, max=CLIP_RE) if self.clip_eigs else self.Lambda_re
        lam = torch.complex(re, self.Lambda_im)
        step = torch.exp(self.log_step)
        B = torch.complex(self.B_re, self.B_im)
        if self.discretization == "zoh":
            return torch.exp(lam * step), (expm1(lam * step) / lam)[:, None] * B
        half = lam * step / 2
        return (1 + half) / (1 - half), (step / (1 - half))[:, None] * B

    def forward(self, u: torch.Tensor, state: torch.Tensor | None = None, lengths=None, segments=None):
        """u (B, L, H) -> (y (B, L, H), the state after the last position (B, N); None when bidirectional, or with
        lengths (B,) of padded rows or segments (B, L) of packed sequences, each computed as if alone)."""
        u, valid, starts = packing(u, lengths, segments)
        lam, B = self.discretize()
        bu = u.to(B.dtype) @ B.T
        x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if state is None else state
        xs = diagonal_scan(lam, bu, x, starts=starts)
        y = 2 * (xs @ torch.complex(self.C_re, self.C_im).T).real + self.D * u
        if self.bidirectional:
            back = diagonal_scan(lam, bu, torch.zeros_like(x), reverse=True, starts=starts)
            y = y + 2 * (back @ torch.complex(self.C_re_rev, self.C_im_rev).T).real
        if valid is not None:
            y = y * valid
        packed = self.bidirectional or lengths is not None or segments is not None
        return y, (None if packed else xs[:, -1])

"""The Linear Recurrent Unit:  x_t = lambda * x_{t-1} + exp(gamma_log) * (B u_t),  y_t = Re(C x_t) + D * u_t."""

import torch
from torch import nn

from tinyssm.scan import diagonal_scan, packing


class LRU(nn.Module):
    """lambda = exp(-exp(nu_log) + i exp(theta_log)); a second scan backwards in time when bidirectional."""

    def __init__(self, d_model: int, d_state: int, bidirectional: bool = False, dtype=torch.float32):
        super().__init__()
        self.bidirectional = bidirectional

        def zeros(*shape):
            return nn.Parameter(torch.zeros(*shape, dtype=dtype))

        self.nu_log, self.theta_log, self.gamma_log = zeros(d_state), zeros(d_state), zeros(d_state)
        self.B_re, self.B_im = zeros(d_state, d_model), zeros(d_state, d_model)
        self.C_re, self.C_im = zeros(d_model, d_state), zeros(d_model, d_state)
        self.D = zeros(d_model)
        if bidirectional:
            self.C_re_rev, self.C_im_rev = zeros(d_model, d_state), zeros(d_model, d_state)

    def eigenvalues(self) -> torch.Tensor:
        return torch.exp(torch.complex(-torch.exp(self.nu_log), torch.exp(self.theta_log)))

    def input_matrix(self) -> torch.Tensor:
        return torch.exp(self.gamma_log)[:, None] * torch.complex(self.B_re, self.B_im)

    def forward(self, u: torch.Tensor, state: torch.Tensor | None = None, lengths=None, segments=None):
        """u (B, L, H) -> (y (B, L, H), the state after the last position (B, N); None when bidirectional, or with
        lengths (B,) of padded rows or segments (B, L) of packed sequences, each computed as if alone)."""
        u, valid, starts = packing(u, lengths, segments)
        lam, B = self.eigenvalues(), self.input_matrix()
        bu = u.to(B.dtype) @ B.T
        x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if state is None else state
        xs = diagonal_scan(lam, bu, x, starts=starts)
        y = (xs @ torch.complex(self.C_re, self.C_im).T).real + self.D * u
        if self.bidirectional:
            back = diagonal_scan(lam, bu, torch.zeros_like(x), reverse=True, starts=starts)
            y = y + (back @ torch.complex(self.C_re_rev, self.C_im_rev).T).real
        if valid is not None:
            y = y * valid
        packed = self.bidirectional or lengths is not None or segments is not None
        return y, (None if packed else xs[:, -1])

    def step(self, u_t: torch.Tensor, state: torch.Tensor | None = None):
        """One position: u_t (B, H) -> (y_t (B, H), the new state)."""
        lam, B = self.eigenvalues(), self.input_matrix()
        x = torch.zeros(u_t.shape[0], lam.shape[0], dtype=lam.dtype) if state is None else state
        x = lam * x + u_t.to(B.dtype) @ B.T
        return (x @ torch.complex(self.C_re, self.C_im).T).real + self.D * u_t, x

"""LRU, PyTorch (Orvieto et al. 2023; docs/models.md).

Complex diagonal state x_t in C^N, real input u_t in R^H:

    lambda_j = exp(-exp(nu_log_j) + i exp(theta_log_j))
    x_t = lambda * x_{t-1} + exp(gamma_log) * (B u_t),      x_0 = 0,   B = B_re + i B_im
    y_t = Re(C x_t) + D * u_t,                               C = C_re + i C_im
    bidirectional:  y_t += Re(C_rev x_bwd_t),  x_bwd_t = lambda x_bwd_{t+1} + exp(gamma_log) B u_t

Route (the reference multiplies complex matrices and steps complex numbers): the state is kept as
interleaved real pairs (Re x_j, Im x_j), so both projections are real matrix products,

    W_in  = rows (exp(gamma_log_j) B_re[j], exp(gamma_log_j) B_im[j])   (2N H)
    W_out = columns (C_re[:, j], -C_im[:, j])                           (H 2N)     Re(C x) = C_re x_re - C_im x_im

and a real input is never cast to complex. The views (`diagonal.py`): `sequential` and `step` rotate
the pairs with real 2x2 rotation-scalings; `scan` runs the chunked two-level scan on the pairs viewed
as complex numbers; `conv` applies each mode's kernel lambda^l = exp(l log lambda) by a zero-padded FFT.
States cross the boundary as (B N) complex tensors (the reference's convention).
"""

from __future__ import annotations

import torch

from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.torch import diagonal
from linrnn.impls.torch.diagonal import DiagonalForm, lanes_from_native, lanes_to_native, pairs


# -- materialise the raw parameters -------------------------------------------------------------

def log_eigenvalues(nu_log: torch.Tensor, theta_log: torch.Tensor) -> torch.Tensor:
    """log lambda_j = -exp(nu_log_j) + i exp(theta_log_j).     (N,) -> (N,) complex"""
    return torch.complex(-torch.exp(nu_log), torch.exp(theta_log))


def materialise(layer: "LRU") -> DiagonalForm:
    """Raw parameters -> the real diagonal form (module docstring)."""
    gamma = torch.exp(layer.gamma_log)[:, None]                              # (N 1)
    W_in = pairs(gamma * layer.B_re, gamma * layer.B_im, dim=0)              # (2N H)
    W_out = pairs(layer.C_re, -layer.C_im, dim=1)                            # (H 2N)
    W_out_rev = pairs(layer.C_re_rev, -layer.C_im_rev, dim=1) if layer.config.bidirectional else None
    return DiagonalForm.build(log_eigenvalues(layer.nu_log, layer.theta_log), W_in, W_out, W_out_rev, layer.D)


# -- the layer ----------------------------------------------------------------------------------

class LRU(diagonal.DiagonalMixer):
    """One LRU layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = LRUConfig

    materialise = materialise

    to_native = lanes_to_native      # the state is the lanes: x (B N) complex <-> pairs (B N 2)
    from_native = lanes_from_native

"""RotRNN, PyTorch (Biegun, Dolga, Cunningham, Barber 2024; docs/models.md).

Per head h, with state x^h_t in R^N (N even) and input u_t in R^H:

    x^h_t = gamma_h P_h Theta_h P_h^T x^h_{t-1} + xi_h B_h u_t,      x^h_0 = 0
    y_t   = C [x^1_t; ...; x^heads_t] + D * u_t

    P_h     = expm(M_h - M_h^T)                 gamma_h = exp(-exp(gamma_log_h))
    Theta_h = blockdiag(R(theta_h,j))           R(t) = [[cos t, -sin t], [sin t, cos t]] on pairs (x[2j], x[2j+1])
    xi_h    = sqrt(1 - gamma_h^2) / ||B_h||_F

Route (different from the reference, which steps the dense A_h = gamma P Theta P^T and convolves with
the dense kernels K_k = C A^k xi B): every view runs in the rotated basis z^h = P_h^T x^h, where the
transition is diagonal: pair j of head h is one lane with lambda = gamma_h e^{i theta_hj}, and

    W_in  = blockdiag_h(xi_h P_h^T B_h)   (heads*N H)     z-inputs, interleaved pairs
    W_out = C blockdiag_h(P_h)            (H heads*N)     read-out straight from z

so P never multiplies the state inside the recurrence, and A^k = gamma^k P Theta^k P^T appears only as
lambda^k = exp(k (log gamma + i theta)) (no dense matrix power; claim R2). The views (`diagonal.py`):

* `sequential`, `step`: real 2x2 rotation-scalings gamma R(theta) on the interleaved pairs of z;
* `scan`:  the chunked two-level scan on the same pairs viewed as complex numbers;
* `conv`:  the per-pair kernels gamma^l e^{i l theta} applied by a zero-padded FFT.

States cross the boundary in the original basis: x = P z out, z = P^T x in.

P is computed with `torch.linalg.matrix_exp` on a batch of at least two matrices: torch 2.13 evaluates a
single matrix with a degree-8 Taylor polynomial whose coefficient is wrong (pytorch/pytorch#196592;
measured here on 2x2 rotations: errors up to 2.5e-5 in float32 and 2.4e-10 in float64), while batches always
take the accurate degree-18 path (2e-15 against 50-digit arithmetic for N = 4..16, where
scipy.linalg.expm, which the reference uses, is off by up to 3e-14).
"""

from __future__ import annotations

import torch

from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.torch import diagonal
from linrnn.impls.torch.diagonal import DiagonalForm


# -- materialise the raw parameters -------------------------------------------------------------

def orthogonal(M: torch.Tensor) -> torch.Tensor:
    """P_h = expm(M_h - M_h^T), through the batched (degree-18) path of matrix_exp.     M (heads N N) -> (heads N N)"""
    S = M - M.transpose(-1, -2)
    if S.shape[0] == 1:                       # a lone matrix would take the faulty single-matrix path
        return torch.linalg.matrix_exp(torch.cat([S, torch.zeros_like(S)]))[:1]
    return torch.linalg.matrix_exp(S)


def decay_log(gamma_log: torch.Tensor) -> torch.Tensor:
    """log gamma_h = -exp(gamma_log_h).     (heads,) -> (heads,)"""
    return -torch.exp(gamma_log)


def normalisation(gamma_log: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F, computed in float64 whatever the layer's dtype.

    gamma_log (heads,), B (heads N H) -> (heads,) in B's dtype.
    Fragile numerics: 1 - gamma^2 written as such cancels as gamma -> 1 (6e-4 relative in float32,
    7.9e-13 in float64 at gamma = 0.99995). It is computed as -expm1(2 log gamma), exact to rounding,
    in float64 and rounded once to the layer's dtype (the reference does the same).
    """
    one_minus_gamma_sq = -torch.expm1(2.0 * decay_log(gamma_log.to(torch.float64)))
    xi = torch.sqrt(one_minus_gamma_sq) / torch.sqrt(torch.sum(B.to(torch.float64) ** 2, dim=(1, 2)))
    return xi.to(B.dtype)


def materialise(layer: "RotRNN") -> DiagonalForm:
    """Raw parameters -> the diagonal form in the rotated basis (module docstring); `P` is kept for states."""
    heads, N, H = layer.B.shape
    P = orthogonal(layer.M)                                                      # (heads N N)
    xi = normalisation(layer.gamma_log, layer.B)                                 # (heads,)
    W_in = (xi[:, None, None] * (P.transpose(1, 2) @ layer.B)).reshape(heads * N, H)

    def read_out(C: torch.Tensor) -> torch.Tensor:                           # C blockdiag(P): (H heads*N)
        return torch.einsum("dhm,hmn->dhn", C.view(H, heads, N), P).reshape(H, heads * N)

    log_lam = torch.complex(decay_log(layer.gamma_log)[:, None].expand(heads, N // 2), layer.theta)
    return DiagonalForm.build(log_lam.reshape(-1), W_in, read_out(layer.C),
                              read_out(layer.C_rev) if layer.config.bidirectional else None, layer.D, basis=P)


# -- the layer ----------------------------------------------------------------------------------

class RotRNN(diagonal.DiagonalMixer):
    """One RotRNN layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = RotRNNConfig

    materialise = materialise

    def to_native(self, f: DiagonalForm, state: torch.Tensor, batch: int) -> torch.Tensor:
        """x (B heads N) real, original basis -> z = P^T x as pairs (B heads*N/2 2)."""
        cfg = self.config
        self.check_state(state, (batch, cfg.heads, cfg.d_state), self.dtype)
        return torch.einsum("hmn,bhm->bhn", f.basis, state).reshape(batch, f.lanes, 2)

    def from_native(self, f: DiagonalForm, z: torch.Tensor) -> torch.Tensor:
        """z pairs (B heads*N/2 2) -> x = P z (B heads N) real, original basis."""
        cfg = self.config
        return torch.einsum("hmn,bhn->bhm", f.basis, z.reshape(z.shape[0], cfg.heads, cfg.d_state))

"""RotRNN, float64 NumPy reference (Biegun, Dolga, Cunningham, Barber 2024; docs/models.md).

Per head h, with state x^h_t in R^N (N even) and input u_t in R^H:

    x^h_t = gamma_h P_h Theta_h P_h^T x^h_{t-1} + xi_h B_h u_t,      x^h_0 = 0
    y_t   = C [x^1_t; ...; x^heads_t] + D * u_t

    P_h     = expm(M_h - M_h^T)                    a rotation in SO(N) (via eigh, see `orthogonal`)
    gamma_h = exp(-exp(gamma_log_h))               one decay per head
    Theta_h = blockdiag(R(theta_h,1), ...)         R(t) = [[cos t, -sin t], [sin t, cos t]] on pairs (x0,x1), (x2,x3), ...
    xi_h    = sqrt(1 - gamma_h^2) / ||B_h||_F      computed, never learned

Bidirectional: y_t += C_rev [x_bwd_t], x_bwd_t = A x_bwd_{t+1} + xi B u_t (current input included).

Two views, computed by different routes on purpose:
* `sequential` steps the dense transition A_h = gamma_h P_h Theta_h P_h^T;
* `conv` builds the kernel K_k = C blockdiag_h(A_h^k xi_h B_h) from A^k = gamma^k P Theta^k P^T
  (claim R2: rotating block j by k theta_j, no matrix power) and convolves.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.reference.conv import anticausal_conv, causal_conv, resets
from linrnn.impls.specs.rotrnn import RotRNNConfig

Params = Mapping[str, np.ndarray]


# -- materialise the raw parameters -------------------------------------------------------------

def orthogonal(M: np.ndarray) -> np.ndarray:
    """P_h = expm(M_h - M_h^T).     M (heads N N) -> P (heads N N)

    Computed through the Hermitian eigendecomposition i S = U diag(w) U^H of the skew-symmetric
    S = M - M^T, so expm(S) = U diag(e^{-i w}) U^H: orthogonal to O(N eps). SciPy's scaling and
    squaring (`expm`) loses orthogonality to about 1e-13 at M ~ N(0, 1), the newest code's
    initialisation, which is more than an oracle may carry (measured against 40-digit mpmath:
    2.9e-14 max error for expm, 7.8e-15 for this route, N <= 8).
    """
    S = M - np.swapaxes(M, 1, 2)
    w, U = np.linalg.eigh(1j * S)                                   # (heads N), (heads N N)
    return np.real(U * np.exp(-1j * w)[:, None, :] @ np.conj(np.swapaxes(U, 1, 2)))


def decay(gamma_log: np.ndarray) -> np.ndarray:
    """gamma_h = exp(-exp(gamma_log_h)).     (heads,) -> (heads,)"""
    return np.exp(-np.exp(gamma_log))


def normalisation(gamma_log: np.ndarray, B: np.ndarray) -> np.ndarray:
    """xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F.     gamma_log (heads,), B (heads N H) -> (heads,)

    1 - gamma^2 is computed as -expm1(-2 exp(gamma_log)): written as a difference it cancels as
    gamma -> 1 (7.9e-13 relative error in float64 at gamma = 0.99995).
    """
    return np.sqrt(-np.expm1(-2.0 * np.exp(gamma_log))) / np.sqrt(np.sum(B**2, axis=(1, 2)))


def block_rotation(theta: np.ndarray) -> np.ndarray:
    """Theta_h: block-diagonal 2x2 rotations on interleaved pairs.     theta (heads N/2) -> (heads N N)"""
    heads, half = theta.shape
    out = np.zeros((heads, 2 * half, 2 * half))
    c, s = np.cos(theta), np.sin(theta)
    idx = np.arange(half)
    out[:, 2 * idx, 2 * idx] = c
    out[:, 2 * idx, 2 * idx + 1] = -s
    out[:, 2 * idx + 1, 2 * idx] = s
    out[:, 2 * idx + 1, 2 * idx + 1] = c
    return out


def transition(p: Params) -> np.ndarray:
    """A_h = gamma_h P_h Theta_h P_h^T.     -> (heads N N)"""
    P = orthogonal(p["M"])
    return decay(p["gamma_log"])[:, None, None] * P @ block_rotation(p["theta"]) @ np.swapaxes(P, 1, 2)


def transition_power(p: Params, k: int) -> np.ndarray:
    """A_h^k = gamma_h^k P_h Theta_h^k P_h^T, with Theta^k rotating block j by k theta_j.     -> (heads N N)"""
    P = orthogonal(p["M"])
    gamma_k = decay(p["gamma_log"]) ** k
    return gamma_k[:, None, None] * P @ block_rotation(k * p["theta"]) @ np.swapaxes(P, 1, 2)


def projected_input(p: Params, u: np.ndarray) -> np.ndarray:
    """xi_h B_h u_t for every head.     u (B L H) -> (B L heads N)"""
    xi = normalisation(p["gamma_log"], p["B"])
    return xi[None, None, :, None] * np.einsum("hnd,bld->blhn", p["B"], u)


# -- the recurrent view ---------------------------------------------------------------------------

def _scan(A: np.ndarray, inputs: np.ndarray, x0: np.ndarray, reset: np.ndarray | None = None) -> np.ndarray:
    """x_t = A_h x_{t-1} + inputs_t, step by step (x_t = inputs_t where reset_t, a packed segment's start).

    A (heads N N), inputs (B L heads N), reset (B L) bool or None -> states (B L heads N)
    """
    states = np.empty_like(inputs)
    x = x0
    for t in range(inputs.shape[1]):
        carry = np.einsum("hmn,bhn->bhm", A, x)
        if reset is not None:
            carry = np.where(reset[:, t, None, None], 0.0, carry)
        x = carry + inputs[:, t]
        states[:, t] = x
    return states


def sequential(p: Params, cfg: RotRNNConfig, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time.

    u         (B L H) float64        the input sequence
    x0        (B heads N) or None    the forward state before u (zeros if None)
    segments  (B L) int or None      packed sequences: both scans reset where the id changes
    -> y (B L H), x_L (B heads N): the output and the forward state after the last step
    """
    B, L, H = u.shape
    A = transition(p)
    inputs = projected_input(p, u)                                # (B L heads N)
    if x0 is None:
        x0 = np.zeros((B, cfg.heads, cfg.d_state))
    forward, backward = resets(segments)
    states = _scan(A, inputs, x0, forward)                        # (B L heads N)
    y = states.reshape(B, L, -1) @ p["C"].T + p["D"] * u          # (B L H)
    if cfg.bidirectional:
        backward = _scan(A, inputs[:, ::-1], np.zeros_like(x0), backward)[:, ::-1]
        y = y + backward.reshape(B, L, -1) @ p["C_rev"].T
    return y, states[:, -1]


def trajectory(p: Params, cfg: RotRNNConfig, u: np.ndarray) -> np.ndarray:
    """Every forward state x_1..x_L of every head (for state-norm studies).     u (B L H) -> (B L heads N)"""
    x0 = np.zeros((u.shape[0], cfg.heads, cfg.d_state))
    return _scan(transition(p), projected_input(p, u), x0)


# -- the convolution view -------------------------------------------------------------------------

def kernel(p: Params, cfg: RotRNNConfig, length: int, C_key: str = "C") -> np.ndarray:
    """K_k = C blockdiag_h(A_h^k xi_h B_h) for k < length.     -> (length H H)"""
    xi = normalisation(p["gamma_log"], p["B"])
    xiB = xi[:, None, None] * p["B"]                              # (heads N H)
    C = p[C_key].reshape(cfg.d_model, cfg.heads, cfg.d_state)     # (H heads N)
    return np.stack([np.einsum("dhm,hmn,hne->de", C, transition_power(p, k), xiB) for k in range(length)])


def conv(p: Params, cfg: RotRNNConfig, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_k K_k u_{t-k} + D * u_t (+ sum_k K^rev_k u_{t+k}), lags inside t's segment.     u (B L H) -> y (B L H)"""
    L = u.shape[1]
    y = causal_conv(kernel(p, cfg, L), u, segments) + p["D"] * u
    if cfg.bidirectional:
        y = y + anticausal_conv(kernel(p, cfg, L, C_key="C_rev"), u, segments)
    return y


def spectral_radius(p: Params, cfg) -> float:
    """The largest |eigenvalue| of the transition (max gamma_h)."""
    return float(np.max(decay(p["gamma_log"])))

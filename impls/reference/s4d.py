"""S4D, float64 NumPy reference (Gu, Gupta, Goel, Re 2022; the s4 repo's `S4DKernel`; docs/models.md).

Per channel h, N complex modes, discretised by zero-order hold with B = 1 (folded into C):

    dt_h       = exp(log_dt_h)
    A_{h,n}    = -exp(log_A_real_{h,n}) + i A_imag_{h,n}
    lambda     = exp(dt A)                                       (H N), |lambda| <= 1
    C~         = 2 C (exp(dt A) - 1) / A                         the factor 2: the conjugate modes' share
    x_{t,h,n}  = lambda_{h,n} x_{t-1,h,n} + u_{t,h}              (recurrent view, state H x N)
    K_{h,l}    = Re(sum_n C~_{h,n} lambda_{h,n}^l)               (kernel view)
    y_{t,h}    = sum_{l<=t} K_{h,l} u_{t-l,h} + D_h u_{t,h}

Bidirectional (the s4 code's two-sided kernel): y_t += sum_{j>=0} K^rev_j u_{t+1+j}, K^rev from C_rev
with the same lambda (future only; lag 0 is counted once, causally).

exp(dt A) - 1 is computed as expm1(dt A): written as a difference it loses the relative precision
eps / |dt A| where |dt A| is small (the mode n = 0 of S4D-Lin at dt = 1e-3 has |dt A| = 5e-4).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.reference.conv import anticausal_conv, causal_conv
from linrnn.impls.reference.recurrence import depthwise_recurrence
from linrnn.impls.specs.s4d import S4DConfig

Params = Mapping[str, np.ndarray]


def continuous_eigenvalues(p: Params) -> np.ndarray:
    """A = -exp(log_A_real) + i A_imag.     -> (H N) complex"""
    return -np.exp(p["log_A_real"]) + 1j * p["A_imag"]


def eigenvalues(p: Params) -> np.ndarray:
    """lambda = exp(dt A), dt = exp(log_dt) per channel.     -> (H N) complex"""
    return np.exp(np.exp(p["log_dt"])[:, None] * continuous_eigenvalues(p))


def output_weights(p: Params, suffix: str = "") -> np.ndarray:
    """C~ = 2 C (exp(dt A) - 1) / A with C = C_re + i C_im (or the `_rev` pair).     -> (H N) complex"""
    A = continuous_eigenvalues(p)
    zoh = np.expm1(np.exp(p["log_dt"])[:, None] * A) / A
    return 2.0 * (p["C_re" + suffix] + 1j * p["C_im" + suffix]) * zoh


def kernel(p: Params, length: int, suffix: str = "") -> np.ndarray:
    """K_{h,l} = Re(sum_n C~_{h,n} lambda_{h,n}^l), lambda^l computed as exp(l dt A).     -> (length H)"""
    dtA = np.exp(p["log_dt"])[:, None] * continuous_eigenvalues(p)       # (H N)
    powers = np.exp(np.arange(length)[:, None, None] * dtA)               # (length H N)
    return np.einsum("lhn,hn->lh", powers, output_weights(p, suffix)).real


def sequential(p: Params, cfg: S4DConfig, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time.

    u         (B L H) float64            the input sequence
    x0        (B H N) complex or None    the forward state before u (zeros if None)
    segments  (B L) int or None          packed sequences: both recurrences reset where the id changes
    -> y (B L H), x_L (B H N) complex
    """
    C_rev = output_weights(p, "_rev") if cfg.bidirectional else None
    return depthwise_recurrence(eigenvalues(p), output_weights(p), C_rev, p["D"], u, x0, segments)   # DLR's loop (`recurrence.py`)


def conv(p: Params, cfg: S4DConfig, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_l K_l u_{t-l} + D * u_t (+ sum_j K^rev_j u_{t+1+j}), lags inside t's segment.     u (B L H) -> y (B L H)"""
    L = u.shape[1]
    y = causal_conv(kernel(p, L), u, segments) + p["D"] * u
    if cfg.bidirectional:
        shifted = np.concatenate([np.zeros((1, cfg.d_model)), kernel(p, L, "_rev")])   # lag j+1 carries K^rev_j
        y = y + anticausal_conv(shifted, u, segments)
    return y


def spectral_radius(p: Params, cfg) -> float:
    """The largest |eigenvalue| of the transition (max |lambda| over channels and modes)."""
    return float(np.max(np.abs(eigenvalues(p))))

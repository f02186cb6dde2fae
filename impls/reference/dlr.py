"""DLR, float64 NumPy reference (Gupta, Mehta, Berant 2022; docs/models.md).

No discretisation and no B. The N eigenvalues are shared by the H channels; each channel has its own
complex output weights:

    lambda_n  = exp(-a_n^2 + i theta_n)                       |lambda_n| <= 1 by construction
    x_{t,h,n} = lambda_n x_{t-1,h,n} + u_{t,h}                 (recurrent view, state H x N)
    K_{h,l}   = Re(sum_n W_{h,n} lambda_n^l),  l < L_k          (kernel view)
    y_{t,h}   = sum_{l<=t, l<L_k} K_{h,l} u_{t-l,h} + D_h u_{t,h}

Bidirectional: y_t += sum_{j>=0} K^rev_j u_{t+1+j} (future only; lag 0 is counted once, causally).

The kernel view is the model's definition (L_k = min(max_kernel_length, L)); the recurrent view equals
it only while L <= L_k, and `sequential` refuses longer inputs rather than answer something else.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.checks import check_kernel_view
from linrnn.impls.reference.conv import anticausal_conv, causal_conv
from linrnn.impls.reference.recurrence import depthwise_recurrence
from linrnn.impls.specs.dlr import DLRConfig

Params = Mapping[str, np.ndarray]


def eigenvalues(p: Params) -> np.ndarray:
    """lambda_n = exp(-a_n^2 + i theta_n).     -> (N,) complex"""
    return np.exp(-p["a"] ** 2 + 1j * p["theta"])


def output_weights(p: Params, suffix: str = "") -> np.ndarray:
    """W = W_re + i W_im (or the `_rev` pair).     -> (H N) complex"""
    return p["W_re" + suffix] + 1j * p["W_im" + suffix]


def kernel(p: Params, length: int, suffix: str = "") -> np.ndarray:
    """K_{h,l} = Re(sum_n W_{h,n} lambda_n^l), lambda^l computed as exp(l log lambda).     -> (length H)"""
    log_lam = -p["a"] ** 2 + 1j * p["theta"]                        # (N,)
    powers = np.exp(np.arange(length)[:, None] * log_lam[None, :])  # (length N)
    return (powers @ output_weights(p, suffix).T).real              # (length H)


def sequential(p: Params, cfg: DLRConfig, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time (valid while L <= L_k).

    u         (B L H) float64            the input sequence
    x0        (B H N) complex or None    the forward state before u (zeros if None)
    segments  (B L) int or None          packed sequences: both recurrences reset where the id changes
    -> y (B L H), x_L (B H N) complex
    """
    check_kernel_view(cfg, "sequential", u.shape[1], x0 is not None)
    W_rev = output_weights(p, "_rev") if cfg.bidirectional else None
    return depthwise_recurrence(eigenvalues(p), output_weights(p), W_rev, p["D"], u, x0, segments)


def conv(p: Params, cfg: DLRConfig, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_l K_l u_{t-l} + D * u_t (+ sum_j K^rev_j u_{t+1+j}), lags inside t's segment.     u (B L H) -> y (B L H)"""
    Lk = cfg.kernel_length(u.shape[1])
    y = causal_conv(kernel(p, Lk), u, segments) + p["D"] * u
    if cfg.bidirectional:
        K_rev = kernel(p, Lk, "_rev")                                # (Lk H)
        shifted = np.concatenate([np.zeros((1, cfg.d_model)), K_rev])  # lag j+1 carries K^rev_j
        y = y + anticausal_conv(shifted, u, segments)
    return y


def spectral_radius(p: Params, cfg) -> float:
    """The largest |eigenvalue| of the transition (max |lambda|)."""
    return float(np.max(np.abs(eigenvalues(p))))

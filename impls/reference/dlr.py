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
from linrnn.impls.segments import starts
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


def depthwise_recurrence(lam: np.ndarray, W: np.ndarray, W_rev: np.ndarray | None, D: np.ndarray, u: np.ndarray,
                         x0: np.ndarray | None, segments: np.ndarray | None = None):
    """x_{t,h,n} = lambda_{(h,)n} x_{t-1,h,n} + u_{t,h},  y_{t,h} = Re(sum_n W_{h,n} x_{t,h,n}) + D_h u_{t,h}
    (+ Re(sum_n W_rev_{h,n} z_{t,h,n}), z the future-only backward state), one step at a time; with packed
    sequences x restarts where a segment begins, and z is 0 at a segment's last position.

    lam (N,) or (H N) complex; W, W_rev (H N) complex; u (B L H) -> y (B L H), x_L (B H N) complex
    """
    B, L, H = u.shape
    begins = np.zeros((B, L), dtype=bool) if segments is None else starts(segments)
    x = np.zeros((B, H, W.shape[1]), dtype=np.complex128) if x0 is None else x0
    y = np.empty((B, L, H))
    for t in range(L):
        x = np.where(begins[:, t, None, None], 0, lam * x) + u[:, t, :, None]     # (B H N)
        y[:, t] = np.einsum("hn,bhn->bh", W, x).real
    y = y + D * u
    if W_rev is not None:
        # z_t = sum_{j>=0} lambda^j u_{t+1+j} = u_{t+1} + lambda z_{t+1}, z_{L-1} = 0 (and 0 where t + 1 begins
        # another segment)
        z = np.zeros((B, H, W.shape[1]), dtype=np.complex128)
        for t in range(L - 2, -1, -1):
            z = np.where(begins[:, t + 1, None, None], 0, lam * z + u[:, t + 1, :, None])
            y[:, t] += np.einsum("hn,bhn->bh", W_rev, z).real
    return y, x


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

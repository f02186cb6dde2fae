"""Convolution with a kernel, written as the plain sum over lags (float64, exact up to rounding).

`K` is either a full kernel (Lk, H, H), as for RotRNN and LRU whose state mixes channels, or a
depthwise one (Lk, H), as for DLR. O(B L Lk H^2): an oracle for small sizes, not a fast path.
"""

from __future__ import annotations

import numpy as np


def causal_conv(K: np.ndarray, u: np.ndarray) -> np.ndarray:
    """y_t = sum_{k=0}^{min(t, Lk-1)} K_k u_{t-k}.     K (Lk H H) or (Lk H), u (B L H) -> y (B L H)"""
    B, L, H = u.shape
    y = np.zeros((B, L, H))
    for k in range(min(K.shape[0], L)):
        if K.ndim == 3:
            y[:, k:, :] += u[:, : L - k, :] @ K[k].T    # (B L-k H)
        else:
            y[:, k:, :] += u[:, : L - k, :] * K[k]       # (B L-k H)
    return y


def anticausal_conv(K: np.ndarray, u: np.ndarray) -> np.ndarray:
    """y_t = sum_{k>=0, t+k<L} K_k u_{t+k}: the causal sum on the time-reversed sequence."""
    return causal_conv(K, u[:, ::-1, :])[:, ::-1, :]

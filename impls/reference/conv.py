"""Convolution with a kernel, written as the plain sum over lags (float64, exact up to rounding).

`K` is either a full kernel (Lk, H, H), as for RotRNN and LRU whose state mixes channels, or a
depthwise one (Lk, H), as for DLR. O(B L Lk H^2): an oracle for small sizes, not a fast path. With
packed sequences (`segments`) a lag counts only when both ends lie in one segment.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.segments import ends, runs, starts


def causal_conv(K: np.ndarray, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_{k=0}^{min(t, Lk-1)} K_k u_{t-k}, only over lags inside t's segment when `segments` (B L) is given.

    K (Lk H H) or (Lk H), u (B L H) -> y (B L H)
    """
    B, L, H = u.shape
    run = None if segments is None else runs(segments)                      # (B L) segment ordinal
    y = np.zeros((B, L, H))
    for k in range(min(K.shape[0], L)):
        if K.ndim == 3:
            term = u[:, : L - k, :] @ K[k].T    # (B L-k H)
        else:
            term = u[:, : L - k, :] * K[k]       # (B L-k H)
        if run is not None:
            term = term * (run[:, k:] == run[:, : L - k])[..., None]        # u_{t-k} in t's segment
        y[:, k:, :] += term
    return y


def anticausal_conv(K: np.ndarray, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_{k>=0, t+k<L} K_k u_{t+k} (inside t's segment): the causal sum on the time-reversed sequence."""
    return causal_conv(K, u[:, ::-1, :], None if segments is None else segments[:, ::-1])[:, ::-1, :]


def resets(segments: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Where a forward scan and a backward scan (on the time-reversed sequence) restart from zero: (B L) bool each,
    or (None, None) without packed sequences. The backward scan at t restarts where t + 1 begins a segment."""
    if segments is None:
        return None, None
    return starts(segments), ends(segments)[:, ::-1]

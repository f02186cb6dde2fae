"""The recurrences several models' references run, one step at a time (float64, written like the equations).

* `diagonal_scan`: x_t = lambda * x_{t-1} + v_t on N complex lanes, the input already projected (LRU, S5, and any
  model that reduces to a diagonal recurrence after its own projection);
* `depthwise_recurrence`: x_{t,h,n} = lambda_{(h,)n} x_{t-1,h,n} + u_{t,h}, read out per channel (DLR's N
  eigenvalues shared by the channels, S4D's per channel).

A model's own file (`reference/<kind>.py`) builds its eigenvalues and projections and calls one of these: no model
imports another model's file.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.segments import starts


def diagonal_scan(lam: np.ndarray, inputs: np.ndarray, x0: np.ndarray, reset: np.ndarray | None = None) -> np.ndarray:
    """x_t = lambda * x_{t-1} + inputs_t (x_t = inputs_t where reset_t).     inputs (B L N) complex -> states (B L N)

    reset (B L) bool or None: where a packed segment begins (`linrnn.impls.segments`; `conv.resets` gives a forward
    and a backward scan's).
    """
    states = np.empty_like(inputs)
    x = x0
    for t in range(inputs.shape[1]):
        carry = lam * x if reset is None else np.where(reset[:, t, None], 0, lam * x)
        x = carry + inputs[:, t]
        states[:, t] = x
    return states


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

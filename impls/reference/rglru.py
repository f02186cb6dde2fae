"""RG-LRU, float64 NumPy reference (De et al. 2024, Griffin; RecurrentGemma's layer; docs/models.md).

A real diagonal state x_t in R^H, gated by the input u_t in R^H:

    r_t     = sigma(W_a u_t + b_a),   i_t = sigma(W_x u_t + b_x)       block-diagonal: `blocks` blocks (out, in)
    log a_t = c r_t log sigma(Lambda) = -c r_t softplus(-Lambda)       0 < a_t < 1 for every input
    x_t     = a_t * x_{t-1} + sqrt(1 - a_t^2) * (i_t * u_t),   1 - a_t^2 = -expm1(2 log a_t)
    y_t     = x_t

At the first position of a sequence (no state given, or where a packed segment begins) there is no past state, and
the input enters unnormalised: x_t = i_t * u_t (RecurrentGemma: its `segment_pos == 0`). A state passed in continues
a sequence: its first position is normalised.

Bidirectional: y_t += x_bwd_t, the same layer on the reversed sequence (x_bwd_{L-1} = i u unnormalised, and again
where the next position begins another segment).

The one view is the recurrence (`sequential`): a transition that changes with the input has no convolution kernel.
Written for any NumPy dtype of u, complex included: `linrnn conform` differentiates it by a complex step.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.reference.conv import resets
from linrnn.impls.specs.rglru import RGLRUConfig

Params = Mapping[str, np.ndarray]


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def block_linear(W: np.ndarray, b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """W u + b with W block-diagonal: (K W W) stored (block, out, in).     u (B L H) -> (B L H)"""
    K, width, _ = W.shape
    blocks = u.reshape(*u.shape[:-1], K, width)                      # (B L K W)
    return np.einsum("kvw,blkw->blkv", W, blocks).reshape(u.shape) + b


def gates(p: Params, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The recurrence gate r_t and the input gate i_t.     u (B L H) -> r, i (B L H)"""
    return sigmoid(block_linear(p["W_a"], p["b_a"], u)), sigmoid(block_linear(p["W_x"], p["b_x"], u))


def log_decay(p: Params, cfg: RGLRUConfig, r: np.ndarray) -> np.ndarray:
    """log a_t = -c r_t softplus(-Lambda).     r (B L H) -> (B L H)"""
    return -cfg.c * r * np.logaddexp(0.0, -p["Lambda"])


def normaliser(log_a: np.ndarray) -> np.ndarray:
    """sqrt(1 - a^2), as sqrt(-expm1(2 log a)): the difference 1 - a^2 cancels for a near 1."""
    return np.sqrt(-np.expm1(2.0 * log_a))


def _scan(log_a: np.ndarray, gated: np.ndarray, fresh: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """x_t = a_t x_{t-1} + sqrt(1 - a_t^2) gated_t, or x_t = gated_t where `fresh` (B L) (a sequence begins).

    log_a, gated (B L H) -> states (B L H)"""
    a, scale = np.exp(log_a), normaliser(log_a)
    states = np.empty(gated.shape, dtype=np.result_type(gated, x0, a))
    x = x0
    for t in range(gated.shape[1]):
        begins = fresh[:, t, None]
        x = np.where(begins, gated[:, t], a[:, t] * x + scale[:, t] * gated[:, t])
        states[:, t] = x
    return states


def sequential(p: Params, cfg: RGLRUConfig, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time.

    u         (B L H)                  the input sequence (float64; complex for a complex step)
    x0        (B H) float64 or None    the state before u; None: u begins a sequence
    segments  (B L) int or None        packed sequences: each begins afresh where the id changes
    -> y (B L H), x_L (B H)
    """
    B, L, H = u.shape
    r, i = gates(p, u)
    log_a, gated = log_decay(p, cfg, r), i * u                       # (B L H)
    forward, backward = resets(segments)
    fresh = np.zeros((B, L), dtype=bool) if forward is None else forward.copy()
    if x0 is None:
        fresh[:, 0] = True
        x0 = np.zeros((B, H))
    states = _scan(log_a, gated, fresh, x0)
    y = states.copy()
    if cfg.bidirectional:
        fresh_back = np.zeros((B, L), dtype=bool) if backward is None else backward.copy()
        fresh_back[:, 0] = True                                      # the reversed sequence begins at L - 1
        y = y + _scan(log_a[:, ::-1], gated[:, ::-1], fresh_back, np.zeros((B, H)))[:, ::-1]
    return y, states[:, -1]


def jacobian(p: Params, cfg: RGLRUConfig, u: np.ndarray, step: float = 1e-20) -> np.ndarray:
    """d y / d u at u from a zero state, row b's J[b, (t, h), (s, k)] = d y_{t,h} / d u_{s,k}: each column by a complex
    step, Im y(u + i h e_k) / h, exact but for rounding (every operation here is analytic in u, and no difference
    cancels). The layer is not linear in u, so its impulse responses do not give J.     u (B L H) -> (B LH LH)"""
    B, L, H = u.shape
    n = L * H
    probes = u[:, None] + 1j * step * np.eye(n).reshape(1, n, L, H)          # (B n L H): entry k of u moved
    y, _ = sequential(p, cfg, probes.reshape(B * n, L, H))
    return np.swapaxes(y.imag.reshape(B, n, n) / step, 1, 2)                  # (B out in)


def input_gradient(p: Params, cfg: RGLRUConfig, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """J^T w at u, the gradient of <w, y> in u from a zero state (`jacobian`).     u, w (B L H) -> (B L H)"""
    return np.einsum("bji,bj->bi", jacobian(p, cfg, u), w.reshape(len(w), -1)).reshape(u.shape)


def decay_floor(p: Params, cfg: RGLRUConfig) -> float:
    """The smallest decay any input gives, a_t at r_t = 1: max over channels of sigma(Lambda)^c (`with_radius` sets it).
    """
    return float(np.max(np.exp(-cfg.c * np.logaddexp(0.0, -p["Lambda"]))))


def spectral_radius(p: Params, cfg) -> float:
    """The supremum of the decays a_t over inputs: 1. A gate r_t near 0 (a large negative W_a u + b_a) brings a_t
    = sigma(Lambda)^(c r_t) as near 1 as it likes, so the tolerance table's memory is the whole length."""
    return 1.0

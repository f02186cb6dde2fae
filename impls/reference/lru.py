"""LRU, float64 NumPy reference (Orvieto et al. 2023; docs/models.md).

Complex diagonal state x_t in C^N, real input u_t in R^H:

    lambda_j = exp(-exp(nu_log_j) + i exp(theta_log_j))
    x_t      = lambda * x_{t-1} + exp(gamma_log) * (B u_t),      x_0 = 0,   B = B_re + i B_im
    y_t      = Re(C x_t) + D * u_t,                               C = C_re + i C_im

Bidirectional: y_t += Re(C_rev x_bwd_t), x_bwd_t = lambda x_bwd_{t+1} + exp(gamma_log) B u_t.

Views: `sequential` (the recurrence) and `conv` with K_k = Re(C diag(lambda^k) diag(gamma) B).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.reference.conv import anticausal_conv, causal_conv, resets
from linrnn.impls.reference.recurrence import diagonal_scan
from linrnn.impls.specs.lru import LRUConfig

Params = Mapping[str, np.ndarray]


def eigenvalues(p: Params) -> np.ndarray:
    """lambda_j = exp(-exp(nu_log_j) + i exp(theta_log_j)).     -> (N,) complex"""
    return np.exp(-np.exp(p["nu_log"]) + 1j * np.exp(p["theta_log"]))


def input_matrix(p: Params) -> np.ndarray:
    """diag(exp(gamma_log)) (B_re + i B_im).     -> (N H) complex"""
    return np.exp(p["gamma_log"])[:, None] * (p["B_re"] + 1j * p["B_im"])


def output_matrix(p: Params, suffix: str = "") -> np.ndarray:
    """C_re + i C_im (or the `_rev` pair).     -> (H N) complex"""
    return p["C_re" + suffix] + 1j * p["C_im" + suffix]


def sequential(p: Params, cfg: LRUConfig, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time.

    u         (B L H) float64          the input sequence
    x0        (B N) complex or None    the forward state before u (zeros if None)
    segments  (B L) int or None        packed sequences: both scans reset where the id changes
    -> y (B L H), x_L (B N) complex
    """
    lam = eigenvalues(p)
    inputs = u @ input_matrix(p).T                                  # (B L N)
    if x0 is None:
        x0 = np.zeros((u.shape[0], cfg.d_state), dtype=np.complex128)
    forward, backward = resets(segments)
    states = diagonal_scan(lam, inputs, x0, forward)                # (B L N)
    y = (states @ output_matrix(p).T).real + p["D"] * u             # (B L H)
    if cfg.bidirectional:
        backward = diagonal_scan(lam, inputs[:, ::-1], np.zeros_like(x0), backward)[:, ::-1]
        y = y + (backward @ output_matrix(p, "_rev").T).real
    return y, states[:, -1]


def trajectory(p: Params, cfg: LRUConfig, u: np.ndarray) -> np.ndarray:
    """Every forward state x_1..x_L (for state-norm studies).     u (B L H) -> (B L N) complex"""
    x0 = np.zeros((u.shape[0], cfg.d_state), dtype=np.complex128)
    return diagonal_scan(eigenvalues(p), u @ input_matrix(p).T, x0)


def kernel(p: Params, length: int, suffix: str = "") -> np.ndarray:
    """K_k = Re(C diag(lambda^k) diag(gamma) B) for k < length.     -> (length H H)"""
    powers = eigenvalues(p)[None, :] ** np.arange(length)[:, None]  # (length N)
    C, Bn = output_matrix(p, suffix), input_matrix(p)
    return np.einsum("dn,kn,ne->kde", C, powers, Bn).real


def conv(p: Params, cfg: LRUConfig, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_k K_k u_{t-k} + D * u_t (+ sum_k K^rev_k u_{t+k}), lags inside t's segment.     u (B L H) -> y (B L H)"""
    L = u.shape[1]
    y = causal_conv(kernel(p, L), u, segments) + p["D"] * u
    if cfg.bidirectional:
        y = y + anticausal_conv(kernel(p, L, "_rev"), u, segments)
    return y


def spectral_radius(p: Params, cfg) -> float:
    """The largest |eigenvalue| of the transition (max |lambda|)."""
    return float(np.max(np.abs(eigenvalues(p))))

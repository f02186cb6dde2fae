"""S5, float64 NumPy reference (Smith, Warrington, Linderman 2023; docs/models.md).

One MIMO diagonal SSM over all H channels, N kept complex modes (one of each conjugate pair), real
input u_t in R^H. Continuous time:

    Lambda  = Lambda_re + i Lambda_im            (clip_eigs: min(Lambda_re, -1e-4) + i Lambda_im)
    Delta   = exp(log_step)                      one step per mode, (N,)
    B~      = B_re + i B_im  (N H),   C~ = C_re + i C_im  (H N)

discretised per mode,

    zoh:       Lambda_bar = exp(Lambda Delta),                          B_bar = (Lambda_bar - 1)/Lambda B~
    bilinear:  Lambda_bar = (1 + Delta Lambda/2)/(1 - Delta Lambda/2),  B_bar = Delta/(1 - Delta Lambda/2) B~

and run as

    x_t = Lambda_bar * x_{t-1} + B_bar u_t,      x_0 = 0
    y_t = 2 Re(C~ x_t) + D * u_t                 (the factor 2: the dropped conjugate half)

Bidirectional: y_t += 2 Re(C~_rev x_bwd_t), x_bwd_t = Lambda_bar x_bwd_{t+1} + B_bar u_t.

Views: `sequential` (the recurrence) and `conv` with K_k = 2 Re(C~ diag(Lambda_bar^k) B_bar).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.reference.conv import anticausal_conv, causal_conv, resets
from linrnn.impls.reference.recurrence import diagonal_scan     # x_t = lambda * x_{t-1} + v_t
from linrnn.impls.specs.s5 import S5Config

Params = Mapping[str, np.ndarray]


def continuous_eigenvalues(p: Params, cfg: S5Config) -> np.ndarray:
    """Lambda = Lambda_re + i Lambda_im, the real part clipped to <= -1e-4 under clip_eigs.     -> (N,) complex"""
    real = np.minimum(p["Lambda_re"], cfg.CLIP_RE) if cfg.clip_eigs else p["Lambda_re"]
    return real + 1j * p["Lambda_im"]


def discretise(p: Params, cfg: S5Config) -> tuple[np.ndarray, np.ndarray]:
    """(Lambda_bar (N,), B_bar (N H)) by zero-order hold or the bilinear transform."""
    Lambda, Delta = continuous_eigenvalues(p, cfg), np.exp(p["log_step"])
    B = p["B_re"] + 1j * p["B_im"]
    if cfg.discretization == "zoh":
        # exp(Lambda Delta) - 1 as expm1: the difference would cancel for small |Lambda Delta|
        return np.exp(Lambda * Delta), (np.expm1(Lambda * Delta) / Lambda)[:, None] * B
    denominator = 1 - Delta * Lambda / 2
    return (1 + Delta * Lambda / 2) / denominator, (Delta / denominator)[:, None] * B


def eigenvalues(p: Params, cfg: S5Config) -> np.ndarray:
    """Lambda_bar, the discrete-time eigenvalues.     -> (N,) complex"""
    return discretise(p, cfg)[0]


def output_matrix(p: Params, suffix: str = "") -> np.ndarray:
    """C~ = C_re + i C_im (or the `_rev` pair).     -> (H N) complex"""
    return p["C_re" + suffix] + 1j * p["C_im" + suffix]


def sequential(p: Params, cfg: S5Config, u: np.ndarray, x0: np.ndarray | None = None,
               segments: np.ndarray | None = None):
    """The recurrence, one step at a time.

    u         (B L H) float64          the input sequence
    x0        (B N) complex or None    the forward state before u (zeros if None)
    segments  (B L) int or None        packed sequences: both scans reset where the id changes
    -> y (B L H), x_L (B N) complex
    """
    lam, B_bar = discretise(p, cfg)
    inputs = u @ B_bar.T                                            # (B L N)
    if x0 is None:
        x0 = np.zeros((u.shape[0], cfg.d_state), dtype=np.complex128)
    forward, backward = resets(segments)
    states = diagonal_scan(lam, inputs, x0, forward)                # (B L N)
    y = 2 * (states @ output_matrix(p).T).real + p["D"] * u         # (B L H)
    if cfg.bidirectional:
        backward = diagonal_scan(lam, inputs[:, ::-1], np.zeros_like(x0), backward)[:, ::-1]
        y = y + 2 * (backward @ output_matrix(p, "_rev").T).real
    return y, states[:, -1]


def kernel(p: Params, cfg: S5Config, length: int, suffix: str = "") -> np.ndarray:
    """K_k = 2 Re(C~ diag(Lambda_bar^k) B_bar) for k < length.     -> (length H H)"""
    lam, B_bar = discretise(p, cfg)
    powers = lam[None, :] ** np.arange(length)[:, None]             # (length N)
    return 2 * np.einsum("dn,kn,ne->kde", output_matrix(p, suffix), powers, B_bar).real


def conv(p: Params, cfg: S5Config, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """y_t = sum_k K_k u_{t-k} + D * u_t (+ sum_k K^rev_k u_{t+k}), lags inside t's segment.     u (B L H) -> y (B L H)"""
    L = u.shape[1]
    y = causal_conv(kernel(p, cfg, L), u, segments) + p["D"] * u
    if cfg.bidirectional:
        y = y + anticausal_conv(kernel(p, cfg, L, "_rev"), u, segments)
    return y


def spectral_radius(p: Params, cfg) -> float:
    """The largest |eigenvalue| of the transition (max |Lambda_bar|, which depends on the config's discretisation)."""
    return float(np.max(np.abs(eigenvalues(p, cfg))))

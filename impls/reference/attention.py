"""Softmax attention, float64 NumPy reference (the DLR code's attention baseline; docs/models.md).

Per head h of d = H / heads features (channels h d ... h d + d - 1 of the projections):

    q_i = W_q u_i + b_q,  k_j = W_k u_j + b_k,  v_j = W_v u_j + b_v                  (H each)
    R_i                   rotary: pair (2m, 2m+1) of a head turned by the angle i * 10000^(-2m/d)
    s_{h,i,j} = exp(log_temperature_h) <R_i q_{h,i}, R_j k_{h,j}>                  scores
    a_{h,i,.} = softmax_j over the allowed j of s_{h,i,j}                           (mask below)
    y_i = W_o concat_h(sum_j a_{h,i,j} v_{h,j}) + b_o

Allowed pairs (i, j): causal j <= i (bidirectional: every j); with `window` w also
floor(i/w) - floor(j/w) in {0, 1} (bidirectional: in {-1, 0, 1}). Position i always sees itself.

One mode, `full`: the definition written out, the whole L x L score matrix with its mask.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.segments import positions, runs
from linrnn.impls.specs.attention import AttentionConfig

Params = Mapping[str, np.ndarray]
ROPE_BASE = 10000.0     # the rotary frequencies' base (the DLR code's theta)


def rotary(x: np.ndarray) -> np.ndarray:
    """Pair (2m, 2m+1) of every head at position i turned by the angle i * ROPE_BASE^(-2m/d).

    x (B heads L d) -> (B heads L d)
    """
    L, d = x.shape[-2:]
    angle = np.arange(L)[:, None] * ROPE_BASE ** (-np.arange(0, d, 2) / d)        # (L d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = cos * even - sin * odd
    out[..., 1::2] = sin * even + cos * odd
    return out


def allowed(cfg: AttentionConfig, length: int, segments: np.ndarray | None = None) -> np.ndarray:
    """The mask: True where position i (row) attends to position j (column).     -> (L L) bool, or (B L L)

    With packed sequences (`segments` (B L)) i and j must lie in one segment, and the windows count from the
    segment's start, as when it runs alone (rotary scores depend on i - j only).
    """
    if segments is None:
        pos, run = np.arange(length)[None, :], np.zeros((1, length), dtype=np.int64)
    else:
        pos, run = positions(segments), runs(segments)                  # (B L) each
    i, j = pos[:, :, None], pos[:, None, :]
    mask = (run[:, :, None] == run[:, None, :]) & (True if cfg.bidirectional else j <= i)
    if cfg.window is not None:
        lag = i // cfg.window - j // cfg.window                  # windows between i's and j's
        mask &= (lag >= (-1 if cfg.bidirectional else 0)) & (lag <= 1)
    return mask if segments is not None else mask[0]


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(B L H) -> (B heads L d), head h holding channels h d ... h d + d - 1."""
    B, L, H = x.shape
    return x.reshape(B, L, heads, H // heads).transpose(0, 2, 1, 3)


def full(p: Params, cfg: AttentionConfig, u: np.ndarray, segments: np.ndarray | None = None) -> np.ndarray:
    """The definition: every score of the L x L matrix, masked, softmax over j.     u (B L H) -> y (B L H)

    segments (B L) or None: packed sequences, each attending within itself (`allowed`).
    """
    B, L, H = u.shape
    q, k, v = (split_heads(u @ p[f"W_{n}"].T + p[f"b_{n}"], cfg.heads) for n in "qkv")   # (B heads L d)
    q, k = rotary(q), rotary(k)
    scores = np.exp(p["log_temperature"])[:, None, None] * np.einsum("bhid,bhjd->bhij", q, k)   # (B heads L L)
    mask = allowed(cfg, L, segments)
    scores = np.where(mask if segments is None else mask[:, None], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bihd", weights, v).reshape(B, L, H)
    return o @ p["W_o"].T + p["b_o"]


def spectral_radius(p, cfg) -> float:
    """No transition and no decay: 1, so the tolerance table's memory is the whole length (every output can weigh
    every position)."""
    return 1.0

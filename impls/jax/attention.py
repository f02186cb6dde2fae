"""Softmax attention, JAX (the DLR code's attention baseline; docs/models.md).

The equations of `linrnn.impls.reference.attention`; the two modes of the PyTorch side (`KIND_MODES`):

* `full`: the (B heads L L) score matrix, masked, and one softmax;
* `chunked`: blocks of b positions (the window w for local attention, else BLOCK_SIZE); the queries of block
  c meet the keys of block c + o for each block offset o in turn (o = 0 first, then the earlier blocks, then
  the later ones where bidirectional; local attention: o in {0, -1} or {0, -1, 1}), with a running max and
  sum per query (online softmax): no L x L matrix, (B heads L b) scores per step.

It has no recurrence: no state, no `step`. `linrnn.impls.jax.layer.apply` hands a call to `apply` here after
its checks; the batch is computed at once (no vmap). The rotary angles are computed in float64 NumPy at
trace time and rounded once to the compute dtype.
"""

from __future__ import annotations

from functools import partial
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.specs.attention import AttentionConfig

Params = Mapping[str, jnp.ndarray]
ROPE_BASE = 10000.0     # the rotary frequencies' base (the DLR code's theta)
BLOCK_SIZE = 64         # `chunked` blocks of full attention (local attention's blocks are its windows)


def rotary(x: jnp.ndarray) -> jnp.ndarray:
    """Pair (2m, 2m+1) of every head at position i turned by the angle i * ROPE_BASE^(-2m/d).

    x (B heads L d) -> (B heads L d)
    """
    L, d = x.shape[-2:]
    angle = np.arange(L)[:, None] * ROPE_BASE ** (-np.arange(0, d, 2) / d)         # (L d/2) float64
    cos, sin = jnp.asarray(np.cos(angle), x.dtype), jnp.asarray(np.sin(angle), x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return jnp.stack((cos * even - sin * odd, sin * even + cos * odd), axis=-1).reshape(x.shape)


def allowed(cfg: AttentionConfig, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """True where query position i attends to key position j (NumPy, broadcast shapes; static)."""
    mask = np.ones(np.broadcast_shapes(i.shape, j.shape), dtype=bool) if cfg.bidirectional else j <= i
    if cfg.window is not None:
        lag = i // cfg.window - j // cfg.window
        mask = mask & (lag >= (-1 if cfg.bidirectional else 0)) & (lag <= 1)
    return mask


def split_heads(x: jnp.ndarray, heads: int) -> jnp.ndarray:
    """(B L H) -> (B heads L d), head h holding channels h d ... h d + d - 1."""
    B, L, H = x.shape
    return x.reshape(B, L, heads, H // heads).transpose(0, 2, 1, 3)


def unpadded(i: np.ndarray, j: np.ndarray, lengths):
    """True where a valid query i does not meet a padded key j (a padded query keeps its keys, so that no row of the
    mask is empty; its output is set to 0). -> True, or (B 1 ...) broadcast with i and j for lengths (B,)."""
    if lengths is None:
        return True
    n = lengths.reshape((-1, 1) + (1,) * max(i.ndim, j.ndim))
    return (j < n) | (i >= n)


def full(cfg: AttentionConfig, q: jnp.ndarray, k: jnp.ndarray, v: jnp.ndarray, lengths=None) -> jnp.ndarray:
    """The masked (B heads L L) scores and one softmax.     q (scaled), k, v (B heads L d) -> (B heads L d)"""
    pos = np.arange(q.shape[2])
    ok = allowed(cfg, pos[:, None], pos[None, :]) & unpadded(pos[:, None], pos[None, :], lengths)
    scores = jnp.where(ok, q @ jnp.swapaxes(k, -1, -2), jnp.asarray(-np.inf, q.dtype))   # no f64 literal
    return jax.nn.softmax(scores, axis=-1) @ v


def shift_blocks(x, offset: int, fill, axis: int):
    """Block c of the result is block c + offset of x along `axis`; `fill` outside (jnp or np alike)."""
    lib = np if isinstance(x, np.ndarray) else jnp
    nb = x.shape[axis]
    if abs(offset) >= nb:
        return lib.full_like(x, fill)
    filler = lib.full_like(lib.take(x, np.arange(abs(offset)), axis=axis), fill)
    if offset <= 0:
        return lib.concatenate((filler, lib.take(x, np.arange(nb + offset), axis=axis)), axis=axis)
    return lib.concatenate((lib.take(x, np.arange(offset, nb), axis=axis), filler), axis=axis)


def chunked(cfg: AttentionConfig, q: jnp.ndarray, k: jnp.ndarray, v: jnp.ndarray, block_size: int,
            lengths=None) -> jnp.ndarray:
    """Online softmax over key blocks (module docstring).     q (scaled), k, v (B heads L d) -> (B heads L d)"""
    B, n, L, d = q.shape
    b = cfg.window or block_size
    nb = -(-L // b)                                                          # blocks, the last one padded
    pad = ((0, 0), (0, 0), (0, nb * b - L), (0, 0))
    q, k, v = (jnp.pad(x, pad).reshape(B, n, nb, b, d) for x in (q, k, v))
    pos = np.arange(nb * b).reshape(nb, b)                                   # (nb b) query positions
    if cfg.window is not None:
        offsets = [0, -1] + ([1] if cfg.bidirectional else [])
    else:
        offsets = list(range(0, -nb, -1)) + (list(range(1, nb)) if cfg.bidirectional else [])
    for o in offsets:
        k_o, v_o = shift_blocks(k, o, 0, 2), shift_blocks(v, o, 0, 2)
        kpos = shift_blocks(pos, o, -1, 0)
        ok = allowed(cfg, pos[:, :, None], kpos[:, None, :]) & (kpos >= 0)[:, None, :] & (kpos < L)[:, None, :]
        ok = ok & unpadded(pos[:, :, None], kpos[:, None, :], lengths)       # (nb b b) or (B 1 nb b b)
        s = jnp.where(ok, q @ jnp.swapaxes(k_o, -1, -2), jnp.asarray(-np.inf, q.dtype))   # (B n nb b b)
        if o == 0:                                                           # each query sees itself: m is finite
            m = jnp.max(s, axis=-1, keepdims=True)
            p = jnp.exp(s - m)
            total, acc = jnp.sum(p, axis=-1, keepdims=True), p @ v_o
        else:
            m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=True))
            scale, p = jnp.exp(m - m_new), jnp.exp(s - m_new)
            total, acc, m = total * scale + jnp.sum(p, axis=-1, keepdims=True), acc * scale + p @ v_o, m_new
    return (acc / total).reshape(B, n, nb * b, d)[:, :, :L]


@partial(jax.jit, static_argnames=("cfg", "mode", "block_size"))
def apply(params: Params, cfg: AttentionConfig, u: jnp.ndarray, mode: str, block_size: int = BLOCK_SIZE,
          lengths=None):
    """The layer on a batch.     u (B L H) in the compute dtype -> y (B L H); mode 'full' | 'chunked'

    lengths (B,) or None: padded rows; no valid query sees a padded key (the caller zeroes the padded outputs).
    """
    q, k, v = (split_heads(u @ params[f"W_{n}"].T + params[f"b_{n}"], cfg.heads) for n in "qkv")
    q = rotary(q) * jnp.exp(params["log_temperature"])[:, None, None]
    k = rotary(k)
    o = full(cfg, q, k, v, lengths) if mode == "full" else chunked(cfg, q, k, v, block_size, lengths)   # (B heads L d)
    B, _, L, _ = o.shape
    return jnp.swapaxes(o, 1, 2).reshape(B, L, cfg.d_model) @ params["W_o"].T + params["b_o"]

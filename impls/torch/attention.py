"""Softmax attention, PyTorch (the DLR code's attention baseline; docs/models.md).

Per head h of d = H / heads features, rotary positions on q and k, a learnable temperature per head:

    s_{h,i,j} = exp(log_temperature_h) <R_i q_{h,i}, R_j k_{h,j}>,   softmax over the allowed j (causal j <= i;
    `window` w: floor(i/w) - floor(j/w) in {0, 1}, bidirectional {-1, 0, 1}),   y = W_o concat_h(a_h v_h) + b_o

It has no recurrence, so no state, no `step` and no convolution view; its modes (`KIND_MODES`):

* `full`: the (B heads L L) score matrix, masked, and one softmax;
* `chunked`: the positions cut into blocks of b (the window w for local attention, else `block_size`).
  Full attention: the queries of block c meet the keys of block c + o for each block offset o in turn
  (o = 0 first, then the earlier blocks, then the later ones where bidirectional), with a running max and
  sum per query (online softmax), so no L x L matrix is formed: each step holds (B heads L b) scores
  (O(L^2) work, O(L b) memory per step). Local attention: block c's queries meet the keys of blocks c - 1
  and c (and c + 1 where bidirectional) in one fused `scaled_dot_product_attention` call per block, under
  the mask of `allowed`; the fused kernel (flash attention on the CPU, memory-efficient attention on CUDA)
  forms the scores tile by tile and recomputes them in the backward, so training keeps O(B heads L d)
  instead of (B heads L 2w) scores per layer (ListOpsSubTrees: L about 8,000, w = 1,024).

The rotary angles i * 10000^(-2m/d) are computed in float64 and rounded once to the layer's dtype.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from linrnn.impls import checks
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.attention import AttentionConfig
from linrnn.impls.torch.layer import Mixer, padding_mask

ROPE_BASE = 10000.0     # the rotary frequencies' base (the DLR code's theta)


def rotary(x: torch.Tensor) -> torch.Tensor:
    """Pair (2m, 2m+1) of every head at position i turned by the angle i * ROPE_BASE^(-2m/d).

    x (B heads L d) -> (B heads L d)
    """
    L, d = x.shape[-2:]
    freqs = ROPE_BASE ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)   # (d/2)
    angle = torch.arange(L, dtype=torch.float64, device=x.device)[:, None] * freqs             # (L d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((cos * even - sin * odd, sin * even + cos * odd), dim=-1).flatten(-2)


def allowed(cfg: AttentionConfig, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
    """True where query position i attends to key position j (broadcast shapes)."""
    mask = torch.ones_like(i - j, dtype=torch.bool) if cfg.bidirectional else j <= i
    if cfg.window is not None:
        lag = torch.div(i, cfg.window, rounding_mode="floor") - torch.div(j, cfg.window, rounding_mode="floor")
        mask = mask & (lag >= (-1 if cfg.bidirectional else 0)) & (lag <= 1)
    return mask


class Attention(Mixer):
    """Multi-head softmax attention; parameters W_q, b_q, ..., W_o, b_o, log_temperature (bundle keys).

    It takes from `Mixer` the parameters by bundle key, exact loading and the input checks, and has its own
    `forward` (its modes, no state): there is no recurrence to materialise, scan or step.
    """

    config_type = AttentionConfig
    block_size = 64     # `chunked` blocks of full attention (local attention's blocks are its windows)

    @property
    def dtype(self) -> torch.dtype:
        return self.W_o.dtype

    def forward(self, u: torch.Tensor, mode: str = "full", state: torch.Tensor | None = None,
                final_state: bool = True, lengths: torch.Tensor | None = None, segments=None):
        """The layer on a whole sequence.

        u            (B L H) in the layer's dtype
        mode         'full' (default) | 'chunked'
        state        must be None: attention has no recurrent state
        final_state  ignored (there is no state)
        lengths      (B,) or None: padded rows; a valid query sees no padded key, the output is 0 at the padding
        segments     (B L) or None: packed sequences, run as one padded batch of their segments
        -> y (B L H), None
        """
        checks.check_mode(mode, "torch", self.config.kind)
        self.check_input(u)
        checks.check_stateless(self.config, state is not None)
        lengths, segments = self.check_packing(u, lengths, segments, state)
        if segments is not None:
            return self.per_segment(u, mode, segments), None
        with torch.autocast(u.device.type, enabled=False):       # wholly in the layer's dtype
            u = u.to(self.dtype)
            q, k, v = (self.split_heads(F.linear(u, getattr(self, f"W_{n}"), getattr(self, f"b_{n}"))) for n in "qkv")
            q = rotary(q) * torch.exp(self.log_temperature)[:, None, None]
            k = rotary(k)
            o = self.full(q, k, v, lengths) if mode == "full" else self.chunked(q, k, v, lengths)   # (B heads L d)
            y = F.linear(o.transpose(1, 2).flatten(2), self.W_o, self.b_o)
        if lengths is not None:
            y = torch.where(padding_mask(lengths, y.shape[1]), y, torch.zeros((), dtype=y.dtype, device=y.device))
        return (y if self.io_dtype is None else y.to(self.io_dtype)), None

    def step(self, u_t: torch.Tensor, state: torch.Tensor | None = None):
        """Attention has no streaming step: a LinrnnError."""
        raise LinrnnError("mode: attention has no streaming step (an output weighs a window of inputs, not a "
                          "state); use mode full or chunked on the whole sequence")

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B L H) -> (B heads L d), head h holding channels h d ... h d + d - 1."""
        B, L, H = x.shape
        return x.view(B, L, self.config.heads, H // self.config.heads).transpose(1, 2)

    def full(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor | None = None):
        """The masked (B heads L L) scores and one softmax.     q (scaled), k, v (B heads L d) -> (B heads L d)"""
        pos = torch.arange(q.shape[2], device=q.device)
        ok = allowed(self.config, pos[:, None], pos[None, :]) & unpadded(pos[:, None], pos[None, :], lengths)
        scores = (q @ k.transpose(-1, -2)).masked_fill(~ok, -math.inf)
        return torch.softmax(scores, dim=-1) @ v

    def chunked(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor | None = None):
        """Online softmax over key blocks (module docstring).     q (scaled), k, v (B heads L d) -> (B heads L d)"""
        cfg = self.config
        if cfg.window is not None:
            return self.local(q, k, v, lengths)
        B, n, L, d = q.shape
        b = self.block_size
        nb = -(-L // b)                                                     # blocks, the last one padded
        pad = (0, 0, 0, nb * b - L)
        q, k, v = (F.pad(x, pad).view(B, n, nb, b, d) for x in (q, k, v))
        pos = torch.arange(nb * b, device=q.device).view(nb, b)             # (nb b) query positions
        offsets = list(range(0, -nb, -1)) + (list(range(1, nb)) if cfg.bidirectional else [])
        for o in offsets:
            k_o, v_o, kpos = (shift_blocks(x, o, fill) for x, fill in ((k, 0), (v, 0), (pos, -1)))
            ok = allowed(cfg, pos[:, :, None], kpos[:, None, :]) & (kpos >= 0)[:, None, :] & (kpos < L)[:, None, :]
            ok = ok & unpadded(pos[:, :, None], kpos[:, None, :], lengths)                    # (nb b b) or (B 1 ...)
            s = (q @ k_o.transpose(-1, -2)).masked_fill(~ok, -math.inf)    # (B n nb b b)
            if o == 0:                                                      # each query sees itself: m is finite
                m = s.amax(dim=-1, keepdim=True)
                p = torch.exp(s - m)
                total, acc = p.sum(dim=-1, keepdim=True), p @ v_o
            else:
                m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
                scale, p = torch.exp(m - m_new), torch.exp(s - m_new)
                total, acc, m = total * scale + p.sum(dim=-1, keepdim=True), acc * scale + p @ v_o, m_new
        return (acc / total).view(B, n, nb * b, d)[:, :, :L]

    def local(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor | None = None):
        """Local attention, one fused call over blocks (module docstring).   q (scaled), k, v (B heads L d) -> same"""
        cfg = self.config
        B, n, L, d = q.shape
        b = cfg.window
        nb = -(-L // b)                                                     # blocks, the last one padded
        pad = (0, 0, 0, nb * b - L)
        q, k, v = (F.pad(x, pad).view(B, n, nb, b, d) for x in (q, k, v))
        offsets = [-1, 0] + ([1] if cfg.bidirectional else [])
        k, v = (torch.cat([shift_blocks(x, o, 0) for o in offsets], dim=3) for x in (k, v))   # (B n nb kb d)
        pos = torch.arange(nb * b, device=q.device).view(nb, b)             # (nb b) query positions
        kpos = torch.cat([shift_blocks(pos, o, -1) for o in offsets], dim=1)                   # (nb kb)
        ok = (allowed(cfg, pos[:, :, None], kpos[:, None, :]) & ((kpos >= 0) & (kpos < L))[:, None, :])[None, None]
        ok = ok & unpadded(pos[:, :, None], kpos[:, None, :], lengths)    # (1 or B, 1, nb, b, kb)
        # every query sees itself, so no row of the mask is empty; the fused kernels take a 4-d mask, here
        # (1 or B, n nb, b, kb) for the (B, n nb, b, d) queries
        o = F.scaled_dot_product_attention(q.flatten(1, 2), k.flatten(1, 2), v.flatten(1, 2),
                                           attn_mask=ok.expand(-1, n, -1, -1, -1).flatten(1, 2), scale=1.0)
        return o.view(B, n, nb * b, d)[:, :, :L]


def unpadded(i: torch.Tensor, j: torch.Tensor, lengths: torch.Tensor | None):
    """True where a valid query i does not meet a padded key j (a padded query keeps its keys, so that no row of the
    mask is empty; its output is set to 0). -> broadcast of i, j with a leading (B 1) when lengths (B,) is given."""
    if lengths is None:
        return torch.ones((), dtype=torch.bool, device=i.device)
    n = lengths.view(-1, 1, *[1] * max(i.ndim, j.ndim))                   # (B 1 1 ...)
    return (j < n) | (i >= n)


def shift_blocks(x: torch.Tensor, offset: int, fill: int) -> torch.Tensor:
    """Block c of the result is block c + offset of x (blocks on dim -3 for 5-d x, dim 0 for (nb b)); `fill` outside."""
    dim = 0 if x.ndim == 2 else 2
    nb = x.shape[dim]
    if abs(offset) >= nb:
        return torch.full_like(x, fill)
    filler = torch.full_like(x.narrow(dim, 0, abs(offset)), fill)
    if offset <= 0:
        return torch.cat((filler, x.narrow(dim, 0, nb + offset)), dim=dim)
    return torch.cat((x.narrow(dim, offset, nb - offset), filler), dim=dim)

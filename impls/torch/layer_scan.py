"""The `scan` view of the diagonal layer (RotRNN, LRU) as one autograd Function, block by block over time.

The layer is (`diagonal.py`)

    v_t = W_in u_t,    x_t = lambda * x_{t-1} + v_t,    y_t = W_out x_t + D * u_t
    bidirectional:     y_t += W_out_rev r_t,   r_t = lambda * r_{t+1} + v_t  (r_L = 0)

Under plain autograd every intermediate of a layer is kept for the backward: v and the states x
(2n reals per position each, as much as u and y together when n = H), the backward direction's states,
and, through the chunked scan's Python loop, one gradient buffer per slice. This Function keeps only
u and the states entering every chunk of T positions (the boundaries, B n per chunk), and goes over
time in blocks of at most `BLOCK` complex entries (B x positions x n):

* forward: per block, v = W_in u, the chunked scan (`scan.scan_chunks`) from the carry of the previous
  block, y = W_out x + D u written into the output; the backward direction runs the blocks right to left.
  A block is taken as time-major chunks (T B nb H): position c T + t at [t, :, c] (`_rows`), so that
  the projections are plain matrix products on contiguous rows and every step of the scan is one
  contiguous slice, and the scan runs in place on the projection's buffer.
* backward: per block, in the opposite order, the states are recomputed from their saved boundaries
  (`scan.local_scan` plus the fix-up lambda^(t+1) S_c), and the adjoint of the recurrence runs as the
  same chunked scan in reverse time with the transition conjugated (the derivation is in
  `scan.DiagonalScan`):

      g_x = W_out^T g_y,   a_t = g_x_t + conj(lambda) a_{t+1},   grad v_t = a_t,   grad u = W_in^T a + D g_y
      grad W_out = sum g_y x^T,   grad W_in = sum a u^T,   grad D = sum g_y u
      grad lambda = sum_t a_t conj(x_{t-1}),   grad x0 = conj(lambda) a_0
      backward direction: a^r_t = g^r_t + conj(lambda) a^r_{t-1} (forward in time), grad lambda += sum a^r_t conj(r_{t+1})

  The adjoint's carry crosses blocks like the states' carry does.

So a layer's forward and backward hold u, y, the gradients of u and y and one block of temporaries,
whatever L (docs/speed.md has the measured peak). The price is one more projection W_in u and one more
local scan per block in the backward (recomputation), and, for a bidirectional layer, the projection
computed once per direction.
"""

from __future__ import annotations

import torch

from linrnn.impls.torch import scan as scans
from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through
from linrnn.impls.torch.layer import autocast_dtype

BLOCK = 2**20       # at most this many complex entries (B x positions x n) in one block: 8 MiB in complex64
SHARE = 16          # and at most 1/SHARE of the whole sequence's, so the temporaries stay a small part
MIN_BLOCK = 256     # but at least this many positions (fewer would pay Python's per-op cost too often)


def block_length(L: int, B: int, lanes: int) -> int:
    """Positions per block: a power of two within the limits above, or all of L when that is shorter."""
    fits = min(BLOCK // max(1, B * lanes), L // SHARE)
    block = max(MIN_BLOCK, 1 << max(0, fits.bit_length() - 1))
    return L if L <= block else block


def _rows(x: torch.Tensor, T: int) -> torch.Tensor:
    """One block (B l X) as time-major chunks (T B nb X), contiguous (a copy): position c T + t at [t, :, c],
    zero-padded to nb T positions."""
    B, l = x.shape[:2]
    nb, full = -(-l // T), l // T
    if full == nb:
        return x.unflatten(1, (nb, T)).movedim(2, 0).contiguous()
    out = x.new_empty((T, B, nb, *x.shape[2:]))
    if full:
        out[:, :, :full] = x[:, :full * T].unflatten(1, (full, T)).movedim(2, 0)
    r = l - full * T
    out[:r, :, full] = x[:, full * T:].movedim(1, 0)
    out[r:, :, full] = 0
    return out


def _batch_major(dst: torch.Tensor, x: torch.Tensor, add: bool = False) -> None:
    """Write (or add) time-major x (T B nb ...) into dst (B l ...), the padding dropped: `_rows`'s inverse."""
    T, l = x.shape[0], dst.shape[1]
    full = l // T
    parts = [(dst[:, :full * T].unflatten(1, (full, T)).movedim(2, 0), x[:, :, :full])] if full else []
    if full * T < l:
        parts.append((dst[:, full * T:].movedim(1, 0), x[:l - full * T, :, full]))
    for d, src in parts:
        d.add_(src) if add else d.copy_(src)


def _last(chunks: torch.Tensor, length: int) -> torch.Tensor:
    """The entry of time-major chunks (T B nb ...) at position length - 1 of the block: (B ...), a view."""
    T = chunks.shape[0]
    return chunks[(length - 1) % T, :, (length - 1) // T]


def _project(u_rows: torch.Tensor, W_in: torch.Tensor) -> torch.Tensor:
    """v = W_in u on time-major rows as complex chunks in u's precision, a new buffer.  (T B nb H) -> (T B nb n)"""
    return torch.view_as_complex(_pairs_of(u_rows @ W_in.T, u_rows.dtype))


def _pairs_of(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(... 2n) -> (... n 2) in `dtype`: a product computed in bf16 under autocast enters the scan in float32."""
    return t.unflatten(-1, (-1, 2)).to(dtype)


def _pairs(x: torch.Tensor) -> torch.Tensor:
    """Complex chunks (T B nb n) -> real pairs flattened (T B nb 2n), a view."""
    return torch.view_as_real(x).flatten(-2)


def _gram(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """sum over positions of a b^T: (T B nb p), (T B nb q) -> (p q), one matrix product (the padding is zero in a or b)."""
    return a.flatten(0, 2).T @ b.flatten(0, 2)


def forward_blocks(u, W_in, lam_powers, W_out, D, carry, block, T, recurrence=scans.scan_chunks):
    """The forward direction, block by block: v = W_in u, the chunked scan from the carry, y = W_out x + D u.

    u (B L H), lam_powers (T+1 n), carry (B n) complex or None -> y (B L H), the state after the last
    position (B n), and every block's chunk boundaries (a list of (B nb n)). `recurrence` is the scan
    (`scans.scan_chunks`'s signature, in place); `linrnn.verify.bench_torch.diagonal_forward_parts` passes
    one that does nothing, to time the projections and copies alone.
    """
    L = u.shape[1]
    y, bounds = torch.empty_like(u), []                                                   # (B L H)
    for s in range(0, L, block):
        e = min(L, s + block)
        u_rows = _rows(u[:, s:e], T)                                                      # (T B nb H)
        w = _project(u_rows, W_in)                                                        # (T B nb n)
        x, S = recurrence(lam_powers, w, carry, time_dim=0, out=w)                        # (T B nb n), (B nb n)
        _batch_major(y[:, s:e], torch.addcmul(_pairs(x) @ W_out.T, D, u_rows))
        carry = _last(x, e - s)
        bounds.append(S)
    return y, carry, bounds


class DiagonalLayerScan(torch.autograd.Function):
    """(u, W_in, log_lam, W_out, D, x0, W_out_rev) -> (y (B L H), x_L (B n 2)), module docstring."""

    @staticmethod
    def forward(ctx, u, W_in, log_lam, W_out, D, x0, W_out_rev, block, T):
        L = u.shape[1]
        lam_powers = scans.powers(log_lam, torch.arange(T + 1, device=u.device, dtype=u.dtype))   # (T+1 n)
        blocks = [(s, min(L, s + block)) for s in range(0, L, block)]
        carry = None if x0 is None else torch.view_as_complex(x0.contiguous())               # (B n)
        y, carry, forward_bounds = forward_blocks(u, W_in, lam_powers, W_out, D, carry, block, T)
        x_last = torch.view_as_real(carry).clone()                                           # (B n 2)
        reverse_bounds = [None] * len(blocks)
        if W_out_rev is not None:
            carry = None                   # only the last block is padded, and its reverse scan starts from zero
            for i in reversed(range(len(blocks))):
                s, e = blocks[i]
                u_rows = _rows(u[:, s:e], T)
                w = _project(u_rows, W_in)
                r, reverse_bounds[i] = scans.scan_chunks(lam_powers, w, carry, reverse=True, time_dim=0, out=w)
                _batch_major(y[:, s:e], _pairs(r) @ W_out_rev.T, add=True)
                carry = r[0, :, 0]
        ctx.save_for_backward(u, W_in, log_lam, W_out, D, W_out_rev, torch.cat(forward_bounds, 1),
                              None if W_out_rev is None else torch.cat(reverse_bounds, 1), x0)
        ctx.block, ctx.T, ctx.has_x0, ctx.amp = block, T, x0 is not None, autocast_dtype(u.device)
        return y, x_last

    @staticmethod
    def backward(ctx, g_y, g_last):
        with torch.autocast(g_y.device.type, dtype=ctx.amp or torch.bfloat16, enabled=ctx.amp is not None):
            if recorded(g_y, g_last):               # a derivative of the backward: the plain route's (`autodiff`)
                u, W_in, log_lam, W_out, D, W_out_rev, _, _, x0 = ctx.saved_tensors
                return vjp_through(plain_layer, (u, W_in, log_lam, W_out, D, x0, W_out_rev, ctx.block, ctx.T),
                                   ctx.needs_input_grad, (g_y, g_last))
            with torch.no_grad():
                return DiagonalLayerScan._backward(ctx, g_y, g_last)

    @staticmethod
    def _backward(ctx, g_y, g_last):
        u, W_in, log_lam, W_out, D, W_out_rev, forward_bounds, reverse_bounds, _ = ctx.saved_tensors
        block, T = ctx.block, ctx.T
        B, L, H = u.shape
        blocks = [(s, min(L, s + block)) for s in range(0, L, block)]
        chunks = [slice(s // T, -(-e // T)) for s, e in blocks]                     # each block's chunks
        lam_powers = scans.powers(log_lam, torch.arange(T + 1, device=u.device, dtype=u.dtype))   # (T+1 n)
        adjoint_powers, lam = lam_powers.conj(), lam_powers[1]
        fixup = lam_powers[1:, None, None]                                          # (T 1 1 n)  lambda^(t+1)
        g_u = g_y * D                                                               # (B L H)
        g_W_in, g_W_out, g_D = torch.zeros_like(W_in), torch.zeros_like(W_out), torch.zeros_like(D)
        g_lam = torch.zeros_like(lam)
        g_W_out_rev = None if W_out_rev is None else torch.zeros_like(W_out_rev)

        def accumulate(s, e, a, u_rows):
            """grad v = a: its share of grad W_in and grad u."""
            a_pairs = _pairs(a)                                                     # (T B nb 2n)
            g_W_in.add_(_gram(a_pairs, u_rows))
            _batch_major(g_u[:, s:e], a_pairs @ W_in, add=True)

        carry = None                                                                # a_e entering from the right
        for (s, e), c in reversed(list(zip(blocks, chunks))):
            u_rows, g_rows, S = _rows(u[:, s:e], T), _rows(g_y[:, s:e], T), forward_bounds[:, c]
            g_D += (g_rows * u_rows).sum((0, 1, 2))     # not einsum: it makes this H one-row products (bmm), 10x slower
            w = _project(u_rows, W_in)                                              # (T B nb n)
            x = scans.local_scan(lam, w, w, time_dim=0).addcmul_(S, fixup)
            g_W_out.add_(_gram(g_rows, _pairs(x)))
            g_x = _pairs_of(g_rows @ W_out, u.dtype)                                # (T B nb n 2)
            if e == L:
                _last(g_x, e - s).add_(g_last)
            g_x = torch.view_as_complex(g_x)
            a, _ = scans.scan_chunks(adjoint_powers, g_x, carry, reverse=True, time_dim=0, out=g_x)
            g_lam += (a[1:] * x[:-1].conj()).sum((0, 1, 2)) + (a[0] * S.conj()).sum((0, 1))
            carry = a[0, :, 0]
            accumulate(s, e, a, u_rows)
        g_x0 = torch.view_as_real(lam.conj() * carry) if ctx.has_x0 else None

        if W_out_rev is not None:
            carry = None                                                            # a^r_{s-1} entering from the left
            for (s, e), c in zip(blocks, chunks):
                u_rows, g_rows, S = _rows(u[:, s:e], T), _rows(g_y[:, s:e], T), reverse_bounds[:, c]
                w = _project(u_rows, W_in)
                r = scans.local_scan(lam, w, w, reverse=True, time_dim=0).addcmul_(S, fixup.flip(0))
                g_W_out_rev.add_(_gram(g_rows, _pairs(r)))
                g_r = torch.view_as_complex(_pairs_of(g_rows @ W_out_rev, u.dtype))
                a, _ = scans.scan_chunks(adjoint_powers, g_r, carry, time_dim=0, out=g_r)
                g_lam += (a[:-1] * r[1:].conj()).sum((0, 1, 2)) + (a[-1] * S.conj()).sum((0, 1))
                carry = _last(a, e - s)
                accumulate(s, e, a, u_rows)
        return g_u, g_W_in, lam.conj() * g_lam, g_W_out, g_D, g_x0, g_W_out_rev, None, None


def plain_layer(u, W_in, log_lam, W_out, D, x0, W_out_rev, *_):
    """`DiagonalLayerScan`'s outputs in plain differentiable operations: v = W_in u, the step loop
    (`scan.sequential`), the read-out (its plain route, `autodiff`).     -> y (B L H), x_L (B n 2)"""
    v = _pairs_of(u @ W_in.T, u.dtype)                                                    # (B L n 2)
    states = scans.sequential(log_lam, v, x0)
    y = torch.addcmul(states.flatten(-2) @ W_out.T, D, u)
    if W_out_rev is not None:
        y = y + scans.sequential(log_lam, v.flip(1)).flip(1).flatten(-2) @ W_out_rev.T
    return y, states[:, -1]


@torch.compiler.disable(reason="layer_scan: out= buffers and complex views Dynamo cannot trace (docs/precision.md)")
def layer_scan(log_lam, W_in, W_out, W_out_rev, D, u, x0=None):
    """The diagonal layer's `scan` view through `DiagonalLayerScan` (under a torch.func transform or forward-mode
    AD, its plain route: `autodiff`).

    log_lam (n,) complex, W_in (2n H), W_out and W_out_rev (H 2n) or None, D (H,), u (B L H),
    x0 (B n 2) or None -> y (B L H), x_L (B n 2)
    """
    B, L, _ = u.shape
    block = block_length(L, B, log_lam.shape[0])
    T = scans.chunk_length(block)
    log_lam = log_lam.to(scans.complex_dtype(u.dtype))
    if transformed(u, W_in, log_lam, W_out, D, x0, W_out_rev):
        return plain_layer(u, W_in, log_lam, W_out, D, x0, W_out_rev)
    return DiagonalLayerScan.apply(u, W_in, log_lam, W_out, D, x0, W_out_rev, block, T)

"""The diagonal linear recurrence both layers run: one position at a time, complex state."""

import torch


def diagonal_scan(lam: torch.Tensor, bu: torch.Tensor, x: torch.Tensor, reverse: bool = False,
                  starts: torch.Tensor | None = None) -> torch.Tensor:
    """x_t = lam * x_{t-1} + bu_t for t = 0..L-1 (reverse: from L-1 down to 0), from x; returns every x_t.

    lam (N,) complex, bu (B, L, N) complex, x (B, N) complex -> (B, L, N)
    starts (B, L) bool or None: where a packed sequence begins; the state restarts from zero there (reverse: after
    the position before it)"""
    L = bu.shape[1]
    steps = range(L - 1, -1, -1) if reverse else range(L)
    out = [None] * L
    for t in steps:
        if starts is not None:
            restart = starts[:, t + 1] if reverse and t + 1 < L else starts[:, t] if not reverse else None
            if restart is not None:
                x = torch.where(restart[:, None], torch.zeros_like(x), x)
        x = lam * x + bu[:, t]
        out[t] = x
    return torch.stack(out, dim=1)


def packing(u: torch.Tensor, lengths=None, segments=None):
    """(u with its padding zeroed, the valid positions (B, L, 1) or None, the segment starts (B, L) or None)."""
    valid = starts = None
    if lengths is not None:
        valid = (torch.arange(u.shape[1])[None, :] < torch.as_tensor(lengths)[:, None])[..., None]
        u = u * valid
    if segments is not None:
        ids = torch.as_tensor(segments)
        starts = torch.cat([torch.zeros_like(ids[:, :1], dtype=torch.bool), ids[:, 1:] != ids[:, :-1]], dim=1)
    return u, valid, starts

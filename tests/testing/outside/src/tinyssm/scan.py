"""The diagonal linear recurrence both layers run: one position at a time, complex state."""

import torch


def diagonal_scan(lam: torch.Tensor, bu: torch.Tensor, x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """x_t = lam * x_{t-1} + bu_t for t = 0..L-1 (reverse: from L-1 down to 0), from x; returns every x_t.

    lam (N,) complex, bu (B, L, N) complex, x (B, N) complex -> (B, L, N)"""
    steps = range(bu.shape[1] - 1, -1, -1) if reverse else range(bu.shape[1])
    out = [None] * bu.shape[1]
    for t in steps:
        x = lam * x + bu[:, t]
        out[t] = x
    return torch.stack(out, dim=1)

"""RG-LRU, PyTorch (De et al. 2024, Griffin; RecurrentGemma's layer; docs/models.md).

    r_t = sigma(W_a u_t + b_a),  i_t = sigma(W_x u_t + b_x)              block-diagonal gates
    log a_t = -c r_t softplus(-Lambda)
    x_t = a_t * x_{t-1} + sqrt(1 - a_t^2) * (i_t * u_t)                 a sequence's first position: i_t * u_t
    y_t = x_t   (bidirectional: + the same layer on the reversed sequence)

Route: the gates give every position its own transition, so the recurrence is the scan with a transition per
position (`varying_scan.py`), on the real lanes of the state: `sequential` its plain loop, `scan` its chunked
two-level scan (the Triton kernels on CUDA, `fast_scan.varying`), `step` one position at a time. The transition
enters as log a_t (the scan multiplies chunk products as sums of logs) and sqrt(1 - a_t^2) as
sqrt(-expm1(2 log a_t)), which keeps its digits for a_t near 1.

A sequence begins where no state is passed (and in `step`, where a packed segment begins): there the input enters
unnormalised. The layer's native state is the reference's (B H) real state, or None for "a sequence begins".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from linrnn.impls.specs.rglru import RGLRUConfig
from linrnn.impls.torch import fast_scan, varying_scan
from linrnn.impls.torch.layer import Mixer


@dataclass
class Gated:
    """The derived tensors of one forward pass."""

    log_sigma: torch.Tensor    # (H,)      c log sigma(Lambda) = -c softplus(-Lambda): log a_t = r_t log_sigma
    W_a: torch.Tensor          # (K W W)   recurrence gate, blocks (block, out, in)
    b_a: torch.Tensor          # (H,)
    W_x: torch.Tensor          # (K W W)   input gate
    b_x: torch.Tensor          # (H,)


def block_linear(W: torch.Tensor, b: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """W u + b with W block-diagonal (block, out, in).     u (... H) -> (... H)"""
    K, width, _ = W.shape
    return torch.einsum("kvw,...kw->...kv", W, u.unflatten(-1, (K, width))).flatten(-2) + b


def drive(m: Gated, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log a_t, the input gated i_t * u_t, and the normaliser sqrt(1 - a_t^2).     u (... H) -> three (... H)"""
    r = torch.sigmoid(block_linear(m.W_a, m.b_a, u))
    gated = torch.sigmoid(block_linear(m.W_x, m.b_x, u)) * u
    log_a = r * m.log_sigma
    return log_a, gated, torch.sqrt(-torch.expm1(2 * log_a))


def first_unnormalised(gated: torch.Tensor, scale: torch.Tensor, fresh: torch.Tensor | None) -> torch.Tensor:
    """The scan's drive: sqrt(1 - a_t^2) i_t u_t, and i_t u_t where `fresh` (B L 1) bool marks a sequence's begin."""
    normalised = scale * gated
    return normalised if fresh is None else torch.where(fresh, gated, normalised)


def begins(length: int, at: torch.Tensor | int, device) -> torch.Tensor:
    """(B L 1) or (1 L 1) bool: True at position `at` (an int, or a (B,) tensor of positions)."""
    t = torch.arange(length, device=device)
    at = torch.as_tensor(at, device=device).reshape(-1, 1)
    return (t[None, :] == at)[..., None]


class RGLRU(Mixer):
    """One RG-LRU layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = RGLRUConfig
    views_take_lengths = True            # the backward scan begins afresh at each padded row's last valid position

    @property
    def dtype(self) -> torch.dtype:
        return self.Lambda.dtype

    def materialise(self) -> Gated:
        return Gated(-self.config.c * F.softplus(-self.Lambda), self.W_a, self.b_a, self.W_x, self.b_x)

    # -- the views ----------------------------------------------------------------------------------

    def _run(self, m: Gated, u: torch.Tensor, x0, lengths, route):
        """y and the final state by `route(log_a, v, x0, reverse)` (a scan with a transition per position)."""
        log_a, gated, scale = drive(m, u)                                   # (B L H) each
        L = u.shape[1]
        states = route(log_a, first_unnormalised(gated, scale, begins(L, 0, u.device) if x0 is None else None), x0,
                       False)
        y = states
        if self.config.bidirectional:
            last = L - 1 if lengths is None else lengths - 1                # the reversed sequence begins here
            v = first_unnormalised(gated, scale, begins(L, last, u.device))
            y = y + route(log_a, v, None, True)
        return y, states[:, -1]

    def sequential(self, m: Gated, u: torch.Tensor, x0=None, lengths=None):
        return self._run(m, u, x0, lengths, lambda la, v, x, rev: varying_scan.sequential(la, v, x, rev))

    def scan(self, m: Gated, u: torch.Tensor, x0=None, lengths=None):
        return self._run(m, u, x0, lengths, lambda la, v, x, rev: fast_scan.varying(la, v, x, rev))

    def step_once(self, m: Gated, u_t: torch.Tensor, x, fresh: torch.Tensor | None = None):
        """One position.     u_t (B H), x (B H) or None (a sequence begins), fresh (B,) bool or None -> y_t, x"""
        log_a, gated, scale = drive(m, u_t)
        if x is None:
            return gated, gated
        x = torch.addcmul(scale * gated, torch.exp(log_a), x)
        if fresh is not None:
            x = torch.where(fresh[:, None], gated, x)
        return x, x

    def stepwise(self, m: Gated, u: torch.Tensor, x0, resets: torch.Tensor | None = None):
        """Mode 'step' on a whole sequence: a packed segment's first position begins afresh (`resets` (B L))."""
        x, ys = x0, []
        for t in range(u.shape[1]):
            y_t, x = self.step_once(m, u[:, t], x, None if resets is None or x is None else resets[:, t])
            ys.append(y_t)
        return torch.stack(ys, dim=1), x

    # -- the state ----------------------------------------------------------------------------------

    def zero_state(self, m: Gated, batch: int):
        return None                                                         # a sequence begins

    def to_native(self, m: Gated, state: torch.Tensor, batch: int) -> torch.Tensor:
        self.check_state(state, (batch, self.config.d_model), self.dtype)
        return state

    def from_native(self, m: Gated, x: torch.Tensor) -> torch.Tensor:
        return x

"""Published PyTorch layers of the same family, built at (H, N) to be timed beside ours.

Each peer is one LRU-style layer, u (B L H) real -> y (B L H) real:

    v_t = B_bar u_t                      (projection into N complex lanes)
    x_t = lambda * x_{t-1} + v_t         (diagonal recurrence, x_{-1} = 0)
    y_t = Re(C x_t) + D u_t              (projection back, plus the skip)

    peer             package (import name)           how it runs the recurrence
    s5-pytorch       s5-pytorch (`s5`)               S5 (Smith et al. 2023) with a diagonalised HiPPO
                                                     lambda and zero-order-hold B_bar; `torch.vmap` over
                                                     the batch of an odd/even associative scan; D diagonal
    lru-pytorch      LRU-pytorch (`LRU_pytorch`)     the LRU (Orvieto et al. 2023); a Python loop over
                                                     batch and time, one matrix-vector product per step;
                                                     D a full H x H matrix

Both are optional (the extra `linrnn[peers]`): `missing_reason(name)` says why a peer cannot be built,
and `make_layer` raises a `LinrnnError` with that reason. Their parameters are their own packages'
initialisations under `torch.manual_seed(seed)` (the global generator is restored afterwards); they are
contenders for time and memory, not oracles: no test compares their outputs with ours yet.
Both compute in float32 / complex64 only.
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

from linrnn.base.errors import LinrnnError

INSTALL = "install linrnn[peers] (pip install 'linrnn[peers]')"
PEERS = {              # name -> (distribution on PyPI, import name)
    "s5-pytorch": ("s5-pytorch", "s5"),
    "lru-pytorch": ("LRU-pytorch", "LRU_pytorch"),
}


def check_peer(name: str) -> str:
    if name not in PEERS:
        raise LinrnnError(f"peer: expected one of {', '.join(PEERS)}, found {name!r}")
    return name


def _module(name: str):
    return importlib.import_module(PEERS[check_peer(name)][1])


def missing_reason(name: str) -> str | None:
    """None when peer `name` can be built here, else one line saying why not and what to install."""
    distribution, module = PEERS[check_peer(name)]
    try:
        _module(name)
    except ImportError as err:
        return f"{name} is not installed ({distribution}: `import {module}` failed: {err}); {INSTALL}"
    return None


class Peer(nn.Module):
    """One peer layer behind our shape contract: forward(u (B L H)) -> y (B L H), in float32."""

    def __init__(self, name: str, layer: nn.Module, d_model: int, d_state: int):
        super().__init__()
        self.name, self.layer, self.d_model, self.d_state = name, layer, d_model, d_state

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        if u.ndim != 3 or u.shape[-1] != self.d_model:
            raise LinrnnError(f"u: expected shape (B, L, {self.d_model}), found {tuple(u.shape)}")
        if u.dtype != torch.float32:
            raise LinrnnError(f"u: expected float32 ({self.name} computes in float32), found {u.dtype}")
        return self.layer(u)                                   # (B L H)

    def extra_repr(self) -> str:
        return f"{self.name}, H={self.d_model}, N={self.d_state}"


def _build(name: str, H: int, N: int) -> nn.Module:
    package = _module(name)
    if name == "s5-pytorch":
        return package.S5(H, state_width=N)                   # one block of N modes, dense B and C
    return package.LRU(in_features=H, out_features=H, state_features=N)


def make_layer(name: str, H: int, N: int, *, seed: int = 0, dtype: torch.dtype = torch.float32,
               device=None) -> Peer:
    """Peer `name` ('s5-pytorch' or 'lru-pytorch') of width H and N complex modes, on `device`.

    Raises LinrnnError with `missing_reason(name)` when the package is absent, or for a dtype
    other than float32 or a size below 1.
    """
    reason = missing_reason(name)
    if reason:
        raise LinrnnError(reason)
    if dtype != torch.float32:
        raise LinrnnError(f"dtype: expected torch.float32 ({name} computes in float32/complex64), found {dtype}")
    for what, n in (("H", H), ("N", N)):
        if not isinstance(n, int) or n < 1:
            raise LinrnnError(f"{what}: expected a positive integer, found {n!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = _build(name, H, N)
    return Peer(name, layer, H, N).to(device)

"""What a stream of tokens through a PyTorch step does, counted token by token (claim D9's structure check).

    stream = TorchStream(layer, u)        # u (B T+1 H): token 0 makes the state, tokens 1..T are counted
    stream.advance(t)                     # one call of layer.step(u[:, t], state), the state kept
    counts = count_stream(make, T)        # per token t = 1..T: the ATen operators, flops, elements, state bytes

Each token is counted on its own: `ops`, every ATen operator dispatched under a `TorchDispatchMode` (a Python
loop over t of tensor operations adds operators at every later token), `elements`, the elements those operators
wrote (one `torch.stack` of a history grows here, not in `ops`), `flops`, `FlopCounterMode`'s count, and the bytes
of the state the step returns. What runs outside PyTorch (Python, NumPy on a history kept in the layer object) is
never dispatched and never counted: the per-token timing (`linrnn.verify.step_time`) is what can see it.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode


class TorchStream:
    """A stream through `layer.step(u_t, state) -> (y_t, state)`, inference only (no autograd graph)."""

    def __init__(self, layer, u: torch.Tensor):
        self.layer, self.u, self.state = layer, u, None        # u (B T+1 H)

    def advance(self, t: int) -> None:
        with torch.no_grad():
            _, self.state = self.layer.step(self.u[:, t], self.state)


class _Count(TorchDispatchMode):
    """Every ATen operator dispatched, and the elements of the tensors it returns."""

    def __init__(self):
        super().__init__()
        self.ops, self.elements = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        self.elements += sum(x.numel() for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor))
        return out


def _tensors(state) -> list[torch.Tensor]:
    return [x for x in tree_flatten(state)[0] if isinstance(x, torch.Tensor)]


def count_stream(make: Callable[[], TorchStream], tokens: int) -> dict:
    """A fresh stream's tokens 1..`tokens` counted one by one (token 0, which makes the state, is not):
    {"reading", "positions", "ops", "flops", "elements", "state_bytes" (lists, one entry per position),
    "state_shapes" (every distinct list of the state's shapes seen), "programs", "loops", "unreadable"}.
    The last three are the JAX reading's (None, [], []): nothing in an eager PyTorch step is a compiled loop."""
    stream = make()
    stream.advance(0)
    out = {"reading": "ATen operators dispatched, per token", "positions": [], "ops": [], "flops": [],
           "elements": [], "state_bytes": [], "state_shapes": [], "programs": None, "loops": [], "unreadable": []}
    for t in range(1, tokens + 1):
        with FlopCounterMode(display=False) as flops, _Count() as count:
            stream.advance(t)
        state = _tensors(stream.state)
        shapes = [list(x.shape) for x in state]
        out["positions"].append(t)
        out["ops"].append(count.ops)
        out["flops"].append(int(flops.get_total_flops()))
        out["elements"].append(count.elements)
        out["state_bytes"].append(sum(x.numel() * x.element_size() for x in state))
        if shapes not in out["state_shapes"]:
            out["state_shapes"].append(shapes)
    return out


@contextlib.contextmanager
def one_thread():
    """PyTorch on one intra-op thread while timing CPU time: idle threads spinning would add CPU time, not work."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)

"""Speed of the PyTorch layers (`pytest --benchmark`): the forward time of every view of one layer.

B=8, L=4096, H=128, N=128 (RotRNN: 16 heads of 8), float32, inference (no autograd graph), on the
device PyTorch defaults to. The layer and the timing call come from `linrnn.impls.torch.bench`, which
the report reuses. The untimed warm-up call also sets the number of rounds, so that the slow views
(DLR's step loop) stay at a few rounds. Run alone: a concurrent process distorts every timing.
"""

import time

import pytest
import torch

from linrnn.impls.torch import MODES
from linrnn.impls.torch.bench import make_forward

B, L, H, N, HEADS = 8, 4096, 128, 128, 16
SECONDS_PER_TEST = 4.0


@pytest.mark.bench
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])
def test_torch_forward(benchmark, kind, mode):
    forward, info = make_forward(kind, mode, B, L, H, N, heads=HEADS, dtype="float32")
    start = time.perf_counter()
    forward()                                         # warm-up, outside the timed region
    once = time.perf_counter() - start
    rounds = max(3, min(20, round(SECONDS_PER_TEST / max(once, 1e-3))))
    benchmark.extra_info.update(info)
    y = benchmark.pedantic(forward, rounds=rounds, iterations=1)
    assert y.shape == (B, L, H) and bool(torch.isfinite(y).all())

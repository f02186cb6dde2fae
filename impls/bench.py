"""What the speed harnesses of both frameworks share: the layer at given sizes, and the timer.

Each side's `bench.make_forward` builds its own layer from `layer_config` and returns a synchronised
zero-argument call; `median_ms` times any such call the same way for both. Numbers on a shared CPU
are noisy (docs/speed.md): time alone, compare ratios, never assert on a timing in a test.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from linrnn.impls.config import DLRConfig, LRUConfig, MixerConfig, RotRNNConfig

KINDS = ("rotrnn", "lru", "dlr")


def layer_config(kind: str, H: int, N: int, heads: int = 16) -> MixerConfig:
    """One layer of width H and total state N (RotRNN: `heads` heads of N / heads)."""
    if kind == "rotrnn":
        return RotRNNConfig(d_model=H, d_state=N // heads, heads=heads)
    if kind == "lru":
        return LRUConfig(d_model=H, d_state=N)
    if kind == "dlr":
        return DLRConfig(d_model=H, d_state=N)
    raise ValueError(f"unknown mixer {kind!r}; expected one of {', '.join(KINDS)}")


def median_ms(call: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of `call()` in milliseconds, after `warmup` untimed calls (call synchronises)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)

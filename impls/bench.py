"""What the speed harnesses of both frameworks share: the layer at given sizes, and the timer.

Each side's `bench.make_forward(kind, mode, B, L, H, N, heads=16, dtype="float32", seed=0, device=None)`
builds its own layer from `layer_config` and returns `(forward, info)`: a synchronised zero-argument
call returning y (B L H), and the record of the run (`info_record` plus the side's device and
version). `median_ms` times any such call the same way for both. Numbers on a shared CPU
are noisy (docs/speed.md): time alone, compare ratios, never assert on a timing in a test.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from linrnn.impls.config import KINDS, MixerConfig, mixer_config  # noqa: F401  (KINDS: re-exported)
from linrnn.impls.errors import LinrnnError


def layer_config(kind: str, H: int, N: int, heads: int = 16) -> MixerConfig:
    """One layer of width H and *total* state N (RotRNN: `heads` heads of N / heads; LRU, DLR: N)."""
    if kind == "rotrnn" and N % heads:
        raise LinrnnError(f"N: expected a total state divisible by heads = {heads}, found {N}")
    return mixer_config(kind, H, N // heads if kind == "rotrnn" else N, heads=heads)


def info_record(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int, dtype: str) -> dict:
    """What a benchmark record says about its run, the same keys on both sides (each adds device, version)."""
    return {"mixer": kind, "mode": mode, "B": B, "L": L, "H": H, "N": N,
            "heads": heads if kind == "rotrnn" else None, "dtype": dtype}


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

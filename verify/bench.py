"""What the speed harnesses of both frameworks share: the layer at given sizes, the timer, the memory probe.

Each side's `bench.make_forward(kind, mode, B, L, H, N, heads=16, dtype="float32", seed=0, device=None)`
builds its own layer from `layer_config` and returns `(forward, info)`: a synchronised zero-argument
call returning y (B L H), and the record of the run (`info_record` plus the side's device and
version). `make_forward_backward` (same signature) returns a call that runs the forward and the
gradient of sum(y) with respect to the parameters and u. `median_ms` times any such call the same way
for both; `interleaved_ms` times several calls in turn, round by round. Numbers on a shared CPU are noisy (docs/speed.md): time alone, compare ratios, never assert
on a timing in a test.

Every builder takes `before_inputs`: a callable run after everything that does not depend on the
sizes' data is ready (imports, JAX's compilation) and before the parameters and inputs are allocated.
`PeakRSS.start` is the one for a peak-memory measurement in a fresh process on a CPU: the peak it
reports counts the parameters, the input u, every temporary and the outputs (and gradients) of one
call, and nothing allocated before it (see `PeakRSS`).
"""

from __future__ import annotations

import re
import statistics
import time
from typing import Callable

from linrnn.impls.config import RECURRENT_KINDS, MixerConfig, mixer_config  # noqa: F401  (RECURRENT_KINDS: re-exported)
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import SpecView, spec


def layer_config(kind: str, H: int, N: int, heads: int = 16) -> MixerConfig:
    """One layer of width H and *total* state N (RotRNN: `heads` heads of N / heads; LRU, DLR, S5: N; S4D: N per
    channel; attention: `heads` heads and no state, N dropped)."""
    per_head = spec(kind).has_heads and spec(kind).has_state_size     # RotRNN: the heads share the total state
    if per_head and N % heads:
        raise LinrnnError(f"N: expected a total state divisible by heads = {heads}, found {N}")
    return mixer_config(kind, H, N // heads if per_head else N, heads=heads)


def info_record(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int, dtype: str) -> dict:
    """What a benchmark record says about its run, the same keys on both sides (each adds device, version)."""
    return {"mixer": kind, "mode": mode, "B": B, "L": L, "H": H, "N": N,
            "heads": heads if spec(kind).has_heads else None, "dtype": dtype}


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


# -- training speed: directions, each mixer's fastest modes, the timer with its own repeat count ---

DIRECTIONS = ("forward", "forward+backward")
# The modes a training run would use, per mixer: the parallel-in-L views (docs/speed.md), each model's spec's
# `training_modes` (DLR and S4D have two: `conv`, their kernel route, and the chunked `scan`), the recurrent mixers only
TRAINING_MODES = SpecView(lambda s: s.training_modes, only=lambda s: bool(s.training_modes) and s.stateful)


def check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise LinrnnError(f"direction: expected one of {', '.join(DIRECTIONS)}, found {direction!r}")
    return direction


def input_bytes(B: int, L: int, H: int, itemsize: int = 4) -> int:
    """B L H itemsize: the bytes of one float32 input u (B L H), the unit of the memory ratios."""
    return B * L * H * itemsize


def timed_median_ms(call: Callable[[], object], seconds: float = 2.0) -> tuple[float, int]:
    """(median ms, timed calls) of `call()` after one untimed call, with as many calls as fit `seconds`.

    The untimed call's time picks the count: up to 7, at least 3, and 1 for a call that alone takes
    `seconds` or longer (at the longest lengths one call may take tens of seconds).
    """
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    repeats = 1 if once >= seconds else min(7, max(3, int(seconds / max(once, 1e-6))))
    return median_ms(call, repeats=repeats, warmup=0), repeats


def interleaved_ms(calls: dict[str, Callable[[], object]], repeats: int = 9,
                   clock: Callable[[], float] | None = None) -> dict[str, list[float]]:
    """Every call's times in ms, the calls interleaved run by run after one untimed warm-up each.

    A slow spell of a shared machine then falls on the calls of the rounds it lasts rather than on every
    run of one call (docs/speed.md, "Rules for timing"); it does not always slow them alike, so compare
    calls through the ratios within each round, with their spread, not only through their medians.
    clock: wall time (`time.perf_counter`, looked up at the call) by default; `time.process_time` counts this
    process's CPU time instead (every thread), which time spent waiting for another process's turn on a shared
    CPU does not inflate.
    """
    if repeats < 1:
        raise LinrnnError(f"repeats: expected at least 1 round, found {repeats}")
    clock = clock or time.perf_counter
    times: dict[str, list[float]] = {name: [] for name in calls}
    for f in calls.values():
        f()
    for _ in range(repeats):
        for name, f in calls.items():
            start = clock()
            f()
            times[name].append(1e3 * (clock() - start))
    return times


# -- peak resident memory (Linux) ------------------------------------------------------------------

_STATUS_FIELD = re.compile(r"^(VmRSS|VmHWM):\s+(\d+) kB$", re.M)


def _status_kib() -> dict[str, int]:
    try:
        with open("/proc/self/status") as f:
            return {k: int(v) for k, v in _STATUS_FIELD.findall(f.read())}
    except OSError as err:
        raise LinrnnError(f"peak memory: cannot read /proc/self/status ({err}); the probe needs Linux") from None


class PeakRSS:
    """Peak growth of this process's resident memory from `start()` to `peak_bytes()`, in bytes (Linux).

    start()  resets the kernel's high-water mark VmHWM to the current resident size (writing 5 to
             /proc/self/clear_refs) and records VmRSS as the baseline;
    peak_bytes() -> VmHWM - baseline: the most memory that was resident at one time above the baseline.

    What it counts: every page touched after `start` and resident at the peak: the parameters and
    inputs allocated after it, temporaries, outputs, gradients, the allocator's own overhead and any
    page a library touches for the first time (thread stacks, lazily loaded code); run a small warm-up
    call before `start` to keep the last out. What it does not count: memory allocated before `start`
    (imports, JAX's compiled program) and pages only reserved, never touched. Use it in a fresh process:
    memory a previous call freed into an allocator's pool and reuses is invisible to it.
    """

    def __init__(self):
        self.baseline: int | None = None

    def start(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError as err:
            raise LinrnnError(f"peak memory: cannot reset the peak resident size ({err}); needs Linux >= 4.0") from None
        self.baseline = 1024 * _status_kib()["VmRSS"]

    def peak_bytes(self) -> int:
        if self.baseline is None:
            raise LinrnnError("peak memory: PeakRSS.peak_bytes() called before start()")
        return 1024 * _status_kib()["VmHWM"] - self.baseline

"""Scan speed: RotRNN, LRU and DLR x backend x mode, forward time against L (the report's speed section, claim D9).

Uses the same harnesses as `pytest --benchmark` (`linrnn.verify.bench_torch`, `linrnn.verify.bench_jax`):
one layer, float32, compiled and warmed up before timing, the median of a few calls. The float64
reference is an oracle, not a contender, and is not timed. `step` mode runs the sequence one position
at a time: its time should grow as L (claim D9). For D9 it is also timed at five lengths in interleaved
rounds, from which the ledger fits the exponent of time against L with its interval.

    run(quick, progress) -> (data, config)     data["rows"]: backend, mixer, mode, L, ms, us_per_position;
                                               data["step_rounds"]: backend, mixer, L, ms (one per round), the
                                               step mode in interleaved rounds for D9's exponent fit

Training speed (forward and forward+backward, peak memory, the GEMM floor and the peers, up to
L = 262144) is `linrnn.experiments.training_speed`; its `sweep` is re-exported here as `speed.sweep`.
"""

from __future__ import annotations

from linrnn.experiments.training_speed import sweep  # noqa: F401  (re-exported: `linrnn gpucheck` calls it)

SIZES = {"B": 4, "H": 64, "N": 64, "heads": 8, "dtype": "float32"}
# D9: step mode timed in interleaved rounds (every length once per round) at five lengths, for the fit of the
# exponent of time against L (the ledger's `stats.exponent`: at least 5 rounds at 3 or more lengths)
STEP_LENGTHS = (128, 256, 512, 1024, 2048)
QUICK_STEP_LENGTHS = (64, 128, 256)
STEP_ROUNDS = 5
LENGTHS = (256, 1024, 4096, 16384)
QUICK_LENGTHS = (128, 512)      # two lengths 4x apart: enough for the step mode's time per position (D9)
BUDGET_MS = 1500.0  # a call slower than this is not timed at the next, 4x longer, L (ms = None)
KINDS = ("rotrnn", "lru", "dlr")
MODES = ("sequential", "scan", "conv", "step")
BACKENDS = ("torch", "jax")


def _timer(backend: str, kind: str, mode: str, L: int):
    """A zero-argument synchronised forward call at the section's sizes, and the device it runs on."""
    if backend == "torch":
        from linrnn.verify.bench_torch import make_forward
        forward, info = make_forward(kind, mode, L=L, **SIZES)
        return forward, info["device"]
    from linrnn.verify.bench_jax import make_forward
    forward, info = make_forward(kind, mode, L=L, **SIZES)
    return forward, info["device"]


def run(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.verify.bench import median_ms

    lengths = QUICK_LENGTHS if quick else LENGTHS
    cases = [(b, k, m, L) for b in BACKENDS for k in KINDS for m in MODES for L in lengths]
    rows, devices, too_slow = [], {}, set()
    for i, (backend, kind, mode, L) in enumerate(cases):
        progress(i, len(cases), f"{backend} {kind} {mode} L={L}")
        if (backend, kind, mode) in too_slow:   # a step loop in Python: 4x longer again would blow the budget
            rows.append({"backend": backend, "mixer": kind, "mode": mode, "L": L, "ms": None, "us_per_position": None})
            continue
        forward, devices[backend] = _timer(backend, kind, mode, L)
        ms = median_ms(forward, repeats=3, warmup=1)
        if ms > BUDGET_MS:
            too_slow.add((backend, kind, mode))
        rows.append({"backend": backend, "mixer": kind, "mode": mode, "L": L, "ms": ms, "us_per_position": 1e3 * ms / L})
    step_rounds = []
    step_lengths = QUICK_STEP_LENGTHS if quick else STEP_LENGTHS
    for backend in BACKENDS:
        for kind in KINDS:
            progress(len(cases), len(cases), f"{backend} {kind} step mode, {STEP_ROUNDS} interleaved rounds")
            step_rounds.extend(step_mode_rounds(backend, kind, step_lengths, STEP_ROUNDS))
    progress(len(cases), len(cases), "done")
    return {"rows": rows, "step_rounds": step_rounds}, {**SIZES, "lengths": list(lengths), "devices": devices,
                                                        "budget_ms": BUDGET_MS, "step_lengths": list(step_lengths),
                                                        "step_rounds": STEP_ROUNDS}


def step_mode_rounds(backend: str, kind: str, lengths, rounds: int) -> list[dict]:
    """Step mode at every length, timed in `rounds` interleaved rounds (`impls.bench.interleaved_ms`) of the
    process's CPU time: one row per length, {"backend", "mixer", "L", "ms": [CPU ms per round], "clock"}.

    CPU time, not wall time: O(L) is a statement about work, and on a shared CPU a long call spans more of the
    other processes' turns than a short one, which inflates wall time more at the longer lengths and biases the
    fitted exponent upwards (seen here: wall-clock rounds taken beside two training runs gave JAX's step mode
    an exponent of 1.5 over L = 64-256)."""
    import time

    from linrnn.verify.bench import interleaved_ms

    calls = {L: _timer(backend, kind, "step", L)[0] for L in lengths}
    if backend == "torch":         # one thread: idle intra-op threads spinning would add CPU time, not work
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            times = interleaved_ms(calls, repeats=rounds, clock=time.process_time)
        finally:
            torch.set_num_threads(threads)
    else:
        times = interleaved_ms(calls, repeats=rounds, clock=time.process_time)
    return [{"backend": backend, "mixer": kind, "L": L, "ms": times[L], "clock": "process CPU time"}
            for L in lengths]

"""Scan speed: every mixer x backend x mode, forward time against L (the report's speed section, claim D9).

Uses the same harnesses as `pytest --benchmark` (`linrnn.impls.torch.bench`, `linrnn.impls.jax.bench`):
one layer, float32, compiled and warmed up before timing, the median of a few calls. The float64
reference is an oracle, not a contender, and is not timed. `step` mode runs the sequence one position
at a time: its time per position should not grow with L (claim D9; the verdict is the ledger's).

    run(quick, progress) -> (data, config)     data["rows"]: backend, mixer, mode, L, ms, us_per_position

Training speed (forward and forward+backward, peak memory, the GEMM floor and the peers, up to
L = 262144) is `linrnn.experiments.training_speed`; its `sweep` is re-exported here as `speed.sweep`.
"""

from __future__ import annotations

from linrnn.experiments.training_speed import sweep  # noqa: F401  (re-exported: `linrnn gpucheck` calls it)

SIZES = {"B": 4, "H": 64, "N": 64, "heads": 8, "dtype": "float32"}
LENGTHS = (256, 1024, 4096, 16384)
QUICK_LENGTHS = (128, 512)      # two lengths 4x apart: enough for the step mode's time per position (D9)
BUDGET_MS = 1500.0  # a call slower than this is not timed at the next, 4x longer, L (ms = None)
KINDS = ("rotrnn", "lru", "dlr")
MODES = ("sequential", "scan", "conv", "step")
BACKENDS = ("torch", "jax")


def _timer(backend: str, kind: str, mode: str, L: int):
    """A zero-argument synchronised forward call at the section's sizes, and the device it runs on."""
    if backend == "torch":
        from linrnn.impls.torch.bench import make_forward
        forward, info = make_forward(kind, mode, L=L, **SIZES)
        return forward, info["device"]
    from linrnn.impls.jax.bench import make_forward
    forward, info = make_forward(kind, mode, L=L, **SIZES)
    return forward, info["device"]


def run(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.impls.bench import median_ms

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
    progress(len(cases), len(cases), "done")
    return {"rows": rows}, {**SIZES, "lengths": list(lengths), "devices": devices, "budget_ms": BUDGET_MS}

"""Training speed beside the peers (`pytest --benchmark`): forward and forward+backward, the issue's sizes.

B = 8, H = N = 128 (RotRNN: 16 heads of 8), float32, one layer, on CUDA when PyTorch sees it (JAX then
on its GPU) and on the CPU otherwise: each mixer's training modes in both frameworks, the GEMM floor,
s5-pytorch and LRU-pytorch (the latter loops over B x L in Python: only its forward at L = 1024), and
on CUDA the scan alone by the chunked scan, Triton and Pallas. The cases, builders and ratios are
`linrnn.experiments.training_speed`'s, so these numbers and the report's sweep are the same
measurement. At the end of the session tests/bench/conftest.py writes the ratios (to the GEMM floor,
to s5-pytorch, t(16384) / t(4096)) as JSON beside `--benchmark-json FILE` (FILE.ratios.json) or to
$LINRNN_BENCH_RATIOS, and prints the markdown tables.

    pytest --benchmark -k train --benchmark-json bench.json          # all of it
    pytest --benchmark -k "train_fwd and not fwdbwd"                   # forward only
    pytest --benchmark -k "train_fwdbwd and L16384"                    # forward+backward at L = 16384

A peer or kernel that is not installed or not available is skipped with the reason (and its row in
the JSON says so). Never asserts on a timing; checks only that each call returns finite numbers.
"""

import time

import numpy as np
import pytest

from linrnn.experiments.training_speed import build, cases

SIZES = dict(B=8, H=128, N=128, heads=16, dtype="float32")
SECONDS_PER_TEST = 4.0


def _device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


DEVICE = _device()
CASES = cases(DEVICE)


def _params(direction: str, lengths) -> list:
    out = []
    for case in CASES:
        for L in lengths:
            if case.arg == "lru-pytorch" and (direction != "forward" or L > 1024):
                continue                             # a Python loop over B x L: one forward at L = 1024
            ident = f"{case.framework}-{case.implementation.replace(' ', '_')}-L{L}"
            out.append(pytest.param(case, L, id=ident))
    return out


def _finite(out) -> bool:
    """Every array in a call's output (a tensor, a JAX array, or tuples and dicts of them) is finite."""
    if isinstance(out, dict):
        return all(_finite(v) for v in out.values())
    if isinstance(out, (tuple, list)):
        return all(_finite(v) for v in out)
    if hasattr(out, "detach"):
        out = out.detach().cpu()
    return bool(np.all(np.isfinite(np.asarray(out))))


def _run(benchmark, record, case, direction: str, L: int):
    record["sizes"], record["device"] = SIZES, DEVICE
    row = {"framework": case.framework, "implementation": case.implementation, "direction": direction, "L": L,
           "ms": None, "repeats": 0, "peak_bytes": None, "xla_bytes": None, "skipped": case.unavailable}
    record["rows"].append(row)
    if case.unavailable:
        pytest.skip(case.unavailable)
    spec = {"framework": case.framework, "builder": case.builder, "arg": case.arg, "direction": direction,
            "L": L, "device": DEVICE, **SIZES}
    call, info = build(spec)
    start = time.perf_counter()
    call()                                            # warm-up (JAX: a second one), outside the timed region
    once = time.perf_counter() - start
    benchmark.extra_info.update({**info, "implementation": case.implementation})
    rounds = max(3, min(20, round(SECONDS_PER_TEST / max(once, 1e-3))))
    out = benchmark.pedantic(call, rounds=rounds, iterations=1)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        row["ms"], row["repeats"] = 1e3 * stats.stats.median, rounds
    row["xla_bytes"] = info.get("xla_bytes")
    assert _finite(out)


@pytest.mark.bench
@pytest.mark.parametrize("case, L", _params("forward", (1024, 4096)))
def test_train_fwd(benchmark, training_rows, case, L):
    _run(benchmark, training_rows, case, "forward", L)


@pytest.mark.bench
@pytest.mark.parametrize("case, L", _params("forward+backward", (1024, 4096, 16384)))
def test_train_fwdbwd(benchmark, training_rows, case, L):
    _run(benchmark, training_rows, case, "forward+backward", L)


"""The session-end ratios of the training benchmarks (tests/bench/test_bench_training.py).

Each training benchmark appends its row (framework, implementation, direction, L, median ms, or the
reason it was skipped) to `training_rows`. When the session ends the rows get the sweep's ratios
(`linrnn.experiments.training_speed`: to the same framework's GEMM floor and to s5-pytorch at the same
L and direction, and t(16384) / t(4096) per implementation), and are written as a stored sweep (the
format `linrnn bench training-speed --out` writes, so the report can render it) to

    $LINRNN_BENCH_RATIOS                       if set, else
    FILE.ratios.json beside --benchmark-json FILE, else nowhere,

and printed as markdown tables in the terminal summary (`pytest_terminal_summary`).
"""

import os
from pathlib import Path

import pytest

from linrnn.experiments.training_speed import derive, markdown, scaling, stored_record, targets
from linrnn.impls.results import write

GROWTH = (4096, 16384)      # the longest pair these benchmarks time


def ratios_path(config) -> Path | None:
    if os.environ.get("LINRNN_BENCH_RATIOS"):
        return Path(os.environ["LINRNN_BENCH_RATIOS"])
    bench_json = config.getoption("benchmark_json", None)
    return None if bench_json is None else Path(bench_json).with_suffix(".ratios.json")


def result_of(rows: list[dict], sizes: dict, device: str) -> dict:
    """The benchmark rows as the sweep's result: rows with ratios, config, scaling and targets."""
    derive(rows, sizes["B"], sizes["H"])
    config = {"device": device, "lengths": sorted({r["L"] for r in rows}), **sizes, "memory": None,
              "budget_s": None, "source": "pytest --benchmark (tests/bench/test_bench_training.py)"}
    return {"rows": rows, "config": config, "scaling": scaling(rows, GROWTH),
            "targets": targets(rows, growth=GROWTH)}


@pytest.fixture(scope="session")
def training_rows(request):
    """{"rows": [...], "sizes": {...}, "device": str}: the benchmarks fill it; written when the session ends."""
    record = {"rows": [], "sizes": None, "device": None}
    yield record
    if record["rows"]:
        report(request.config, result_of(record["rows"], record["sizes"], record["device"]))


SUMMARY = pytest.StashKey[str]()


def report(config, result: dict) -> None:
    """Write the ratios JSON (if a path is set) and keep the tables for the terminal summary."""
    text = markdown(result)
    path = ratios_path(config)
    if path is not None:
        command = "pytest " + " ".join(config.invocation_params.args)
        write(path, stored_record(result, command))
        text += f"\nratios written to {path}\n"
    config.stash[SUMMARY] = text


def pytest_terminal_summary(terminalreporter, config):
    """The tables after pytest-benchmark's (output written during a test's teardown would be captured)."""
    if SUMMARY in config.stash:
        terminalreporter.section("training speed: ratios")
        terminalreporter.write(config.stash[SUMMARY])

"""The session-end ratios of the training benchmarks (tests/bench/test_bench_training.py).

Each training benchmark appends its row (framework, implementation, direction, L, median ms, or the
reason it was skipped) to `training_rows`. When the session ends the rows get the sweep's ratios
(`linrnn.experiments.training_speed`: to the same framework's GEMM floor and to s5-pytorch at the same
L and direction, and t(16384) / t(4096) per implementation), and are written as a stored sweep (the
format `linrnn bench training-speed --out` writes, so the report can render it) to

    $LINRNN_BENCH_RATIOS                       if set, else
    FILE.ratios.json beside --benchmark-json FILE, else nowhere,

and printed as markdown tables in the terminal summary (`pytest_terminal_summary`).

The peers' benchmarks (tests/bench/test_bench_peers.py) append their rows to `peer_rows`; when the session ends they
are written as the record `linrnn bench peers --out` writes, to $LINRNN_BENCH_PEERS if set, else FILE.peers.json beside
--benchmark-json FILE, and printed as `peer_speed.markdown`'s tables.
"""

import os
from pathlib import Path

import pytest

from linrnn.experiments.training_speed import derive, markdown, scaling, stored_record, targets
from linrnn.base.results import write

GROWTH = (4096, 16384)      # the longest pair these benchmarks time


def ratios_path(config, variable: str = "LINRNN_BENCH_RATIOS", suffix: str = ".ratios.json") -> Path | None:
    if os.environ.get(variable):
        return Path(os.environ[variable])
    bench_json = config.getoption("benchmark_json", None)
    if bench_json is None:
        return None
    path = bench_json if isinstance(bench_json, (str, os.PathLike)) else bench_json.name    # a path, or an open file
    return Path(path).with_suffix(suffix)


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
PEERS_SUMMARY = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def peer_rows(request):
    """The peers' benchmark rows (`peer_speed.group_rounds`); written and printed when the session ends."""
    rows = []
    yield rows
    if rows:
        from linrnn.experiments import peer_speed

        groups = [g for g in peer_speed.GROUPS if any(r["group"] == g["name"] for r in rows)]
        result = {"rows": rows, "config": peer_speed.config(groups, max(r["rounds"] for r in rows))}
        text = peer_speed.markdown(result)
        path = ratios_path(request.config, "LINRNN_BENCH_PEERS", ".peers.json")
        if path is not None:
            write(path, peer_speed.stored_record(result, "pytest " + " ".join(request.config.invocation_params.args)))
            text += f"\npeer rows written to {path}\n"
        request.config.stash[PEERS_SUMMARY] = text


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
    if PEERS_SUMMARY in config.stash:
        terminalreporter.section("beside the peers: ratios")
        terminalreporter.write(config.stash[PEERS_SUMMARY])

"""Project-wide pytest set-up: the `--benchmark` switch, worker processes, and JAX in float64 inside every test.

`pytest --benchmark` runs only the speed benchmarks (tests marked `bench`); the default run skips them.
pytest-benchmark's own options all start with `--benchmark-`, so a bare `--benchmark` would be an
ambiguous prefix for argparse unless it is an option of its own: it is registered here, exactly.

The default run spreads the test files over one worker process per core (pytest-xdist; `addopts` in
pyproject.toml). A worker's PyTorch then uses its share of the cores, so the workers do not oversubscribe
the machine. The benchmarks always run in one process: timings taken beside other tests would be noise.

Importing `linrnn.impls.jax` leaves JAX's 64-bit mode off (docs/precision.md). The tests and properties
build float64 parameters in module-level fixtures and helpers as well as in test bodies, so the whole
session runs inside one `linrnn.impls.jax.float64()` scope (thread-local; pytest runs tests in its main
thread). The float32 results do not depend on it: every array is created with an explicit dtype. The
user's default, float32 with the mode off, is checked by tests/impls/test_jax_float64.py, which leaves
the scope on purpose.

The default run compiles JAX with XLA's backend (LLVM) optimisation level 0 (`XLA_TEST_LEVEL`, added to
XLA_FLAGS before JAX starts, in the workers too, unless XLA_FLAGS already sets a level). The tests run
tiny shapes, so compiling is most of a JAX test's time: the report's quick crosscheck took 68 s at the
default level and 46 s at 0, the whole default run 556-574 s and 461-472 s (2026-12-02). The level
changes how fast the compiled code runs, not which operations it does; the tolerances are those of the
comparisons between independent implementations, far above any reordering. `pytest --benchmark` keeps
the default level (timings must be of the code users run), and `XLA_FLAGS=--xla_backend_optimization_level=3
pytest` runs the tests at XLA's default level.

The default run also shares one JAX persistent compilation cache among its processes: a fresh temporary
folder (`JAX_COMPILATION_CACHE_DIR`, every program cached however quick its compile), made by the
controller before the workers start, inherited by them and by the processes the tests start (the CLI,
`torchrun`, data-loader workers), and deleted when the run ends. A program that two test files, the two
workers or a test's subprocesses compile alike is then compiled once per run, never carried over from an
earlier run. JAX's key for a cached program is the program itself with the compile options, the backend
and JAX's version, so a hit is the same executable; the same tests run and compare the same numbers. On
the development machine the JAX-heavy files took 95-97 s with it and 110-121 s without (two runs each,
`-n 2`, 2026-12-02). A `JAX_COMPILATION_CACHE_DIR` already set is used as it is and kept.
`pytest --benchmark` does not set it.
"""

import importlib.util
import os
import shutil
import tempfile

import collections

import pytest

if "PYTEST_XDIST_WORKER_COUNT" in os.environ and importlib.util.find_spec("torch") is not None:
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


@pytest.fixture(autouse=True, scope="session")
def jax_float64():
    if importlib.util.find_spec("jax") is None:      # the reference and torch work without JAX
        yield
        return
    from linrnn.impls.jax import float64
    with float64():
        yield


def pytest_addoption(parser):
    parser.addoption("--benchmark", action="store_true", default=False,
                     help="run only the speed benchmarks (tests marked 'bench'), which the default run skips")


XLA_TEST_LEVEL = "--xla_backend_optimization_level=0"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if config.getoption("--benchmark"):
        if hasattr(config.option, "dist"):                  # before xdist starts its workers
            config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []
        return
    if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {XLA_TEST_LEVEL}".strip()
    if "PYTEST_XDIST_WORKER" not in os.environ and "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        # the controller (or the one process of `-n 0`), before any worker starts and before JAX is imported
        config._linrnn_jax_cache = tempfile.mkdtemp(prefix="linrnn-test-jax-cache-")
        os.environ.update({"JAX_COMPILATION_CACHE_DIR": config._linrnn_jax_cache,
                           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                           "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})


def pytest_unconfigure(config):
    cache = getattr(config, "_linrnn_jax_cache", None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # The order in which the workers take the test files (`--dist loadfile`; addopts turns off xdist's own
    # reordering): the quick report's file (one test, minutes) first, then the files marked `slow` (a minute
    # or more each), then the files with the most tests, so that the workers finish together instead of one
    # waiting on a long file taken last.
    per_file = collections.Counter(item.nodeid.split("::")[0] for item in items)
    items.sort(key=lambda item: ("quick_report" not in getattr(item, "fixturenames", ()), "slow" not in item.keywords,
                                 -per_file[item.nodeid.split("::")[0]], item.nodeid.split("::")[0]))
    if config.getoption("--benchmark"):
        selected = [item for item in items if "bench" in item.keywords]
        deselected = [item for item in items if "bench" not in item.keywords]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = selected
    else:
        skip = pytest.mark.skip(reason="speed benchmark: run with `pytest --benchmark`")
        for item in items:
            if "bench" in item.keywords:
                item.add_marker(skip)

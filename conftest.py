"""Project-wide pytest set-up: the `--benchmark` switch.

`pytest --benchmark` runs only the speed benchmarks (tests marked `bench`); the default run skips them.
pytest-benchmark's own options all start with `--benchmark-`, so a bare `--benchmark` would be an
ambiguous prefix for argparse unless it is an option of its own: it is registered here, exactly.
"""

import pytest


def pytest_addoption(parser):
    parser.addoption("--benchmark", action="store_true", default=False,
                     help="run only the speed benchmarks (tests marked 'bench'), which the default run skips")


def pytest_collection_modifyitems(config, items):
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

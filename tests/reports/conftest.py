"""One quick report for the whole session: every section computed once, shared by the report tests."""

import pytest

from linrnn.reports import cli as report_cli


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """The directory of a `linrnn report --quick` run (results JSON + report.html)."""
    out = tmp_path_factory.mktemp("quick-report")
    assert report_cli._report(type("Args", (), {"from_dirs": None, "out": str(out), "quick": True, "recompute": False})()) == 0
    return out

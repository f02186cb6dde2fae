"""One quick report for the whole session: every section computed once, shared by the report tests; report.md's
claims table as markdown-it-py parses it."""

import pytest

from linrnn.reports import cli as report_cli


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """The directory of a `linrnn report --quick` run (results JSON + report.html)."""
    out = tmp_path_factory.mktemp("quick-report")
    assert report_cli._report(type("Args", (), {"from_dirs": None, "out": str(out), "quick": True, "recompute": False})()) == 0
    return out


def table_rows(md: str) -> list[list[str]]:
    """The body rows of report.md's one table (the claims), as parsed by markdown-it-py (CommonMark + GFM tables)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    assert [t.type for t in tokens].count("table_open") == 1
    rows, row, body = [], None, False
    for t in tokens:
        if t.type == "tbody_open":
            body = True
        elif t.type == "tr_open" and body:
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content)
        elif t.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
    return rows


@pytest.fixture
def md_table():
    return table_rows

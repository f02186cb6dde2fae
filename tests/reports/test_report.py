"""`linrnn report`: results are versioned JSON, the page is rendered from them, bad files are skipped."""

import json
import re

import pytest

from linrnn.reports import cli as report_cli
from linrnn.base.results import SCHEMA_VERSION
from linrnn.reports.results import read_results, write_result
from linrnn.reports.render import render
from linrnn.reports.sections import SECTIONS, reference


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert report_cli.compute_all(str(out), quick=True, sections=(reference,)) == []
    return out


def test_reference_section_results_are_versioned_json(computed):
    record = json.loads((computed / "reference.json").read_text())
    assert (record["schema_version"], record["kind"], record["section"]) == (SCHEMA_VERSION, "section", "reference")
    assert {"code_version", "date", "machine", "device", "libraries", "command", "config"} <= set(record)
    assert record["config"]["quick"] is True and record["libraries"]["numpy"] != "not installed"
    data = record["data"]
    assert data["ok"] is True
    # the section's own cases: the three papers' models (experiments/reference.py, `settings`)
    assert {(r["mixer"], r["bidirectional"]) for r in data["summary"]} == \
        {(k, b) for k in ("rotrnn", "lru", "dlr") for b in (False, True)}
    assert all(r["rel"] <= r["rtol"] for r in data["rows"])


def test_page_renders_from_saved_results(computed, tmp_path):
    path = render(read_results([computed], ["reference"]), (reference,), tmp_path)
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>") and 'id="reference"' in html and 'id="environment"' in html
    assert "quick" in html and "all 12 cases agree" in html
    assert "<script" not in html and not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    # the ledger beside the page, as text and as JSON a program can read
    import json

    ledger_json = json.loads((tmp_path / "ledger.json").read_text())
    assert [c["claim"] for c in ledger_json][:2] == ["R1", "R2"]
    r4 = next(c for c in ledger_json if c["claim"] == "R4")
    assert r4["verdict"] == "verified" and r4["parts"][0]["test"] == "numeric"
    assert (tmp_path / "ledger.txt").read_text().startswith("R1 ")


def test_missing_and_corrupt_files_are_skipped_and_named(computed, tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    (good / "reference.json").write_text((computed / "reference.json").read_text())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "reference.json").write_text('{"schema_version": 1, "section": "refer')   # cut short
    (bad / "notes.json").write_text("{}")
    loaded = read_results([good, bad], ["reference"])
    assert len(loaded.results) == 1
    reasons = dict(loaded.skipped)
    assert reasons[str(bad / "reference.json")].startswith("unreadable JSON")
    assert "not a section of this report" in reasons[str(bad / "notes.json")]
    html = render(loaded, (reference,), tmp_path / "page").read_text()
    assert "Skipped results files" in html and "unreadable JSON" in html and str(bad / "reference.json") in html


def test_wrong_schema_and_missing_section_file(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps({"schema_version": 99, "section": "reference"}))
    loaded = read_results([tmp_path], ["reference", "theory"])
    reasons = dict(loaded.skipped)
    assert reasons[str(tmp_path / "reference.json")] == "schema_version: expected 2, found 99"
    assert reasons[str(tmp_path / "theory.json")] == "missing"
    html = render(loaded, (reference,), tmp_path).read_text()
    assert "No results for this section" in html


def test_text_from_results_is_escaped(computed, tmp_path):
    record = json.loads((computed / "reference.json").read_text())
    record["machine"]["label"] = "<img src=x onerror=alert(1)>"
    (tmp_path / "reference.json").write_text(json.dumps(record))
    html = render(read_results([tmp_path], ["reference"]), (reference,), tmp_path / "o").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_results_with_non_finite_numbers_stay_valid_json(tmp_path):
    path = write_result(tmp_path, "reference", {"x": float("nan"), "y": [float("inf")]}, {"quick": True})
    record = json.loads(path.read_text())
    assert record["data"] == {"x": "nan", "y": ["inf"]}


def test_from_rebuilds_the_page(capsys, computed, tmp_path):
    (tmp_path / "reference.json").write_text((computed / "reference.json").read_text())
    code = report_cli._report(type("Args", (), {"from_dirs": [str(tmp_path)], "out": None, "quick": False})())
    assert code == 0 and (tmp_path / "report.html").is_file() and (tmp_path / "report.md").is_file()
    assert "rendered" in capsys.readouterr().out
    # the ledger.json the report wrote beside the results is its own: a second --from does not skip it as a section
    code = report_cli._report(type("Args", (), {"from_dirs": [str(tmp_path)], "out": str(tmp_path / "again"),
                                                "quick": False, "against": str(computed)})())
    assert code == 0 and "Nothing moved" in (tmp_path / "again" / "report.md").read_text()
    assert "ledger.json" not in capsys.readouterr().err


def test_every_section_has_a_template_and_a_compute():
    from linrnn.reports.render import environment
    env = environment()
    for section in SECTIONS:
        assert callable(section.compute) and section.NAME and section.TITLE
        env.get_template(section.TEMPLATE)


class FakeTasks:
    """A training section whose compute must not run unless asked to."""

    NAME, TITLE, TEMPLATE = "tasks", "Tasks", "tasks.html.j2"
    calls = 0

    @classmethod
    def compute(cls, quick, progress):
        cls.calls += 1
        return {"rows": []}, {"fresh": True}


def test_the_default_report_copies_a_stored_training_section_and_recompute_trains_it(tmp_path, monkeypatch):
    stored = tmp_path / "stored"
    write_result(stored, "tasks", {"rows": ["stored"]}, {"quick": False})
    monkeypatch.setattr(report_cli, "STORED_RESULTS", stored)
    FakeTasks.calls = 0
    assert report_cli.compute_all(str(tmp_path / "a"), quick=False, sections=(FakeTasks,)) == []
    assert FakeTasks.calls == 0
    assert (tmp_path / "a" / "tasks.json").read_bytes() == (stored / "tasks.json").read_bytes()
    assert report_cli.compute_all(str(tmp_path / "b"), quick=False, sections=(FakeTasks,), recompute=True) == []
    assert report_cli.compute_all(str(tmp_path / "c"), quick=True, sections=(FakeTasks,)) == []
    assert FakeTasks.calls == 2
    assert json.loads((tmp_path / "b" / "tasks.json").read_text())["data"] == {"rows": []}


@pytest.mark.parametrize("content", ["{", "quick"])
def test_a_corrupt_or_quick_stored_section_is_computed_instead(tmp_path, monkeypatch, capsys, content):
    stored = tmp_path / "stored"
    if content == "quick":
        write_result(stored, "tasks", {"rows": []}, {"quick": True})
    else:
        stored.mkdir()
        (stored / "tasks.json").write_text(content)
    monkeypatch.setattr(report_cli, "STORED_RESULTS", stored)
    FakeTasks.calls = 0
    assert report_cli.compute_all(str(tmp_path / "out"), quick=False, sections=(FakeTasks,)) == []
    assert FakeTasks.calls == 1 and "computing" in capsys.readouterr().err

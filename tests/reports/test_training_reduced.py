"""The "Training at reduced scale" section, from stored files written here by hand with the experiment's keys
(tests/experiments/test_reduced_training.py checks that a file `main` writes passes the same check).

- the table has each run's row, its scale sentence verbatim, and the verdict "above baseline" computed from
  the row's two numbers when the page renders: a file whose own flag is wrong shows the discrepancy;
- one figure per task (both frameworks in it), the loss curve thinned to window means, the baseline a line;
- a corrupt or malformed file is skipped with its reason and the rest renders; no file: the command to run.
"""

from __future__ import annotations

import json
import math
import re

from linrnn.base.results import SCHEMA_VERSION as SCHEMA
from linrnn.base.results import Envelope, ReducedTrainingRecord, to_dict
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import training_reduced as section

MACHINE = {"label": "testbox", "platform": "Linux-test", "processor": "x86_64", "cpus": 2, "python": "3.11.7"}


def run_row(name: str, task: str, backend: str, test: float, base: float, above: bool, steps: int = 700,
            metric: str = "accuracy") -> dict:
    """A run record with every key `run_one` writes; the loss falls as 1 / sqrt(step)."""
    evaluations = [{"step": s, "epoch": s / steps, "val": {metric: 0.1 + 0.5 * s / steps, "loss": 1.0},
                    "test": {metric: test if s == steps else 0.1, "loss": 1.0}} for s in (steps // 2, steps)]
    return {"name": name, "task": task, "model": "lru", "backend": backend,
            "scale": f"{name}: 5,000 / 500 / 500 generated examples <at> the real lengths; 2 epochs",
            "data": {"generator": task, "args": ["--n-train", "5000"]}, "config": {"task": task},
            "steps": steps, "seconds_per_step": 0.25, "wall_seconds": 175.0,
            "train_loss": [1 / math.sqrt(s) for s in range(1, steps + 1)], "evaluations": evaluations,
            "best": evaluations[-1], "metric": metric, "test_at_best_val": test,
            "baseline": {"rule": "always class 3 (the most frequent in train)", "metric": metric, "value": base},
            "above_baseline": above, "machine": MACHINE, "code_version": "0.2.0+gtest"}


def stored_record(runs: list[dict]) -> dict:
    """The stored dict of a record, as `linrnn.base.results` writes it."""
    envelope = Envelope(date="2026-11-30T12:00:00+00:00", machine=MACHINE,
                        libraries={"numpy": "2.4.6", "torch": "2.13.0+cpu"},
                        command="python -m linrnn.experiments.reduced_training --data D --out O",
                        code_version="0.2.0+gtest")
    return to_dict(ReducedTrainingRecord(runs=runs, envelope=envelope))


def build(tmp_path, monkeypatch, files: dict[str, str]) -> tuple[dict, str]:
    """Stored files -> (the section's data, the section's HTML on the rendered page)."""
    stored = tmp_path / "stored"
    stored.mkdir()
    for name, text in files.items():
        (stored / name).write_text(text)
    monkeypatch.setattr(section, "STORED_DIR", stored)
    data, config = section.compute(True, lambda *args: None)
    write_result(tmp_path / "out", section.NAME, data, {**config, "quick": True})
    page = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    start = page.index(f'<section id="{section.NAME}"')
    return data, page[start:page.index("</section>", start)]


def verdicts(html: str) -> list[str]:
    """The text of each row's "above baseline" cell, tags removed."""
    cells = re.findall(r'<td class="training-reduced-verdict">(.*?)</td>', html, flags=re.S)
    return [" ".join(re.sub(r"<[^>]+>", "", c).split()) for c in cells]


def test_the_section_renders_the_stored_runs(tmp_path, monkeypatch):
    runs = [run_row("listops-lru-torch", "listops", "torch", 0.375, 0.18, True),
            run_row("listops-lru-jax", "listops", "jax", 0.125, 0.18, False),
            run_row("segmentation32-dlr-torch", "pathfinder-segmentation", "torch", 0.41, 0.29, True, steps=90,
                    metric="macro_f1")]
    data, html = build(tmp_path, monkeypatch, {"training_reduced_cpu.json": json.dumps(stored_record(runs))})

    assert data["stored_skipped"] == [] and len(data["stored"][0]["runs"]) == 3
    for r in runs:
        row = html[html.index(f"<tr><td>{r['name']}</td>"):]
        row = row[:row.index("</tr>")]
        assert r["scale"].replace("<", "&lt;").replace(">", "&gt;") in row            # verbatim, escaped
        assert f">{r['test_at_best_val']:.4f}<" in row
        assert f"{r['baseline']['rule']}: {r['baseline']['value']:.4f}" in row
        assert f">{r['metric']}<" in row and f">{r['steps']}<" in row and "training_reduced_cpu.json" in row
        assert "2026-11-30T12:00:00+00:00" in row and "testbox" in row
    assert verdicts(html) == ["yes", "no", "yes"]
    assert "not the papers' numbers" in html and "docs/training.md" in html
    assert "python -m linrnn.experiments.reduced_training --data D --out O" in html
    assert html.count("<svg") == 2 and "<script" not in html

    listops = data["plots"]["task_listops"]
    loss, val = listops["panels"]
    assert [s["label"] for s in loss["series"]] == ["listops-lru-torch", "listops-lru-jax"]
    curve = loss["series"][0]
    window = math.ceil(700 / section.LOSS_POINTS)
    assert len(curve["x"]) <= section.LOSS_POINTS and curve["x"][0] == window and curve["x"][-1] == 700
    assert math.isclose(curve["y"][0], sum(runs[0]["train_loss"][:window]) / window, rel_tol=1e-12)
    assert val["series"][1]["x"] == [350, 700] and val["series"][1]["y"] == [e["val"]["accuracy"]
                                                                          for e in runs[1]["evaluations"]]
    assert [h["y"] for h in val["hlines"]] == [0.18]          # one baseline: both frameworks share the data
    segmentation = data["plots"]["task_pathfinder-segmentation"]["panels"]
    assert segmentation[1]["ylabel"] == "validation macro_f1" and len(segmentation[0]["series"][0]["x"]) == 90


def test_the_verdict_comes_from_the_numbers_not_the_files_flag(tmp_path, monkeypatch):
    runs = [run_row("says-above", "listops", "torch", 0.10, 0.18, True),      # the flag is wrong
            run_row("says-below", "listops", "jax", 0.30, 0.18, False),       # the flag is wrong
            run_row("equal", "pathfinder", "torch", 0.5, 0.5, False)]         # equal is not above
    data, html = build(tmp_path, monkeypatch, {"training_reduced_cpu.json": json.dumps(stored_record(runs))})
    assert verdicts(html) == ["no (the file says yes, which its own numbers contradict)",
                              "yes (the file says no, which its own numbers contradict)", "no"]

    saved = tmp_path / "out" / f"{section.NAME}.json"                         # edit the saved section result:
    record = json.loads(saved.read_text())                                    # the page re-decides when rendered
    record["data"]["stored"][0]["runs"][2]["test_at_best_val"] = 0.75
    saved.write_text(json.dumps(record))
    page = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "again").read_text()
    assert verdicts(page)[2] == "yes (the file says no, which its own numbers contradict)"


def test_a_bad_file_is_skipped_with_its_reason(tmp_path, monkeypatch):
    good = stored_record([run_row("listops-lru-torch", "listops", "torch", 0.375, 0.18, True)])
    missing = stored_record([{k: v for k, v in good["runs"][0].items() if k != "baseline"}])
    bad_baseline = stored_record([dict(good["runs"][0], baseline={"rule": "always 3", "value": "high"})])
    data, html = build(tmp_path, monkeypatch, {
        "training_reduced_a.json": json.dumps(good)[:200],                    # cut short
        "training_reduced_b.json": json.dumps(dict(good, schema_version=SCHEMA + 1)),
        "training_reduced_c.json": json.dumps(missing),
        "training_reduced_d.json": json.dumps(bad_baseline),
        "training_reduced_e.json": json.dumps(dict(good, kind="training_speed")),
        "training_reduced_f.json": json.dumps(dict(good, machine={"cpus": 2})),
        "training_reduced_ok.json": json.dumps(good)})
    reasons = dict(data["stored_skipped"])
    assert reasons["training_reduced_a.json"].startswith("unreadable JSON")
    assert reasons["training_reduced_b.json"] == f"schema_version: expected {SCHEMA}, found {SCHEMA + 1}"
    assert reasons["training_reduced_c.json"].startswith("runs[0]: expected an object with name, task")
    assert reasons["training_reduced_d.json"] == \
        "runs[0].baseline: expected an object with rule (text) and value (a number)"
    assert reasons["training_reduced_e.json"] == "kind: expected 'reduced_training', found 'training_speed'"
    assert reasons["training_reduced_f.json"] == "machine: expected an object with label, platform and cpus"
    assert [s["file"] for s in data["stored"]] == ["training_reduced_ok.json"]
    for file, reason in reasons.items():
        assert f"Stored file <code>{file}</code> skipped: " in html
    assert verdicts(html) == ["yes"]


def test_without_a_stored_file_the_section_gives_the_command(tmp_path, monkeypatch):
    data, html = build(tmp_path, monkeypatch, {})
    assert data["stored"] == [] and data["plots"] == {} and 'id="training-reduced-no-stored"' in html
    assert section.COMMAND in html

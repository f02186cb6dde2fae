"""report.md, the first screen's digest and `linrnn report --from A --against B`, from crafted results (milliseconds).

A crafted results folder holds a derivation (R2), a cross-check (two mixer x mode rows, float32), the
conformance of a peer and of this project's layer, and a stored training-speed sweep with its interleaved
rounds. report.md must parse as GitHub-flavoured Markdown (markdown-it-py, tables on) with the 18 claims and
their verdicts, the cross-check's worst cell, the speed headline and a line per peer. A second folder
plants a verdict that moved, a cross-check cell that got worse and a ratio outside its rounds' range:
`--against` must mark each, at the top of the page and in report.md. (The Markdown parser is the fixture
`md_table`, tests/reports/conftest.py, which the browser test uses on the quick report's report.md.)
"""

from __future__ import annotations

import json
import re

import pytest

from linrnn.cli import main
from linrnn.reports import cli as report_cli
from linrnn.reports import digest, ledger, plots
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import crosscheck as crosscheck_section

CLAIM = {"claim": "R2", "title": "A^k by blocks", "verdict": "proved", "partly": False, "condition": "",
         "findings": [{"statement": "A^k = P Theta^k P^T", "verdict": "proved", "condition": "", "evidence": "sympy"}]}


def summary_row(mixer: str, mode: str, pair: str, quantity: str, ratio: float) -> dict:
    return {"mixer": mixer, "mode": mode, "dtype": "float32", "pair": pair, "quantity": quantity, "comparisons": 2,
            "max_rel": ratio * 1e-5, "worst_ratio": ratio, "worst": f"{quantity} at B1 L4", "ok": ratio < 1}


def crosscheck(ratios: dict) -> dict:
    """A cross-check record: one summary row (and one entry) per (mixer, mode, pair, quantity) -> ratio."""
    summary = [summary_row(*key, ratio) for key, ratio in ratios.items()]
    entries = [{"mixer": r["mixer"], "mode": r["mode"], "ok": r["ok"]} for r in summary]
    return {"entries": entries, "summary": summary, "ok": all(e["ok"] for e in entries),
            "selection": {"shapes": [{"label": "B1 L4"}]}}


RATIOS = {("rotrnn", "scan", "reference-torch", "output"): 0.003, ("rotrnn", "scan", "torch-jax", "gradients"): 0.02,
          ("lru", "step", "reference-jax", "output"): 0.3, ("lru", "step", "torch-jax", "gradients"): 0.01}


def sweep(ratio: float) -> dict:
    rounds = {"implementation": "rotrnn scan", "direction": "forward+backward", "L": 4096, "rounds": 15, "ms": 100.0,
              "over_s5_pytorch": ratio, "over_s5_pytorch_range": [ratio * 0.8, ratio * 1.2],
              "over_gemm_floor": 1.6, "over_gemm_floor_range": [1.2, 1.8]}
    peer = {"framework": "torch", "implementation": "lru-pytorch", "at_L": 4096, "fwd_bwd_over_s5": 32.0}
    return {"stored": [{"file": "training_speed_m.json", "machine": {"label": "m"},
                        "sweep": {"interleaved": [rounds], "targets": [peer], "growth_rounds": []}}],
            "live": {"rows": []}}


CONFORMANCE = {"runs": [
    {"target": "s5-pytorch", "model": "s5", "group": "peer", "absent": None,
     "result": {"conforms": False, "checks": [{"status": "fail"}, {"status": "pass"}],
                "diagnoses": [{"key": "factor", "words": "the output is missing the factor 2 | of <b>symmetry</b>"}]}},
    {"target": "lru-pytorch", "model": "lru", "group": "peer",
     "absent": "lru-pytorch: lru-pytorch is not installed (pip install 'linrnn[peers]'); docs/conform.md: how",
     "result": None},
    {"target": "linrnn-torch", "model": "lru", "group": "own", "absent": None,
     "result": {"conforms": True, "checks": [{"status": "pass"}], "diagnoses": []}}]}


def results(directory, *, r2: str = "proved", ratios: dict = RATIOS, speed: float = 0.22):
    write_result(directory, "theory", {"claims": [dict(CLAIM, verdict=r2)]}, {"quick": True})
    write_result(directory, "crosscheck", crosscheck(ratios), {"quick": True})
    write_result(directory, "conformance", CONFORMANCE, {"quick": True})
    write_result(directory, "training_speed", sweep(speed), {"quick": True})
    return directory


def report(tmp_path, from_dir, against=None):
    """(report.html, report.md) rendered from `from_dir`, the cross-check section drawn, marked against `against`."""
    out = tmp_path / "out"
    names = ["theory", "crosscheck", "conformance", "training_speed"]
    before = None if against is None else report_cli.read_against(str(against), names)
    render(read_results([from_dir], names), (crosscheck_section,), out, against=before,
           against_label="" if against is None else str(against))
    return (out / "report.html").read_text(), (out / "report.md").read_text()


def test_every_claim_has_its_few_words():
    assert set(digest.SHORT) == {c.id for c in ledger.CLAIMS}
    assert all(len(words) <= 40 for words in digest.SHORT.values())


def test_report_md_is_github_markdown_with_the_claims_crosscheck_speed_and_peers(tmp_path, md_table):
    html, md = report(tmp_path, results(tmp_path / "a"))
    assert len(md.splitlines()) <= 80 and "<b>" not in md and "<script" not in md
    verdicts = {c["claim"]: c["verdict"] for c in json.loads((tmp_path / "out" / "ledger.json").read_text())}
    rows = md_table(md)
    assert [r[0] for r in rows] == list(verdicts) and all(len(r) == 5 for r in rows)
    assert all(r[2] == f"**{verdicts[r[0]]}**" for r in rows)          # the verdict, bold
    settle = {c["claim"]: c["settle"] for c in json.loads((tmp_path / "out" / "ledger.json").read_text())}
    assert all(r[4] == "-" or (settle[r[0]] or "").startswith(r[4].removesuffix(" ...").replace("\\", ""))
               for r in rows)                                             # what would settle it, cut to a cell
    assert rows[1][1] == digest.SHORT["R2"] and verdicts["R2"] == "proved"
    assert "all 4 comparisons within tolerance; worst cell lru step, float32 ref\u2013jax: 0.30 of its tolerance" in md
    assert "rotrnn scan 0.22 (0.18\u20130.26)" in md and "lru-pytorch 32.0 (one sweep)" in md
    peers = [line for line in md.splitlines() if line.startswith("- ")]
    assert peers[0].startswith("- s5-pytorch as s5: **deviates**: the output is missing the factor 2 \\| of &lt;b&gt;")
    # a target not run here: why, without its name in front and cut at the first semicolon, not at a colon
    assert peers[1] == "- lru-pytorch as lru: **not run here**: lru-pytorch is not installed (pip install 'linrnn\\[peers\\]')"
    assert peers[2] == "- this project's layers: 1 of 1 conform"
    # the page's first screen says the same
    assert html.count('class="verdict') >= 18 and 'id="crosscheck-heatmap"' in html
    assert re.search(r'<g class="cell"><title>lru step, float32, reference-jax output: worst error / tolerance 0\.30',
                     html)


def test_against_marks_a_moved_verdict_a_worse_cell_and_a_ratio_outside_its_rounds(tmp_path):
    before = results(tmp_path / "b")
    worse = dict(RATIOS)
    worse["rotrnn", "scan", "torch-jax", "gradients"] = 0.5               # 25 times the error: worse
    worse["lru", "step", "reference-jax", "output"] = 2.0                 # now fails
    worse["lru", "step", "torch-jax", "gradients"] = 0.015                # within the noise: not marked
    html, md = report(tmp_path, results(tmp_path / "a", r2="fails", ratios=worse, speed=0.4), against=before)
    changes = html[html.index('<section id="changes"'):html.index('<section id="glance"')]
    items = re.findall(r'<li class="change change-(\w+)">(.*?)</li>', changes, flags=re.S)
    assert [kind for kind, _ in items] == ["verdict", "crosscheck", "crosscheck", "speed"], items
    assert "R2 (" in items[0][1] and "proved \u2192 contradicted" in items[0][1] and "worse" in items[0][1]
    assert "rotrnn scan, float32 gradients: error / tolerance 0.02 \u2192 0.50" in items[1][1]
    assert "lru step, float32 ref\u2013jax: error / tolerance 0.30 \u2192 2.00 (now fails)" in items[2][1]
    assert "0.22 (rounds 0.176\u20130.264) \u2192 0.4" in items[3][1]
    # marked where they are: the claim's row and block, the heatmap's cells
    assert re.search(r'<tr class="changed"><td class="cid"><a href="#claim-R2">', html)
    assert '<span class="was">was proved</span>' in html
    assert html.count('class="cell marked"') == 1 and html.count('class="cell fails marked"') == 1
    assert md.index("## Changes against") < md.index("## Claims")
    assert "- **worse** R2 (" in md and "- **worse** cross-check lru step, float32 ref\u2013jax" in md
    # the same folders the other way round: the verdict moved for the better, no cell got worse
    html, md = report(tmp_path, tmp_path / "b", against=tmp_path / "a")
    assert "contradicted \u2192 proved" in md and "cross-check" not in md.split("## Claims")[0]


def test_against_with_nothing_changed_says_so(tmp_path):
    _, md = report(tmp_path, results(tmp_path / "a"), against=results(tmp_path / "b"))
    assert "Nothing moved" in md


@pytest.mark.parametrize("case", ["missing", "empty", "no --from"])
def test_against_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    good = results(tmp_path / "a")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.json").write_text("{}")
    argv = {"missing": ["report", "--from", str(good), "--against", str(tmp_path / "nowhere")],
            "empty": ["report", "--from", str(good), "--against", str(tmp_path / "empty")],
            "no --from": ["report", "--against", str(good)]}[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("linrnn report: error: --against")


def test_heatmap_cells_colour_on_a_log_scale_and_fail_at_the_threshold():
    fig = plots.heatmap("t", ["a"], ["x", "y", "z", "w"], [[1e-6, 0.1, 1.0, None]], threshold=1.0)
    svg = plots.draw(fig)
    cells = re.findall(r'<g class="([^"]+)"><title>[^<]*</title><rect [^>]*fill="(#[0-9a-f]{6})"', svg)
    assert [c for c, _ in cells] == ["cell", "cell", "cell fails"]               # None: no cell
    assert cells[0][1] == plots.heat_colour(1e-4, 1e-4, 1.0) and cells[2][1] == plots.HEAT_FAIL.lower()
    assert plots.heat_value(3.2e-7) == "3e-7" and plots.heat_value(0.042) == "0.04" and plots.heat_value(0.0) == "0"
    with pytest.raises(plots.PlotError, match="heatmap.values\\[0\\]: expected 4 values"):
        plots.draw(dict(fig, values=[[1.0]]))
    merged = plots.merge([("m1", fig), ("m2", dict(fig, values=[[1e-3, 0.01, 0.5, 2.0]]))])
    assert merged["values"] == [[1e-3, 0.1, 1.0, 2.0]] and merged["notes"][0][3] == "m2"

"""Text read from results files never becomes markup: not in the page, not inside the SVG the renderer draws.

A crafted results directory (no computation: milliseconds) puts `<script>alert(1)</script>` in a machine
label, in a derivation's statement (which the ledger quotes as evidence), in a training run's error
message, in a figure's series label and in the cross-check's mixer name and worst case (the first
screen's heatmap, drawn by hand, and report.md); and it stores a MathML step carrying a script. The page
must show each as text (`&lt;script&gt;`), contain no `<script` anywhere, and draw the figures with the
labels escaped inside their SVG; report.md must carry no markup either.
"""

from __future__ import annotations

import json
import re

import pytest

from linrnn.reports import plots
from linrnn.reports.render import mathml, render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import tasks

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"

TASKS_CONFIG = {"length": 8, "steps": 3, "seeds": [0], "backend": "torch", "dtype": "float32", "quick": True,
                "warmup_fraction": 0.1, "model_defaults": {"dlr": {"d_state": 64}},
                "common": {"eval_batches": 1, "batch_size": 2, "d_model": 4, "lr": 1e-3, "schedule": "cosine",
                           "weight_decay": 0.0, "grad_clip": 1.0, "prenorm": True, "norm": "layer"}}


def crafted(directory) -> None:
    rows = [{"task": "shift", "model": "dlr", "seed": 0, "status": "ok", "r2": 0.999, "mse": 1e-3,
             "seconds_per_step": 0.01, "error": None, "evaluations": [{"step": 3, "r2": 0.999}],
             "train_loss": {"step": [3], "loss": [0.1]}},
            {"task": "context_shift", "model": "dlr", "seed": 0, "status": "diverged", "r2": None, "mse": None,
             "seconds_per_step": 0.01, "error": SCRIPT, "evaluations": [], "train_loss": {"step": [], "loss": []}}]
    figure = plots.figure(SCRIPT, [plots.panel(SCRIPT, "step", "R^2", [plots.series(SCRIPT, [1, 2], [0.5, 0.9], "C0")])])
    write_result(directory, "tasks", {"rows": rows, "plots": {"r2": figure}}, TASKS_CONFIG)
    claim = {"claim": "R2", "title": SCRIPT, "verdict": "proved", "partly": False, "condition": "",
             "findings": [{"statement": SCRIPT, "verdict": "proved", "condition": "", "evidence": "sympy"}]}
    write_result(directory, "theory", {"claims": [claim]}, {"quick": True})
    row = {"mixer": SCRIPT, "mode": "scan", "dtype": "float32", "pair": "torch-jax", "quantity": "gradients",
           "comparisons": 1, "max_rel": 1e-6, "worst_ratio": 0.5, "worst": SCRIPT, "ok": True}
    write_result(directory, "crosscheck", {"entries": [{"ok": True}], "summary": [row], "ok": True,
                                           "selection": {"shapes": [{"label": SCRIPT}]}}, {"quick": True})
    for name in ("tasks", "theory"):                         # the machine label, as another machine wrote it
        path = directory / f"{name}.json"
        record = json.loads(path.read_text())
        record["machine"]["label"] = SCRIPT
        path.write_text(json.dumps(record))


def test_text_from_results_files_renders_escaped_in_the_page_and_in_the_svg(tmp_path):
    crafted(tmp_path)
    html = render(read_results([tmp_path], ["tasks", "theory", "crosscheck"]), (tasks,), tmp_path / "page").read_text()
    assert "<script" not in html.lower()
    ledger_block = re.search(r'<div class="claim-body" id="claim-R2">.*?</details>', html, flags=re.S).group(0)
    assert ESCAPED in ledger_block                                    # evidence quoted by the ledger
    assert f"Machine <strong>{ESCAPED}</strong>" in html              # the machine label
    assert f'<td colspan="3">{ESCAPED}</td>' in html                  # the diverged run's error message
    heatmap, svg = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert ESCAPED in svg and f"<title>{ESCAPED}</title>" in svg      # the series/panel label, the title
    assert f">{ESCAPED}</text>" in heatmap                            # the mixer, a row group's label
    assert f"<title>{ESCAPED} scan, float32, torch-jax gradients: worst error / tolerance 0.50 ({ESCAPED})" in heatmap
    md = (tmp_path / "page" / "report.md").read_text()
    assert "<script" not in md.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in md


def test_stored_mathml_passes_only_the_allow_list():
    good = '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mi>x</mi><mo>&lt;</mo><mn>1</mn></math>'
    assert str(mathml(good)) == good
    for bad in ('<math xmlns="http://www.w3.org/1998/Math/MathML"><mi onclick="alert(1)">x</mi></math>',
                '<math xmlns="http://www.w3.org/1998/Math/MathML"><script>alert(1)</script></math>',
                '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi href="javascript:alert(1)">x</mi></math>',
                "<svg><script>alert(1)</script></svg>", SCRIPT, "<math"):
        out = str(mathml(bad))
        assert out.startswith('<span class="bad">formula omitted: ') and "<script" not in out, bad


def test_a_malformed_figure_is_named_not_drawn():
    with pytest.raises(plots.PlotError, match="x has 1 points, y has 2"):
        plots.draw({"panels": [{"series": [{"x": [1], "y": [1, 2]}]}]})

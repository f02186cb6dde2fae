"""The synthetic-task section (D4) and the hidden-state-norm section (R8, R9, R1) at tiny sizes.

Each section's size constants are monkeypatched to a few steps, so `compute` runs in seconds; the data
must be plain JSON, carry the claims the ledger reads, and render through `reports.render.render`
with its plots.
"""

from __future__ import annotations

import json
import re

import pytest

from linrnn.experiments import normstudy
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import norms, tasks

VERDICTS = {"reproduced", "contradicted", "inconclusive", "verified"}


def computed(section, tmp_path):
    calls = []
    data, config = section.compute(True, lambda done, total, what: calls.append((done, total, what)))
    assert calls and calls[-1][0] == calls[-1][1]
    write_result(tmp_path, section.NAME, data, {**config, "quick": True})
    record = json.loads((tmp_path / f"{section.NAME}.json").read_text())    # plain JSON, read back
    html = render(read_results([tmp_path], [section.NAME]), (section,), tmp_path / "page").read_text()
    return record["data"], html


def svgs(html: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", html, flags=re.S)


def test_tasks_section_runs_the_grid_and_settles_d4(tmp_path, monkeypatch):
    monkeypatch.setattr(tasks, "QUICK_SIZES", {"length": 8, "steps": 3, "seeds": [0]})
    data, html = computed(tasks, tmp_path)
    assert {(r["task"], r["model"]) for r in data["rows"]} == {(t, m) for t in tasks.TASKS for m in tasks.MODELS}
    assert all(r["status"] == "ok" and "run_dir" not in r for r in data["rows"])
    d4 = data["claims"]["D4"]
    assert d4["verdict"] in VERDICTS and d4["evidence"].startswith("DLR: Shift R^2 = ") and "L = 8" in d4["scale"]
    assert d4["thresholds"] == {"solved_r2": tasks.SOLVED_R2, "fails_r2": tasks.FAILS_R2}
    assert set(data["solved"]) == set(tasks.MODELS)
    assert 'id="tasks"' in html and 'id="tasks-D4-verdict"' in html and "quick run" in html
    plots = svgs(html)
    assert len(plots) == 2 and all("<title>" in s for s in plots)


def rows(r2: dict) -> list[dict]:
    return [{"task": t, "model": "dlr", "seed": 0, "r2": v} for t, v in r2.items()]


@pytest.mark.parametrize("shift, context, verdict", [
    (0.995, 0.05, "reproduced"),
    (0.995, 0.995, "contradicted"),
    (0.9, 0.05, "inconclusive"),       # Shift not solved within the budget
    (0.995, 0.7, "inconclusive"),      # ContextShift neither solved nor failed
    (None, 0.05, "inconclusive"),      # Shift diverged
])
def test_d4_thresholds(shift, context, verdict):
    solved = tasks.outcome(rows({"shift": shift, "context_shift": context}))
    assert tasks.d4(solved, {"length": 64, "steps": 10, "seeds": [0]})["verdict"] == verdict


def test_norms_section_measures_norms_drift_and_orthogonality(tmp_path, monkeypatch):
    monkeypatch.setattr(norms, "QUICK_SETUP", {**norms.QUICK_SETUP, "length": 8, "steps": 4, "measure_every": 2,
                                               "seeds": [0, 1], "n_layers": 2})
    data, html = computed(norms, tmp_path)
    assert len(data["runs"]) == 4
    for run in data["runs"]:
        assert run["measured_steps"] == [0, 2, 4]
        assert len(run["norm"]) == 2 and all(len(c) == 3 and min(c) > 0 for c in run["norm"])
        assert all(len(c) == 8 for c in run["norm_t"])                 # ||x_t|| for t = 1..L at the end
    claims = data["claims"]
    assert claims["R8"]["verdict"] in VERDICTS and len(claims["R8"]["ratios"]) == 2
    assert claims["R8"]["parts"]["across_layers_and_seeds"] in VERDICTS
    # R1: every one of the 5 parameter states of each RotRNN run checked, all within the float64 tolerance
    assert claims["R1"]["verdict"] == "verified" and claims["R1"]["states_checked"] == 2 * 5
    assert 0 <= claims["R1"]["max_error"] < claims["R1"]["min_tolerance"]
    # R9: four AdamW steps already move gamma_log off log sqrt(1 - |lambda|^2), far beyond float32 rounding
    assert claims["R9"]["verdict"] == "verified" and claims["R9"]["final_max"] > 1e3 * claims["R9"]["rounding_floor"]
    assert [r["model"] for r in data["table"]] == ["rotrnn", "rotrnn", "lru", "lru"]
    assert 'id="norms"' in html and all(f'id="norms-{c}"' in html for c in ("R8", "R9", "R1"))
    plots = svgs(html)
    assert len(plots) == 3 and all("<title>" in s for s in plots)


def test_drift_is_zero_at_initialisation_up_to_rounding():
    import torch

    from linrnn.impls.init import init
    from linrnn.impls.torch import Model

    cfg = normstudy.train_config("lru", 0, {**norms.QUICK_SETUP, "length": 8})
    model = Model.from_bundle(init(cfg.model_config(), 0), torch.float64)
    from linrnn.impls.tolerance import assert_close

    for dmax, _, gamma_log_max in normstudy.gamma_drift(model):   # a rounding of gamma_log's size
        assert_close("gamma_log drift at initialisation", 0.0, dmax, "identity", "float64", scale=gamma_log_max)

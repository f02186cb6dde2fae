"""`linrnn experiment`: the runs of each experiment, its record, its report section and the ledger's verdicts.

- every registered experiment builds valid configs (full and quick) with unique run names;
- a tiny experiment (a synthetic and a data task, a few steps) writes a record the report section accepts;
  a second run reuses the finished runs; an interrupted one keeps what finished and says it is incomplete;
- the ledger settles D8, D5, R7, D6, R6, D1 from planted records: each verdict the numbers call for, never
  from a quick or an absent record (then: not run here, with the command).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from linrnn.cli import main as cli_main
from linrnn.experiments import claims
from linrnn.experiments.reduced_training import DataSet
from linrnn.reports import ledger
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import experiments as section
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.grid import grid_config

TINY_LISTOPS = DataSet("listops-tiny", "listops", dict(n_train=24, n_val=8, n_test=8, workers=1))


def tiny_jobs(quick: bool) -> list[claims.Job]:
    synthetic = [claims.Job({"task": "cumsum", "model": "dlr", "norm": norm, "seed": 0},
                            grid_config("cumsum", "dlr", "torch", 8, 3, 0, n_layers=1, d_model=8,
                                        prenorm=norm == "pre", d_state=8, eval_batches=1).to_dict())
                 for norm in ("pre", "post")]
    data = claims.Job({"task": "listops", "model": "lru", "norm": "pre", "seed": 0},
                      dict(task="listops", model="lru", d_model=8, d_state=4, n_layers=1, batch_size=8, steps=3,
                           eval_every=None, eval_batches=None, checkpoint_every=None, backend="torch"), TINY_LISTOPS)
    return synthetic + [data]


TINY = claims.Experiment("norm-position", ("D8",), "a tiny experiment", "R^2", tiny_jobs,
                         lambda quick: "toy", factor="norm")


@pytest.mark.parametrize("quick", [False, True])
def test_every_experiment_builds_valid_configs_with_unique_names(quick):
    for experiment in claims.EXPERIMENTS.values():
        jobs = experiment.jobs(quick)
        assert jobs and len({j.name for j in jobs}) == len(jobs)
        for job in jobs:
            config = TrainConfig(**job.config)
            assert config.is_data_task == (job.data is not None), job.name
            assert {"task", "model"} <= set(job.labels) and job.labels["task"] == config.task
            assert job.labels["model"] == config.model
        assert all(c in {c.id for c in ledger.CLAIMS} for c in experiment.claims)
        assert experiment.scale(quick)


def test_a_run_writes_a_record_the_section_accepts_and_a_rerun_reuses_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(claims.EXPERIMENTS, "norm-position", TINY)
    out = tmp_path / "experiment-norm-position.json"
    argv = ["experiment", "norm-position", "--data", str(tmp_path / "data"), "--out", str(out), "--quiet"]
    assert cli_main(argv) == 0
    record = json.loads(out.read_text())
    assert section.check_stored(record) is None
    assert record["complete"] and not record["quick"] and record["claims"] == ["D8"]
    assert record["command"].startswith("linrnn experiment norm-position --data ")
    rows = {r["name"]: r for r in record["runs"]}
    assert set(rows) == {"cumsum-dlr-pre-0", "cumsum-dlr-post-0", "listops-lru-pre-0"}
    synthetic, data = rows["cumsum-dlr-pre-0"], rows["listops-lru-pre-0"]
    assert synthetic["metric"] == "r2" and synthetic["steps"] == 3 and synthetic["parameters"] > 0
    assert data["metric"] == "accuracy" and data["examples"] == {"train": 24, "val": 8, "test": 8}
    assert 0.0 <= data["baseline"]["value"] <= 1.0 and 0.0 <= data["value"] <= 1.0
    assert data["value"] in [e["test"]["accuracy"] for e in data["evaluations"]]
    assert all(r["wall_seconds"] is not None for r in record["runs"])

    assert cli_main(argv) == 0                       # the same configs: nothing is retrained
    again = json.loads(out.read_text())
    assert all(r["wall_seconds"] is None for r in again["runs"])
    assert [r["value"] for r in again["runs"]] == [r["value"] for r in record["runs"]]


def test_an_interrupted_experiment_keeps_what_finished(tmp_path, monkeypatch):
    monkeypatch.setitem(claims.EXPERIMENTS, "norm-position", TINY)
    real = claims.run_job
    calls = []

    def second_fails(job, *args, **kwargs):
        calls.append(job.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(job, *args, **kwargs)

    monkeypatch.setattr(claims, "run_job", second_fails)
    out = tmp_path / "record.json"
    with pytest.raises(KeyboardInterrupt):
        claims.run(TINY, False, tmp_path / "data", tmp_path / "runs", out, ["norm-position"], progress=False)
    record = json.loads(out.read_text())
    assert [r["name"] for r in record["runs"]] == ["cumsum-dlr-pre-0"] and record["complete"] is False
    assert not list(tmp_path.glob("*.tmp"))


def test_the_listops_norm_study_writes_one_row_per_layer_and_a_rerun_reuses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "LISTOPS_QUICK", DataSet("listops-norms", "listops",
                                                         dict(n_train=8, n_val=4, n_test=4, workers=1)))
    experiment = claims.EXPERIMENTS["norms-listops"]
    out = tmp_path / "record.json"
    record = claims.run(experiment, True, tmp_path / "data", tmp_path / "runs", out, ["norms-listops"], False)
    assert section.check_stored(json.loads(out.read_text())) is None
    setup = claims.r8_setup(True)
    assert claims.table_keys(record) == ("task", "model", "layer")
    assert [(r["model"], r["layer"]) for r in record["runs"]] == [(m, i) for m in ("rotrnn", "lru")
                                                                  for i in range(setup["n_layers"])]
    for r in record["runs"]:
        assert r["metric"] == "norm_cv" and r["value"] == pytest.approx(np.std(r["norm"]) / np.mean(r["norm"]))
        assert r["measured_steps"] == [0, 5, 10] and all(n > 0 for n in r["norm"])
        assert set(r["final"]) == {"val", "test"}

    from linrnn.experiments import normstudy

    monkeypatch.setattr(normstudy, "run", lambda *a, **k: pytest.fail("a finished norm run was retrained"))
    again = claims.run(experiment, True, tmp_path / "data", tmp_path / "runs", out, ["norms-listops"], False)
    assert [r["value"] for r in again["runs"]] == [r["value"] for r in record["runs"]]


def test_an_unknown_experiment_is_one_line_and_status_2(capsys):
    assert cli_main(["experiment", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "expected one of norm-position" in err and "'nope'" in err


# -- the ledger on planted records --------------------------------------------------------------------

def planted(experiment: str, runs: list[dict], quick: bool = False, complete: bool = True) -> dict:
    keys = ("task", "model", "norm") if experiment == "norm-position" else ("task", "model")
    return {"experiment": experiment, "quick": quick, "complete": complete, "scale": "planted",
            "command": f"linrnn experiment {experiment}", "cells": claims.cells(runs, keys), "runs": runs}


def run(task, model, value, seed=0, **extra):
    return {"task": task, "model": model, "seed": seed, "status": "ok", "value": value, **extra}


def d8_runs(dlr_gap: float, attention_gap: float) -> list[dict]:
    out = []
    for task in ("cumsum", "reverse"):
        for model, gap in (("dlr", dlr_gap), ("attention", attention_gap)):
            for seed, noise in enumerate((-0.002, 0.0, 0.002)):
                out.append({**run(task, model, 0.9 + noise, seed), "norm": "pre"})
                out.append({**run(task, model, 0.9 - gap + noise, seed), "norm": "post"})
    return out


def settle(source, stored: list[dict]) -> list[ledger.Part]:
    return source.settle({"stored": stored})


@pytest.mark.parametrize("dlr_gap, attention_gap, verdict", [(0.01, 0.3, "reproduced"), (0.3, 0.01, "contradicted"),
                                                            (0.1, 0.1, "inconclusive")])
def test_d8_compares_the_spread_across_norm_positions(dlr_gap, attention_gap, verdict):
    [part] = settle(ledger.D8_EXPERIMENT, [planted("norm-position", d8_runs(dlr_gap, attention_gap))])
    assert part.verdict == verdict and "DLR" in part.evidence and part.scope == "planted"


def test_a_quick_or_absent_record_settles_nothing_and_an_incomplete_one_is_inconclusive():
    for stored in ([], [planted("norm-position", d8_runs(0.01, 0.3), quick=True)]):
        [part] = settle(ledger.D8_EXPERIMENT, stored)
        assert part.verdict == "not run here" and part.command == "linrnn experiment norm-position --data DIR"
    [part] = settle(ledger.D8_EXPERIMENT, [planted("norm-position", d8_runs(0.01, 0.3), complete=False)])
    assert part.verdict == "inconclusive" and "interrupted" in part.evidence


def test_a_diverged_run_makes_d8_inconclusive():
    runs = d8_runs(0.01, 0.3)
    runs[0] = {**runs[0], "status": "diverged", "value": None}
    [part] = settle(ledger.D8_EXPERIMENT, [planted("norm-position", runs)])
    assert part.verdict == "inconclusive" and "diverged" in part.evidence


@pytest.mark.parametrize("dlr, attention, verdict", [((0.8, 0.82), (0.5, 0.52), "reproduced"),
                                                     ((0.5, 0.52), (0.8, 0.82), "contradicted"),
                                                     ((0.6, 0.7), (0.62, 0.68), "inconclusive")])
def test_d5_needs_dlr_ahead_of_local_attention_on_both_tasks(dlr, attention, verdict):
    runs = [run(t, m, v, s) for t in ("listops-subtrees", "pathfinder-segmentation")
            for m, values in (("dlr", dlr), ("attention", attention)) for s, v in enumerate(values)]
    [part] = settle(ledger.D5_EXPERIMENT, [planted("subtrees-segmentation", runs)])
    assert part.verdict == verdict


def d4_runs(dlr_shift: float, dlr_context: float, diverged: str = "") -> list[dict]:
    """Every synthetic task x model, both frameworks for Shift and ContextShift; DLR's pair as given."""
    out = []
    for task, group in claims.D4_GROUPS.items():
        for backend in (("torch", "jax") if task in claims.D4_BOTH_FRAMEWORKS else ("torch",)):
            for model in claims.D4_MODELS:
                value = {"shift": dlr_shift, "context_shift": dlr_context}.get(task, 0.7) if model == "dlr" else 0.6
                r = {**run(task, model, value), "backend": backend, "group": group}
                if f"{task}-{model}-{backend}" == diverged:
                    r.update(status="diverged", value=None)
                out.append(r)
    return out


@pytest.mark.parametrize("shift, context, diverged, verdict", [
    (0.999, 0.05, "", "reproduced"), (0.999, 0.995, "", "contradicted"), (0.9, 0.05, "", "inconclusive"),
    (0.999, 0.05, "context_shift-dlr-jax", "inconclusive")])
def test_d4_settles_on_shift_and_context_shift_and_names_every_group(shift, context, diverged, verdict):
    stored = planted("synthetic-tasks", d4_runs(shift, context, diverged))
    [part] = settle(ledger.D4_EXPERIMENT, [stored])
    assert part.verdict == verdict
    for model in claims.D4_MODELS:
        assert f"{model}: few mean R^2" in part.evidence
    assert "many mean R^2 0.700, 0 of 3 solved, 0 failed" in part.evidence        # DLR's many-kernel tasks
    assert "context mean R^2 0.600, 0 of 6 solved, 0 failed" in part.evidence     # LRU's / RotRNN's


def test_d4_runs_every_synthetic_task_both_frameworks_for_the_claims_pair_and_its_table_is_grouped():
    jobs = claims.d4_jobs(False)
    assert {j.labels["task"] for j in jobs} == set(claims.D4_GROUPS) == set(__import__(
        "linrnn.tasks.synthetic", fromlist=["TASKS"]).TASKS)
    assert {(j.labels["task"], j.labels["backend"]) for j in jobs if j.labels["backend"] == "jax"} == \
        {(t, "jax") for t in claims.D4_BOTH_FRAMEWORKS}
    assert all(j.config["n_layers"] == claims.D4_LAYERS for j in jobs)
    record = {"factor": "backend", "runs": d4_runs(0.999, 0.05)}
    assert claims.table_keys(record) == ("group", "task", "model", "backend")
    groups = [c["group"] for c in claims.table_cells(record)]
    assert groups == sorted(groups, key=claims.D4_GROUP_ORDER.index)
    assert claims.table_keys({"factor": "model", "runs": [run("listops", "lru", 0.5)]}) == ("task", "model")


def d2_runs(dlr: dict, diverged: tuple = ()) -> list[dict]:
    """Shift at L = 1024, 2048, 4096 (N = 1024) for every long-shift variant; DLR (synthetic) as given, the others
    solve only the first length."""
    out = []
    for model, init, _ in claims.D2_VARIANTS:
        for length in claims.D2_LENGTHS:
            value = dlr[length] if (model, init) == ("dlr", "synthetic") else (0.995 if length == 1024 else 0.3)
            r = {**run("shift", model, value), "init": init, "length": length, "d_state": 1024}
            if (model, init, length) in diverged:
                r.update(status="diverged", value=None)
            out.append(r)
    return out


@pytest.mark.parametrize("dlr, diverged, verdict, longest", [
    ({1024: 0.999, 2048: 0.995, 4096: 0.991}, (), "reproduced", "solves up to L = 4096"),
    ({1024: 0.999, 2048: 0.97, 4096: 0.2}, (), "inconclusive", "solves up to L = 1024"),    # fails only beyond N
    ({1024: 0.4, 2048: 0.3, 4096: 0.2}, (), "contradicted", "solves no length run"),        # fails at L = N
    ({1024: 0.999, 2048: 0.995, 4096: 0.991}, (("dlr", "synthetic", 4096),), "inconclusive", "solves up to L = 2048")])
def test_d2_asks_dlr_to_solve_every_length_and_fails_it_only_within_its_state_size(dlr, diverged, verdict, longest):
    [part] = settle(ledger.D2_EXPERIMENT, [planted("long-shift", d2_runs(dlr, diverged))])
    assert part.verdict == verdict
    assert f"dlr (synthetic): L = 1024: {dlr[1024]:.3f}" in part.evidence and longest in part.evidence
    assert "dlr (default): L = 1024: 0.995, L = 2048: 0.300, L = 4096: 0.300 (solves up to L = 1024)" in part.evidence
    assert {"lru (ring)", "rotrnn (ring)"} <= {t.split(":")[0].strip() for t in part.evidence.split(";")}


def test_d2_runs_every_variant_at_every_length_with_the_state_size_fixed_and_its_table_names_the_init():
    jobs = claims.d2_jobs(False)
    assert len(jobs) == len(claims.D2_VARIANTS) * len(claims.D2_LENGTHS)
    assert [j.config["length"] for j in jobs] == sorted(j.config["length"] for j in jobs)     # longest last
    for job in jobs:
        config = TrainConfig(**job.config)
        modes = config.d_state * config.heads // 2 if config.model == "rotrnn" else config.d_state
        assert modes == claims.D2_STATE and config.n_layers == 1 and config.batch_size == 4
        dt = (config.dt_min, config.dt_max)
        if config.model == "dlr":
            assert dt == ((1e-5, 1e-5) if job.labels["init"] == "synthetic" else (1e-4, 1e-1))
    record = {"factor": "length", "runs": d2_runs({1024: 1.0, 2048: 1.0, 4096: 1.0})}
    assert claims.table_keys(record) == ("task", "model", "init", "length")
    assert len(claims.table_cells(record)) == len(jobs)


def test_d2_settles_from_a_stored_record_as_the_report_reads_it(tmp_path):
    """Through the report's reader: the runs' state size comes from their configs."""
    jobs = claims.d2_jobs(False)
    values = {1024: 0.995, 2048: 0.96, 4096: 0.3}
    runs = [{"name": j.name, **j.labels, "config": j.config, "status": "ok", "metric": "r2",
             "value": values[j.labels["length"]], "steps": 800, "seconds_per_step": 0.5} for j in jobs]
    experiment = claims.EXPERIMENTS["long-shift"]
    record = {"schema_version": claims.SCHEMA, "experiment": "long-shift", "claims": ["D2"], "title": experiment.title,
              "question": experiment.question, "scale": experiment.scale(False), "factor": "length",
              "note": experiment.note, "quick": False, "complete": True, "command": "linrnn experiment long-shift",
              "date": "2026-12-01T00:00:00+00:00", "machine": {}, "libraries": {}, "seconds": 1.0, "runs": runs}
    claims.write(tmp_path / "experiment-long-shift.json", record)
    stored, skipped = section.load_stored(tmp_path)
    assert skipped == [] and {r["d_state"] for r in stored[0]["runs"]} == {claims.D2_STATE, claims.D2_STATE // 4}
    [part] = settle(ledger.D2_EXPERIMENT, stored)
    assert part.verdict == "inconclusive" and "dlr (synthetic): L = 1024: 0.995" in part.evidence
    assert f"at L <= its N = {claims.D2_STATE}" in part.evidence


def r8_runs(rotrnn: tuple, lru: tuple) -> list[dict]:
    return [{**run("listops", model, v, seed), "layer": layer} for layer in (0, 1, 2)
            for model, values in (("rotrnn", rotrnn), ("lru", lru)) for seed, v in enumerate(values)]


@pytest.mark.parametrize("rotrnn, lru, verdict", [((0.010, 0.012, 0.011), (0.10, 0.12, 0.11), "reproduced"),
                                                  ((0.10, 0.12, 0.11), (0.010, 0.012, 0.011), "contradicted"),
                                                  ((0.05, 0.07, 0.06), (0.055, 0.065, 0.06), "inconclusive"),
                                                  ((0.07, 0.072, 0.071), (0.10, 0.102, 0.101), "inconclusive")])
def test_r8_on_listops_asks_every_layer_to_be_flatter_beyond_the_noise(rotrnn, lru, verdict):
    stored = planted("norms-listops", r8_runs(rotrnn, lru))
    stored["cells"] = claims.cells(stored["runs"], ("task", "model", "layer"))
    [part] = settle(ledger.R8_EXPERIMENT, [stored])
    assert part.verdict == verdict and "layer 2" in part.evidence


def speech_runs(sc10: dict, sc35: dict, n: int = 400) -> list[dict]:
    return [run(task, m, v, examples={"train": 10, "val": 2, "test": n}, parameters=1000)
            for task, values in (("sc10", sc10), ("sc35", sc35)) for m, v in values.items()]


@pytest.mark.parametrize("rotrnn, verdict", [(0.80, "reproduced"), (0.95, "reproduced"), (0.60, "contradicted")])
def test_r7_asks_rotrnn_to_match_the_lru_within_binomial_error(rotrnn, verdict):
    runs = speech_runs({"rotrnn": 0.9, "lru": 0.9, "dlr": 0.9}, {"rotrnn": rotrnn, "lru": 0.81, "dlr": 0.8})
    [part] = settle(ledger.R7_EXPERIMENT, [planted("speech", runs)])
    assert part.verdict == verdict and "synthetic speech" in part.evidence


def test_d6_compares_dlr_with_the_best_other_model():
    runs = speech_runs({"rotrnn": 0.7, "lru": 0.9, "dlr": 0.6}, {"rotrnn": 0.5, "lru": 0.5, "dlr": 0.5})
    [part] = settle(ledger.D6_EXPERIMENT, [planted("speech", runs)])
    assert part.verdict == "contradicted" and "lru 0.900" in part.evidence


def test_r6_and_d1_rank_the_models_per_task():
    values = {"rotrnn": 0.70, "lru": 0.50, "s4d": 0.50, "s5": 0.50, "dlr": 0.40}
    runs = [run(t, m, v + 0.01 * s, s) for t in ("listops", "pathfinder") for m, v in values.items() for s in (0, 1)]
    competitive, best = settle(ledger.R6_EXPERIMENT, [planted("lra-reduced", runs)])
    assert competitive.verdict == "reproduced" and best.verdict == "reproduced"
    assert "listops: rotrnn 0.705" in competitive.evidence
    [d1] = settle(ledger.D1_EXPERIMENT, [planted("lra-reduced", runs)])
    assert d1.verdict == "contradicted"


def test_models_that_all_sit_at_the_majority_baseline_settle_no_comparison():
    """Ties between models that learnt nothing are not 'competitive': every such comparison is inconclusive."""
    chance = {"train": 100, "val": 50, "test": 500}

    def at(task, model, value, seed):
        return run(task, model, value, seed, baseline={"value": 0.18}, examples=chance)

    values = {"rotrnn": 0.176, "lru": 0.182, "s4d": 0.18, "s5": 0.181, "dlr": 0.179}
    runs = [at(t, m, v + 0.002 * s, s) for t in ("listops", "pathfinder") for m, v in values.items() for s in (0, 1)]
    competitive, best = settle(ledger.R6_EXPERIMENT, [planted("lra-reduced", runs)])
    assert competitive.verdict == best.verdict == "inconclusive" and "both at chance" in competitive.evidence
    [d1] = settle(ledger.D1_EXPERIMENT, [planted("lra-reduced", runs)])
    assert d1.verdict == "inconclusive"
    runs = [at(t, m, v, s) for t in ("listops-subtrees", "pathfinder-segmentation")
            for m, v in (("dlr", 0.181), ("attention", 0.175)) for s in (0, 1)]
    [d5] = settle(ledger.D5_EXPERIMENT, [planted("subtrees-segmentation", runs)])
    assert d5.verdict == "inconclusive" and "neither above the majority baseline" in d5.evidence
    one_learnt = [{**r, "value": 0.6} if r["model"] == "rotrnn" and r["task"] == "listops" else r
                  for r in [at(t, m, v + 0.002 * s, s) for t in ("listops",) for m, v in values.items() for s in (0, 1)]]
    competitive, best = settle(ledger.R6_EXPERIMENT, [planted("lra-reduced", one_learnt)])
    assert best.verdict == "reproduced"             # one side above chance: the comparison stands
    # every seed answers the one class that is rare in train and frequent in test: no spread, still chance
    constant = [run(t, m, 0.5095, s, baseline={"value": 0.4905, "best_constant": {"class": 1, "value": 0.5095}},
                    examples={"train": 100, "val": 50, "test": 2000})
                for t in ("listops",) for m in values for s in (0, 1)]
    competitive, best = settle(ledger.R6_EXPERIMENT, [planted("lra-reduced", constant)])
    assert competitive.verdict == "inconclusive" and "best constant answer 0.509" in competitive.evidence


def test_the_section_renders_a_stored_record_and_lists_the_missing_ones(tmp_path, monkeypatch):
    stored = tmp_path / "stored"
    stored.mkdir()
    runs = [{**r, "name": f"r{i}", "config": {}, "metric": "r2", "steps": 10, "seconds_per_step": 0.1,
             "parameters": 100, "error": None} for i, r in enumerate(d8_runs(0.01, 0.3))]
    record = {"schema_version": claims.SCHEMA, "experiment": "norm-position", "claims": ["D8"], "title": "Pre <b>",
              "question": "q", "scale": "s", "factor": "norm", "note": "", "quick": False, "complete": True,
              "command": "linrnn experiment norm-position", "date": "2026-12-01T00:00:00+00:00",
              "machine": {"label": "box", "platform": "p", "cpus": 2}, "libraries": {"torch": "2.13.0"},
              "seconds": 12.0, "runs": runs}
    (stored / "experiment-norm-position.json").write_text(json.dumps(record))
    (stored / "experiment-broken.json").write_text("{")
    monkeypatch.setattr(section, "STORED_DIR", stored)
    data, config = section.compute(False, lambda *a: None)
    assert [s["experiment"] for s in data["stored"]] == ["norm-position"]
    assert data["stored_skipped"][0][0] == "experiment-broken.json"
    assert {m["experiment"] for m in data["missing"]} == set(claims.EXPERIMENTS) - {"norm-position"}
    write_result(tmp_path / "out", section.NAME, data, {**config, "quick": False})
    page = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    html = page[page.index('<section id="experiments"'):]
    assert "Pre &lt;b&gt;" in html and "D8 [<strong>reproduced</strong>]" in html
    assert "linrnn experiment speech --data DIR" in html and "experiment-broken.json" in html
    glance = page[page.index('<section id="glance"'):page.index('<section id="ledger"')]
    assert 'href="#experiment-norm-position"' in glance


def test_a_record_with_a_missing_label_is_skipped_with_the_reason():
    record = {"schema_version": claims.SCHEMA, "experiment": "norm-position", "claims": ["D8"], "title": "t",
              "question": "q", "scale": "s", "factor": "norm", "note": "", "quick": False, "complete": True,
              "command": "c", "date": "d", "machine": {}, "libraries": {}, "seconds": 1.0,
              "runs": [{"name": "a", "status": "ok", "config": {}, "task": "cumsum", "model": "dlr", "value": 0.5}]}
    assert section.check_stored(record) == "record.runs[0]: missing the label(s) norm"
    assert "expected a number" in section.check_stored(
        {**record, "runs": [{**record["runs"][0], "norm": "pre", "value": "high"}]})


def test_no_name_is_one_line_and_status_2_and_list_names_every_experiment(capsys):
    assert cli_main(["experiment"]) == 2
    assert "NAME: expected one of norm-position" in capsys.readouterr().err
    assert cli_main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in claims.EXPERIMENTS)


def test_a_data_folder_generated_with_other_options_is_refused_in_one_line(tmp_path, monkeypatch):
    from linrnn.experiments import reduced_training
    from linrnn.impls.errors import LinrnnError
    from linrnn.tasks.data import generate

    made = []
    monkeypatch.setitem(generate.GENERATORS, "listops",
                        lambda folder, **options: (made.append(options), (folder / "x").mkdir(parents=True)))
    small = DataSet("lo", "listops", dict(n_train=8, n_val=4, n_test=4))
    assert reduced_training.ensure_data(tmp_path, small) == tmp_path / "lo" and len(made) == 1
    assert reduced_training.ensure_data(tmp_path, small) == tmp_path / "lo" and len(made) == 1   # reused
    bigger = DataSet("lo", "listops", dict(n_train=80, n_val=4, n_test=4))
    with pytest.raises(LinrnnError, match=r"--data: .*lo holds listops data generated with .*n_train': 8.*expected"):
        reduced_training.ensure_data(tmp_path, bigger)
    (tmp_path / ".lo.generated.json").unlink()                  # no stamp: the folder is used as it is
    assert reduced_training.ensure_data(tmp_path, bigger) == tmp_path / "lo" and len(made) == 1

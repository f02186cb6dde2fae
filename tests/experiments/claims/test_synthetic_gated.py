"""The experiment `synthetic-gated` (issue 52; experiments/claims/synthetic_gated.py): only the RG-LRU trains, D4's finished
runs stand for DLR, the LRU and attention where the config is the same, at D4's budget; and its rule decides from the
numbers (a planted gap is shown, the stored record gives the finding docs/experiments.md quotes)."""

import copy

import pytest

from linrnn.experiments.claims import synthetic_gated as gated
from linrnn.experiments.claims.runner import STORED_DIR, stored_rows
from linrnn.base.results import ExperimentRecord, read, to_dict

STORED = STORED_DIR / "experiment-synthetic-gated.json"


@pytest.fixture(scope="module")
def stored():
    return to_dict(read(STORED, ExperimentRecord))


def test_every_arm_but_the_rglru_is_a_finished_run_of_d4s_record():
    jobs, d4 = gated.jobs(False), gated.d4_rows()
    assert d4, "D4's stored record (reports/results/experiment-synthetic-tasks.json) is missing"
    others = [j for j in jobs if j.labels["model"] != gated.GATED]
    assert others and all(stored_rows(j, d4) for j in others), [j.name for j in others if not stored_rows(j, d4)]
    assert not any(stored_rows(j, d4) for j in jobs if j.labels["model"] == gated.GATED)


def test_the_rglru_runs_at_the_budget_of_the_lru_beside_it():
    """Every field of the training config (task, length, seed, steps, learning rates, schedule, blocks, width, batch,
    evaluation) the LRU's twin run's: only the model and its mixer's fields differ."""
    jobs = gated.jobs(False)
    lru = {(j.labels["task"], j.labels["length"], j.labels["seed"]): j.config
           for j in jobs if j.labels["model"] == "lru"}
    for job in (j for j in jobs if j.labels["model"] == gated.GATED):
        twin = lru[job.labels["task"], job.labels["length"], job.labels["seed"]]
        assert set(job.config) == set(twin), job.name
        assert {k for k in job.config if job.config[k] != twin[k]} == {"model", "mixer"}, job.name


def test_reuse_or_train_trains_the_rglru_only(monkeypatch, tmp_path):
    trained = []
    monkeypatch.setattr(gated, "run_job", lambda job, *args: trained.append(job.name) or {"name": job.name})
    jobs = gated.jobs(False)
    dlr = next(j for j in jobs if j.labels["model"] == "dlr")
    rglru = next(j for j in jobs if j.labels["model"] == gated.GATED)
    reused = gated.reuse_or_train(dlr, tmp_path, tmp_path, False)
    assert trained == [] and reused[0]["name"] == dlr.name and reused[0]["reused_from"] == "synthetic-tasks"
    assert "control" not in reused[0]
    assert gated.reuse_or_train(rglru, tmp_path, tmp_path, False) == [{"name": rglru.name}] and trained == [rglru.name]


def test_the_stored_record_gives_the_documented_finding(stored):
    found = gated.finding(stored)
    verdicts = {e["question"]: e["verdict"] for e in found["context_shift"]}
    assert verdicts == {
        "the RG-LRU learns ContextShift at L = 16 (1a: R^2 above the best trivial predictor)": "shown",
        "the RG-LRU does not fail ContextShift at L = 16 (1a': R^2 above D4's fails bar 0.5)": "not shown",
        "the attention control learned ContextShift at L = 16": "shown",
        "the RG-LRU above the LRU on ContextShift at L = 16": "shown",
        "the RG-LRU above DLR on ContextShift at L = 16": "not shown",
        "the RG-LRU below the attention control on ContextShift at L = 16": "shown"}
    assert found["cost"]["runs_trained"] == 45 and found["cost"]["runs_reused"] == 102
    dlr = next(e for e in found["context_shift"] if e["question"].startswith("the RG-LRU above DLR"))
    assert dlr["power"] and "seeds_per_arm" in dlr["power"]           # not shown: what would settle it is said
    assert len(found["tasks"]) == 11 and all(e["verdict"] in ("shown", "not shown") for e in found["tasks"])


def test_a_planted_gap_is_shown_and_a_removed_one_is_not(stored):
    """The RG-LRU's ContextShift runs moved to DLR's values + 0.3: above DLR shown; set to DLR's values: not shown."""
    def with_rglru(shift):
        planted = copy.deepcopy(stored)
        dlr = [r for r in planted["runs"] if r.get("model") == "dlr" and r.get("task") == "context_shift"
               and int(r.get("length")) == 16]
        rglru = [r for r in planted["runs"] if r.get("model") == gated.GATED and r.get("task") == "context_shift"
                 and int(r.get("length")) == 16]
        assert len(dlr) == len(rglru) >= 5
        for r, d in zip(rglru, dlr):
            r["value"] = float(d["value"]) + shift
        entries = gated.context_shift_finding(planted, planted["runs"], 16)
        return next(e for e in entries if e["question"].startswith("the RG-LRU above DLR"))["verdict"]

    assert with_rglru(0.3) == "shown"
    assert with_rglru(0.0) == "not shown"

"""`ledger.build` on crafted records: every verdict path, the weakest part winning, and loud bugs.

Each record is the smallest results record the settle functions read (the shape `ledger.conforms`
checks), so these tests run in milliseconds and say exactly which evidence gives which verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linrnn.reports import ledger


def finding(statement: str, verdict: str, **extra) -> dict:
    return {"statement": statement, "verdict": verdict, "condition": "", "evidence": "sympy", **extra}


def theory_claim(claim: str, verdict: str, findings: list[dict], partly: bool = False, condition: str = "",
                 **extra) -> dict:
    return {"claim": claim, "title": claim, "verdict": verdict, "partly": partly, "condition": condition,
            "findings": findings, **extra}


def record(section: str, data: dict, config: dict | None = None, label: str = "test-machine") -> dict:
    return {"section": section, "meta": {"machine": {"label": label}, "config": config or {}}, "data": data}


def theory(*claims: dict, **extra) -> dict:
    return record("theory", {"claims": list(claims), **extra})


NORMS_CONFIG = {"task": "cumsum", "length": 8, "n_layers": 1, "d_model": 4, "steps": 4, "batch_size": 2,
                "seeds": [0]}


def norms(max_ratio: float = 0.01) -> dict:
    """One RotRNN and one LRU run: R1's orthogonality ratio as given, R9's drift far above rounding."""
    runs = [{"model": "rotrnn", "seed": 0,
             "orthogonality": {"worst": {"max_ratio": max_ratio, "max_error": 1e-15, "max_error_float32": 1e-7,
                                         "min_tolerance": 1e-13, "steps_checked": 5}}},
            {"model": "lru", "seed": 0, "drift": {"max": [[0.0, 0.3]], "rounding_floor": 1e-7}}]
    table = [{"model": "rotrnn", "layer": 0, "cv_mean": 0.01, "settle_mean": 0},
             {"model": "lru", "layer": 0, "cv_mean": 0.2, "settle_mean": 4}]
    return record("norms", {"runs": runs, "table": table, "across": {"rotrnn": 0.01, "lru": 0.1}}, NORMS_CONFIG)


def row(rows: list[dict], claim: str) -> dict:
    return next(r for r in rows if r["id"] == claim)


def test_proved_only_where_the_record_says_proved_with_its_scope():
    rows = ledger.build({"theory": [theory(theory_claim("R2", "proved", [finding("A^k via blocks", "proved")],
                                                        scope="any N, any k (symbolic)"))]})
    r2 = row(rows, "R2")
    assert r2["verdict"] == "proved" and r2["parts"][0]["scope"] == "any N, any k (symbolic)"
    assert "A^k via blocks [proved]" in r2["evidence"] and "any N, any k" in r2["scale"]


def test_verified_with_scope_and_per_finding_scope():
    d3 = theory_claim("D3", "verified", [finding("any kernel", "verified", scope="N <= 6 in SymPy, N <= 64 numeric")],
                      scope="small N symbolic, the rest numeric")
    r = row(ledger.build({"theory": [theory(d3)]}), "D3")
    assert r["verdict"] == "verified" and r["parts"][0]["scope"] == "small N symbolic, the rest numeric"
    assert "N <= 6 in SymPy, N <= 64 numeric" in r["evidence"]


def test_contradicted_and_contradicted_in_part():
    whole = theory_claim("D2", "fails", [finding("survives", "fails")], condition="|lambda| < 1 - 1e-3")
    part = theory_claim("R3", "fails", [finding("from x_0 = 0", "fails"), finding("stationary", "proved")],
                        partly=True, condition="x_0 = 0")
    rows = ledger.build({"theory": [theory(whole, part)]})
    assert row(rows, "D2")["verdict"] == "contradicted" and "Fails when: |lambda| < 1 - 1e-3" in row(rows, "D2")["evidence"]
    r3 = row(rows, "R3")
    # R3's Monte Carlo part is missing from this record (no "r3" key): not run, but the derivation is weaker still
    assert r3["verdict"] == "contradicted (in part)"
    assert [p["verdict"] for p in r3["parts"]] == ["contradicted (in part)", "not run here"]


def test_a_proved_derivation_and_a_contradicting_training_part_is_contradicted():
    r1 = theory_claim("R1", "proved", [finding("orthogonal for every M", "proved")])
    rows = ledger.build({"theory": [theory(r1)], "norms": [norms(max_ratio=3.0)]})
    r = row(rows, "R1")
    assert r["verdict"] == "contradicted"
    assert [(p["source"], p["verdict"]) for p in r["parts"]] == [("derivation (theory)", "proved"),
                                                                  ("training (norms)", "contradicted")]
    ok = row(ledger.build({"theory": [theory(r1)], "norms": [norms(max_ratio=0.5)]}), "R1")
    assert ok["verdict"] == "verified"                           # proved + verified: the weaker, verified


def tasks_record(context_r2, status: str = "ok") -> dict:
    rows = [{"task": "shift", "model": "dlr", "seed": 0, "status": "ok", "r2": 0.999},
            {"task": "context_shift", "model": "dlr", "seed": 0, "status": status, "r2": context_r2}]
    return record("tasks", {"rows": rows}, {"length": 8, "steps": 3, "seeds": [0]})


def tasks_part(rows: list[dict]) -> dict:
    """D4's part from the tasks section (its other part, the synthetic-tasks experiment, is tested with it)."""
    return next(p for p in row(rows, "D4")["parts"] if p["source"] == "training (tasks)")


def test_a_diverged_run_is_inconclusive_never_fails():
    assert tasks_part(ledger.build({"tasks": [tasks_record(0.01)]}))["verdict"] == "reproduced"
    for r2, status in ((None, "diverged"), ("nan", "ok"), (0.01, "diverged")):
        d4 = tasks_part(ledger.build({"tasks": [tasks_record(r2, status)]}))
        assert d4["verdict"] == "inconclusive" and "diverged" in d4["evidence"], (r2, status)


def test_missing_results_are_not_run_here_with_a_command():
    rows = ledger.build({})
    for claim in ("R1", "R4", "D4", "D9"):
        r = row(rows, claim)
        assert r["verdict"] == "not run here" and r["command"] == ledger.REPORT_COMMAND


def test_every_not_run_row_has_a_command_except_d7_which_has_a_reason():
    rows = ledger.build({})
    assert all(r["verdict"] == "not run here" for r in rows)
    for r in rows:
        if r["id"] == "D7":
            assert r["command"] == "" and "out of reach" in r["evidence"]
        else:
            assert r["command"].strip(), r["id"]
    root = Path(__file__).resolve().parents[2]
    expected = {"R6": 12, "R7": 2, "D1": 6, "D5": 6, "D6": 1}   # (task, model) pairs each full-scale claim needs
    for claim, count in expected.items():                      # exact commands whose config files exist
        assert row(rows, claim)["published"], claim
        commands = row(rows, claim)["full_scale"].split(" ; ")
        assert len(commands) == count, claim
        for command in commands:
            words = command.split()
            assert words[:3] == ["linrnn", "train", "--config"], command
            assert (root / words[3]).is_file(), f"{claim}: {words[3]} is not in the repository"


def test_only_the_claims_with_a_full_scale_setting_carry_its_commands():
    rows = ledger.build({})
    assert {r["id"] for r in rows if r["full_scale"]} == {"R6", "R7", "D1", "D2", "D5", "D6"}


def test_d2_full_scale_runs_are_grid_commands_whose_configs_resolve_at_every_length():
    from linrnn.tasks.grid import grid_config

    command = row(ledger.build({}), "D2")["full_scale"]
    assert command.startswith("for L in 16384 65536 262144 1048576; do ") and command.endswith("; done")
    lengths = command.split(";")[0].split()[3:]
    runs = command.split("; do ")[1].removesuffix("; done").split(" ; ")
    assert len(runs) == 4                                    # DLR in two initialisations, LRU, RotRNN
    for run in runs:
        words = run.split()
        assert words[:3] == ["linrnn", "tasks", "grid"], run
        options = dict(zip(words[3::2], words[4::2]))          # the last --set wins here; not used below
        fields = dict(words[i + 1].split("=") for i, w in enumerate(words) if w == "--set")
        for length in lengths:
            config = grid_config("shift", options["--models"], "torch", int(length), int(options["--steps"]),
                                 **{k: float(v) if "." in v or "e" in v else int(v) for k, v in fields.items()})
            assert config.batch_size == 4 and config.lr == 1e-5


def test_a_malformed_record_is_not_run_here_with_the_reason():
    broken = theory({"claim": "R2", "verdict": "proved"})    # no findings, no partly
    r = row(ledger.build({"theory": [broken]}), "R2")
    assert r["verdict"] == "not run here" and "data.claims[0].partly: missing" in r["evidence"]
    assert r["command"] == ledger.REPORT_COMMAND


def test_a_bug_in_a_settle_function_raises(monkeypatch):
    def buggy(data):
        return [ledger.Part("x", "verified", "e")][1]        # IndexError in the settle function's own logic

    claims = tuple(ledger.Claim(c.id, c.paper, c.text, (ledger.Source("theory", "x", None, buggy),))
                   if c.id == "R2" else c for c in ledger.CLAIMS)
    monkeypatch.setattr(ledger, "CLAIMS", claims)
    with pytest.raises(IndexError):
        ledger.build({"theory": [theory()]})


def test_the_weakest_part_wins():
    P = ledger.Part
    assert ledger.combine([P("a", "proved", ""), P("b", "verified", "")]) == "verified"
    assert ledger.combine([P("a", "proved", ""), P("b", "not run here", "", command="c")]) == "not run here"
    assert ledger.combine([P("a", "not run here", "", command="c"), P("b", "inconclusive", "")]) == "inconclusive"
    assert ledger.combine([P("a", "contradicted (in part)", ""), P("b", "inconclusive", "")]) == \
        "contradicted (in part)"
    assert ledger.combine([P("a", "contradicted (in part)", ""), P("b", "contradicted", "")]) == "contradicted"
    with pytest.raises(ValueError, match="verdict: expected one of"):
        P("a", "mostly fine", "")


def reference(other_ratio: float = 0.0, count_ok: bool = True) -> dict:
    heads = [{"changed": ["M", "theta", "gamma_log", "B"], "heads": 3, "H": 8, "N": 4, "L": 33,
              "other_max_ratio": other_ratio, "changed_rel": 1.0, "changed_rtol": 1e-13, "sum_ratio": 0.01}]
    counts = [{"config": "H=8 N=4 heads=3", "count": 200, "formula_value": 200 if count_ok else 199}]
    return record("reference", {"head_independence": heads, "param_counts": counts,
                                "converters": [{"rel": 1e-16, "rtol": 1e-13}]})


def test_r4_is_settled_by_the_head_independence_measurement_and_the_count():
    assert row(ledger.build({"reference": [reference()]}), "R4")["verdict"] == "verified"
    moved = row(ledger.build({"reference": [reference(other_ratio=5.0)]}), "R4")
    assert moved["verdict"] == "contradicted" and "5 x the float64 tolerance" in moved["evidence"]
    assert row(ledger.build({"reference": [reference(count_ok=False)]}), "R4")["verdict"] == "contradicted"


def test_several_machines_give_one_part_each():
    good, bad = norms(0.5), norms(3.0)
    good["meta"]["machine"]["label"], bad["meta"]["machine"]["label"] = "cpu-box", "gpu-box"
    r = row(ledger.build({"norms": [good, bad]}), "R8")
    norms_parts = [p["source"] for p in r["parts"] if p["source"].endswith("training (norms)")]
    assert norms_parts == ["cpu-box: training (norms)", "gpu-box: training (norms)"]

"""`ledger.build` on crafted records: every verdict path, the weakest part winning, and loud bugs.

Each record is the smallest results record the settle functions read (the shape `conforms`, `linrnn.reports.results`
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
    table = [{"model": "rotrnn", "layer": 0, "cv": [0.01, 0.012, 0.011], "cv_mean": 0.011, "settle_mean": 0},
             {"model": "lru", "layer": 0, "cv": [0.2, 0.22, 0.18], "cv_mean": 0.2, "settle_mean": 4}]
    return record("norms", {"runs": runs, "table": table, "across": {"rotrnn": 0.01, "lru": 0.1}}, NORMS_CONFIG)


def row(rows: list[dict], claim: str) -> dict:
    return next(r for r in rows if r["id"] == claim)


def test_proved_only_where_the_record_says_proved_with_its_scope():
    rows = ledger.build({"theory": [theory(theory_claim("R2", "proved", [finding("A^k via blocks", "proved")],
                                                        scope="any N, any k (symbolic)"))]})
    r2 = row(rows, "R2")
    assert r2["verdict"] == "proved" and r2["parts"][0]["scope"] == "any N, any k (symbolic)"
    assert "A^k via blocks [proved]" in r2["evidence"] and "any N, any k" in r2["scope"]
    assert r2["scale"] == "symbolic, in general" and r2["parts"][0]["test"] == "derivation"


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


def tasks_record(context_r2, status: str = "ok", seeds=(0, 1, 2), control=(0.87, 0.9, 0.85),
                 control_length: int = 16) -> dict:
    """DLR on Shift at L = 8 (solved) and on ContextShift at L = 16 (`context_r2` at seed 0, near it at the others),
    the ContextShift control's runs (attention, at `control_length`) with the given R^2 (none: no control), and the
    trivial baselines of both tasks at their lengths."""
    rows = []
    for i, seed in enumerate(seeds):
        rows.append({"task": "shift", "model": "dlr", "seed": seed, "status": "ok", "r2": 0.999 - 1e-4 * i,
                     "config": {"length": 8}})
        r2 = context_r2 if i == 0 or not isinstance(context_r2, float) else context_r2 + 0.01 * i
        rows.append({"task": "context_shift", "model": "dlr", "seed": seed, "status": status if i == 0 else "ok",
                     "r2": r2, "config": {"length": 16}})
    for seed, r2 in enumerate(control or ()):
        rows.append({"task": "context_shift", "model": "attention", "seed": seed, "status": "ok", "r2": r2,
                     "control": "context-shift-attention", "config": {"length": control_length}})
    trivial = [{"task": "shift", "length": 8, "best": {"name": "window", "score": 0.4}},
               {"task": "context_shift", "length": 16, "best": {"name": "bag", "score": 0.08}}]
    return record("tasks", {"rows": rows, "trivial": trivial}, {"length": 8, "steps": 3, "seeds": list(seeds)})


def tasks_parts(rows: list[dict]) -> list[dict]:
    """D4's deciding parts from the tasks section (its other part, the synthetic-tasks experiment, is tested with
    it)."""
    return [p for p in row(rows, "D4")["parts"] if p["source"] == "training (tasks)" and p["decides"]]


def test_d4_reproduced_needs_three_seeds_a_test_and_a_control_that_learned():
    shift, context = tasks_parts(ledger.build({"tasks": [tasks_record(0.01)]}))
    assert shift["verdict"] == context["verdict"] == "reproduced"
    assert shift["baseline"] == {"name": "window", "score": 0.4} and context["baseline"]["score"] == 0.08
    assert context["test"] == "Welch's t, one-sided (DLR below the control)" and context["n"] == [3, 3]
    assert context["p"] < 0.05 and context["ci"][1] < 0 and context["control"] == {"name": "context-shift-attention",
                                                                                   "learned": True}
    # two seeds: the same numbers, no decision
    assert {p["verdict"] for p in tasks_parts(ledger.build({"tasks": [tasks_record(0.01, seeds=(0, 1))]}))} == \
        {"inconclusive"}
    # the control did not learn (attention at chance too): DLR failing says nothing about DLR
    failed = tasks_parts(ledger.build({"tasks": [tasks_record(0.01, control=(0.02, 0.03, 0.01))]}))[1]
    assert failed["verdict"] == "inconclusive" and "not shown to learn" in failed["evidence"]
    assert failed["control"]["learned"] is False
    # no control at all
    missing = tasks_parts(ledger.build({"tasks": [tasks_record(0.01, control=None)]}))[1]
    assert missing["verdict"] == "inconclusive" and "no positive control" in missing["evidence"]
    # a control that learned at another length vouches for nothing at DLR's: shown beside, undecided; the section's
    # "struggles" is then a side finding too, and the claim waits for the experiment's (not stored in this build)
    claim = row(ledger.build({"tasks": [tasks_record(0.01, control_length=64)]}), "D4")
    beside = [p for p in claim["parts"] if p["source"] == "training (tasks)" and not p["decides"]]
    assert len(beside) == 2 and "another setting" in beside[0]["evidence"]
    assert beside[1]["verdict"] == "inconclusive" and "ran no control" in beside[1]["evidence"]
    assert [p["verdict"] for p in tasks_parts([{"id": "D4", "parts": claim["parts"]}])] == ["reproduced"]
    assert not claim["verdict"].startswith("reproduced")


def test_every_experimental_scale_states_its_seeds_length_and_steps():
    """The scale beside a verdict is what a reader weighs it by: the section's seeds survive into the few words."""
    rows = ledger.build({"tasks": [tasks_record(0.01)], "norms": [norms()]})
    assert row(rows, "D4")["parts"][0]["scale"] == "L = 8, 3 steps, 3 seeds"
    assert "1 seed" in row(rows, "R8")["parts"][0]["scale"]
    stored = {"experiment": "x", "cells": [{"n": 3}, {"n": 5}]}
    assert ledger._brief(stored) == "5 seeds per arm, experiment x"


def test_a_diverged_run_is_inconclusive_never_fails():
    for r2, status in ((None, "diverged"), ("nan", "ok"), (0.01, "diverged")):
        d4 = tasks_parts(ledger.build({"tasks": [tasks_record(r2, status)]}))[1]
        assert d4["verdict"] == "inconclusive", (r2, status)
        assert "diverged" in d4["evidence"] or "n = 2" in d4["evidence"], (r2, status)


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
    from linrnn.tasks.overrides import apply_overrides
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
        overrides = apply_overrides({}, [words[i + 1] for i, w in enumerate(words) if w == "--set"])
        for length in lengths:       # a mixer field (d_state, dt_min) lands in the mixer table of the run's model
            config = grid_config("shift", options["--models"], "torch", int(length), int(options["--steps"]),
                                 **overrides)
            assert config.batch_size == 4 and config.lr == 1e-5


def test_a_malformed_record_is_not_run_here_with_the_reason():
    broken = theory({"claim": "R2", "verdict": "proved"})    # no findings, no partly
    r = row(ledger.build({"theory": [broken]}), "R2")
    assert r["verdict"] == "not run here" and "data.claims[0].partly: missing" in r["evidence"]
    assert r["command"] == ledger.REPORT_COMMAND


def test_every_claim_has_exactly_one_source_of_each_kind():
    """The ledger's wiring is derived: every experiment source comes from an experiment's `settles` (none written into
    a claim by hand), each claim has each source once, and every claim an experiment settles is in the table."""
    from linrnn.experiments.claims import EXPERIMENTS

    assert ledger.wiring_problems(ledger.CLAIMS, EXPERIMENTS) == []
    for experiment in EXPERIMENTS.values():
        for settles in experiment.settles:
            source = ledger.experiment_source(settles.claim)
            assert source.name == f"experiment ({experiment.name})" and source.section == "experiments"
            assert source in ledger.sources_of(next(c for c in ledger.CLAIMS if c.id == settles.claim))
    settled = {s.claim for e in EXPERIMENTS.values() for s in e.settles}
    assert settled == set(ledger.EXPERIMENT_SOURCES)
    assert all(s.section != "experiments" for c in ledger.CLAIMS for s in c.sources)


def test_a_claim_wired_by_hand_twice_or_unknown_is_named():
    from dataclasses import replace

    from linrnn.experiments.claims import EXPERIMENTS
    from linrnn.experiments.claims.runner import Settles

    d8 = EXPERIMENTS["norm-position"]
    by_hand = tuple(replace(c, sources=c.sources + (ledger.experiment_source("D8"),)) if c.id == "D8" else c
                    for c in ledger.CLAIMS)
    assert ledger.wiring_problems(by_hand, EXPERIMENTS) == [
        "D8: the source 'experiment (norm-position)' is written into the claim by hand; declare it in the "
        "experiment's settles", "D8: the experiments source 'experiment (norm-position)' appears 2 times"]
    twice = {**EXPERIMENTS, "norm-position": replace(d8, settles=d8.settles * 2)}
    assert ledger.wiring_problems(ledger.CLAIMS, twice) == [
        "experiment norm-position settles D8 twice", "D8: the experiments source 'experiment (norm-position)' appears 2 times"]
    unknown = {**EXPERIMENTS, "norm-position": replace(d8, settles=(Settles("D99", d8.settles[0].settle),))}
    assert ledger.wiring_problems(ledger.CLAIMS, unknown) == [
        "experiment norm-position settles D99, which is not a claim of the ledger"]
    theory_twice = tuple(replace(c, sources=c.sources * 2) if c.id == "D3" else c for c in ledger.CLAIMS)
    assert ledger.wiring_problems(theory_twice, EXPERIMENTS) == [
        "D3: the theory source 'derivation (theory)' appears 2 times"]


def test_an_experiment_added_by_the_recipe_is_wired_into_the_ledger_with_no_other_edit():
    """docs/architecture.md, "How to add an experiment": an experiment that declares `Settles("D8", settle)` in a
    registry gives D8 its source, named after it, whose parts the stored record decides; nothing of the ledger is
    edited."""
    from linrnn.experiments.claims import EXPERIMENTS
    from linrnn.experiments.claims.runner import Experiment, Settles

    def settle(stored: dict) -> list:
        return [ledger.Part("x", "reproduced", f"{len(stored['runs'])} runs", test="numeric")]

    new = Experiment("toy-d8", (Settles("D8", settle),), "a toy", "a question", lambda quick: [], lambda quick: "toy")
    registry = {**EXPERIMENTS, "toy-d8": new}
    assert ledger.wiring_problems(ledger.CLAIMS, registry) == []
    [*_, source] = ledger.derive_experiment_sources(registry)["D8"]
    assert source.name == "experiment (toy-d8)" and source.anchor == "experiment-toy-d8"
    stored = {"experiment": "toy-d8", "quick": False, "complete": True, "scale": "toy", "command": "c", "cells": [],
              "runs": [{"name": "a"}, {"name": "b"}]}
    [part] = source.settle({"stored": [stored]})
    assert (part.source, part.verdict, part.evidence) == ("experiment (toy-d8)", "reproduced", "2 runs")


def test_an_experiment_declares_its_claims_as_settles():
    from linrnn.experiments.claims.runner import Experiment

    with pytest.raises(TypeError, match=r"Experiment 'x': settles expected a tuple of Settles\(claim, settle\)"):
        Experiment("x", ("D8",), "t", "q", lambda quick: [], lambda quick: "")


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
    assert ledger.combine([P("a", "reproduced", "")], untested=("the other half",)) == "reproduced (in part)"
    assert ledger.combine([P("a", "proved", "")], untested=("a number",)) == "verified (in part)"
    assert ledger.combine([P("a", "inconclusive", "")], untested=("x",)) == "inconclusive"
    assert ledger.combine([P("a", "reproduced", ""), P("b", "contradicted", "")], untested=("x",)) == "contradicted"
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
    # one layer, two parts (flatter, almost constant) per machine
    assert norms_parts == ["cpu-box: training (norms)"] * 2 + ["gpu-box: training (norms)"] * 2


def speed_record(exponent: float, rounds: int = 5, lengths=(128, 256, 512, 1024, 2048), noise: float = 0.03,
                 grows: str = "", load: float = 0.0, token_exponent: float = 0.0) -> dict:
    """Step-mode timings in interleaved rounds (time ~ L^exponent, `load`: a factor on the longest lengths of the
    last round, a neighbour's job there), the step's work counted token by token (constant; `grows`: a backend
    whose DLR step does more work at every later token) and one token's time at four positions (~ t^token_exponent)."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = []
    for b in ("torch", "jax"):
        for k in ("rotrnn", "lru", "dlr"):
            for L in lengths:
                ms = [float(1e-3 * L ** exponent * np.exp(rng.normal(0, noise))) for _ in range(rounds)]
                if load and L >= lengths[-2]:
                    ms[-1] *= load
                rows.append({"backend": b, "mixer": k, "L": L, "ms": ms})
    structure, tokens = [], []
    positions = (32, 128, 512, 2048)
    for b in ("torch", "jax"):
        for k in ("rotrnn", "lru", "dlr"):
            extra = list(range(8)) if (b == grows and k == "dlr") else [0] * 8
            structure.append({"backend": b, "mixer": k, "reading": "set here", "positions": list(range(1, 9)),
                              "ops": [100 + e for e in extra], "flops": [1000 + e for e in extra] if b == "torch"
                              else None, "elements": [500] * 8, "state_bytes": [2048] * 8,
                              "state_shapes": [[[4, 64, 64]]], "programs": None if b == "torch" else 1, "loops": [],
                              "unreadable": []})
            tokens.append({"backend": b, "mixer": k, "positions": list(positions), "block": 16, "rounds": 5,
                           "clock": "process CPU time", "us": [[float(100 * p ** token_exponent *
                                                                      np.exp(rng.normal(0, 0.02))) for p in positions]
                                                               for _ in range(5)]})
    return record("speed", {"rows": [], "step_rounds": rows, "step_structure": structure, "step_tokens": tokens})


@pytest.mark.parametrize("grows, token_exponent, verdict", [
    ("", 0.0, "verified"), ("torch", 0.0, "contradicted"), ("jax", 0.0, "contradicted"),
    ("", 1.0, "contradicted")])                  # the count holds, one token's time grows with t (PyTorch decides)
def test_d9_is_decided_by_dlrs_step_token_by_token_in_each_backend(grows, token_exponent, verdict):
    r = row(ledger.build({"speed": [speed_record(1.0, grows=grows, token_exponent=token_exponent)]}), "D9")
    assert r["verdict"] == verdict
    deciding = [p for p in r["parts"] if p["decides"]]
    assert [p["part"] for p in deciding] == ["O(L) inference: torch dlr", "O(L) inference, per token: torch dlr",
                                             "O(L) inference: jax dlr"]
    assert [p["test"] == "structure" for p in deciding] == [True, False, True]
    if grows:
        bad = next(p for p in deciding if grows in p["part"])
        assert bad["verdict"] == "contradicted" and "grows with t" in bad["evidence"]
    if token_exponent:
        assert deciding[1]["verdict"] == "contradicted" and "one token's time grows with t" in deciding[1]["evidence"]
    # every other mixer, JAX's per-token timing (its jaxpr is read whole) and every whole-call fit: side findings
    assert {p["part"] for p in r["parts"] if not p["decides"]} >= {"O(L) inference: torch lru",
                                                                    "O(L) inference, per token: jax dlr",
                                                                    "O(L) inference, timed: jax dlr"}


@pytest.mark.parametrize("exponent, rounds, noise, load, verdict", [
    (1.0, 5, 0.03, 0.0, "verified"), (2.0, 5, 0.03, 0.0, "inconclusive"),
    (1.0, 2, 0.03, 0.0, "inconclusive"),          # too few rounds to fit
    (1.0, 5, 1.0, 0.0, "inconclusive")])         # timings too noisy: the interval reaches past the bound
def test_d9_timing_is_supporting_evidence_fitted_with_rounds_as_clusters(exponent, rounds, noise, load, verdict):
    r = row(ledger.build({"speed": [speed_record(exponent, rounds, noise=noise, load=load)]}), "D9")
    assert r["verdict"] == "verified"             # the step read token by token decides, whatever the whole-call fit says
    timed = [p for p in r["parts"] if (p["part"] or "").startswith("O(L) inference, timed")]
    assert len(timed) == 6 and {p["verdict"] for p in timed} == {verdict} and not any(p["decides"] for p in timed)
    if rounds >= 3 and noise < 0.1:
        part = timed[0]
        assert "rounds as clusters" in part["test"] and part["n"] == [5 * rounds]
        assert part["ci"][0] is None and exponent < part["ci"][1] and "Theil-Sen" in part["tests"][0]["note"]


def test_d9_keeps_its_verdict_when_one_round_runs_beside_a_load():
    """A neighbour's job slowing the long lengths of one round: the verdict is the token-by-token reading's; the
    whole-call fit, with the rounds as clusters, widens rather than passing 25 disturbed points as independent."""
    idle = row(ledger.build({"speed": [speed_record(1.0)]}), "D9")
    loaded = row(ledger.build({"speed": [speed_record(1.0, load=4.0)]}), "D9")
    assert idle["verdict"] == loaded["verdict"] == "verified"
    width = {name: [p["ci"][1] - p["effect"] for p in r["parts"]
                    if (p["part"] or "").startswith("O(L) inference, timed")]
             for name, r in (("idle", idle), ("loaded", loaded))}
    assert all(b > a for a, b in zip(width["idle"], width["loaded"]))


def test_d9_from_older_speed_results_without_rounds_is_not_run_here():
    old = record("speed", {"rows": [{"backend": "torch", "mixer": "lru", "mode": "step", "L": 256, "ms": 1.0,
                                     "us_per_position": 4.0}]})
    r = row(ledger.build({"speed": [old]}), "D9")
    assert r["verdict"] == "not run here" and "step_rounds: missing" in r["evidence"]


def test_ledger_json_has_every_field_of_every_part_null_where_it_does_not_apply():
    rows = ledger.build({"tasks": [tasks_record(0.01)], "speed": [speed_record(1.0)]})
    claims = ledger.ledger_json(rows)
    assert [c["claim"] for c in claims] == [c.id for c in ledger.CLAIMS]
    fields = {"part", "source", "verdict", "decides", "test", "n", "effect", "ci", "p", "alpha", "margin", "tests",
              "scope", "control", "baseline", "power", "scale", "evidence", "command"}
    for c in claims:
        assert set(c) == {"claim", "paper", "statement", "quote", "verdict", "scale", "untested", "family", "settle",
                          "parts"}
        assert set(c["quote"]) == {"source", "text", "english"} and c["quote"]["text"] and c["quote"]["english"]
        for p in c["parts"]:
            assert set(p) == fields, c["claim"]
            # every part names the command that reproduces it; D7 alone has none, and says why
            assert p["command"] or (c["claim"] == "D7" and "out of reach" in p["evidence"]), (c["claim"], p["part"])
    d4 = next(c for c in claims if c["claim"] == "D4")
    assert d4["verdict"] == "not run here"          # its experiment part has no record here
    context = next(p for p in d4["parts"] if (p["part"] or "").startswith("struggles") and p["decides"])
    assert context["test"].startswith("Welch's t, one-sided") and context["margin"] is None and context["alpha"] == 0.05
    assert context["control"] == {"name": "context-shift-attention", "learned": True}
    assert context["command"] == "linrnn report --recompute --out DIR"
    d7 = next(c for c in claims if c["claim"] == "D7")["parts"][0]
    assert d7["test"] is None and d7["n"] is None and d7["ci"] is None and d7["control"] is None
    assert "untested" in d4 and d4["untested"]
    d9 = next(c for c in claims if c["claim"] == "D9")
    assert d9["settle"] is None and "intersection-union" in d9["family"]    # PyTorch's per-token time: a test
    import json

    json.dumps(claims, allow_nan=False)          # valid JSON: no NaN anywhere


def test_a_claim_of_a_two_claim_experiment_waits_only_for_its_own_runs():
    """speech holds R7 (SC35) and D6 (SC10): in an interrupted record with every SC10 run and SC35 runs still missing,
    D6's parts are judged and R7's say which of their runs are missing; a complete record decides every claim."""
    from types import SimpleNamespace

    from linrnn.reports.ledger import _interrupted

    jobs = [SimpleNamespace(name=f"{t}-{m}-{s}", labels={"task": t, "model": m, "seed": s})
            for t in ("sc10", "sc35") for m in ("dlr", "lru") for s in range(3)]
    plan = SimpleNamespace(all_jobs=lambda quick: jobs)
    stored = {"quick": False, "complete": False, "runs": [{"name": j.name} for j in jobs[:-2]]}
    assert _interrupted(stored, plan, {"task": "sc10"}) is None
    assert _interrupted(stored, plan, {"task": "sc35"}).startswith("2 of the runs this claim reads (task sc35)")
    assert "sc35-lru-1" in _interrupted(stored, plan, {"task": "sc35"})
    assert _interrupted(stored, plan, None) == "the experiment was interrupted before its last run"
    assert _interrupted({**stored, "complete": True}, plan, None) is None
    assert _interrupted({**stored, "complete": True}, plan, {"task": "sc35"}) is None

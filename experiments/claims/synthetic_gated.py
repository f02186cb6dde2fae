"""The experiment `synthetic-gated`: the question D4 leaves open, asked of a gated recurrence. A finding of this
project, not a claim of the papers (no claim, so the ledger settles nothing from it).

The DLR paper finds that linear RNNs with a fixed transition "struggle" where the manipulation depends on the context
(D4; reproduced here at the control's length, L = 16: DLR 0.48 against attention 0.78). The field's answer since is a
recurrence whose transition the input chooses; Griffin's RG-LRU is the LRU's direct descendant with such a gate. So:
at D4's budget, does the RG-LRU learn what DLR and the LRU do not?

The runs are D4's (`synthetic_tasks.py`) with the RG-LRU beside them: the same tasks, lengths, seeds, blocks, steps,
learning rates and data, the RG-LRU at its authors' initialisation (RecurrentGemma's; `linrnn.tasks.config`'s
defaults); DLR's, the LRU's and attention's runs are the finished rows of D4's stored record wherever the config is
the same (`reuse_or_train`), so only the RG-LRU trains.

The rule, fixed before any RG-LRU run (`finding`; alpha 0.05 throughout, statsmodels and SciPy through
`linrnn.experiments.decide.stats`):

1. ContextShift at the control's setting (L = 16, 2 blocks, 1,000 steps, 12 seeds per arm), the question itself:
   a. the RG-LRU learned it: its R^2 above the higher of D4's fails bar (0.5) and the best trivial predictor, a
      one-sided one-sample t (an arm that did not learn decides no comparison below: 1b reads "not shown");
      CHANGED after the outcome, said in the finding: the gate of 1b is the project's own "learned" (above the best
      trivial predictor, every arm of a comparison: docs/claims.md), which the registered rule had replaced by the
      fails bar; 1a is that, and the fails bar is reported beside as 1a' (each comparison says what the registered
      gate would have left undecided);
   b. one family, Holm over its three one-sided Welch tests: the RG-LRU above the LRU, above DLR, and below the
      attention control (the control learned, as in D4). "The gate closes the gap" would be the first two shown and
      the third not; "it struggles too" the third shown;
2. the 11 tasks at L = 64 (6 blocks, 500 steps, 3 seeds per arm): per task, the RG-LRU against the LRU, a two-sided
   Welch t, Holm over the 11; each model's "learned" against the task's trivial bar; the mean R^2 per group of tasks
   (few kernels, many kernels, context-dependent) beside, deciding nothing. Three seeds decide only large effects:
   every undecided comparison says the seeds per arm that 80 % power needs at its observed effect.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from linrnn.experiments.decide import stats
from linrnn.experiments.decide.evidence import (FAILS_R2, baseline_of, diverged, mean_sd, power_two_arms, regression_learned,
                                         trivial_for)
from linrnn.experiments.claims.runner import STORED_DIR, Control, Experiment, Job, run_job, stored_rows
from linrnn.experiments.claims.synthetic_tasks import (CONTEXT_CONTROL, CONTEXT_CONTROL_QUICK, D4_CONTEXT_SEEDS, D4_GROUPS,
                                                D4_LAYERS, D4_SEEDS)
from linrnn.base.errors import LinrnnError
from linrnn.base.results import ExperimentRecord, ResultsError, read, to_dict

NAME = "synthetic-gated"
GATED = "rglru"
BESIDE = ("dlr", "lru")                 # D4's recurrent arms this one stands beside (RotRNN's question is D4's own)
CONTROL = "attention"
D4_RECORD = STORED_DIR / "experiment-synthetic-tasks.json"     # where DLR's, the LRU's and attention's rows come from
TASKS_SETTING = {"length": 64, "steps": 500, "layers": D4_LAYERS, "lr": 5e-3}       # D4's 11-task setting
TASKS_QUICK = {"length": 16, "steps": 30, "layers": 2, "lr": 5e-3}


def _job(task: str, model: str, setting: dict, seed: int) -> Job:
    from linrnn.tasks.grid import grid_config

    config = grid_config(task, model, "torch", setting["length"], setting["steps"], seed, n_layers=setting["layers"],
                         lr=setting["lr"])
    return Job({"task": task, "model": model, "backend": "torch", "group": D4_GROUPS[task],
                "length": setting["length"], "seed": seed}, config.to_dict())


def jobs(quick: bool) -> list[Job]:
    """ContextShift at the control's setting first (the question), then the 11 tasks; seed-major, so an interrupted
    record holds whole replicates."""
    context = CONTEXT_CONTROL_QUICK if quick else CONTEXT_CONTROL
    context_seeds = (0,) if quick else D4_CONTEXT_SEEDS
    out = [_job("context_shift", model, context, seed) for seed in context_seeds
           for model in (GATED, *BESIDE, CONTROL)]
    tasks = ("shift", "context_shift") if quick else tuple(D4_GROUPS)
    setting, seeds = (TASKS_QUICK, (0,)) if quick else (TASKS_SETTING, D4_SEEDS)
    return out + [_job(task, model, setting, seed) for seed in seeds for task in tasks for model in (GATED, *BESIDE)]


def controls(quick: bool) -> list[Control]:
    """Attention on ContextShift at its own setting, this experiment's attention arm (D4's control runs, reused)."""
    c = CONTEXT_CONTROL_QUICK if quick else CONTEXT_CONTROL
    return [Control("context-shift-attention", "context_shift",
                    f"ContextShift at L = {c['length']} with causal softmax attention ({c['layers']} blocks, "
                    f"{c['steps']:,} steps): D4's control, its runs reused; learned when its validation R^2 is above "
                    f"{FAILS_R2}", arm={"model": CONTROL, "task": "context_shift", "length": c["length"]},
                    bar=FAILS_R2)]


def d4_rows(path: Path = D4_RECORD) -> list[dict]:
    """The finished rows of D4's stored record (none where it is missing or unreadable: every job then trains)."""
    try:
        record = to_dict(read(path, ExperimentRecord))
    except (ResultsError, LinrnnError, OSError):
        return []
    return [r for r in record["runs"] if isinstance(r, dict) and isinstance(r.get("name"), str)]


def reuse_or_train(job: Job, data_root: Path, runs_root: Path, progress: bool) -> list[dict]:
    """D4's finished row of the same config, relabelled as this job's (a control's run becomes this experiment's arm),
    with no time spent here; else one training run."""
    if job.labels["model"] != GATED:
        found = stored_rows(job, d4_rows())
        if found:
            row = {k: v for k, v in found[0].items() if k != "control"}
            return [{**row, "name": job.name, "reused_from": "synthetic-tasks"}]
    return [run_job(job, data_root, runs_root, progress)]


def scale(quick: bool) -> str:
    if quick:
        return "toy: ContextShift at L = 8 and Shift and ContextShift at L = 16, one seed"
    c = CONTEXT_CONTROL
    return (f"D4's runs with the RG-LRU beside them: ContextShift at L = {c['length']} ({c['layers']} blocks of "
            f"H = 32, {c['steps']:,} steps, {len(D4_CONTEXT_SEEDS)} seeds) for the RG-LRU, DLR, the LRU and attention "
            f"(D4's control); the 11 synthetic tasks at L = {TASKS_SETTING['length']} ({D4_LAYERS} blocks, "
            f"{TASKS_SETTING['steps']} steps, {len(D4_SEEDS)} seeds) for the RG-LRU, DLR and the LRU; the RG-LRU at "
            "RecurrentGemma's initialisation (sigma(Lambda) on the ring [0.9, 0.999], c = 8, dense gates); the other "
            "arms are D4's finished runs, reused; PyTorch")


# -- the finding ---------------------------------------------------------------------------------------------

def _values(rows: list[dict], model: str, task: str, length: int) -> list[float]:
    return [float(r["value"]) for r in rows if r.get("model") == model and r.get("task") == task
            and int(r.get("length") or 0) == length and not diverged(r)]


def _first(rows: list[dict], model: str, task: str, length: int) -> dict | None:
    return next((r for r in rows if r.get("model") == model and r.get("task") == task
                 and int(r.get("length") or 0) == length), None)


def _seconds(rows: list[dict], model: str, task: str, length: int) -> float | None:
    times = [r["steps"] * r["seconds_per_step"] for r in rows if r.get("model") == model and r.get("task") == task
             and int(r.get("length") or 0) == length and r.get("steps") and r.get("seconds_per_step")]
    return float(np.mean(times)) if times else None


def _learned(stored: dict, rows: list[dict], model: str, task: str, length: int, bar: float | None) -> dict:
    values = _values(rows, model, task, length)
    row = _first(rows, model, task, length)
    trivial = baseline_of(trivial_for(stored, row)) if row else None
    ok, words = regression_learned(values, bar, trivial) if values else (None, "no finished run")
    return {"model": model, "task": task, "length": length, "learned": ok, "evidence": words}


def _comparison(question: str, a: list[float], b: list[float], side: str, names: tuple[str, str],
                seconds: tuple[float | None, float | None]) -> dict:
    if min(len(a), len(b)) < 2:
        return {"question": question, "test": None, "evidence": f"{names[0]} {mean_sd(a)}, {names[1]} {mean_sd(b)}: "
                "fewer than 2 runs in an arm", "power": None}
    test = stats.welch(a, b) if side == "two-sided" else stats.welch_one_sided(
        a, b, side, name=f"Welch's t, one-sided ({names[0]} {'above' if side == 'greater' else 'below'} {names[1]})")
    return {"question": question, "test": test, "side": side, "a": a, "b": b, "names": names, "seconds": seconds,
            "evidence": f"{names[0]} {mean_sd(a)}, {names[1]} {mean_sd(b)}"}


def _decide(entry: dict, allowed: bool, why_not: str = "") -> dict:
    """A comparison's verdict after Holm (`entry["test"]` adjusted): shown, or not shown with what would settle it."""
    test = entry["test"]
    out = {k: v for k, v in entry.items() if k not in ("a", "b", "seconds", "names", "test", "registered")}
    if test is None:
        return {**out, "verdict": "not shown", "test": None}
    words = entry["evidence"] + "; " + test.words(f"{entry['names'][0]} - {entry['names'][1]}")
    if entry.get("registered"):
        words += f" ({entry['registered']})"
    if not allowed:
        return {**out, "verdict": "not shown", "test": test.to_dict(), "evidence": f"{words}; {why_not}",
                "power": None}
    if test.significant and min(test.n) >= stats.MIN_SEEDS:
        return {**out, "verdict": "shown", "test": test.to_dict(), "evidence": words, "power": None}
    side = entry["side"]
    sign = -1.0 if side == "less" else 1.0
    power = power_two_arms(entry["a"], entry["b"], goal="difference", side="one-sided" if side != "two-sided" else
                           "two-sided", effect=sign * test.effect if side != "two-sided" else abs(test.effect),
                           seconds=entry["seconds"], what=entry["question"])
    return {**out, "verdict": "not shown", "test": test.to_dict(), "evidence": words, "power": power}


def context_shift_finding(stored: dict, rows: list[dict], length: int) -> list[dict]:
    """Part 1 of the rule (module docstring) at ContextShift length `length`."""
    task = "context_shift"
    gated, lru, dlr, control = (_values(rows, m, task, length) for m in (GATED, "lru", "dlr", CONTROL))
    secs = {m: _seconds(rows, m, task, length) for m in (GATED, "lru", "dlr", CONTROL)}
    learned = {m: _learned(stored, rows, m, task, length, None) for m in (GATED, "lru", "dlr")}   # the guide's
    not_failing = _learned(stored, rows, GATED, task, length, FAILS_R2)
    control_learned = _learned(stored, rows, CONTROL, task, length, FAILS_R2)
    family = [_comparison(f"the RG-LRU above the LRU on ContextShift at L = {length}", gated, lru, "greater",
                          ("RG-LRU", "LRU"), (secs[GATED], secs["lru"])),
              _comparison(f"the RG-LRU above DLR on ContextShift at L = {length}", gated, dlr, "greater",
                          ("RG-LRU", "DLR"), (secs[GATED], secs["dlr"])),
              _comparison(f"the RG-LRU below the attention control on ContextShift at L = {length}", gated, control,
                          "less", ("RG-LRU", "attention"), (secs[GATED], secs[CONTROL]))]
    tested = [e for e in family if e["test"] is not None]
    for e, adjusted in zip(tested, stats.holm([e["test"] for e in tested])):
        e["test"] = adjusted
    decided = []
    for i, (e, other) in enumerate(zip(family, ("lru", "dlr", None))):
        if other is not None:
            both = learned[GATED]["learned"] is True and learned[other]["learned"] is True
            registered = not_failing["learned"] is True
            e = {**e, "registered": (f"the rule as registered gated this comparison on 1a' (the RG-LRU above "
                                     f"{FAILS_R2:g}), which would leave it undecided" if not registered else "")}
            decided.append(_decide(e, both, "an arm did not learn the task (above its trivial predictor): it decides "
                                            "no comparison"))
        else:
            decided.append(_decide(e, control_learned["learned"] is True, "the control did not learn: it vouches for "
                                   "nothing"))
    verdict = {True: "shown", False: "not shown", None: "not decidable"}
    return [{"question": f"the RG-LRU learns ContextShift at L = {length} (1a: R^2 above the best trivial predictor)",
             "verdict": verdict[learned[GATED]["learned"]], "evidence": learned[GATED]["evidence"], "test": None,
             "power": None},
            {"question": f"the RG-LRU does not fail ContextShift at L = {length} (1a': R^2 above D4's fails bar "
                         f"{FAILS_R2:g})", "verdict": verdict[not_failing["learned"]],
             "evidence": not_failing["evidence"], "test": None, "power": None},
            {"question": f"the attention control learned ContextShift at L = {length}",
             "verdict": verdict[control_learned["learned"]], "evidence": control_learned["evidence"], "test": None,
             "power": None}] + decided


def tasks_finding(stored: dict, rows: list[dict], length: int) -> list[dict]:
    """Part 2 of the rule: per task, the RG-LRU against the LRU (two-sided Welch, Holm over the tasks)."""
    tasks = [t for t in D4_GROUPS if _values(rows, GATED, t, length)]
    family = [_comparison(f"the RG-LRU against the LRU on {t} at L = {length}", _values(rows, GATED, t, length),
                          _values(rows, "lru", t, length), "two-sided", ("RG-LRU", "LRU"),
                          (_seconds(rows, GATED, t, length), _seconds(rows, "lru", t, length))) for t in tasks]
    tested = [e for e in family if e["test"] is not None]
    for e, adjusted in zip(tested, stats.holm([e["test"] for e in tested])):
        e["test"] = adjusted
    out = []
    for t, e in zip(tasks, family):
        both = [_learned(stored, rows, m, t, length, None) for m in (GATED, "lru")]
        allowed = all(b["learned"] is True for b in both)
        entry = _decide(e, allowed, "an arm did not learn the task (above its trivial predictor): it decides no "
                                    "comparison")
        entry["learned"] = {b["model"]: b["learned"] for b in both}
        out.append(entry)
    return out


def group_means(rows: list[dict], length: int) -> dict[str, dict[str, float]]:
    """model -> group -> the mean over the group's tasks of each task's mean R^2 (beside, deciding nothing)."""
    out: dict[str, dict[str, float]] = {}
    for model in (GATED, *BESIDE):
        for group in ("few", "many", "context"):
            means = [float(np.mean(v)) for t, g in D4_GROUPS.items() if g == group
                     for v in [_values(rows, model, t, length)] if v]
            if means:
                out.setdefault(model, {})[group] = float(np.mean(means))
    return out


def finding(stored: dict) -> dict:
    """The rule of the module docstring on a stored record of this experiment -> {"context_shift": [...], "tasks":
    [...], "groups": {...}, "cost": {...}}; each entry a question, its verdict ("shown", "not shown", "not
    decidable"), its evidence in words, its test (`stats.Test.to_dict()`) and, where not shown, what would settle it."""
    rows = [r for r in stored["runs"] if isinstance(r, dict)]
    quick = bool(stored.get("quick"))
    c = CONTEXT_CONTROL_QUICK if quick else CONTEXT_CONTROL
    setting = TASKS_QUICK if quick else TASKS_SETTING
    trained = [r for r in rows if r.get("model") == GATED]
    return {"context_shift": context_shift_finding(stored, rows, c["length"]),
            "tasks": tasks_finding(stored, [r for r in rows if int(r.get("length") or 0) == setting["length"]],
                                   setting["length"]),
            "groups": group_means(rows, setting["length"]),
            "cost": {"runs_trained": len(trained),
                     "training_seconds": round(sum(r["steps"] * r["seconds_per_step"] for r in trained
                                                   if r.get("steps") and r.get("seconds_per_step")), 1),
                     "wall_seconds": round(sum(r.get("wall_seconds") or 0.0 for r in trained), 1),
                     "runs_reused": sum(1 for r in rows if r.get("reused_from"))}}


def finding_lines(found: dict) -> list[str]:
    """The finding as text lines (`linrnn experiment synthetic-gated` prints them; docs/experiments.md quotes them)."""
    lines = []
    for part in ("context_shift", "tasks"):
        for e in found[part]:
            power = e.get("power") or {}
            settle = (f" What would settle it: {power['seeds_per_arm']} seeds per arm ({power['assumption']})"
                      if power.get("seeds_per_arm") else (f" {power['assumption']}" if power else ""))
            lines.append(f"- {e['question']}: {e['verdict']}. {e['evidence']}.{settle}")
    for model, groups in found["groups"].items():
        lines.append(f"- {model}: " + ", ".join(f"{g} mean R^2 {v:.3f}" for g, v in groups.items()))
    cost = found["cost"]
    lines.append(f"- cost: {cost['runs_trained']} RG-LRU runs trained ({cost['training_seconds']:.0f} s of training, "
                 f"{cost['wall_seconds']:.0f} s wall), {cost['runs_reused']} runs reused from D4's record")
    return lines


EXPERIMENT = Experiment(
    NAME, (), "A gated recurrence on D4's tasks: the RG-LRU beside DLR, the LRU and attention (this project's finding, "
    "no claim of the papers)",
    "validation R^2 at the end of training: does the RG-LRU learn ContextShift, where DLR and the LRU struggle, and "
    "how does it do on the 11 tasks", jobs, scale, run_job=reuse_or_train, controls=controls,
    brief=f"ContextShift at L = {CONTEXT_CONTROL['length']} ({len(D4_CONTEXT_SEEDS)} seeds) and the 11 tasks at "
          f"L = {TASKS_SETTING['length']} ({len(D4_SEEDS)} seeds), D4's budget; only the RG-LRU trains",
    note="a finding of this project, not a claim of the papers: the ledger settles nothing from it; DLR's, the LRU's "
         "and attention's runs are D4's (experiment-synthetic-tasks.json), reused where the config is the same")

"""Training at reduced scale: the papers' data tasks trained on this machine, rendered from the stored runs.

The runs are `linrnn reduced-training` (`linrnn.experiments.reduced_training`: generated data in the real
on-disk formats, small models, a budget a 2-core CPU affords). They take tens of minutes, so the report does not train: it
renders the stored files `reports/results/training_reduced*.json`, each written by

    linrnn reduced-training --data DIR --out reports/results/training_reduced_cpu.json

(with its command, date, machine and library versions). A file that is not such a record is skipped,
with the reason on the page. Whether a run scored above its baseline is not read from the file: the
template compares the row's test metric with its baseline when the page renders, and shows the file's
own flag only where the two disagree.

    data = {"stored": [{"file", "command", "date", "machine", "libraries", "code_versions",
                        "runs": [run, ...]}, ...],
            "stored_skipped": [[file, reason], ...],
            "plots": {"task_<task>": figure, ...}}     one figure per task, every file's runs of it

Each run is the file's run record (`linrnn.experiments.reduced_training.run_one`) with its per-step
`train_loss` replaced by window means, {"step": [...], "loss": [...]}, at most LOSS_POINTS of them.
"""

from __future__ import annotations

import math
from pathlib import Path

from linrnn.base.results import STORED_DIR, ReducedTrainingRecord
from linrnn.reports import plots
from linrnn.reports.results import read_stored
from linrnn.experiments.reduced_training import thin

NAME = "training_reduced"
TITLE = "Training at reduced scale: the papers' data tasks on this machine"
TEMPLATE = "training_reduced.html.j2"

STORED_GLOB = "training_reduced*.json"
COMMAND = "linrnn reduced-training --data DIR --out reports/results/training_reduced_cpu.json"
EXPERIMENT = "reduced_training"
RUN_KEYS = ("name", "task", "model", "backend", "scale", "steps", "seconds_per_step", "train_loss", "evaluations",
            "metric", "test_at_best_val", "baseline", "above_baseline", "code_version")
LOSS_POINTS = 300

COLOURS = {"torch": "C0", "jax": "C1"}
MARKERS = {"torch": "o", "jax": "s"}
LINES = ("-", "--", ":", "-.")          # the k-th stored file's runs


def compute(quick: bool, progress) -> tuple[dict, dict]:
    stored, skipped = load_stored(STORED_DIR)
    data = {"stored": stored, "stored_skipped": skipped}
    data["plots"] = figures(stored)
    return data, {"stored_dir": str(STORED_DIR), "stored_glob": STORED_GLOB, "command": COMMAND}


def summary(data: dict) -> str:
    runs = [r for s in data["stored"] for r in s["runs"]]
    if not runs:
        return "No stored runs."
    above = sum(_is_number(r.get("test_at_best_val")) and _is_number((r.get("baseline") or {}).get("value"))
                and r["test_at_best_val"] > r["baseline"]["value"] for r in runs)
    return (f"{above} of {len(runs)} runs score above what a model that learnt nothing scores (generated data, "
            "reduced scale: they show the pipelines train, not the papers' numbers).")


def load_stored(directory: Path) -> tuple[list[dict], list[list[str]]]:
    """Every valid stored file in `directory` (loss curves thinned), and [file, reason] for the rest."""
    files, skipped = read_stored(directory, STORED_GLOB, ReducedTrainingRecord, check_stored)
    stored = []
    for path, record in files:
        runs = [{**run, "train_loss": thin(run["train_loss"], LOSS_POINTS)} for run in record["runs"]]
        stored.append({"file": path.name, **{k: record[k] for k in ("command", "date", "machine", "libraries")},
                       "code_versions": sorted({run["code_version"] for run in runs}), "runs": runs})
    return stored, skipped


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_stored(record) -> str | None:
    """What is wrong with a stored file (None: nothing), so that the section can skip it with the reason."""
    for key, kind, what in (("command", str, "text"), ("date", str, "text"), ("machine", dict, "an object"),
                            ("libraries", dict, "an object"), ("runs", list, "a list")):
        if not isinstance(record.get(key), kind):
            return f"{key}: expected {what}"
    if not {"label", "platform", "cpus"} <= set(record["machine"]):
        return "machine: expected an object with label, platform and cpus"
    for i, run in enumerate(record["runs"]):
        where = f"runs[{i}]"
        if not isinstance(run, dict) or not set(RUN_KEYS) <= set(run):
            return f"{where}: expected an object with {', '.join(RUN_KEYS)}"
        for key in ("name", "task", "model", "backend", "scale", "metric"):
            if not isinstance(run[key], str):
                return f"{where}.{key}: expected text, found {run[key]!r}"
        if not _is_number(run["steps"]) or not _is_number(run["seconds_per_step"]):
            return f"{where}: expected numbers in steps and seconds_per_step"
        base = run["baseline"]
        if not isinstance(base, dict) or not isinstance(base.get("rule"), str) or not _is_number(base.get("value")):
            return f"{where}.baseline: expected an object with rule (text) and value (a number)"
        if run["test_at_best_val"] is not None and not _is_number(run["test_at_best_val"]):
            return f"{where}.test_at_best_val: expected a number or null, found {run['test_at_best_val']!r}"
        if not isinstance(run["above_baseline"], bool):
            return f"{where}.above_baseline: expected true or false, found {run['above_baseline']!r}"
        if not isinstance(run["train_loss"], list) or not all(_is_number(x) for x in run["train_loss"]):
            return f"{where}.train_loss: expected a list of numbers"
        if not isinstance(run["evaluations"], list):
            return f"{where}.evaluations: expected a list"
        for j, e in enumerate(run["evaluations"]):
            if not (isinstance(e, dict) and _is_number(e.get("step")) and isinstance(e.get("val"), dict)
                    and _is_number(e["val"].get(run["metric"]))):
                return f"{where}.evaluations[{j}]: expected an object with step and val.{run['metric']} (numbers)"
    return None


def figures(stored: list[dict]) -> dict:
    """{'task_<task>': figure} per task: the training loss and the validation metric against step, every
    stored run of the task (both frameworks, every file) in one figure, the baselines as horizontal lines."""
    by_task: dict[str, list[tuple[int, str, dict]]] = {}
    for k, s in enumerate(stored):
        for run in s["runs"]:
            by_task.setdefault(run["task"], []).append((k, s["file"], run))
    out = {}
    for task, runs in by_task.items():
        loss, val, hlines = [], [], []
        metric = runs[0][2]["metric"]
        for k, file, run in runs:
            label = run["name"] if len(stored) == 1 else f"{run['name']} ({file})"
            colour, line = COLOURS.get(run["backend"], "C7"), LINES[k % len(LINES)]
            loss.append(plots.series(label, run["train_loss"]["step"], run["train_loss"]["loss"], colour, line=line))
            val.append(plots.series(label, [e["step"] for e in run["evaluations"]],
                                    [e["val"][run["metric"]] for e in run["evaluations"]], colour, line=line,
                                    marker=MARKERS.get(run["backend"], "x")))
            baseline = plots.hline(run["baseline"]["value"], f"baseline: {run['baseline']['rule']}")
            if math.isfinite(baseline["y"]) and baseline not in hlines:      # runs on the same data share one
                hlines.append(baseline)
        out[f"task_{task}"] = plots.figure(
            f"{task}: training loss and validation {metric} against step (dashed grey: the baseline)",
            [plots.panel("training loss", "optimiser step", "training loss (window means)", loss),
             plots.panel(f"validation {metric}", "optimiser step", f"validation {metric}", val, hlines=hlines)],
            10.0, 3.4)
    return out

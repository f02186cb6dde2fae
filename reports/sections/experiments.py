"""Experiments: the papers' empirical claims at this machine's scale, rendered from the stored records.

The experiments (`linrnn experiment NAME`, `linrnn.experiments.claims`) train for minutes to hours, so
the report does not run them: it renders `reports/results/experiment-*.json`, each with its command,
date, machine, library versions and total time. A file that is not such a record is skipped with the
reason on the page; an experiment with no stored record is listed with the command that makes it.
Verdicts are the ledger's (`linrnn.reports.ledger`), settled from the runs when the page renders.

    data = {"stored": [{"file", "experiment", "claims", "title", "question", "scale", "factor", "note",
                        "quick", "complete", "command", "date", "machine", "libraries", "seconds",
                        "keys": [label, ...], "cells": [cell, ...], "runs": [run, ...]}, ...],
            "stored_skipped": [[file, reason], ...],
            "missing": [{"experiment", "claims", "title", "command"}, ...]}

`cells` are `linrnn.experiments.claims.runner.cells` (the runs grouped over seeds); runs keep their labels,
metric, value, status, steps, time per step and state size `d_state` (curves and the rest of the config
are left in the file).
"""

from __future__ import annotations

import math
from pathlib import Path

from scipy import stats as scipy_stats

from linrnn.experiments import claims as experiments
from linrnn.experiments.claims import runner, synthetic_gated
from linrnn.reports import plots
from linrnn.base.results import ExperimentRecord
from linrnn.reports.results import read_stored
from linrnn.reports.sections.training_reduced import _is_number

NAME = "experiments"
TITLE = "Experiments: the empirical claims at this machine's scale"
TEMPLATE = "experiments.html.j2"
LEAD = ("dots-",)       # figures shown above the section's details (`render`): every experiment's dot plot

STORED_DIR = runner.STORED_DIR
# The experiments that ask a question of this project's own, with no claim (the ledger does not read them): experiment
# -> its stored record -> the finding in lines, shown under its table
FINDINGS = {synthetic_gated.NAME: lambda record: synthetic_gated.finding_lines(synthetic_gated.finding(record))}
STORED_GLOB = "experiment-*.json"
RUN_KEYS = ("name", "status", "metric", "value", "steps", "seconds_per_step", "parameters", "error",
            # what the ledger's tests and controls read: the seed, the control a run belongs to, the chance levels
            # and test-set size, the per-example test predictions (paired tests), the data set and the time a run
            # took (a control must share the arms' task, length and data; power's compute), the final metrics
            # (norms-listops), how it was scored
            "seed", "backend", "control", "baseline", "examples", "predictions", "best_step", "stopped_early",
            "data", "wall_seconds", "final", "scored", "stage")
# the config fields the rules read: a run's setting (task, length, data options) and its depth (synthetic-tasks)
CONFIG_KEYS = ("task", "length", "n_layers", "data_options", "steps", "lr", "batch_size", "eval_batches")

RUN_SHAPE = {"name": str, "status": frozenset({"ok", "diverged"}), "config": dict}
RECORD_SHAPE = {"experiment": str, "claims": [str], "title": str, "question": str, "scale": str, "factor": str,
                "note": str, "quick": bool, "complete": bool, "command": str, "date": str, "machine": dict,
                "libraries": dict, "seconds": None, "runs": [RUN_SHAPE]}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    stored, skipped = load_stored(STORED_DIR)
    found = {s["experiment"] for s in stored if not s["quick"]}
    missing = [{"experiment": e.name, "claims": list(e.claims), "title": e.title,
                "command": f"linrnn experiment {e.name} --data DIR"}
               for e in experiments.EXPERIMENTS.values() if e.name not in found]
    return ({"stored": stored, "stored_skipped": skipped, "missing": missing},
            {"stored_dir": str(STORED_DIR), "stored_glob": STORED_GLOB})


def check_stored(record) -> str | None:
    """What is wrong with a stored record's content (None: nothing); its envelope and fields are checked by
    `linrnn.base.results.read`."""
    from linrnn.reports.ledger import conforms

    problem = conforms(record, RECORD_SHAPE, "record")
    if problem:
        return problem
    if record["experiment"] not in experiments.EXPERIMENTS:
        return f"experiment: expected one of {', '.join(experiments.EXPERIMENTS)}, found {record['experiment']!r}"
    keys = runner.table_keys(record)
    for i, run in enumerate(record["runs"]):
        absent = [k for k in keys if k not in run and k not in runner.OPTIONAL_KEYS
                  and not (run.get("control") and k != "task")]
        if absent:                      # a positive control's run needs only its task (it is not in the table)
            return f"record.runs[{i}]: missing the label(s) {', '.join(absent)}"
        if run["status"] == "ok" and not _is_number(run.get("value")):
            return f"record.runs[{i}].value: expected a number for a finished run"
    return None


def _finding(record: dict) -> list[str]:
    """The finding of an experiment with no claim (`FINDINGS`) from its record, in lines; [] for the others, and for a
    record it cannot read (one line saying why)."""
    if record["experiment"] not in FINDINGS or record.get("claims"):
        return []
    try:
        return FINDINGS[record["experiment"]](record)
    except (KeyError, TypeError, ValueError) as err:      # a record of older code, or a broken one: said, not raised
        return [f"the finding could not be read from this record ({type(err).__name__}: {err})"]


def load_stored(directory: Path) -> tuple[list[dict], list[list[str]]]:
    """Every valid stored record in `directory` with its cells, and [file, reason] for the rest."""
    files, skipped = read_stored(directory, STORED_GLOB, ExperimentRecord, check_stored)
    stored = []
    for path, record in files:
        keys = runner.table_keys(record)
        # d_state: the state size of each run (long-shift's verdict compares L with DLR's N)
        runs = [{**{k: run.get(k) for k in keys}, **{k: run.get(k) for k in RUN_KEYS},
                 "config": {k: run["config"].get(k) for k in CONFIG_KEYS if k in run["config"]},
                 "d_state": runner.mixer_field(run["config"], "d_state")} for run in record["runs"]]
        training = record.get("training_seconds")                   # absent from older records
        stored.append({"file": path.name, **{k: record[k] for k in RECORD_SHAPE if k != "runs"},
                       "training_seconds": training if _is_number(training) else None,
                       "brief": record.get("brief") if isinstance(record.get("brief"), str) else "",
                       "controls": record.get("controls") if isinstance(record.get("controls"), list) else [],
                       "trivial": record.get("trivial") if isinstance(record.get("trivial"), list) else [],
                       "design": record.get("design") if isinstance(record.get("design"), list) else [],
                       "finding": _finding(record),
                       "keys": list(keys), "cells": runner.table_cells(record), "runs": runs})
    return stored, skipped


# -- what the page shows above the details ------------------------------------------------------------

MODEL_COLOURS = {"rotrnn": "C0", "lru": "C1", "dlr": "C2", "s4d": "C3", "s5": "C4", "attention": "C5", "rglru": "C6"}
PANEL_KEYS = ("group", "task")       # labels a panel is per (and that its categories therefore leave out)
MAX_COLUMNS = 4
LEVEL = 0.95                         # the interval drawn around each mean


def interval(cell: dict) -> tuple[float, float]:
    """The mean's two-sided LEVEL interval from the seeds (Student's t); the mean itself with fewer than 2 seeds."""
    n, mean, sd = cell.get("n") or 0, cell["mean"], cell.get("sd")
    if n < 2 or sd is None:
        return mean, mean
    half = scipy_stats.t.ppf(0.5 + LEVEL / 2, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _trivial_bar(stored: dict, task) -> float | None:
    """The best trivial predictor's score of a task in the record, where it has one setting of that task (a task run at
    several lengths has several bars: none is drawn)."""
    scores = {e["best"]["score"] for e in stored.get("trivial") or [] if isinstance(e, dict) and e.get("task") == task
              and isinstance(e.get("best"), dict) and isinstance(e["best"].get("score"), (int, float))}
    return scores.pop() if len(scores) == 1 else None


def dot_plot(stored: dict) -> dict | None:
    """One experiment as a dot plot: a panel per task, a category per cell, each seed's value a dot, the mean a
    diamond with its interval; the chance level, where the cells have one, as a dotted line, and the task's best
    trivial predictor (the bar "learned" is judged against) as a dashed one. None: no values."""
    keys = [k for k in stored["keys"] if k not in PANEL_KEYS]
    tasks = list(dict.fromkeys(c.get("task") for c in stored["cells"]))
    panels, widest = [], 0
    for task in tasks:
        cells = [c for c in stored["cells"] if c.get("task") == task and c.get("mean") is not None]
        if not cells:
            continue
        items = []
        for model in dict.fromkeys(c.get("model") for c in cells):
            colour = MODEL_COLOURS.get(str(model), "C7")
            at = [(i, c) for i, c in enumerate(cells) if c.get("model") == model]
            xs, ys = [], []
            for i, c in at:
                values = c.get("values") or []
                for k, v in enumerate(values):
                    xs.append(i if len(values) == 1 else i - 0.3 + 0.3 * k / (len(values) - 1))
                    ys.append(v)
            items.append(plots.series(f"{model}: each seed", xs, ys, colour, line="none", marker="o"))
            seeded = [(i, c) for i, c in at if (c.get("n") or 0) >= 2]      # one seed: its dot is the mean
            bounds = [interval(c) for _, c in seeded]
            if seeded:
                items.append(plots.series(f"{model}: mean, {LEVEL:.0%} interval", [i + 0.2 for i, _ in seeded],
                                          [c["mean"] for _, c in seeded], colour, low=[b[0] for b in bounds],
                                          high=[b[1] for b in bounds], line="none", marker="D"))
        chance = cells[0].get("chance")
        hlines = [plots.hline(chance, "chance", line=":")] if isinstance(chance, (int, float)) else []
        bar = _trivial_bar(stored, task)
        if bar is not None:
            hlines.append(plots.hline(bar, "best trivial predictor", line="--"))
        names = [" ".join(str(c.get(k)) for k in keys) for c in cells]
        widest = max(widest, len(cells))
        panels.append(plots.panel(str(task), "", str(cells[0].get("metric") or ""), items, legend=False,
                                  hlines=hlines, xlabels=names))
    if not panels:
        return None
    columns = min(MAX_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    width = min(11.0, columns * max(2.6, 0.3 * widest + 1.0))
    return plots.figure(f"{stored['title']} ({', '.join(stored['claims'])}): each seed (dots), the mean and its "
                        f"{LEVEL:.0%} interval (diamond and bar, 2 seeds or more), per task"
                        + (" (quick record)" if stored["quick"] else ""),
                        panels, width, 2.3 * rows + 0.2, columns=columns)


def render_plots(data: dict) -> dict:
    """Figures drawn from the saved data when the page renders (so that results saved before them have them)."""
    out = {}
    for s in data["stored"]:
        fig = dot_plot(s)
        if fig is not None:
            out[f"dots-{s['experiment']}"] = fig
    return out


def summary(data: dict) -> str:
    stored = [s for s in data["stored"] if not s["quick"]]
    claims = sorted({c for s in stored for c in s["claims"]})
    text = (f"{len(stored)} experiment(s) stored, settling {', '.join(claims) or 'no claim'} at this machine's scale"
            + (f"; {len(data['missing'])} not yet run" if data["missing"] else "") + ".")
    return text + (f" Each dot is one seed; the diamond and bar are the mean and its {LEVEL:.0%} interval."
                   if stored else "")

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

`cells` are `linrnn.experiments.claims.cells` (the runs grouped over seeds); runs keep their labels,
metric, value, status, steps, time per step and state size `d_state` (curves and the rest of the config
are left in the file).
"""

from __future__ import annotations

from pathlib import Path

from linrnn.experiments import claims as experiments
from linrnn.reports.results import read_stored
from linrnn.reports.sections.training_reduced import _is_number

NAME = "experiments"
TITLE = "Experiments: the empirical claims at this machine's scale"
TEMPLATE = "experiments.html.j2"

STORED_DIR = experiments.STORED_DIR
STORED_GLOB = "experiment-*.json"
RUN_KEYS = ("name", "status", "metric", "value", "steps", "seconds_per_step", "parameters", "error",
            # what the ledger's tests and controls read: the seed, the control a run belongs to, the chance levels
            # and test-set size, the per-example test predictions (paired tests)
            "seed", "backend", "control", "baseline", "examples", "predictions", "best_step", "stopped_early")

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
    """What is wrong with a stored file (None: nothing)."""
    from linrnn.reports.ledger import conforms

    if not isinstance(record, dict) or record.get("schema_version") != experiments.SCHEMA:
        found = record.get("schema_version") if isinstance(record, dict) else None
        return f"schema_version: expected {experiments.SCHEMA}, found {found!r}"
    problem = conforms(record, RECORD_SHAPE, "record")
    if problem:
        return problem
    if record["experiment"] not in experiments.EXPERIMENTS:
        return f"experiment: expected one of {', '.join(experiments.EXPERIMENTS)}, found {record['experiment']!r}"
    keys = experiments.table_keys(record)
    for i, run in enumerate(record["runs"]):
        absent = [k for k in keys if k not in run and not (run.get("control") and k != "task")]
        if absent:                      # a positive control's run needs only its task (it is not in the table)
            return f"record.runs[{i}]: missing the label(s) {', '.join(absent)}"
        if run["status"] == "ok" and not _is_number(run.get("value")):
            return f"record.runs[{i}].value: expected a number for a finished run"
    return None


def load_stored(directory: Path) -> tuple[list[dict], list[list[str]]]:
    """Every valid stored record in `directory` with its cells, and [file, reason] for the rest."""
    files, skipped = read_stored(directory, STORED_GLOB, check_stored)
    stored = []
    for path, record in files:
        keys = experiments.table_keys(record)
        # d_state: the state size of each run (long-shift's verdict compares L with DLR's N)
        runs = [{**{k: run.get(k) for k in keys}, **{k: run.get(k) for k in RUN_KEYS},
                 "d_state": run["config"].get("d_state")} for run in record["runs"]]
        training = record.get("training_seconds")                   # absent from older records
        stored.append({"file": path.name, **{k: record[k] for k in RECORD_SHAPE if k != "runs"},
                       "training_seconds": training if _is_number(training) else None,
                       "brief": record.get("brief") if isinstance(record.get("brief"), str) else "",
                       "controls": record.get("controls") if isinstance(record.get("controls"), list) else [],
                       "keys": list(keys), "cells": experiments.table_cells(record), "runs": runs})
    return stored, skipped

"""`linrnn runs list DIR` and `linrnn runs export DIR --to tensorboard`: the run directories under a folder.

A run directory is one that `linrnn.tasks.train` wrote: `config.json` and `metrics.jsonl`, with `results.json` once
it finished. `list` shows one row per run found under DIR (DIR itself included, the folders of a sweep's `slurm/`
logs and set-aside `*.replaced-N` runs skipped):

    run         its path under DIR
    task, model, seed
    status      finished | stopped early | running, step k of N (a process holds it now) | step k of N
                (unfinished; resumes from its checkpoint's step, or starts again from 0) | not started
    best        a data task's best validation metric with the test metric there; a synthetic task's final R^2
    time        the run's training time (its steps x its time per step), unfinished: -
    slurm       where a SLURM sweep submitted the run (its folder's slurm/submitted.json): the job id and SLURM's
                state now (RUNNING, PENDING, FAILED, ...; `?` where SLURM does not answer); only when there is one

`export` replays each run's metrics.jsonl into a training-log sink (`linrnn.tasks.logsinks`), as `linrnn train
--log` would have written it live.
"""

from __future__ import annotations

import json
from pathlib import Path

from linrnn.base.errors import LinrnnError


def find(root: Path) -> list[Path]:
    """The run directories under `root` (itself included), in path order."""
    root = Path(root)
    if not root.is_dir():
        raise LinrnnError(f"runs: expected a folder of run directories, found {root}")
    found = [p.parent for p in sorted(root.rglob("config.json"))
             if (p.parent / "metrics.jsonl").exists()
             and not any(part == "slurm" or ".replaced-" in part for part in p.parent.relative_to(root).parts)]
    return found


def last_step(log: Path) -> int:
    """The last step a training log (metrics.jsonl) reached, from its last few kilobytes (0: none, or no log)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 8192))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return 0
    for line in reversed(tail.splitlines()):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue                      # a half-written last line, or the cut first one
    return 0


def _ledger(folder: Path) -> dict:
    try:
        found = json.loads((folder / "slurm" / "submitted.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


def submitted(root: Path, run_dirs: list[Path]) -> dict[Path, str]:
    """{job directory: SLURM job id} of what SLURM sweeps submitted, by their folders' slurm/submitted.json: the
    sweeps of `run_dirs` and those under `root` (jobs that have not started yet have no run directory)."""
    folders = {d.parent for d in run_dirs} | {p.parent.parent for p in Path(root).rglob("slurm/submitted.json")}
    return {folder / name: job_id for folder in sorted(folders) for name, job_id in _ledger(folder).items()}


def slurm_jobs(ids: dict[Path, str]) -> dict[Path, str]:
    """{job directory: "JOB_ID STATE"}, the states from one `squeue` call (and `sacct` for the jobs SLURM's
    controller has forgotten; "?" where SLURM does not answer)."""
    if not ids:
        return {}
    from linrnn.tasks import sweep_slurm_queue

    states = sweep_slurm_queue.states(sorted(set(ids.values())))
    return {d: f"{j} {states[j].state if states and j in states else '?'}" for d, j in ids.items()}


def describe(run_dir: Path, root: Path) -> dict:
    """One row of `list`: run, task, model, seed, status, best, seconds (None where unknown)."""
    from linrnn.base.results import RUN_RESULTS, ResultsError, RunRecord, read

    try:
        config = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    row = {"run": str(run_dir.relative_to(root)) if run_dir != root else ".", "task": config.get("task"),
           "model": config.get("model"), "seed": config.get("seed"), "status": "not started", "best": None,
           "seconds": None}
    results = run_dir / RUN_RESULTS
    if results.exists():
        try:
            record = read(results, RunRecord)
        except ResultsError as err:
            return {**row, "status": f"unreadable results ({err})"}
        row["status"] = "stopped early" if record.stopped_early else "finished"
        if record.seconds_per_step is not None:
            row["seconds"] = record.steps * record.seconds_per_step
        if record.best:                        # a data task: the monitored metric at the best validation
            val, test = record.best.get("val", {}), record.best.get("test", {})
            metric = next((m for m in ("macro_f1", "accuracy") if m in val), None) or next(iter(val), None)
            if metric:
                row["best"] = f"val {metric} {val[metric]:.4f}, test {test.get(metric, float('nan')):.4f}"
        elif record.final and "r2" in record.final:
            row["best"] = f"final R^2 {record.final['r2']:.4f}"
        return row
    from linrnn.tasks.lock import holder, run_lock

    step = last_step(run_dir / "metrics.jsonl")
    total = config.get("steps") if not config.get("epochs") else None
    of = f" of {total:,}" if isinstance(total, int) else ""
    if holder(run_lock(run_dir)) is not None:
        row["status"] = f"running, step {step:,}{of}"
    elif step:
        saved = checkpoint_step(run_dir)
        row["status"] = f"step {step:,}{of} (unfinished; " + (f"resumes from step {saved:,})" if saved
                                                              else "no checkpoint: starts again from step 0)")
    return row


def checkpoint_step(run_dir: Path) -> int:
    """The step of the run's checkpoint (or of the one before it), read from its metadata alone; 0: none."""
    import numpy as np

    for name in ("checkpoint.npz", "checkpoint.previous.npz"):
        try:
            with np.load(run_dir / name, allow_pickle=False) as data:
                return int(json.loads(str(data["__meta__"]))["step"])
        except Exception:           # absent or damaged (numpy's, zipfile's own errors): as if absent
            continue
    return 0


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}"


def table(root: Path) -> str:
    root = Path(root)
    run_dirs = find(root)
    ids = submitted(root, run_dirs)
    # a submitted job that has not started has no run directory yet: a row of its own
    run_dirs += sorted(d for d in ids if d not in run_dirs and d.is_relative_to(root))
    rows = [describe(d, root) if (d / "config.json").exists() else
            {"run": str(d.relative_to(root)), "task": None, "model": None, "seed": None, "status": "not started",
             "best": None, "seconds": None} for d in run_dirs]
    if not rows:
        return f"no run directories under {root}"
    heads = ("run", "task", "model", "seed", "status", "best", "time")
    cells = [[str(r["run"]), *("-" if r[k] is None else str(r[k]) for k in ("task", "model", "seed")), r["status"],
              r["best"] or "-", _clock(r["seconds"])] for r in rows]
    slurm = slurm_jobs(ids)
    if slurm:
        heads += ("slurm",)
        cells = [cell + [slurm.get(d, "-")] for cell, d in zip(cells, run_dirs)]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
    return "\n".join(lines + [f"{len(rows)} run(s)"])

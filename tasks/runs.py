"""`linrnn runs list DIR` and `linrnn runs export DIR --to tensorboard`: the run directories under a folder.

A run directory is one that `linrnn.tasks.train` wrote: `config.json` and `metrics.jsonl`, with `results.json` once
it finished. `list` shows one row per run found under DIR (DIR itself included, the folders of a sweep's `slurm/`
logs and set-aside `*.replaced-N` runs skipped):

    run         its path under DIR
    task, model, seed
    status      finished | stopped early | step k of N (unfinished: its checkpoint resumes it) | not started
    best        a data task's best validation metric with the test metric there; a synthetic task's final R^2
    time        the run's training time (its steps x its time per step), unfinished: -

`export` replays each run's metrics.jsonl into a training-log sink (`linrnn.tasks.logsinks`), as `linrnn train
--log` would have written it live.
"""

from __future__ import annotations

import json
from pathlib import Path

from linrnn.impls.errors import LinrnnError


def find(root: Path) -> list[Path]:
    """The run directories under `root` (itself included), in path order."""
    root = Path(root)
    if not root.is_dir():
        raise LinrnnError(f"runs: expected a folder of run directories, found {root}")
    found = [p.parent for p in sorted(root.rglob("config.json"))
             if (p.parent / "metrics.jsonl").exists()
             and not any(part == "slurm" or ".replaced-" in part for part in p.parent.relative_to(root).parts)]
    return found


def _last_step(log: Path) -> int:
    last = 0
    with open(log) as fh:
        for line in fh:
            if line.strip():
                try:
                    last = max(last, int(json.loads(line).get("step", 0)))
                except (ValueError, AttributeError):
                    continue
    return last


def describe(run_dir: Path, root: Path) -> dict:
    """One row of `list`: run, task, model, seed, status, best, seconds (None where unknown)."""
    from linrnn.impls.results import RUN_RESULTS, ResultsError, RunRecord, read

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
    step = _last_step(run_dir / "metrics.jsonl")
    if step:
        total = config.get("steps")
        row["status"] = f"step {step:,}" + (f" of {total:,}" if isinstance(total, int) else "") + " (unfinished)"
    return row


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}"


def table(root: Path) -> str:
    rows = [describe(d, Path(root)) for d in find(root)]
    if not rows:
        return f"no run directories under {root}"
    heads = ("run", "task", "model", "seed", "status", "best", "time")
    cells = [[str(r["run"]), str(r["task"]), str(r["model"]), str(r["seed"]), r["status"], r["best"] or "-",
              _clock(r["seconds"])] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
    return "\n".join(lines + [f"{len(rows)} run(s)"])

"""The papers' data tasks trained at a reduced scale on this machine, honestly labelled.

Each run is `linrnn.tasks.train.train` on data written by the project's generators in the real
on-disk formats (docs/data.md), with a small model and a budget this 2-core CPU can afford. The
scale (examples, lengths, model size, steps) is recorded with the result, beside the baseline that
says whether the model learnt anything:

    classification, retrieval   majority: the accuracy of always answering the train split's most
                                frequent class, on test
    tokens                      the same over the scored positions
    segmentation                the macro F1 of always answering the most frequent pixel class

    linrnn reduced-training --data DIR --out reports/results/training_reduced_cpu.json
        [--only NAME[,NAME]] [--runs DIR] [--executor serial|local[:N]|slurm] [--retries N] [--cluster FILE] ...

generates each data set under DIR when it is not there (seeded, so the same data every time; this process does it,
before any run starts), trains every run of `RUNS` (where `--executor` says: `linrnn.tasks.sweep`) into --runs
(default DIR/runs/NAME; a run directory whose job.json or results.json has the same config is reused, not
retrained), and writes one JSON with every run's config, data scale, curve
(training loss per step, validation and test metrics per evaluation), best-validation evaluation, time
per step, baseline, and the command, date, machine and library versions. The report's "Training at
reduced scale" section renders it (`linrnn.reports.sections.training_reduced`).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.base.results import RUN_RESULTS, Envelope, ReducedTrainingRecord, RunRecord, read, to_dict, write
from linrnn.tasks.metrics import thin  # noqa: F401  (a run's loss curve as the report shows it)
from linrnn.tasks.datasets import (LISTOPS, PATHFINDER, PATHFINDER_EASY, SEGMENTATION, SPEECH, SUBTREES, DataSet,
                                   baseline, ensure_data)


@dataclass(frozen=True)
class Run:
    name: str
    data: DataSet
    config: dict                 # TrainConfig fields (the model's mixer fields in "mixer")
    scale: str                   # in words, for the report
    note: str = ""
    extra: dict = field(default_factory=dict)


_LISTOPS = dict(task="listops", model="lru", d_model=64, n_layers=2, norm="layer", batch_size=16, epochs=2,
                steps=None, lr=3e-3, recurrence_lr=1.5e-3, weight_decay=0.05, warmup_steps=50,
                mixer={"d_state": 64, "r_min": 0.0, "r_max": 0.9},
                eval_every=None, eval_batches=None, checkpoint_every=100, workers=1)

# the same data with slower decays (|lambda| up to 0.999: the first operator must reach the pooled mean) and 4 epochs
_LISTOPS_LONG = {**_LISTOPS, "mixer": {"d_state": 64, "r_min": 0.9, "r_max": 0.999}, "lr": 4e-3, "recurrence_lr": 2e-3,
                 "epochs": 4}

RUNS: tuple[Run, ...] = (
    Run("listops-lru-torch", LISTOPS, {**_LISTOPS, "backend": "torch"},
        "5,000 / 500 / 500 generated ListOps expressions at the real lengths (500-2000 tokens); LRU, 2 layers, "
        "H = N = 64; 2 epochs of batch 16 (624 steps)"),
    Run("listops-lru-jax", LISTOPS, {**_LISTOPS, "backend": "jax"},
        "the same data, model and steps on the JAX side"),
    Run("listops-lru-torch-slow-decay", LISTOPS, {**_LISTOPS_LONG, "backend": "torch"},
        "the same data; LRU ring |lambda| in [0.9, 0.999] instead of the ListOps config's [0, 0.9], lr 4e-3; "
        "4 epochs of batch 16 (1,248 steps)"),
    Run("listops-lru-jax-slow-decay", LISTOPS, {**_LISTOPS_LONG, "backend": "jax"},
        "the same data, model and steps on the JAX side"),
    Run("pathfinder32-lru-torch", PATHFINDER,
        dict(task="pathfinder", model="lru", d_model=64, n_layers=2, norm="batch",
             mixer={"d_state": 64, "bidirectional": True, "r_min": 0.9, "r_max": 0.999}, batch_size=32, epochs=2, steps=None, lr=4e-3, recurrence_lr=1e-3, weight_decay=0.05, warmup_steps=50,
             eval_every=None, eval_batches=None, checkpoint_every=100, workers=1, backend="torch"),
        "20,000 generated Pathfinder-32 images in the loader's 80/10/10 split (L = 1024); bidirectional LRU, 2 layers, "
        "H = N = 64, BatchNorm; 2 epochs of batch 32"),
    Run("pathfinder32-dlr-torch", PATHFINDER,
        dict(task="pathfinder", model="dlr", d_model=64, n_layers=2, norm="layer",
             mixer={"d_state": 64, "bidirectional": True, "dt_min": 1e-4, "dt_max": 1e-1},
             batch_size=32, epochs=2, steps=None, lr=2e-3, weight_decay=0.05,
             warmup_steps=50, eval_every=None, eval_batches=None, checkpoint_every=100, workers=1, backend="torch"),
        "the same images; bidirectional DLR (conv mode), 2 layers, H = N = 64, LayerNorm; 2 epochs of batch 32"),
    Run("pathfinder32-baseline-dlr-torch", PATHFINDER_EASY,
        dict(task="pathfinder", model="dlr", data_options={"difficulty": "curv_baseline"}, d_model=64,
             mixer={"d_state": 64, "bidirectional": True, "dt_min": 1e-4, "dt_max": 1e-1},
             n_layers=2, norm="layer", batch_size=32, epochs=4, steps=None, lr=2e-3, weight_decay=0.05, warmup_steps=50, eval_every=None, eval_batches=None,
             checkpoint_every=100, workers=1, backend="torch"),
        "20,000 generated Pathfinder-32 images at LRA's easiest difficulty (curv_baseline: paths of 6 paddles, "
        "LRA's Pathfinder task uses 14) in the loader's 80/10/10 split (L = 1024); bidirectional DLR (conv mode), "
        "2 layers, H = N = 64, LayerNorm; 4 epochs of batch 32"),
    Run("sc10-lru-torch", SPEECH,
        dict(task="sc10", model="lru", data_options={"mfcc": True}, d_model=64, n_layers=2, norm="batch",
             mixer={"d_state": 64, "bidirectional": True, "r_min": 0.9, "r_max": 0.999},
             batch_size=16, epochs=10, steps=None, lr=4e-3, recurrence_lr=1e-3, weight_decay=0.05,
             warmup_steps=20, eval_every=None, eval_batches=None, checkpoint_every=100,
             workers=1, backend="torch"),
        "the espeak-ng corpus in the Speech Commands layout (synthetic speech, not the claim's recordings): the SC10 "
        "words' full-second clips in S4's stratified 70/15/15 split, as 20 MFCCs x 161 frames (L = 161; the raw "
        "16 kHz input costs about 10 s a step here); bidirectional LRU, 2 layers, H = N = 64; 10 epochs of batch 16"),
    Run("subtrees-lru-torch", SUBTREES,
        dict(task="listops-subtrees", model="lru", d_model=32, mixer={"d_state": 32, "r_min": 0.9, "r_max": 0.999}, n_layers=2, norm="layer",
             batch_size=8, epochs=4, steps=None, lr=3e-3, recurrence_lr=1.5e-3, weight_decay=0.01, warmup_steps=20,
             eval_every=None, eval_batches=None, checkpoint_every=50, workers=1, backend="torch"),
        "400 / 50 / 50 generated ListOpsSubTrees trees (7,000-8,180 tokens, a class at every closing bracket); "
        "LRU, 2 layers, H = N = 32; 4 epochs of batch 8 (200 steps)"),
    Run("segmentation32-dlr-torch", SEGMENTATION,
        dict(task="pathfinder-segmentation", model="dlr", data_options={"resolution": 32}, d_model=32,
             mixer={"d_state": 64, "bidirectional": True, "dt_min": 1e-4, "dt_max": 1e-1},
             n_layers=2, norm="layer", batch_size=16, epochs=3, steps=None, lr=1e-3, warmup_steps=20, eval_every=None, eval_batches=None, checkpoint_every=100,
             workers=1, backend="torch"),
        "2,400 generated PathfinderSegmentation-32 images in the loader's 80/10/10 split (L = 1024, 3 pixel classes); "
        "bidirectional DLR, 2 layers, H = 32, N = 64; 3 epochs of batch 16"),
)


def run_one(run: Run, data_root: Path, runs_root: Path, progress: bool) -> dict:
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.train import train

    folder = ensure_data(data_root, run.data)
    config = TrainConfig(**run.config)
    out = runs_root / run.name
    results = out / RUN_RESULTS
    # the same run if the stored config reads back equal (a field added later takes its default)
    reused = results.exists() and TrainConfig.from_stored(read(results, RunRecord).config) == config
    tic = time.perf_counter()
    if not reused:
        train(config, out, data=folder, progress=progress, resume=(out / "checkpoint.npz").exists())
    record = to_dict(read(results, RunRecord))
    best = record["best"]
    metric = config.data_task.monitor
    base = baseline(config, folder)
    examples = base.pop("examples")
    return {"name": run.name, "task": config.task, "model": config.model, "backend": config.backend,
            "scale": run.scale, "examples": examples,
            "data": {"generator": run.data.generator, "options": run.data.options},
            "config": record["config"], "steps": record["steps"], "seconds_per_step": record["seconds_per_step"],
            "wall_seconds": None if reused else round(time.perf_counter() - tic, 1),
            "train_loss": record["train_loss"], "evaluations": record["evaluations"], "best": best,
            "metric": metric, "test_at_best_val": best["test"][metric] if best else None,
            "baseline": base, "above_baseline": bool(best and best["test"][metric] > base["value"]),
            "machine": record["machine"], "code_version": record["code_version"]}


PROG = "linrnn reduced-training"
DESCRIPTION = __doc__.split("\n\n")[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `linrnn reduced-training` (`run_command` reads them)."""
    parser.add_argument("--data", required=True, help="folder of the generated data sets (made when missing)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--runs", default=None, help="folder of the run directories (default DATA/runs)")
    parser.add_argument("--only", default=None, help=f"comma-separated run names: {', '.join(r.name for r in RUNS)}")
    parser.add_argument("--quiet", action="store_true", help="no per-step progress bars")
    from linrnn.tasks import sweep

    sweep.add_arguments(parser)


def main(argv: list[str] | None = None) -> int:
    """`linrnn reduced-training` with these options, in-process (bad input raises `LinrnnError`)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_arguments(parser)
    given = list(sys.argv[1:] if argv is None else argv)
    return run_command(parser.parse_args(given), " ".join([PROG, *given]))


def run_command(args: argparse.Namespace, command: str) -> int:
    """Train the runs the options choose and write `--out`, its `command` the command line that ran it."""
    from linrnn.tasks import sweep

    executor = sweep.from_arguments(args)
    names = [r.name for r in RUNS]
    chosen = names if args.only is None else [n.strip() for n in args.only.split(",")]
    bad = [n for n in chosen if n not in names]
    if bad:
        raise LinrnnError(f"--only: expected names among {', '.join(names)}, found {', '.join(bad)}")
    data_root = Path(args.data)
    runs_root = Path(args.runs) if args.runs else data_root / "runs"
    out = Path(args.out)
    previous = read(out, ReducedTrainingRecord).runs if out.exists() else []
    rows = {r["name"]: r for r in previous}
    runs = [run for run in RUNS if run.name in chosen]
    for data in {run.data.name: run.data for run in runs}.values():   # once, before any run starts
        ensure_data(data_root, data)

    def gathered(job, row: dict, reused: bool) -> None:
        rows[job.name] = {**row, "wall_seconds": None} if reused else row    # reused: no time was spent on it now
        print(f"{job.name}: test {row['metric']} at the best validation {row['test_at_best_val']:.4f} (baseline "
              f"{row['baseline']['value']:.4f}), {row['seconds_per_step']:.2f} s/step", flush=True)
        write(out, ReducedTrainingRecord(runs=[rows[r.name] for r in RUNS if r.name in rows],
                                         envelope=Envelope.here(command)))

    progress = not args.quiet and executor.name == "serial"
    jobs = [sweep.SweepJob(run.name, runs_root / run.name, run_one, (run, data_root, runs_root, progress),
                           {"reduced_training": run.name, "config": run.config, "data": {
                               "generator": run.data.generator, "options": run.data.options}})
            for run in runs]
    sweep.run_jobs(jobs, executor, gathered, folder=runs_root, lock=out)      # one driver per --out
    return 0

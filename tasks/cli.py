"""`linrnn tasks ...`: the command line of the tasks area.

    linrnn train [--config FILE] [--data DIR] [--set FIELD=VALUE ...] [--task shift --model dlr --backend torch
                 --length 256 --steps N ...] [--out DIR] [--resume] [--dry-run] [--smoke]
    linrnn tasks sample --task NAME --length L [--batch B] [--seed S] --out FILE.npz [--dtype float32|float64]
    linrnn tasks grid --tasks shift,context_shift|all --models dlr,lru,rotrnn --backend torch --length L
                      --steps N [--seeds 0,1] --out DIR [--json FILE] [--set FIELD=VALUE ...]
                      [--executor serial|local[:N]|slurm] [--retries N] [--cluster FILE] ...

writes one batch (batch 0 of the stream of seed S) as `inputs`, `targets` and `mask` arrays in an
.npz file that loads without pickle, and prints one line with the shapes. Every bad value raises
`LinrnnError`, which `linrnn` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.synthetic import ALL_TASKS, DTYPES, TASKS, make_task


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `tasks` and its sub-commands to the main parser's sub-commands."""
    parser = subparsers.add_parser("tasks", help="synthetic tasks of the DLR paper: sample batches, train a grid")
    commands = parser.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND")
    commands.required = True
    register_sample(commands)
    register_grid(commands)
    register_train(subparsers)
    register_runs(subparsers)


def register_runs(subparsers: argparse._SubParsersAction) -> None:
    """Add `linrnn runs list DIR` and `linrnn runs export DIR --to tensorboard|wandb` (tasks/runs.py)."""
    parser = subparsers.add_parser("runs", help="the training runs under a folder: a table, or their logs exported "
                                                "to TensorBoard or Weights & Biases")
    commands = parser.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    commands.required = True
    p = commands.add_parser("list", help="one row per run directory under DIR: task, model, seed, status, best "
                                         "metric, time")
    p.add_argument("dir", help="a run directory or a folder of them (a sweep's, an experiment's DATA/runs)")
    p.set_defaults(func=run_runs_list)
    p = commands.add_parser("export", help="replay each run's metrics.jsonl into a training-log sink")
    p.add_argument("dir", help="a run directory or a folder of them")
    p.add_argument("--to", required=True, help="tensorboard (RUN_DIR/tensorboard/) or wandb")
    p.set_defaults(func=run_runs_export)


def run_runs_list(args: argparse.Namespace) -> int:
    from pathlib import Path

    from linrnn.tasks.runs import table

    print(table(Path(args.dir)))
    return 0


def run_runs_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from linrnn.tasks.logsinks import SINKS, export
    from linrnn.tasks.runs import find

    to = args.to.strip()
    if to not in SINKS:
        raise LinrnnError(f"--to: expected one of {', '.join(SINKS)}, found {args.to!r}")
    runs = find(Path(args.dir))
    if not runs:
        raise LinrnnError(f"runs export: expected run directories (config.json and metrics.jsonl) under {args.dir}")
    for run_dir in runs:
        lines = export(run_dir, to)
        print(f"{run_dir}: {lines} log lines to {to}" + (f" ({run_dir / 'tensorboard'})" if to == "tensorboard" else ""))
    return 0


def register_sample(commands: argparse._SubParsersAction) -> None:
    """Add `tasks sample`. Numbers are read as text and checked by `run_sample`, so that a bad
    value is a LinrnnError (one line, exit status 2) like every other bad input."""
    parser = commands.add_parser(
        "sample",
        help="write one batch of a synthetic task to an .npz file",
        description="Write batch 0 of the seeded stream of a synthetic task as inputs, targets, mask.",
    )
    parser.add_argument("--task", required=True, help=f"one of: {', '.join(ALL_TASKS)}")
    parser.add_argument("--length", required=True, help="the task's L (docs/tasks.md), e.g. 512 or 4096")
    parser.add_argument("--batch", default="16", help="batch size B (default 16)")
    parser.add_argument("--seed", default="0", help="stream seed, a non-negative integer (default 0)")
    parser.add_argument("--out", required=True, help="the .npz file to write (overwritten)")
    parser.add_argument("--dtype", default="float32", help=f"one of: {', '.join(DTYPES)} (default float32)")
    parser.set_defaults(func=run_sample)


def register_grid(commands: argparse._SubParsersAction) -> None:
    """Add `tasks grid`: train every task x model x seed (tasks/grid.py), print a table, write the rows as JSON."""
    parser = commands.add_parser(
        "grid",
        help="train a task x model x seed grid and print the final R^2, MSE and time per step",
        description="Train every task x model x seed with the grid's defaults (tasks/grid.py); one run "
                    "directory each under --out; print a table; write the rows to --json (default OUT/grid.json).",
    )
    parser.add_argument("--tasks", required=True, help=f"comma-separated, or 'all': {', '.join(TASKS)}")
    parser.add_argument("--models", default="dlr,lru,rotrnn", help="comma-separated (default dlr,lru,rotrnn)")
    parser.add_argument("--backend", default="torch", help="torch or jax (default torch)")
    parser.add_argument("--length", required=True, help="the tasks' L")
    parser.add_argument("--steps", required=True, help="optimiser steps of every run")
    parser.add_argument("--seeds", default="0", help="comma-separated non-negative integers (default 0)")
    parser.add_argument("--out", required=True, help="directory of the run directories")
    parser.add_argument("--json", default=None, help="file for the rows (default OUT/grid.json)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a TrainConfig field of every run, e.g. --set lr=3e-3 (repeatable); a mixer "
                             "field (mixer.FIELD or bare) applies to each model that has it")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    from linrnn.tasks import sweep

    sweep.add_arguments(parser)
    parser.set_defaults(func=run_grid_command)


def _names(flag: str, text: str, valid) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(valid)
    bad = [n for n in names if n not in valid]
    if not names or bad:
        raise LinrnnError(f"{flag}: expected a comma-separated list of {', '.join(valid)} (or all), found {text!r}")
    return names


def run_grid_command(args: argparse.Namespace) -> int:
    import os
    import shlex
    import sys

    from linrnn.impls.specs import kinds
    from linrnn.tasks import sweep
    from linrnn.tasks.overrides import apply_overrides
    from linrnn.tasks.grid import run_grid, table, write_rows

    executor = sweep.from_arguments(args)
    tasks = _names("--tasks", args.tasks, TASKS)
    models = _names("--models", args.models, kinds())
    seeds = [_integer("--seeds", s.strip()) for s in args.seeds.split(",")]
    if any(s < 0 for s in seeds):
        raise LinrnnError(f"--seeds: expected non-negative integers, found {args.seeds!r}")
    fixed = {"task", "model", "backend", "length", "steps", "seed"}
    bad = [item for item in args.overrides if item.partition("=")[0].strip().replace("-", "_") in fixed]
    if bad:
        raise LinrnnError(f"--set: expected FIELD=VALUE with FIELD a TrainConfig field other than "
                          f"{', '.join(sorted(fixed))}, found {bad[0]!r}")
    overrides = apply_overrides({}, args.overrides)

    json_path = args.json or f"{args.out}/grid.json"
    if os.path.isdir(json_path):   # found before hours of training, not after
        raise LinrnnError(f"--json: expected a file path, found the directory {json_path!r}")

    def progress(done: int, total: int, what: str) -> None:
        if not args.quiet and 0 < done and what != "done":
            print(f"[{done}/{total}] {what} finished", file=sys.stderr, flush=True)

    rows = run_grid(tasks, models, args.backend, _integer("--length", args.length), _integer("--steps", args.steps),
                    args.out, seeds=seeds, progress=progress, executor=executor, **overrides)
    command = ["linrnn", "tasks", "grid", "--tasks", ",".join(tasks), "--models", ",".join(models), "--backend",
               args.backend, "--length", args.length, "--steps", args.steps, "--seeds", ",".join(map(str, seeds)),
               "--out", args.out] + [a for item in args.overrides for a in ("--set", item)]
    path = write_rows(json_path, rows, command=" ".join(map(shlex.quote, command)))
    print(table(rows))
    print(f"{len(rows)} run(s); rows in {path}")
    return 0


def register_train(subparsers: argparse._SubParsersAction) -> None:
    """Add `linrnn train`: `--config FILE` (TOML or JSON) first, then `--set FIELD=VALUE` and the field
    flags (`--d-model 64`) on top. Values are read as text and checked, so a bad one names its field,
    before any data is read."""
    from linrnn.tasks.config import MIXER_FIELD_TYPES, TrainConfig

    parser = subparsers.add_parser(
        "train", help="train a model on a synthetic or a data task with the torch or the jax side",
        description="Train one run; writes config.json, metrics.jsonl, checkpoint.npz (best.npz for data tasks) "
                    "and results.json to --out. Full-scale configs: tasks/configs/TASK-MODEL.toml (docs/training.md). "
                    "Several devices: torchrun --standalone --nproc-per-node W -m linrnn train ... --set devices=W (torch), "
                    "--set devices=W (jax).")
    parser.add_argument("--config", default=None, help="a TOML or JSON file of TrainConfig fields")
    parser.add_argument("--data", default=None, help="the data folder of a data task (linrnn data generate/check)")
    parser.add_argument("--cache", default=None, help="the data cache folder (default: beside the data, else the user cache)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a field (repeatable; mixer.FIELD=VALUE, or a bare FIELD=VALUE that is not a "
                             "training field, sets a field of the model's mixer; data_options.OPTION=VALUE one "
                             "loader option)")
    parser.add_argument("--out", default=None, help="run directory (default runs/TASK-MODEL-BACKEND-sSEED)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the resolved config, parameter count, length, steps and a memory estimate; read no data")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny version of the config (4 steps, width 16, a few batches of the data) through the same code")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--log", default=None, metavar="tensorboard,wandb",
                        help="training-log sinks beside metrics.jsonl, fed the same records: tensorboard (event files "
                             "in OUT/tensorboard/) and wandb (Weights & Biases; WANDB_MODE=offline needs no account)")
    for f in dataclasses.fields(TrainConfig):
        if f.name == "mixer":       # a table: its fields have flags of their own (below), --set mixer.FIELD
            continue
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None,
                            help=f"{f.name} (default {f.default!r})" if f.default is not dataclasses.MISSING else f.name)
    for name in MIXER_FIELD_TYPES:
        parser.add_argument("--" + name.replace("_", "-"), dest=MIXER_FLAG + name, default=None, metavar=name.upper(),
                            help=f"mixer.{name} (a field of the model's mixer: an error where it has none)")
    parser.set_defaults(func=run_train)


MIXER_FLAG = "mixer."       # the dest prefix of the mixer fields' flags


def resolve_train_config(args: argparse.Namespace):
    """The run's config: the file, then --set, then the field flags; checked once, as a whole."""
    from linrnn.tasks.config import MIXER_FIELD_TYPES, TrainConfig
    from linrnn.tasks.overrides import apply_overrides, parse_value

    values = TrainConfig.read(args.config) if args.config else {}
    values = apply_overrides(values, args.overrides)
    for f in dataclasses.fields(TrainConfig):
        text = getattr(args, f.name, None)
        if text is not None:
            values[f.name] = parse_value(f.name, text)
    for name in MIXER_FIELD_TYPES:
        text = getattr(args, MIXER_FLAG + name, None)
        if text is not None:
            mixer = values.get("mixer") if isinstance(values.get("mixer"), dict) else {}
            values["mixer"] = {**mixer, name: parse_value(name, text, mixer=True)}
    try:
        return TrainConfig.from_dict(values)
    except LinrnnError as err:
        message = str(err)
        raise LinrnnError(f"{args.config}: {message}" if args.config and not message.startswith(args.config)
                          else message) from None


def run_train(args: argparse.Namespace) -> int:
    import json

    from linrnn.tasks.logsinks import parse_sinks
    from linrnn.tasks.plan import SMOKE_TRAIN_EXAMPLES, plan, smoke
    from linrnn.tasks.train import train

    sinks = parse_sinks(args.log)
    config = resolve_train_config(args)
    if args.smoke:
        config = smoke(config)
    if args.dry_run:
        print(json.dumps(config.to_dict(), indent=1))
        print("\n".join(plan(config).lines()))
        return 0
    out = args.out or f"runs/{config.task}-{config.model}-{config.backend}-s{config.seed}" + ("-smoke" if args.smoke else "")
    result = train(config, out, resume=args.resume, progress=not args.quiet, data=args.data, cache=args.cache,
                   train_examples=SMOKE_TRAIN_EXAMPLES if args.smoke and config.is_data_task else None, log_to=sinks)
    if result.rank != 0:     # data parallel: rank 0 reports
        return 0
    final = result.evaluations[-1] if result.evaluations else {}
    if config.is_data_task:
        metrics = "; ".join(f"{split} " + ", ".join(f"{k} {v:.4g}" for k, v in final[split].items() if k != "examples")
                            for split in ("val", "test") if split in final)
    else:
        metrics = ", ".join(f"{k} {v:.4g}" for k, v in final.items() if k != "step")
    speed = ("no step taken (finished before)" if result.seconds_per_step is None
             else f"{1e3 * result.seconds_per_step:.1f} ms/step")
    print(f"{config.task} {config.model} {config.backend}: {result.steps_done} steps, {speed}; {metrics}; "
          f"results in {out}")
    return 0


def _integer(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise LinrnnError(f"{flag}: expected an integer, found {text!r}") from None


def run_sample(args: argparse.Namespace) -> int:
    task = make_task(
        args.task,
        length=_integer("--length", args.length),
        seed=_integer("--seed", args.seed),
        batch_size=_integer("--batch", args.batch),
        dtype=args.dtype,
    )
    batch = task.batch(0)
    try:
        with open(args.out, "wb") as file:  # an open file: np.savez would append .npz to a bare name
            np.savez(file, inputs=batch.inputs, targets=batch.targets, mask=batch.mask)
    except OSError as err:
        raise LinrnnError(f"--out: expected a writable file path, found {args.out!r} ({err.strerror})") from None
    print(
        f"{args.task}: wrote {args.out}: inputs {batch.inputs.shape} {batch.inputs.dtype}, "
        f"targets {batch.targets.shape} {batch.targets.dtype}, mask {batch.mask.shape} bool"
    )
    return 0

"""`linrnn tasks ...`: the command line of the tasks area.

    linrnn train [--config FILE] [--task shift --model dlr --backend torch --length 256 --steps N ...] [--out DIR] [--resume]
    linrnn tasks sample --task NAME --length L [--batch B] [--seed S] --out FILE.npz [--dtype float32|float64]

writes one batch (batch 0 of the stream of seed S) as `inputs`, `targets` and `mask` arrays in an
.npz file that loads without pickle, and prints one line with the shapes. Every bad value raises
`LinrnnError`, which `linrnn` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from linrnn.impls.errors import LinrnnError
from linrnn.tasks.synthetic import DTYPES, TASKS, make_task


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `tasks` and its sub-commands to the main parser's sub-commands."""
    parser = subparsers.add_parser("tasks", help="synthetic tasks of the DLR paper: sample batches")
    commands = parser.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND")
    commands.required = True
    register_sample(commands)
    register_train(subparsers)


def register_sample(commands: argparse._SubParsersAction) -> None:
    """Add `tasks sample`. Numbers are read as text and checked by `run_sample`, so that a bad
    value is a LinrnnError (one line, exit status 2) like every other bad input."""
    parser = commands.add_parser(
        "sample",
        help="write one batch of a synthetic task to an .npz file",
        description="Write batch 0 of the seeded stream of a synthetic task as inputs, targets, mask.",
    )
    parser.add_argument("--task", required=True, help=f"one of: {', '.join(TASKS)}")
    parser.add_argument("--length", required=True, help="the task's L (DLR.md 3.3), e.g. 512 or 4096")
    parser.add_argument("--batch", default="16", help="batch size B (default 16)")
    parser.add_argument("--seed", default="0", help="stream seed, a non-negative integer (default 0)")
    parser.add_argument("--out", required=True, help="the .npz file to write (overwritten)")
    parser.add_argument("--dtype", default="float32", help=f"one of: {', '.join(DTYPES)} (default float32)")
    parser.set_defaults(func=run_sample)


def register_train(subparsers: argparse._SubParsersAction) -> None:
    """Add `linrnn train`: every TrainConfig field is a flag (`--d-model 64`); `--config FILE` reads JSON
    first and flags override it. Values are read as text and checked, so a bad one names its field."""
    from linrnn.tasks.config import TrainConfig

    parser = subparsers.add_parser("train", help="train a model on a task with the torch or the jax side",
                                   description="Train one run; writes config.json, metrics.jsonl, "
                                               "checkpoint.npz and results.json to --out.")
    parser.add_argument("--config", default=None, help="a JSON file of TrainConfig fields")
    parser.add_argument("--out", default=None, help="run directory (default runs/TASK-MODEL-BACKEND-sSEED)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    for f in dataclasses.fields(TrainConfig):
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None,
                            help=f"{f.name} (default {f.default!r})")
    parser.set_defaults(func=run_train)


def _parse_field(name: str, text: str, default):
    """Read a flag's text as the type of its field's default (None-able fields accept 'none')."""
    flag = "--" + name.replace("_", "-")
    if text.lower() in ("none", "null") and (default is None or name in ("recurrence_lr", "grad_clip", "mode")):
        return None
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise LinrnnError(f"{flag}: expected true or false, found {text!r}")
        return text.lower() == "true"
    if isinstance(default, int):
        return _integer(flag, text)
    if isinstance(default, float) or name in ("recurrence_lr", "grad_clip"):
        try:
            return float(text)
        except ValueError:
            raise LinrnnError(f"{flag}: expected a number, found {text!r}") from None
    return text


def run_train(args: argparse.Namespace) -> int:
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.train import train

    values = TrainConfig.from_file(args.config).to_dict() if args.config else {}
    for f in dataclasses.fields(TrainConfig):
        text = getattr(args, f.name)
        if text is not None:
            values[f.name] = _parse_field(f.name, text, f.default)
    config = TrainConfig.from_dict(values)
    out = args.out or f"runs/{config.task}-{config.model}-{config.backend}-s{config.seed}"
    result = train(config, out, resume=args.resume, progress=not args.quiet)
    final = result.evaluations[-1] if result.evaluations else {}
    metrics = ", ".join(f"{k} {v:.4g}" for k, v in final.items() if k != "step")
    print(f"{config.task} {config.model} {config.backend}: {result.steps_done} steps, "
          f"{1e3 * result.seconds_per_step:.1f} ms/step; {metrics}; results in {out}")
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

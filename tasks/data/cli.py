"""`linrnn data ...`: check, describe and generate datasets.

    linrnn data check DIR --task TASK [--resolution R] [--difficulty D] [--set KEY=VALUE ...] [--cache C]
    linrnn data info DIR --task TASK [same options]
    linrnn data generate TASK --out DIR [--n-train N --n-val N --n-test N] [--resolution R]
                         [--difficulty D] [--seed S] [--workers W]

`check` loads every split the way training will (building the preprocessed cache where it is missing
or stale), prints one line of statistics per split (count, label balance, lengths, vocabulary size),
then every problem it found, one line each ("problem: ..."), and exits with status 2 if there was
any. `info` prints what the loader sees (the folder it found, the source files, the cache state)
without parsing. `generate` runs the task's generator (`linrnn.tasks.data.generate`).
"""

from __future__ import annotations

import argparse
import importlib

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import TASKS, loader


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `data` and its sub-commands to the main parser's sub-commands."""
    parser = subparsers.add_parser("data", help="real datasets (LRA, Speech Commands): check, info, generate",
                                   description="Check, describe and generate the datasets of docs/data.md.")
    commands = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    commands.required = True
    for name, func, text in (("check", run_check, "load every split, print statistics and every problem (exit 2 on any)"),
                             ("info", run_info, "print what the loader sees, without parsing")):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument("dir", metavar="DIR", help="the task's folder or a folder above it (e.g. lra_release/)")
        _loader_options(sub)
        sub.set_defaults(func=func)
    gen = commands.add_parser("generate", help="write a generated dataset in the real format",
                              description="Write a seeded, generated dataset in the format its loader reads.")
    gen.add_argument("task", metavar="TASK", help="a task with a generator (listops, pathfinder, ...)")
    gen.add_argument("--out", required=True, help="the folder to write (created; written atomically)")
    for flag in ("--n-train", "--n-val", "--n-test", "--resolution", "--seed", "--workers"):
        gen.add_argument(flag, default=None, help=f"{flag[2:].replace('-', ' ')} (a non-negative integer; default: the generator's)")
    gen.add_argument("--difficulty", default=None, help="Pathfinder difficulty folder (default: the generator's)")
    gen.set_defaults(func=run_generate)


def _loader_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help=f"one of: {', '.join(TASKS)}")
    parser.add_argument("--resolution", default=None, help="pathfinder: 32, 64, 128 (Path-X) or 256")
    parser.add_argument("--difficulty", default=None, help="pathfinder: curv_baseline, curv_contour_length_9 or "
                                                           "curv_contour_length_14 (default)")
    parser.add_argument("--mfcc", action="store_true", help="sc35, sc10: 20 MFCCs x 161 frames (= --set mfcc=true)")
    parser.add_argument("--set", dest="options", action="append", default=[], metavar="KEY=VALUE",
                        help="a loader option (docs/data.md), e.g. --set max_length=2000 (repeatable)")
    parser.add_argument("--cache", default=None, help="cache folder (default: $LINRNN_CACHE, else DIR/.linrnn-cache)")


def _options(args: argparse.Namespace) -> dict:
    options = {}
    for item in args.options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LinrnnError(f"--set: expected KEY=VALUE, found {item!r}")
        options[key.strip()] = value.strip()
    for name in ("resolution", "difficulty"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if getattr(args, "mfcc", False):
        options["mfcc"] = "true"
    return options


def _dataset(args: argparse.Namespace):
    module, fixed = loader(args.task)
    return module.dataset(args.dir, cache=args.cache, **(fixed | _options(args)))


def run_check(args: argparse.Namespace) -> int:
    from linrnn.tasks.data import dataset as ds_

    report = ds_.check(_dataset(args))
    for line in report.lines:
        print(line)
    for problem in report.problems:
        print(f"problem: {problem}")
    if report.problems:
        print(f"{len(report.problems)} problem(s) found")
        return 2
    print("no problems found")
    return 0


def run_info(args: argparse.Namespace) -> int:
    from linrnn.tasks.data import dataset as ds_

    for line in ds_.describe(_dataset(args)):
        print(line)
    return 0


def _count(flag: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise LinrnnError(f"{flag}: expected a non-negative integer, found {text!r}")
    return value


def generator(task: str):
    """The generate function of `task` from `linrnn.tasks.data.generate.GENERATORS` (a function, a
    module name with a `generate` function, or "module:function")."""
    try:
        generate = importlib.import_module("linrnn.tasks.data.generate")
    except ModuleNotFoundError as err:
        if err.name not in ("linrnn.tasks.data.generate",):
            raise
        raise LinrnnError("data generate: the generators (linrnn.tasks.data.generate) are not there yet") from None
    table = getattr(generate, "GENERATORS", {})
    if task not in table:
        raise LinrnnError(f"data generate: no generator for {task!r}: expected one of {', '.join(table) or 'none'}")
    entry = table[task]
    if isinstance(entry, str):
        module_name, _, func = entry.partition(":")
        entry = getattr(importlib.import_module(module_name), func or "generate")
    return entry


def run_generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    func = generator(args.task)
    kwargs = {"out": Path(args.out)}
    for name in ("n_train", "n_val", "n_test", "resolution", "seed", "workers"):
        value = _count(f"--{name.replace('_', '-')}", getattr(args, name))
        if value is not None:
            kwargs[name] = value
    if args.difficulty is not None:
        kwargs["difficulty"] = args.difficulty
    summary = func(**kwargs)
    for key, value in (summary or {}).items():
        print(f"{key}: {value}")
    return 0

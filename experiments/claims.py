"""The experiments that settle the papers' empirical claims at the scale this machine allows, and their command.

    linrnn experiment --list
    linrnn experiment NAME [--quick] [--data DIR] [--runs DIR] [--out FILE] [--quiet] [--only LABEL=VALUE]
                           [--executor serial|local[:N]|slurm] [--retries N] [--cluster FILE] ...

Each experiment is one module of `linrnn.experiments` that holds its jobs, controls and scale, and the settle
functions of its claims (the rules, `linrnn.experiments.evidence`): a claim's runs, rule and record are read in one
file. How an experiment runs and what its record holds: `linrnn.experiments.runner`; where its jobs run (this
process, local worker processes, a SLURM cluster): `linrnn.tasks.sweep`.

    norm-position           D8      experiments/norm_position.py
    long-shift              D2      experiments/long_shift.py
    synthetic-tasks         D4      experiments/synthetic_tasks.py
    norms-listops           R8      experiments/norms_listops.py
    subtrees-segmentation   D5      experiments/subtrees_segmentation.py
    lra-reduced             R6, D1  experiments/lra_reduced.py
    speech                  R7, D6  experiments/speech.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

from linrnn.experiments import (long_shift, lra_reduced, norm_position, norms_listops, speech, subtrees_segmentation,
                                synthetic_tasks)
from linrnn.experiments.runner import Experiment, default_out, run
from linrnn.impls.errors import LinrnnError
from linrnn.tasks import sweep

EXPERIMENTS: dict[str, Experiment] = {m.EXPERIMENT.name: m.EXPERIMENT for m in (
    norm_position, long_shift, synthetic_tasks, norms_listops, subtrees_segmentation, lra_reduced, speech)}


def register(subparsers) -> None:
    p = subparsers.add_parser("experiment", help="run one of the experiments that settle the papers' empirical claims")
    p.add_argument("name", nargs="?", help="the experiment (--list names them)")
    p.add_argument("--list", action="store_true", help="list the experiments, their claims and scale")
    p.add_argument("--quick", action="store_true", help="toy sizes: checks the pipeline; never settles a claim")
    p.add_argument("--data", default="data", help="folder of the generated data sets, made when missing (default ./data)")
    p.add_argument("--runs", default=None, help="folder of the run directories (default DATA/runs)")
    p.add_argument("--out", default=None, help="the JSON record (default reports/results/experiment-NAME.json)")
    p.add_argument("--quiet", action="store_true", help="no per-step progress bars")
    p.add_argument("--only", action="append", default=[], metavar="LABEL=VALUE",
                   help="train only the runs with this label (repeatable, e.g. --only task=sc35 --only seed=1); the "
                        "record keeps what it already holds of the others. Two processes at once each need their "
                        "own --out; a last run without --only then gathers their run directories")
    sweep.add_arguments(p)
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    if args.list:
        for e in EXPERIMENTS.values():
            print(f"{e.name:24s} {', '.join(e.claims):8s} {e.title}\n{'':33s}{e.scale(False)}")
        return 0
    if args.name is None:
        raise LinrnnError(f"NAME: expected one of {', '.join(EXPERIMENTS)} (--list describes them)")
    if args.name not in EXPERIMENTS:
        raise LinrnnError(f"experiment: expected one of {', '.join(EXPERIMENTS)}, found {args.name!r}")
    experiment = EXPERIMENTS[args.name]
    executor = sweep.from_arguments(args)
    data_root = Path(args.data)
    runs_root = Path(args.runs) if args.runs else data_root / "runs"
    out = Path(args.out) if args.out else default_out(experiment.name, args.quick)
    argv = [experiment.name] + (["--quick"] if args.quick else []) + ["--data", str(args.data)] + \
        (["--runs", str(args.runs)] if args.runs else []) + (["--out", str(args.out)] if args.out else []) + \
        [f"--only {item}" for item in args.only]
    record = run(experiment, args.quick, data_root, runs_root, out, argv, progress=not args.quiet, only=args.only,
                 executor=executor)
    print(f"wrote {out} ({len(record['runs'])} runs in {record['seconds']:.0f} s)")
    return 0


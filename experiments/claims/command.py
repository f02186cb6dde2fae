"""`linrnn experiment`: run one of the experiments of the registry (`linrnn.experiments.claims.EXPERIMENTS`).

    linrnn experiment --list
    linrnn experiment NAME [--quick] [--data DIR] [--runs DIR] [--out FILE] [--quiet] [--only LABEL=VALUE]
                           [--executor serial|local[:N]|slurm] [--retries N] [--cluster FILE] ...
    linrnn experiment NAME --scale full --dry-run [--seeds N] [--ledger FILE] [--step-times FILE]
    linrnn experiment NAME --scale full --data DIR --executor slurm --cluster FILE [--measure-steps FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.experiments.claims import EXPERIMENTS
from linrnn.experiments.claims.runner import default_out, run
from linrnn.tasks import sweep


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
    full = p.add_argument_group("the papers' scale (R6, D1, D2, D5, R7, D6 on a cluster; experiments/claims/full_scale.py)")
    full.add_argument("--scale", choices=("reduced", "full"), default="reduced",
                      help="reduced: this machine's scale (default); full: the papers' configs (tasks/configs/) on "
                           "their own data under --data, through --executor")
    full.add_argument("--dry-run", action="store_true",
                      help="with --scale full: list the runs, each with its steps and GPU-hours, and the totals")
    full.add_argument("--seeds", type=int, default=None, help="with --scale full: seeds per arm (default 3)")
    full.add_argument("--ledger", default=None, metavar="FILE",
                      help="with --dry-run: a ledger.json of linrnn report; adds the seeds for 80 %% power per claim")
    full.add_argument("--step-times", default=None, metavar="FILE",
                      help="with --dry-run: measured seconds per step (written by --measure-steps)")
    full.add_argument("--measure-steps", default=None, metavar="FILE",
                      help="with --scale full: time a few steps of every run where --executor puts them, write FILE")
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
    full = args.scale == "full"
    given = [flag for flag, value in (("--dry-run", args.dry_run), ("--seeds", args.seeds is not None),
                                      ("--ledger", args.ledger), ("--step-times", args.step_times),
                                      ("--measure-steps", args.measure_steps)) if value]
    if given and not full:
        raise LinrnnError(f"{given[0]}: expected --scale full with it (the papers' scale)")
    if full and args.quick:
        raise LinrnnError("--quick: expected --scale reduced with it (toy sizes of this machine's experiments)")
    if (args.ledger or args.step_times) and not args.dry_run:
        raise LinrnnError(f"{'--ledger' if args.ledger else '--step-times'}: expected --dry-run with it (the plan)")
    if args.seeds is not None and args.seeds < 1:
        raise LinrnnError(f"--seeds: expected 1 or more, found {args.seeds}")
    if full:
        from linrnn.experiments.claims import full_scale

        if args.dry_run:
            print("\n".join(full_scale.plan_lines(args.name, args.seeds or full_scale.DEFAULT_SEEDS,
                                                   args.step_times, args.ledger)))
            return 0
    executor = sweep.from_arguments(args)
    experiment = EXPERIMENTS[args.name]
    data_root = Path(args.data)
    runs_root = Path(args.runs) if args.runs else data_root / "runs"
    if full:
        runs_root = runs_root / "papers-scale"
        if args.measure_steps:
            found = full_scale.measure(args.name, data_root, runs_root, Path(args.measure_steps), executor)
            print(f"wrote {args.measure_steps} ({len(found)} runs timed); use it with --dry-run --step-times")
            return 0
        experiment = full_scale.experiment(args.name, args.seeds or full_scale.DEFAULT_SEEDS, EXPERIMENTS)
    out = Path(args.out) if args.out else default_out(experiment.name + ("-full" if full else ""), args.quick)
    argv = [experiment.name] + (["--quick"] if args.quick else []) + ["--data", str(args.data)] + \
        (["--scale", "full"] + (["--seeds", str(args.seeds)] if args.seeds else []) if full else []) + \
        (["--runs", str(args.runs)] if args.runs else []) + (["--out", str(args.out)] if args.out else []) + \
        [f"--only {item}" for item in args.only]
    record = run(experiment, args.quick, data_root, runs_root, out, argv, progress=not args.quiet, only=args.only,
                 executor=executor)
    print(f"wrote {out} ({len(record['runs'])} runs in {record['seconds']:.0f} s)")
    return 0


"""`linrnn bench ...` and `linrnn reduced-training`: the measurements a user runs by hand.

    linrnn bench torch [--threads T]                 the scan routes alone and RotRNN's and LRU's layers per mode
                                                     (the numbers behind `impls/torch/scan.py`'s choice)
    linrnn bench parts [--rounds R]                  RotRNN's, LRU's and DLR's forward parts beside the GEMM floor
                                                     and s5-pytorch, in interleaved rounds (docs/speed.md)
    linrnn bench jax [--B ...] [--dtype D] [--repeats R]
                                                     the JAX side's forward medians per mixer and mode
    linrnn bench training-speed [--out FILE] [...]   the training-speed and memory sweep the report renders
                                                     (`linrnn.experiments.training_speed`)
    linrnn bench growth [--rounds R]                 PyTorch's fwd+bwd growth t(65536) / t(4096) alone, in
                                                     interleaved rounds (`training_speed.growth_rounds`)
    linrnn bench peers [--rounds R] [--quick] [--out FILE]
                                                     every peer's CPU route beside the project's route of the same
                                                     contract, forward and fwd+bwd, in interleaved rounds
                                                     (`linrnn.experiments.peer_speed`)
    linrnn reduced-training --data DIR --out FILE [--only NAMES] [--runs DIR]
                                                     the papers' data tasks at a reduced scale
                                                     (`linrnn.experiments.reduced_training`)

Each framework is imported only by the command that needs it. A stored record's `command` is the command
line that wrote it (`linrnn ...`); records written before these commands existed say `python -m ...`.
"""

from __future__ import annotations

import argparse
import shlex

from linrnn.base.errors import LinrnnError


def register(subparsers) -> None:
    from linrnn.experiments import peer_speed, reduced_training, training_speed

    bench = subparsers.add_parser("bench", help="time the layers: PyTorch's scan routes, the forward parts, JAX's "
                                                "modes, the training-speed sweep (docs/speed.md)")
    actions = bench.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    p = actions.add_parser("torch", help="the scan routes alone and RotRNN's and LRU's layers per mode (B = 8, "
                                         "L = 4096, H = N = 128, float32)")
    p.add_argument("--threads", type=int, default=None, help="torch's intra-op threads (default: torch's own)")
    p.set_defaults(func=_torch)

    p = actions.add_parser("parts", help="RotRNN's, LRU's and DLR's forward parts beside the GEMM floor and "
                                         "s5-pytorch, in interleaved rounds")
    p.add_argument("--rounds", type=int, default=11, help="interleaved rounds (default 11)")
    p.set_defaults(func=_parts)

    p = actions.add_parser("jax", help="the JAX side's median forward time (ms) per mixer and mode")
    for name, default in (("B", 8), ("L", 4096), ("H", 128), ("N", 128), ("heads", 16)):
        p.add_argument(f"--{name}", type=int, default=default, help=f"default {default}")
    p.add_argument("--dtype", default="float32", help="float32 or float64 (default float32)")
    p.add_argument("--repeats", type=int, default=7, help="timed calls per median (default 7)")
    p.set_defaults(func=_jax)

    p = actions.add_parser("training-speed", help="forward and forward+backward time and peak memory against L, "
                                                  "beside the GEMM floor and the peers; the stored sweep")
    training_speed.add_arguments(p)
    p.set_defaults(func=lambda args: training_speed.run_command(args, _command_line(args)))

    p = actions.add_parser("growth", help="PyTorch's forward+backward growth t(65536) / t(4096) alone: every layer "
                                          "and the GEMM floor at both lengths, in interleaved rounds")
    p.add_argument("--rounds", type=int, default=training_speed.INTERLEAVED_ROUNDS,
                   help=f"interleaved rounds (default {training_speed.INTERLEAVED_ROUNDS})")
    p.set_defaults(func=_growth)

    p = actions.add_parser("peers", help="every published peer's CPU route beside the project's route of the same "
                                         "contract, at the same shapes, forward and forward+backward, in interleaved "
                                         "rounds; the stored record")
    peer_speed.add_arguments(p)
    p.set_defaults(func=lambda args: peer_speed.run_command(args, _command_line(args)))

    p = subparsers.add_parser("reduced-training", help="the papers' data tasks trained at a reduced scale, "
                                                       "each beside its baseline; one JSON for the report")
    reduced_training.add_arguments(p)
    p.set_defaults(func=lambda args: reduced_training.run_command(args, _command_line(args)))


def _command_line(args: argparse.Namespace) -> str:
    """The command line as typed (`linrnn ...`), which `linrnn.cli.main` leaves in `args.argv`."""
    return shlex.join(["linrnn", *args.argv])


def _at_least_one(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise LinrnnError(f"--{name}: expected 1 or more, found {value}")


def _torch(args: argparse.Namespace) -> int:
    _at_least_one("threads", args.threads)
    from linrnn.verify.bench_torch import routes_table

    print(routes_table(args.threads))
    return 0


def _parts(args: argparse.Namespace) -> int:
    _at_least_one("rounds", args.rounds)
    from linrnn.verify.bench_torch import forward_parts_table

    print(forward_parts_table(args.rounds))
    return 0


def _growth(args: argparse.Namespace) -> int:
    _at_least_one("rounds", args.rounds)
    from linrnn.experiments.training_speed import growth_markdown, growth_rounds

    print(growth_markdown(growth_rounds(rounds=args.rounds)))
    return 0


def _jax(args: argparse.Namespace) -> int:
    for name in ("B", "L", "H", "N", "heads", "repeats"):
        _at_least_one(name, getattr(args, name))
    if args.dtype not in ("float32", "float64"):
        raise LinrnnError(f"--dtype: expected float32 or float64, found {args.dtype!r}")
    from linrnn.verify.bench_jax import forward_table

    print(forward_table(args.B, args.L, args.H, args.N, args.heads, args.dtype, args.repeats))
    return 0

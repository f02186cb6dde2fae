"""`linrnn conform`'s command line: `register` adds the sub-command, `_main` runs it (docs/conform.md)."""

from __future__ import annotations

import argparse
import sys

from linrnn.base.errors import LinrnnError
from linrnn.verify.conform_battery import run
from linrnn.verify.conform_bundles import DEFAULT_LENGTHS, DTYPES, LONG_LENGTH, VERY_LONG_LENGTH, models
from linrnn.verify.conform_results import format_result
from linrnn.verify.conform_targets import BUILTINS, PEERS, format_peers, peers_table


def register(subparsers) -> None:
    p = subparsers.add_parser("conform", help="check an implementation written elsewhere against the reference "
                                              "and name every deviation (exit 1 if a check fails)")
    p.add_argument("target", nargs="?", help=f"module:function (on PYTHONPATH or in the working directory), or one "
                                             f"of {', '.join(BUILTINS)}")
    p.add_argument("--model", choices=models(), help="the contract the target claims to implement")
    p.add_argument("--dtype", default=None, choices=DTYPES, help="check this dtype only (default: a layer's "
                                                                  "float64, float32, bfloat16, float16; the scan's "
                                                                  "float64, float32)")
    p.add_argument("--lengths", type=int, nargs="+", default=list(DEFAULT_LENGTHS),
                   help=f"input lengths of the random inputs (default {' '.join(map(str, DEFAULT_LENGTHS))}); "
                        f"the longest is also the impulse, radius, bidirectional, state, gradient and variant length")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="pin a config field in every check (repeatable), for a target that implements only some "
                        "variants, e.g. --set discretization=zoh")
    p.add_argument("--long", type=int, default=LONG_LENGTH,
                   help=f"length of the long check at radius near 1 (default {LONG_LENGTH}; 0 leaves it out)")
    p.add_argument("--very-long", type=int, default=VERY_LONG_LENGTH,
                   help=f"length of the very long check, past 2^16 (default {VERY_LONG_LENGTH}; 0 leaves it out)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bundles and inputs (default 0)")
    p.add_argument("--json", default=None, help="write every check to this JSON file")
    p.add_argument("--peers", action="store_true", help="list the built-in targets (package, installed version or "
                                                        "why missing, lineage, each stored verdict) and exit")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    if args.peers:
        print(format_peers(peers_table()))
        return 0
    if not args.target or not args.model:
        raise LinrnnError("expected TARGET and --model KIND (or --peers to list the built-in targets)")
    dtypes = (args.dtype,) if args.dtype else None
    progress = (lambda what: print(f"checking {what}", file=sys.stderr)) if sys.stderr.isatty() else None
    result = run(args.target, args.model, dtypes, args.lengths, args.seed, progress, args.sets, args.long,
                 args.very_long)
    print(format_result(result))
    if args.json:
        from linrnn.base.results import ConformRecord, Envelope, command_line, write

        peer = (PEERS[args.target].distribution,) if args.target in PEERS else ()     # its version in the record
        write(args.json, ConformRecord(result=result.to_dict(), envelope=Envelope.here(command_line(args), peer)))
    return 0 if result.ok else 1

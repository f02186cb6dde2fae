"""`linrnn`: the command line of the project.

Each area registers its own sub-commands (`register(subparsers)`, setting `func`), so this file only
dispatches; a command finds the command line it was given (after `linrnn`) in `args.argv`. A `LinrnnError`
(bad input, bad file, unknown name) becomes one line on stderr and exit status 2; so does a module of an optional
extra that is not installed (`linrnn.base.extras`: the line names the extra, the command's own where it has one);
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys

from linrnn.base.errors import LinrnnError
from linrnn.base.extras import COMMANDS, INSTALLS, MissingExtra, missing

# Modules that define `register(subparsers)`; imported lazily so that `linrnn --help` stays fast
# and a missing optional framework only breaks the commands that need it.
AREAS = (
    "linrnn.impls.cli",
    "linrnn.theory.cli",
    "linrnn.tasks.cli",
    "linrnn.tasks.data.cli",
    "linrnn.verify.crosscheck",
    "linrnn.verify.conform",
    "linrnn.experiments.gpucheck",
    "linrnn.experiments.claims.command",
    "linrnn.experiments.precision_map",
    "linrnn.experiments.cli",
    "linrnn.reports.cli",
)


def build_parser() -> argparse.ArgumentParser:
    import importlib

    from linrnn import __version__

    parser = argparse.ArgumentParser(
        prog="linrnn",
        description="Differential testing and theory verification for linear RNNs (RotRNN, LRU, DLR).",
    )
    parser.add_argument("--version", action="version", version=f"linrnn {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in AREAS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:       # registering must stay light; a missing extra here is still one line
            raise missing(err, f"the commands of {name}") or err
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
    except LinrnnError as err:
        print(f"linrnn: error: {err}", file=sys.stderr)
        return 2
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)      # the command, for the records it writes
    try:
        status = args.func(args)
    except ModuleNotFoundError as err:          # an optional extra's module (torch, sympy, ...) that is not installed
        extra = COMMANDS.get(args.command)
        found = err if isinstance(err, MissingExtra) and (extra is None or err.name not in INSTALLS[extra]) else \
            missing(err, "this command", extra)         # a MissingExtra keeps its words unless the command's extra
        if found is None:                               # installs the module
            raise
        print(f"linrnn {args.command}: error: {found}", file=sys.stderr)
        return 2
    except LinrnnError as err:
        print(f"linrnn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"linrnn {args.command}: interrupted", file=sys.stderr)
        return 130
    except MemoryError as err:                  # out of memory is the machine's limit, not a bug: one line too
        print(f"linrnn {args.command}: error: out of memory ({type(err).__name__}"
              f"{': ' + str(err).splitlines()[0] if str(err) else ''}); run it where there is more memory, or "
              "smaller (a smaller batch size or length)", file=sys.stderr)
        return 2
    except BrokenPipeError:                     # the reader stopped reading (`linrnn runs list D | head`): quiet,
        _quiet_stdout()                         # exit status 141 as for a process killed by SIGPIPE
        return 141
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    return int(status or 0)


def _quiet_stdout() -> None:
    """The reader of stdout has gone (`| head`): what is left to write, and Python's flush at exit, go nowhere."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())

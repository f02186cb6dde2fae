"""`linrnn theory [--json FILE] [--quick] [--claim ID ...]`: run the derivations and print their verdicts.

The table has one row per claim (id, verdict, how many parts were proved / verified / failed, seconds,
and a summary: the scope of a holding verdict, the conditions of a failing one); the exact conditions of every failing part follow the table in full. `--json` writes
the records (steps in LaTeX and MathML, findings, witnesses) for the report. The exit status is 0
whatever the verdicts: a failing claim is a finding, not an error.
"""

from __future__ import annotations

import argparse
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

from linrnn.base.errors import LinrnnError

_SUMMARY_WIDTH = 88


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "theory",
        help="run the SymPy/SciPy derivations of the claims (R1-R3, R5, R9, D2, D3)",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--json", metavar="FILE", type=Path, default=None,
                        help="also write the full records as JSON to FILE")
    parser.add_argument("--quick", action="store_true", help="smaller numeric sizes (same symbolic steps)")
    parser.add_argument("--claim", metavar="ID", action="append", default=None,
                        help="run only this claim (repeatable), e.g. --claim R3")
    parser.set_defaults(func=run_theory)


def _summary(result) -> str:
    """Failing claims: where they fail; the others: what the verdict covers (its scope)."""
    return result.condition if result.verdict == "fails" else result.scope


def format_table(results: Sequence) -> str:
    """The compact table, then the failing parts' conditions in full."""
    header = f"{'claim':<6}{'verdict':<16}{'P/V/F':<8}{'time':>7}  summary"
    lines = [header, "-" * len(header)]
    for r in results:
        counts = [sum(f.verdict == v for f in r.findings) for v in ("proved", "verified", "fails")]
        verdict = r.verdict + (" (partly)" if r.partly else "")
        summary = textwrap.shorten(_summary(r), _SUMMARY_WIDTH, placeholder=" ...")
        lines.append(f"{r.claim:<6}{verdict:<16}{'/'.join(map(str, counts)):<8}{r.seconds:>6.1f}s  {summary}")
    failing = [(r.claim, f) for r in results for f in r.deciding if f.verdict == "fails"]
    if failing:
        lines += ["", "failing parts (exact conditions):"]
        for claim, f in failing:
            lines.append(textwrap.fill(f"{claim}: {f.statement} -- FAILS when: {f.condition}", 100,
                                       subsequent_indent="    "))
    beside = [(r.claim, f) for r in results for f in r.findings if f.side]
    if beside:
        lines += ["", "side findings (another setting than the claim speaks of; not in its verdict):"]
        for claim, f in beside:
            lines.append(textwrap.fill(f"{claim}: {f.statement} -- {f.verdict.upper()}"
                                       + (f" when: {f.condition}" if f.condition else ""), 100,
                                       subsequent_indent="    "))
    return "\n".join(lines)


def run_theory(args: argparse.Namespace) -> int:
    from linrnn.theory.registry import results_payload, run_all

    target: Path | None = args.json
    if target is not None and not target.parent.exists():
        raise LinrnnError(f"--json: folder {str(target.parent)!r} does not exist")
    start = time.perf_counter()
    results = run_all(quick=args.quick, claims=args.claim)
    elapsed = time.perf_counter() - start
    print(format_table(results))
    print(f"\n{len(results)} claims in {elapsed:.1f} s{' (quick sizes)' if args.quick else ''}")
    if target is not None:
        from linrnn.base.results import Envelope, TheoryRecord, command_line, write

        write(target, TheoryRecord(result=results_payload(results, quick=args.quick),
                                   envelope=Envelope.here(command_line(args))))
        print(f"wrote {target}")
    return 0

"""`linrnn report`: compute every section, save its JSON, render the page; or re-render saved results.

    linrnn report [--out DIR] [--quick]           compute, save DIR/<section>.json, write DIR/report.html
    linrnn report --from DIR [DIR ...] [--out D]  render saved results (several machines combine)
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from tqdm import tqdm

from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import SECTIONS

DEFAULT_OUT = "linrnn-report"


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="settle the claims and compare the implementations: an HTML report")
    p.add_argument("--out", default=None, help=f"output directory (default ./{DEFAULT_OUT}; with --from: the first DIR)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer seeds (the page says so)")
    p.add_argument("--from", dest="from_dirs", nargs="+", metavar="DIR", default=None,
                   help="render saved results from these directories without recomputing")
    p.set_defaults(func=_report)


def compute_all(out: str, quick: bool, sections=SECTIONS) -> list[str]:
    """Compute and save each section; returns the names of sections that failed (their files are not written)."""
    failed = []
    for i, section in enumerate(sections, 1):
        start = time.perf_counter()
        bar = tqdm(total=1, desc=f"[{i}/{len(sections)}] {section.TITLE}", unit="case", leave=True,
                   file=sys.stderr, dynamic_ncols=True)

        def progress(done: int, total: int, what: str) -> None:
            bar.total = total
            bar.n = done
            bar.set_postfix_str(what, refresh=True)

        try:
            data, config = section.compute(quick, progress)
        except Exception:  # a bug in one section must not lose the others' results
            bar.close()
            traceback.print_exc()
            print(f"section {section.NAME} failed; the page shows it as missing", file=sys.stderr)
            failed.append(section.NAME)
            continue
        bar.close()
        config = {**config, "quick": quick, "seconds": round(time.perf_counter() - start, 2)}
        write_result(out, section.NAME, data, config)
    return failed


def _report(args: argparse.Namespace) -> int:
    names = [s.NAME for s in SECTIONS]
    if args.from_dirs:
        if args.quick:
            print("linrnn report: --quick has no effect with --from (nothing is computed)", file=sys.stderr)
        out = args.out or args.from_dirs[0]
        loaded = read_results(args.from_dirs, names)
        path = render(loaded, SECTIONS, out)
        print(f"rendered {path} from {len(loaded.results)} results file(s)"
              + (f", skipped {len(loaded.skipped)}" if loaded.skipped else ""))
        for file, reason in loaded.skipped:
            print(f"  skipped {file}: {reason}", file=sys.stderr)
        return 0
    out = args.out or DEFAULT_OUT
    start = time.perf_counter()
    failed = compute_all(out, args.quick)
    path = render(read_results([out], names), SECTIONS, out, quick=args.quick)
    print((path.parent / "ledger.txt").read_text())
    print(f"wrote {path} in {time.perf_counter() - start:.0f} s"
          + (f"; failed sections: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0

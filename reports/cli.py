"""`linrnn report`: compute every section, save its JSON, render the page; or re-render saved results.

    linrnn report [--out DIR] [--quick] [--recompute]   compute, save DIR/<section>.json, write DIR/report.html
    linrnn report --from DIR [DIR ...] [--out D]        render saved results (several machines combine)
    linrnn report --from A --against B                  the same, marking what changed since the results in B

Beside the page: report.md (a summary for CI and pull requests), ledger.txt and ledger.json.

The sections that take minutes (`STORED_SECTIONS`: the D4 grid and the R8 norm study, which train, and the precision
map) are not recomputed by the default report: their stored results, `reports/results/sections/<name>.json` (full
size, with the date and machine they were made on), are copied into DIR and rendered. `--recompute`
trains them instead; `--quick` always computes them (at the small sizes); a section without a valid
stored file is computed. The page says, per section, when and where its numbers were made.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.base import results
from linrnn.reports.results import SECTIONS_DIR, Loaded, read_results, write_result

DEFAULT_OUT = "linrnn-report"
STORED_SECTIONS = ("tasks", "norms", "precision_map")             # minutes each: rendered from stored results
STORED_RESULTS = SECTIONS_DIR                                      # reports/results/sections/ in a checkout


def _sections():
    """The report's sections, imported when a report is made: they and the renderer bring SciPy's signal module,
    SymPy and Matplotlib (0.7 s), which every other `linrnn` command (the CLI registers this one) does not need."""
    from linrnn.reports.sections import SECTIONS

    return SECTIONS


def _render(*args, **kwargs):
    from linrnn.reports.render import render

    return render(*args, **kwargs)


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="settle the claims and compare the implementations: an HTML report")
    p.add_argument("--out", default=None, help=f"output directory (default ./{DEFAULT_OUT}; with --from: the first DIR)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer seeds (the page says so)")
    p.add_argument("--recompute", action="store_true",
                   help=f"train the sections {', '.join(STORED_SECTIONS)} instead of rendering their stored results")
    p.add_argument("--from", dest="from_dirs", nargs="+", metavar="DIR", default=None,
                   help="render saved results from these directories without recomputing")
    p.add_argument("--against", dest="against", metavar="DIR", default=None,
                   help="with --from: mark what changed since the results in DIR (verdicts, cross-check cells, "
                        "ratios timed in rounds, conformance) at the top of the page and in report.md")
    p.set_defaults(func=_report)


def stored_result(name: str, directory: Path | None = None) -> Path | None:
    """The stored full-size results file of a training section, if it is valid (else None, with the reason said)."""
    directory = STORED_RESULTS if directory is None else directory
    if not (directory / f"{name}.json").exists():
        return None
    loaded = read_results([directory], [name])
    if not loaded.results:
        reason = next((why for path, why in loaded.skipped if Path(path).stem == name), "unreadable")
        print(f"stored results {directory / (name + '.json')} skipped ({reason}); computing", file=sys.stderr)
        return None
    record = loaded.results[0]
    if record["meta"].get("config", {}).get("quick"):
        print(f"stored results {record['path']} are quick-size; computing", file=sys.stderr)
        return None
    return Path(record["path"])


def compute_all(out: str, quick: bool, sections=None, recompute: bool = False,
                command: str | None = None) -> list[str]:
    """Compute and save each section (None: all of the report's); returns the names of sections that failed (their
    files are not written).

    Without `quick` or `recompute`, a section of STORED_SECTIONS with a valid stored file is copied, not computed."""
    from tqdm import tqdm     # here, not at the top: registering the command (`linrnn --help`) needs no extra

    sections = _sections() if sections is None else sections
    failed = []
    for i, section in enumerate(sections, 1):
        stored = None if quick or recompute or section.NAME not in STORED_SECTIONS else stored_result(section.NAME)
        if stored is not None:
            results.write(Path(out) / f"{section.NAME}.json", results.read(stored, results.SectionRecord))
            print(f"[{i}/{len(sections)}] {section.TITLE}: the stored results of {stored.name} "
                  f"(linrnn report --recompute trains them)", file=sys.stderr)
            continue
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
        write_result(out, section.NAME, data, config, command=command)
    return failed


def read_against(directory: str, names: list[str]) -> Loaded:
    """The results of the run to compare with (--against): a folder that holds at least one valid results file."""
    if not Path(directory).is_dir():
        raise LinrnnError(f"--against: {directory} is not a directory")
    loaded = read_results([directory], names)
    if not loaded.results:
        raise LinrnnError(f"--against: no results in {directory} (no valid <section>.json of this report)")
    return loaded


def _report(args: argparse.Namespace) -> int:
    sections = _sections()
    names = [s.NAME for s in sections]
    against = getattr(args, "against", None)
    if against is not None and not args.from_dirs:
        raise LinrnnError("--against compares saved results: give the results to render with --from DIR")
    if args.from_dirs:
        if args.quick:
            print("linrnn report: --quick has no effect with --from (nothing is computed)", file=sys.stderr)
        out = args.out or args.from_dirs[0]
        loaded = read_results(args.from_dirs, names)
        before = read_against(against, names) if against is not None else None
        path = _render(loaded, sections, out, against=before, against_label=against or "")
        print(f"rendered {path} from {len(loaded.results)} results file(s)"
              + (f", skipped {len(loaded.skipped)}" if loaded.skipped else ""))
        for file, reason in loaded.skipped:
            print(f"  skipped {file}: {reason}", file=sys.stderr)
        return 0
    out = args.out or DEFAULT_OUT
    start = time.perf_counter()
    failed = compute_all(out, args.quick, recompute=args.recompute, command=results.command_line(args))
    path = _render(read_results([out], names), sections, out, quick=args.quick)
    print((path.parent / "ledger.txt").read_text())
    print(f"wrote {path} in {time.perf_counter() - start:.0f} s"
          + (f"; failed sections: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0

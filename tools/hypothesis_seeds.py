"""Run `pytest properties` under fresh Hypothesis seeds: what the derandomised CI run cannot see.

CI sets CI=true, and Hypothesis then loads its built-in "ci" profile, which is derandomised: every run
draws the same examples, so a property that fails only for some draws stays hidden. An explicit
`--hypothesis-seed=K` does not help there: Hypothesis checks `derandomize` before the forced seed
(hypothesis.core.get_random_for_wrapped_test), so under CI=true the seed is silently ignored.

This file is therefore two things:

* a pytest plugin (`-p hypothesis_seeds`, with tools/ on PYTHONPATH) that registers and loads the
  profile "fresh-seed": the "ci" profile (no deadline, no database, too_slow suppressed, print_blob)
  except not derandomised, so `--hypothesis-seed=K` decides the draws whether or not CI is set, and
  no example database carries failures from one run into the next;
* a maintainer's script that runs `pytest properties` once per seed with that plugin, a few seeds at
  a time, and reports each seed's outcome with the failing test ids and the command to reproduce:

      python tools/hypothesis_seeds.py --seeds 20 [--start 1] [--jobs 2] [-- extra pytest args]

Exit status 0 when every seed passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOOLS = pathlib.Path(__file__).resolve().parent
PROFILE = "fresh-seed"
PLUGIN = pathlib.Path(__file__).stem


def _register_profile() -> None:
    """Register and load "fresh-seed" (imported as a pytest plugin: before pytest_configure, where the
    Hypothesis plugin applies --hypothesis-profile and --hypothesis-seed)."""
    from hypothesis import settings

    settings.register_profile(PROFILE, settings.get_profile("ci"), derandomize=False, database=None)
    settings.load_profile(PROFILE)


if __name__ != "__main__":  # imported by pytest through `-p hypothesis_seeds`
    _register_profile()


def seeded_command(seed: int, paths: list[str], extra: list[str]) -> list[str]:
    """The pytest command line that runs `paths` under Hypothesis seed `seed` (from the repository root)."""
    return [sys.executable, "-m", "pytest", *paths, "-q", "-p", PLUGIN, f"--hypothesis-profile={PROFILE}",
            f"--hypothesis-seed={seed}", *extra]


def reproduce_line(seed: int, paths: list[str], extra: list[str]) -> str:
    """The shell line a maintainer pastes (from the repository root) to rerun one seed."""
    cmd = ["python", *seeded_command(seed, paths, extra)[1:]]
    return f"PYTHONPATH=tools {shlex.join(cmd)}"


def run_seed(seed: int, paths: list[str], extra: list[str]) -> dict:
    """Run pytest once under `seed`; return its outcome, the failing test ids and the time it took."""
    with tempfile.TemporaryDirectory(prefix=f"hyp-seed-{seed}-") as tmp:
        junit = pathlib.Path(tmp) / "junit.xml"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TOOLS), env.get("PYTHONPATH", "")) if p)
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = tmp  # anything Hypothesis writes stays in this run
        start = time.perf_counter()
        proc = subprocess.run([*seeded_command(seed, paths, extra), f"--junitxml={junit}"],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        failed, counts = [], {"tests": 0}
        if junit.exists():
            for case in ET.parse(junit).getroot().iter("testcase"):
                counts["tests"] += 1
                if case.find("failure") is not None or case.find("error") is not None:
                    name = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
                    failed.append(name)
    tail = "\n".join(proc.stdout.strip().splitlines()[-3:] + proc.stderr.strip().splitlines()[-3:])
    return dict(seed=seed, rc=proc.returncode, failed=failed, seconds=seconds, tests=counts["tests"],
                tail=tail, stdout=proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after `--` go to pytest unchanged.")
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds to run (default 20)")
    parser.add_argument("--start", type=int, default=1, help="the first seed; seeds are start .. start+seeds-1")
    parser.add_argument("--jobs", type=int, default=2, help="how many pytest runs at once (default 2)")
    parser.add_argument("--paths", nargs="+", default=["properties"], help="what pytest runs (default: properties)")
    parser.add_argument("--log-dir", type=pathlib.Path, default=None,
                        help="write each seed's full pytest output to LOG_DIR/seed-K.txt")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be at least 1")
    seeds = list(range(args.start, args.start + args.seeds))
    print(f"pytest {' '.join(args.paths)} under {len(seeds)} fresh Hypothesis seeds "
          f"({seeds[0]}..{seeds[-1]}), {args.jobs} at a time, profile {PROFILE!r} (not derandomised, no database)",
          flush=True)
    start = time.perf_counter()
    results = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(lambda s: run_seed(s, args.paths, extra), seeds):
            results.append(result)
            if args.log_dir is not None:
                args.log_dir.mkdir(parents=True, exist_ok=True)
                (args.log_dir / f"seed-{result['seed']}.txt").write_text(result["stdout"])
            ok = result["rc"] == 0
            verdict = "pass" if ok else (f"FAIL ({len(result['failed'])} failed)" if result["failed"]
                                         else f"ERROR (pytest exit {result['rc']})")
            print(f"seed {result['seed']:>6}: {verdict:<16} {result['tests']:>4} tests  {result['seconds']:7.1f} s",
                  flush=True)
            for test_id in result["failed"]:
                print(f"    {test_id}", flush=True)
            if not ok and not result["failed"]:
                print("    " + result["tail"].replace("\n", "\n    "), flush=True)
    bad = [r for r in results if r["rc"] != 0]
    total = time.perf_counter() - start
    print(f"\n{len(results) - len(bad)} of {len(results)} seeds passed in {total:.0f} s", flush=True)
    for r in bad:
        print(f"seed {r['seed']}: reproduce with\n    {reproduce_line(r['seed'], args.paths, extra)}", flush=True)
        for test_id in r["failed"]:
            print(f"    or just the test (it may draw differently alone: Hypothesis mixes constants from the loaded "
                  f"modules into its draws; the log's @reproduce_failure blob is exact):\n"
                  f"    {reproduce_line(r['seed'], [test_id], extra)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed beside the peers: every published peer's CPU route timed beside the project's route of the same contract, at the
same shapes, forward and forward+backward, in interleaved rounds, as ratios.

The routes are `linrnn.verify.bench_peers.ROUTES`. Each group is a set of routes at one set of shapes; within a group
and a direction every call is built first, then each round calls every route once in turn (`interleaved_ms`), so a slow
spell of a shared machine falls on the calls of the rounds it lasts. A peer's ratio is the median over the rounds of
its time over its yardstick's (`bench_peers.yardstick`: the project's route of the same contract and framework) within
a round, with the range over the rounds: above 1 the project's route is faster.

    GROUPS            the groups at the full sizes (B = 8, L = 4096, H = N = 128), the scans once with one transition
                      per lane and once with a transition per position (`varying`: the gated recurrences' scan, the
                      project's `varying_scan.chunked` the yardstick); the peers that loop over the
                      positions in Python (LRU-pytorch, fla-core's naive HGRN, mamba-ssm's selective_scan_ref) in a group
                      of their own at B = 2, L = 256, beside the project's LRU layer and chunked scan at the same
                      shapes: the forward+backward of the last two grows faster than L (B = 2, n = 128, L = 256, 512,
                      1024: fla-hgrn-naive 0.27, 0.75, 2.1 s; mamba-ssm-ref 0.31, 0.80, 2.5 s; at B = 8 fla-hgrn-naive
                      took 10.7 s at L = 512 and 80 s at L = 1024), so L = 4096 is out of reach for them
    LIVE[quick]       smaller groups the report's training-speed section times on the machine it runs on
    measure(groups, rounds, progress) -> {"rows": [...], "config": {...}}
    markdown(result) -> the table of docs/speed.md, "Beside the peers"

A row: {"group", "route", "framework", "family", "own", "direction", "sizes": {...}, "ms" (the median over the rounds,
None when not run), "round_ms", "rounds", "yardstick", "ratio", "ratio_range", "skipped" (why not, or None)}.

What is timed (`THREADS`, `CLOCK`): by default one PyTorch thread and this process's CPU time (`time.process_time`,
every thread's, so JAX's own threads count), that is the work each route does: on a shared 2-core machine two
PyTorch threads contending with other jobs slowed calls twentyfold and more (the project's LRU forward at L = 4096:
a median of 1,484 ms over 7 rounds, 41 ms in the idle machine's benchmark), which no number of rounds averages out. `--threads 0 --clock wall`
times as a user's training would run, on an idle machine.

    linrnn bench peers [--rounds R] [--quick] [--out FILE]

runs the full groups (`--quick`: the report's quick ones), prints the table and writes the stored record the report's
training-speed section shows beside its live rounds (reports/results/peer_speed_cpu.json, a `training_speed` record
whose sweep is this result). Numbers on a shared CPU are noisy: read the ratios, with their ranges, and treat a ratio
within about 10 % of 1 as undecided (docs/speed.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from linrnn.base.errors import LinrnnError
from linrnn.verify.bench import DIRECTIONS, interleaved_ms

ROUNDS = 7
THREADS = 1                    # PyTorch's intra-op threads while timing (0: leave PyTorch's own setting)
CLOCKS = ("cpu", "wall")       # cpu: time.process_time (this process's CPU time); wall: time.perf_counter
CLOCK = "cpu"
UNDECIDED = 0.10               # a ratio within this of 1 is undecided on this machine (docs/speed.md)
STORED = "peer_speed_cpu.json"  # in reports/results/
COMMAND = "linrnn bench peers --out reports/results/peer_speed_cpu.json"


def group(name: str, routes: tuple[str, ...], B: int, L: int, H: int, N: int, varying: bool = False,
          real: bool = False) -> dict:
    """One group; `varying`: its scans' a drawn anew at every position and row, beside the project's scan with a
    transition per position (`bench_peers.yardstick`); `real`: every route on real decays, 2n real lanes."""
    return {"name": name, "routes": list(routes), "sizes": {"B": B, "L": L, "H": H, "N": N}, "varying": varying,
            "real": real}


LAYERS = ("linrnn lru scan", "linrnn s5 scan", "s5-pytorch", "lrnnx lru", "lrnnx s5")
TORCH_SCANS = ("linrnn chunked scan", "torch-associative-scan", "mambapy", "accelerated-scan-ref")
LOOPS = ("linrnn lru scan", "lru-pytorch", "linrnn chunked scan", "fla-hgrn-naive", "mamba-ssm-ref")
JAX_SCANS = ("linrnn lax.scan", "linrnn associative scan", "recurrentgemma")
# a transition per position (the gated recurrences: RG-LRU, Mamba's S6, HGRN): the same peers on a varying a
VARYING_TORCH = ("linrnn varying scan", "torch-associative-scan", "mambapy", "accelerated-scan-ref")
VARYING_REAL = ("linrnn varying scan, real", "torch-associative-scan", "mambapy", "accelerated-scan-ref")
VARYING_LOOPS = ("linrnn varying scan, real", "fla-hgrn-naive", "mamba-ssm-ref")
VARYING_JAX = ("linrnn varying lax.scan", "linrnn varying scan (JAX)", "recurrentgemma")

GROUPS = (group("layers", LAYERS, 8, 4096, 128, 128),
          group("scans, PyTorch", TORCH_SCANS, 8, 4096, 128, 128),
          group("loops over the positions in Python", LOOPS, 2, 256, 128, 128),
          group("scans, JAX", JAX_SCANS, 8, 4096, 128, 128),
          group("varying scans, PyTorch", VARYING_TORCH, 8, 4096, 128, 128, varying=True),
          group("varying scans, PyTorch, real decays", VARYING_REAL, 8, 4096, 128, 128, varying=True, real=True),
          group("varying scans, loops over the positions in Python", VARYING_LOOPS, 2, 256, 128, 128, varying=True),
          group("varying scans, JAX", VARYING_JAX, 8, 4096, 128, 128, varying=True))
LIVE = {True: (group("layers", LAYERS, 2, 256, 32, 32), group("scans, PyTorch", TORCH_SCANS, 2, 256, 32, 32),
               group("loops over the positions in Python", LOOPS, 2, 64, 32, 32),
               group("scans, JAX", JAX_SCANS, 2, 256, 32, 32),
               group("varying scans, PyTorch", VARYING_TORCH, 2, 256, 32, 32, varying=True),
               group("varying scans, PyTorch, real decays", VARYING_REAL, 2, 256, 32, 32, varying=True, real=True),
               group("varying scans, loops over the positions in Python", VARYING_LOOPS, 2, 64, 32, 32, varying=True),
               group("varying scans, JAX", VARYING_JAX, 2, 256, 32, 32, varying=True)),
        False: (group("layers", LAYERS, 4, 1024, 64, 64), group("scans, PyTorch", TORCH_SCANS, 4, 1024, 64, 64),
                group("loops over the positions in Python", LOOPS, 2, 128, 64, 64),
                group("scans, JAX", JAX_SCANS, 4, 1024, 64, 64),
                group("varying scans, PyTorch", VARYING_TORCH, 4, 1024, 64, 64, varying=True),
                group("varying scans, PyTorch, real decays", VARYING_REAL, 4, 1024, 64, 64, varying=True, real=True),
                group("varying scans, loops over the positions in Python", VARYING_LOOPS, 2, 128, 64, 64,
                      varying=True),
                group("varying scans, JAX", VARYING_JAX, 4, 1024, 64, 64, varying=True))}
LIVE_ROUNDS = {True: 3, False: 5}


def _clock(clock: str):
    import time

    if clock not in CLOCKS:
        raise LinrnnError(f"clock: expected one of {', '.join(CLOCKS)}, found {clock!r}")
    return time.process_time if clock == "cpu" else time.perf_counter


class _Threads:
    """PyTorch's intra-op threads set to `n` inside the block (0: unchanged), restored after."""

    def __init__(self, n: int):
        if not isinstance(n, int) or n < 0:
            raise LinrnnError(f"threads: expected 0 (PyTorch's own) or more, found {n!r}")
        self.n, self.before = n, None

    def __enter__(self):
        import torch

        self.before = torch.get_num_threads()
        if self.n:
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.before)


def group_rounds(g: dict, direction: str, rounds: int = ROUNDS, threads: int = THREADS,
                 clock: str = CLOCK) -> list[dict]:
    """One group in one direction: every route that can run here built, then timed in `rounds` interleaved rounds
    (`threads` PyTorch threads, `clock` 'cpu' or 'wall')."""
    from linrnn.verify import bench_peers

    if rounds < 1:
        raise LinrnnError(f"rounds: expected at least 1, found {rounds}")
    timer = _clock(clock)
    with _Threads(threads):
        return _group_rounds(g, direction, rounds, timer, bench_peers)


def _group_rounds(g: dict, direction: str, rounds: int, timer, bench_peers) -> list[dict]:
    rows, calls = [], {}
    varying, real = bool(g.get("varying")), bool(g.get("real"))
    for name in g["routes"]:
        route = bench_peers.check_route(name)
        row = {"group": g["name"], "route": name, "framework": route.framework, "family": route.family,
               "own": route.own, "direction": direction, "sizes": dict(g["sizes"]), "ms": None, "round_ms": None,
               "rounds": 0, "yardstick": bench_peers.yardstick(name, varying, real), "ratio": None,
               "ratio_range": None, "skipped": bench_peers.missing(name), "varying": varying, "real": real}
        rows.append(row)
        if row["skipped"] is None:
            try:
                calls[name] = bench_peers.make_route(name, direction, **g["sizes"], varying=varying, real=real)[0]
            except Exception as err:        # one route that fails to build must not lose the group's others
                row["skipped"] = f"failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    try:
        times = interleaved_ms(calls, rounds, clock=timer) if calls else {}
    except Exception as err:               # a call that raises: every route of the group says so, none is timed
        why = f"failed in the rounds: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        times = {}
        for row in rows:
            row["skipped"] = row["skipped"] or why
    for row in rows:
        if row["route"] in times:
            row["round_ms"] = times[row["route"]]
            row["ms"], row["rounds"] = statistics.median(row["round_ms"]), rounds
    for row in rows:
        yard = times.get(row["yardstick"]) if row["yardstick"] else None
        if row["round_ms"] and yard:
            ratios = sorted(t / y for t, y in zip(row["round_ms"], yard))
            row["ratio"], row["ratio_range"] = statistics.median(ratios), [ratios[0], ratios[-1]]
        elif row["yardstick"] and row["skipped"] is None:
            row["skipped"] = f"its yardstick {row['yardstick']} was not timed"
    return rows


def measure(groups=GROUPS, rounds: int = ROUNDS, progress=None, threads: int = THREADS, clock: str = CLOCK) -> dict:
    """Every group in both directions (`group_rounds`): -> {"rows": [...], "config": {...}}."""
    progress = progress or (lambda done, total, what: None)
    _clock(clock), _Threads(threads)                     # bad input before any work
    todo = [(g, d) for g in groups for d in DIRECTIONS]
    rows, start = [], _load()
    for i, (g, direction) in enumerate(todo):
        progress(i, len(todo), f"{g['name']} {direction}, {rounds} interleaved rounds")
        rows += group_rounds(g, direction, rounds, threads, clock)
    progress(len(todo), len(todo), "done")
    return {"rows": rows, "config": {**config(groups, rounds, threads, clock), "load_average_start": start}}


def config(groups, rounds: int, threads: int = THREADS, clock: str = CLOCK) -> dict:
    """What a result says about its run: the groups and their sizes, the rounds, PyTorch's threads and the clock, the
    load average when it ended (the machine's other work, which the ratios within a round do not remove)."""
    import torch

    return {"rounds": rounds, "groups": [dict(g) for g in groups], "device": "cpu", "dtype": "float32",
            "torch_threads": threads or torch.get_num_threads(), "clock": clock, "load_average": _load(),
            "undecided": UNDECIDED}


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def reading(row: dict) -> str:
    """A peer's ratio in words: 'the project faster', 'the peer faster' or 'undecided' (within UNDECIDED of 1, or a
    range over the rounds that crosses 1)."""
    if row.get("ratio") is None:
        return "-"
    low, high = row.get("ratio_range") or (row["ratio"], row["ratio"])
    if abs(row["ratio"] - 1) <= UNDECIDED or low <= 1 <= high:
        return "undecided"
    return "the project faster" if row["ratio"] > 1 else "the peer faster"


def _ms(x) -> str:
    return "-" if x is None else f"{x:.{2 if x < 10 else 1}f}"


def markdown(result: dict) -> str:
    """The rows as one markdown table per group: each route's median ms per direction, each peer's ratio with its
    range and its reading."""
    c = result["config"]
    clock = {"cpu": "this process's CPU time", "wall": "wall time"}.get(c.get("clock"), "wall time")
    lines = [f"{c['rounds']} interleaved rounds per group and direction, float32, CPU ({c['torch_threads']} PyTorch "
             f"threads, {clock}), load average {c.get('load_average_start', '-')} at the start and "
             f"{c.get('load_average')} at the end; ratio: the peer's time over its yardstick's in the same "
             f"round, the median over the rounds (their range); within {UNDECIDED:.0%} of 1, or a range across 1: "
             "undecided", ""]
    for g in c["groups"]:
        s = g["sizes"]
        mine = [r for r in result["rows"] if r["group"] == g["name"]]
        shape = (f"B = {s['B']}, L = {s['L']}, H = N = {s['H']}" if mine and mine[0]["family"] == "layer" else
                 (f"B = {s['B']}, L = {s['L']}, {2 * s['N']} real lanes" if g.get("real") else
                  f"B = {s['B']}, L = {s['L']}, n = {s['N']} complex lanes")
                 + (", a transition per position and row" if g.get("varying") else ""))
        lines += [f"**{g['name']}** ({shape}):", "",
                  "| route | forward ms | fwd / yardstick | fwd+bwd ms | fwd+bwd / yardstick | reading (fwd; fwd+bwd) |",
                  "|---|---|---|---|---|---|"]
        for name in g["routes"]:
            by = {r["direction"]: r for r in mine if r["route"] == name}
            fw, fb = by.get("forward", {}), by.get("forward+backward", {})

            def ratio(r):
                if r.get("ratio") is None:
                    return "-" if not r.get("skipped") or r.get("own") else "not run"
                lo, hi = r["ratio_range"]
                return f"{r['ratio']:.2f} ({lo:.2f}-{hi:.2f})"

            skipped = fw.get("skipped") or fb.get("skipped")
            yardsticks = {r.get("yardstick") for r in mine}
            yard = (f" / {fw.get('yardstick')}" if fw.get("yardstick") else
                    " (yardstick)" if name in yardsticks else " (this project)")
            lines.append(f"| {name}{yard} | {_ms(fw.get('ms'))} | {ratio(fw)} | {_ms(fb.get('ms'))} | {ratio(fb)} | "
                         + (f"{reading(fw)}; {reading(fb)}" if not fw.get("own") else "")
                         + (f" not run: {skipped}" if skipped else "") + " |")
        lines.append("")
    return "\n".join(lines)


# -- the stored record -----------------------------------------------------------------------------------------

EXTRA_LIBRARIES = ("s5-pytorch", "LRU-pytorch", "lrnnx", "accelerated-scan", "fla-core", "mambapy", "mamba-ssm",
                   "recurrentgemma")


def stored_record(result: dict, command: str):
    """The result with its envelope (date, machine, code and library versions, the peers' among them, the command)."""
    from linrnn.base.results import Envelope, TrainingSpeedRecord

    return TrainingSpeedRecord(sweep={"peers": result}, envelope=Envelope.here(command, EXTRA_LIBRARIES))


def check_stored(record) -> str | None:
    """What is wrong with a stored record's content (None: nothing)."""
    peers = (record.get("sweep") or {}).get("peers") if isinstance(record.get("sweep"), dict) else None
    if not isinstance(peers, dict) or not isinstance(peers.get("rows"), list) or not isinstance(peers.get("config"),
                                                                                                    dict):
        return "sweep.peers: expected an object with rows (a list) and config (an object)"
    keys = {"group", "route", "direction", "ms", "ratio", "ratio_range", "yardstick", "skipped"}
    for i, row in enumerate(peers["rows"]):
        if not isinstance(row, dict) or not keys <= set(row):
            return f"sweep.peers.rows[{i}]: expected an object with {', '.join(sorted(keys))}"
    return None


def load_stored(directory) -> tuple[dict | None, str | None]:
    """(the stored record as {"result", "date", "command", "machine", "libraries", "code_version", "file"}, None), or
    (None, why not) where `directory` has no valid STORED file."""
    from pathlib import Path

    from linrnn.base.results import ResultsError, TrainingSpeedRecord, read, to_dict

    path = Path(directory) / STORED
    if not path.exists():
        return None, f"no stored record ({STORED}): `{COMMAND}` writes it"
    try:
        raw = to_dict(read(path, TrainingSpeedRecord))
    except ResultsError as err:
        return None, str(err)
    why = check_stored(raw)
    if why:
        return None, f"{path.name}: {why}"
    return {"result": raw["sweep"]["peers"], "file": path.name,
            **{k: raw.get(k) for k in ("date", "command", "machine", "libraries", "code_version")}}, None


# -- the command ------------------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"interleaved rounds (default {ROUNDS})")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help=f"PyTorch's intra-op threads while timing (default {THREADS}; 0: PyTorch's own)")
    parser.add_argument("--clock", default=CLOCK, help=f"cpu (this process's CPU time) or wall (default {CLOCK})")
    parser.add_argument("--quick", action="store_true", help="the report's quick sizes instead of the full ones")
    parser.add_argument("--out", default=None, help=f"write the stored record here, e.g. reports/results/{STORED}")


def run_command(args: argparse.Namespace, command: str) -> int:
    if args.rounds < 1:
        raise LinrnnError(f"--rounds: expected 1 or more, found {args.rounds}")
    if args.threads < 0:
        raise LinrnnError(f"--threads: expected 0 (PyTorch's own) or more, found {args.threads}")
    if args.clock not in CLOCKS:
        raise LinrnnError(f"--clock: expected one of {', '.join(CLOCKS)}, found {args.clock!r}")

    def progress(done: int, total: int, what: str) -> None:
        print(f"[{done}/{total}] {what}", file=sys.stderr, flush=True)

    result = measure(LIVE[True] if args.quick else GROUPS, args.rounds, progress, args.threads, args.clock)
    print(markdown(result))
    if args.out:
        from linrnn.base.results import write

        write(args.out, stored_record(result, command))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0

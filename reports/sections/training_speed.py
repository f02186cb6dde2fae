"""Training speed and memory: forward and forward+backward time and peak memory against L, beside the peers.

The measurements are `linrnn.experiments.training_speed.sweep`. The long sweep (L up to 262144, both
frameworks, the peers, peak memory in fresh processes) takes tens of minutes on an idle machine, so
the report does not run it: it renders the stored sweeps in `reports/results/training_speed*.json`,
each written by

    linrnn bench training-speed --out reports/results/training_speed_<machine>.json

(with its command, date, machine, code and library versions), and recomputes their ratios from their
rows. Re-running that command is how the stored numbers are recomputed. Beside them the section runs
a small live sweep on this machine (PyTorch only, no peers, no memory probes; `LIVE`), so that the
page always says something about the machine it was built on:

    quick:    LRU and the GEMM floor, B = 2, H = N = 32, L = 256, 1024: about 3 s on this 2-core CPU
    default:  every mixer and the GEMM floor, B = 8, H = N = 128 (RotRNN 16 heads of 8), L = 1024, 4096:
              about 15 s on this 2-core CPU, idle

Beside the peers (`linrnn.experiments.peer_speed`): every published peer's CPU route beside the project's route of
the same contract, in interleaved rounds, as ratios. The stored record (reports/results/peer_speed_cpu.json, full
sizes, `linrnn bench peers --out ...`) is shown; the full report also times the peers live at smaller sizes
(`peer_speed.LIVE[False]`, 5 rounds: 26 s on this 2-core CPU at a load average of 5.4, imports and JAX's compiling
included); the quick report leaves the live rounds out and says so.

This module adds the figures' descriptions (plain data, drawn when the page renders) and names the
template; `linrnn report --from DIR` renders it from the saved results, stored sweeps included.
"""

from __future__ import annotations

from pathlib import Path

from linrnn.experiments import peer_speed
from linrnn.experiments.training_speed import DIRECTIONS, PEERS, check_stored, derive, scaling, sweep, targets
from linrnn.reports import plots
from linrnn.base.results import STORED_DIR, TrainingSpeedRecord
from linrnn.reports.results import read_stored

NAME = "training_speed"
TITLE = "Training speed and memory: forward and forward+backward against L, beside the peers"
TEMPLATE = "training_speed.html.j2"
LEAD = ("stored_time_0",)     # figures shown above the section's details (`render`): the first stored sweep

STORED_GLOB = "training_speed*.json"
COMMAND = "linrnn bench training-speed --out reports/results/training_speed_<machine>.json"
LIVE = {  # the live sweep: PyTorch only, no peers, no memory probes; a call over 2 s stops its longer lengths
    True: dict(lengths=(256, 1024), batch=2, width=32, state=32, heads=4, mixers=("lru",)),             # quick
    False: dict(lengths=(1024, 4096), batch=8, width=128, state=128, heads=16, mixers=("rotrnn", "lru", "dlr")),
}
LIVE_BUDGET_S = 2.0

COLOURS = {"rotrnn scan": "C0", "lru scan": "C1", "dlr conv": "C2", "dlr scan": "C3", "gemm floor": "0.3",
           "s5-pytorch": "C4", "lru-pytorch": "C5", "scan alone (chunked)": "C6", "scan alone (triton)": "C7",
           "scan alone (lax.scan)": "C8", "scan alone (pallas)": "C9"}
LINES = {"torch": "-", "jax": "--"}
MARKERS = {"torch": "o", "jax": "s"}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    stored, skipped = load_stored(STORED_DIR)
    live = sweep(device="cpu", frameworks=("torch",), peers=False, memory=False, budget_s=LIVE_BUDGET_S,
                 progress=progress, **LIVE[quick])
    data = {"live": live, "stored": stored, "stored_skipped": skipped, "peers": peers(quick, progress)}
    data["plots"] = figures(data)
    return data, {"live": {**LIVE[quick], "budget_s": LIVE_BUDGET_S}, "stored_dir": str(STORED_DIR),
                  "stored_glob": STORED_GLOB, "command": COMMAND,
                  "peers_live": None if quick else {"groups": [dict(g) for g in peer_speed.LIVE[False]],
                                                    "rounds": peer_speed.LIVE_ROUNDS[False]}}


PEERS_QUICK_OMITTED = ("left out of the quick report (importing the peers and compiling JAX's calls take about half a "
                       "minute); the full report times them")


def peers(quick: bool, progress) -> dict:
    """The peers' part: the stored record beside the peers (or why there is none) and, in the full report, live rounds
    on this machine (`peer_speed.LIVE[False]`)."""
    stored, why = peer_speed.load_stored(STORED_DIR)
    live = None if quick else peer_speed.measure(peer_speed.LIVE[False], peer_speed.LIVE_ROUNDS[False], progress)
    return {"stored": stored, "stored_skipped": why, "live": live,
            "live_omitted": PEERS_QUICK_OMITTED if quick else None, "undecided": peer_speed.UNDECIDED}


def peers_headline(part: dict | None) -> str:
    """The stored record's fwd+bwd ratios in one sentence (the summary line's second half), or ''."""
    stored = (part or {}).get("stored")
    if not stored:
        return ""
    rows = [r for r in stored["result"]["rows"] if r["direction"] == "forward+backward" and not r.get("own")]
    timed = [f"{r['route']} {r['ratio']:.2f}" + (" (undecided)" if peer_speed.reading(r) == "undecided" else "")
             for r in rows if r.get("ratio") is not None]
    if not timed:
        return ""
    return (f"Beside the peers ({stored['file']}, {stored['result']['config']['rounds']} interleaved rounds), "
            f"forward+backward, the peer's time over the project's route of the same contract: {', '.join(timed)}.")


def load_stored(directory: Path) -> tuple[list[dict], list[list[str]]]:
    """Every valid stored sweep in `directory` (ratios recomputed from its rows), and [file, reason] for the rest."""
    files, skipped = read_stored(directory, STORED_GLOB, TrainingSpeedRecord, check_stored)
    stored = []
    for path, record in files:
        result, c = record["sweep"], record["sweep"]["config"]
        derive(result["rows"], c["B"], c["H"])
        result["scaling"], result["targets"] = scaling(result["rows"]), targets(result["rows"])
        stored.append({"file": path.name, **{k: record.get(k) for k in (
            "command", "date", "code_version", "machine", "libraries")}, "sweep": result})
    return stored, skipped


def figures(data: dict) -> dict:
    """{'live_time': ...} and, per stored sweep i, {'stored_time_i', 'stored_memory_i'}: log-log against L."""
    out = {"live_time": sweep_figure(data["live"], "ms", "time per call (ms)", "this machine, live")}
    for i, s in enumerate(data["stored"]):
        label = f"{s['file']} ({(s.get('machine') or {}).get('label', '?')}, {s['sweep']['config']['device']})"
        out[f"stored_time_{i}"] = sweep_figure(s["sweep"], "ms", "time per call (ms)", label)
        if s["sweep"]["config"].get("memory"):
            out[f"stored_memory_{i}"] = sweep_figure(s["sweep"], "peak_bytes", "peak memory (MiB)", label,
                                                     scale=2.0 ** -20)
    return out


def sweep_figure(result: dict, key: str, ylabel: str, label: str, scale: float = 1.0) -> dict:
    """One panel per direction; one series per framework x implementation (skipped points are gaps)."""
    rows, lengths = result["rows"], result["config"]["lengths"]
    panels = []
    for direction in DIRECTIONS:
        items = []
        for framework, impl in dict.fromkeys((r["framework"], r["implementation"]) for r in rows):
            pts = sorted((r["L"], r[key] * scale) for r in rows if r["framework"] == framework
                         and r["implementation"] == impl and r["direction"] == direction and r[key] is not None)
            if pts:
                items.append(plots.series(f"{framework} {impl}", [p[0] for p in pts], [p[1] for p in pts],
                                          COLOURS.get(impl, "C7"), line=LINES[framework], marker=MARKERS[framework]))
        panels.append(plots.panel(direction, "L", ylabel, items, xscale="log", yscale="log", xticks=lengths,
                                  legend=direction == DIRECTIONS[-1]))
    c = result["config"]
    return plots.figure(f"{ylabel} against L, {label}: B = {c['B']}, H = {c['H']}, N = {c['N']}, {c['dtype']} "
                        "(log-log)", panels, 10.0, 3.6)


# -- the headline (the page's first screen, report.md, --against) -------------------------------

HEADLINE_DIRECTION = "forward+backward"


def headline(stored: dict) -> dict | None:
    """A stored sweep's headline: each PyTorch layer's forward+backward time over s5-pytorch's, the median of the
    interleaved rounds with their range, and the other peer's ratio from the sweep (no rounds). None: the sweep
    has no interleaved rounds."""
    sweep = stored["sweep"]
    rows = [r for r in sweep.get("interleaved") or [] if r["direction"] == HEADLINE_DIRECTION
            and r.get("over_s5_pytorch") is not None and r["implementation"] not in PEERS]
    if not rows:
        return None
    L, rounds = rows[0]["L"], rows[0]["rounds"]
    ratios = [{"name": r["implementation"], "value": r["over_s5_pytorch"], "range": r.get("over_s5_pytorch_range")}
              for r in rows]
    peers = [{"name": t["implementation"], "value": t["fwd_bwd_over_s5"]} for t in sweep.get("targets") or []
             if t["framework"] == "torch" and t["implementation"] in PEERS[1:] and t.get("at_L") == L
             and t.get("fwd_bwd_over_s5") is not None]
    machine = (stored.get("machine") or {}).get("label", "?")

    def ratio(r):
        spread = r.get("range")
        return f"{r['name']} {r['value']:.2f}" + (f" ({spread[0]:.2f}\u2013{spread[1]:.2f})" if spread else "")

    text = (f"PyTorch {HEADLINE_DIRECTION} at L = {L} on {machine}, time / s5-pytorch's (median of {rounds} "
            f"interleaved rounds, their range): {', '.join(map(ratio, ratios))}"
            + "".join(f"; {p['name']} {p['value']:.1f} (one sweep)" for p in peers) + ".")
    return {"file": stored.get("file"), "machine": machine, "L": L, "rounds": rounds, "direction": HEADLINE_DIRECTION,
            "ratios": ratios, "peers": peers, "text": text}


def round_ratios(stored: dict) -> dict[str, dict]:
    """Every ratio of a stored sweep that was timed in interleaved rounds: {key: {"value", "range"}} (the ratios
    to the GEMM floor and to s5-pytorch, and the growth from one length to another)."""
    sweep, out = stored["sweep"], {}
    for r in sweep.get("interleaved") or []:
        for key, unit in (("over_s5_pytorch", "s5-pytorch"), ("over_gemm_floor", "gemm floor")):
            if r.get(key) is not None and r.get(key + "_range") and r["implementation"] != unit:
                out[f"{stored.get('file')}: {r['implementation']} {r['direction']} at L = {r['L']} / {unit}"] = {
                    "value": r[key], "range": list(r[key + "_range"])}
    for r in sweep.get("growth_rounds") or []:
        if r.get("ratio") is not None and r.get("ratio_range"):
            out[f"{stored.get('file')}: {r['implementation']} {r['direction']} t({r['to_L']}) / t({r['from_L']})"] = {
                "value": r["ratio"], "range": list(r["ratio_range"])}
    return out


def summary(data: dict) -> str:
    heads = [h["text"] for h in map(headline, data["stored"]) if h is not None]
    peers_line = peers_headline(data.get("peers"))
    return " ".join(heads + ([peers_line] if peers_line else [])) or \
        "No stored sweep with the peers: the details have this machine's live sweep only."

"""Scan speed: every mixer x backend x mode, forward time against L on log-log axes (claim D9).

The experiment is `linrnn.experiments.speed.run`; this module adds the figure's description (plain
data, drawn when the page renders) and names the template.
"""

from __future__ import annotations

from linrnn.experiments.speed import BACKENDS, TIMED_KINDS, MODES, run
from linrnn.reports import plots

NAME = "speed"
TITLE = "Scan speed: forward time against sequence length"
TEMPLATE = "speed.html.j2"

LEAD = ("time",)        # figures shown above the section's details (`render`)

LINES = {"torch": "-", "jax": "--"}
MARKERS = dict(zip(MODES, "osD^"))
COLOURS = dict(zip(MODES, ("C0", "C1", "C2", "C3")))


def compute(quick: bool, progress) -> tuple[dict, dict]:
    data, config = run(quick, progress)
    data["plots"] = {"time": figure(data["rows"], config["lengths"])}
    return data, config


def summary(data: dict) -> str:
    timed = [r for r in data["rows"] if r["ms"] is not None]
    if not timed:
        return "Nothing was timed."
    longest = max(r["L"] for r in timed)
    fastest = []
    for kind in TIMED_KINDS:
        at = [r for r in timed if r["mixer"] == kind and r["L"] == longest]
        if at:
            best = min(at, key=lambda r: r["ms"])
            fastest.append(f"{kind} {best['backend']} {best['mode']} {best['ms']:.2f} ms")
    return f"The fastest forward call at L = {longest}: {', '.join(fastest)}. The figure has every mode."


def figure(rows: list[dict], lengths) -> dict:
    panels = []
    for kind in TIMED_KINDS:
        items = []
        for backend in BACKENDS:
            for mode in MODES:
                pts = sorted((r["L"], r["ms"]) for r in rows if r["mixer"] == kind and r["backend"] == backend
                             and r["mode"] == mode and r["ms"] is not None)
                if pts:
                    items.append(plots.series(f"{backend} {mode}", [p[0] for p in pts], [p[1] for p in pts],
                                              COLOURS[mode], line=LINES[backend], marker=MARKERS[mode]))
        panels.append(plots.panel(kind, "L", "forward time (ms)", items, xscale="log", yscale="log",
                                  xticks=lengths, legend=kind == TIMED_KINDS[-1]))
    return plots.figure("forward time against L, per mixer, backend and mode (log-log)", panels, 9.0, 3.2)

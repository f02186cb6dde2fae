"""Theory: the SymPy/SciPy derivations of docs/claims.md, and claim R3 by Monte Carlo in both frameworks.

Data (saved as JSON, rendered by `theory.html.j2`):

    claims      one record per derivation (`linrnn.theory.registry.run_all`): claim id, title, verdict,
                partly, condition, assumptions, findings (statement, verdict, condition, evidence),
                steps (label, MathML, LaTeX, text), witness numbers, seconds
    theory      the derivations' schema, code version and tolerance table (`results_payload`)
    montecarlo  `linrnn.experiments.montecarlo.run_montecarlo`: curves, table, verdicts, timings
    r3          per start: does "E||x_t||^2 constant for all t" hold (Monte Carlo, both frameworks)?
    table       the Monte Carlo at t = 1, 10, 100, 1000, 4096, one row per (model, start, head or mode)
    verdicts    claim id -> verdict ("fails (partly)" where some parts hold)
    plots       inline SVG: RotRNN heads from the three starts; LRU modes from x_0 = 0

The MathML comes from SymPy's printer (`theory.records.render_mathml`), never from user text; the
template inserts it and the SVG unescaped, and escapes everything else. torch and JAX are imported by
the Monte Carlo when it runs, not when this module is imported.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from linrnn.theory.normalisation import MC_STARTS

NAME = "theory"
TITLE = "Theory: derivations and the normalisation by Monte Carlo"
TEMPLATE = "theory.html.j2"


def _r3_summary(mc: dict) -> list[dict]:
    """Per RotRNN start: constant or not, agreement with the closed form, when the band first reaches 1."""
    rows = []
    for start in ("zero", "stationary", "unit_first_input"):
        curves = [c for c in mc["curves"] if c["model"] == "rotrnn" and c["start"] == start]
        heads = sorted({c["unit"] for c in curves})
        first = {}
        for h in heads:
            ts = [c["first_t_at_fixed_point"] for c in curves if c["unit"] == h]
            first[h] = None if any(t is None for t in ts) else max(ts)
        rows.append({
            "start": start,
            "constant": all(c["constant"] for c in curves),
            "agrees": all(c["agrees"] for c in curves),
            "worst_z": max(c["worst_z"] for c in curves),
            "heads": [{"unit": h, "gamma": mc["gammas"][h], "first_t_at_one": first[h],
                       "mean_t1": {c["framework"]: c["mean"][0] for c in curves if c["unit"] == h},
                       "closed_t1": next(c["closed"][0] for c in curves if c["unit"] == h)} for h in heads],
        })
    return rows


def _table_rows(mc: dict) -> list[dict]:
    """The Monte Carlo table regrouped for the page: one row per (model, start, unit), one cell per t."""
    rows: dict[tuple, dict] = {}
    for entry in mc["table"]:
        key = (entry["model"], entry["start"], entry["unit"])
        row = rows.setdefault(key, {"model": entry["model"], "start": entry["start"], "label": entry["label"],
                                    "cells": {}})
        cell = row["cells"].setdefault(entry["t"], {"t": entry["t"], "closed": entry["closed"]})
        cell[entry["framework"]] = {k: entry[k] for k in ("mean", "ci_low", "ci_high")}
    return [dict(row, cells=[row["cells"][t] for t in sorted(row["cells"])]) for row in rows.values()]


def compute(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.experiments.montecarlo import DEFAULT, QUICK, run_montecarlo
    from linrnn.theory.registry import DERIVATIONS, results_payload, run_all

    claims = list(DERIVATIONS)
    total = len(claims) + 100  # the Monte Carlo reports in hundredths
    results = []
    for i, claim in enumerate(claims):
        progress(i, total, f"derivation {claim}")
        results.extend(run_all(quick, [claim]))
    payload = results_payload(results, quick)

    mc_cfg = QUICK if quick else DEFAULT
    mc = run_montecarlo(mc_cfg, lambda done, of, what: progress(len(claims) + 100 * done // of, total, what))
    progress(total, total, "plots")
    data = {
        "claims": payload["claims"],
        "theory": {k: payload[k] for k in ("schema", "code_version", "tolerances")},
        "montecarlo": mc,
        "r3": _r3_summary(mc),
        "table": _table_rows(mc),
        "plots": {"rotrnn": plot_rotrnn(mc), "lru": plot_lru(mc)},
        "verdicts": {c["claim"]: c["verdict"] + (" (partly)" if c["partly"] else "") for c in payload["claims"]},
    }
    config = {"claims": claims, "montecarlo": dataclasses.asdict(mc_cfg)}
    return data, config


# -- plots of the Monte Carlo -------------------------------------------------------------------

START_TITLES = {"zero": "x_0 = 0 (the code)", "stationary": "stationary start, E||x_0||^2 = 1",
                "unit_first_input": "first input scaled by 1/||B||_F"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
FRAMEWORK_STYLE = {"torch": {"alpha": 0.25, "marker": "o"}, "jax": {"alpha": 0.25, "marker": "x"}}


def _panel(ax, result: dict, model: str, start: str, title: str, ylabel: str) -> None:
    t = np.asarray(result["t"])
    for c in result["curves"]:
        if c["model"] != model or c["start"] != start:
            continue
        colour = COLOURS[c["unit"] % len(COLOURS)]
        style = FRAMEWORK_STYLE[c["framework"]]
        ax.fill_between(t, c["ci_low"], c["ci_high"], color=colour, alpha=style["alpha"], linewidth=0)
        ax.plot(t, c["mean"], linestyle="none", marker=style["marker"], markersize=3, color=colour,
                label=f"{c['framework']} MC, {c['label'].split(',')[0]}")
        if c["framework"] == "torch":
            ax.plot(t, c["closed"], color=colour, linewidth=1.2, label=f"closed form, {c['label']}")
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def plot_rotrnn(result: dict) -> str:
    from linrnn.reports.plots import figure, to_svg

    fig, axes = figure(width=11.0, height=3.6, ncols=len(MC_STARTS))
    top = 1.05 * max(max(c["ci_high"]) for c in result["curves"] if c["model"] == "rotrnn")
    for ax, start in zip(axes, MC_STARTS):
        _panel(ax, result, "rotrnn", start, START_TITLES[start], "E||x_t||^2 per head")
        ax.set_ylim(0.0, top)                    # one scale: constant at 1 vs rising from 1 - gamma^2
    axes[1].legend(fontsize=7, loc="lower center")
    level = int(round(100 * result["config"]["confidence"]))
    return to_svg(fig, f"RotRNN E||x_t||^2 per head vs t (log scale): Monte Carlo means with {level}% bands "
                       f"(torch, jax) and closed forms, from three starts")


def plot_lru(result: dict) -> str:
    from linrnn.reports.plots import figure, to_svg

    fig, ax = figure(width=9.0, height=3.6)
    _panel(ax, result, "lru", "zero", "LRU modes from x_0 = 0", "E|x_t,j|^2 per mode")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    level = int(round(100 * result["config"]["confidence"]))
    return to_svg(fig, f"LRU E|x_t,j|^2 per mode vs t (log scale): Monte Carlo means with {level}% bands "
                       f"(torch, jax) and the closed form, from x_0 = 0")

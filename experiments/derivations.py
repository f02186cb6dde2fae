"""The theory section's computations: every SymPy/SciPy derivation, and claim R3 by Monte Carlo.

    run(quick, progress) -> (data, config)

    claims      one record per derivation (`linrnn.theory.registry.run_all`), as the theory code writes it
    theory      the derivations' schema, code version and tolerance table (`results_payload`)
    montecarlo  `linrnn.experiments.montecarlo.run_montecarlo`: curves, table, timings
    r3          per RotRNN start: is E||x_t||^2 = 1 at every stored t (within the band), per-head details
    table       the Monte Carlo at t = 1, 10, 100, 1000, 4096, one row per (model, start, head or mode)

torch and JAX are imported by the Monte Carlo when it runs, not when this module is imported.
"""

from __future__ import annotations

import dataclasses


def r3_summary(mc: dict) -> list[dict]:
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


def table_rows(mc: dict) -> list[dict]:
    """The Monte Carlo table regrouped for the page: one row per (model, start, unit), one cell per t."""
    rows: dict[tuple, dict] = {}
    for entry in mc["table"]:
        key = (entry["model"], entry["start"], entry["unit"])
        row = rows.setdefault(key, {"model": entry["model"], "start": entry["start"], "label": entry["label"],
                                    "cells": {}})
        cell = row["cells"].setdefault(entry["t"], {"t": entry["t"], "closed": entry["closed"]})
        cell[entry["framework"]] = {k: entry[k] for k in ("mean", "ci_low", "ci_high")}
    return [dict(row, cells=[row["cells"][t] for t in sorted(row["cells"])]) for row in rows.values()]


def run(quick: bool, progress) -> tuple[dict, dict]:
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
    progress(total, total, "done")
    data = {
        "claims": payload["claims"],
        "theory": {k: payload[k] for k in ("schema", "code_version", "tolerances")},
        "montecarlo": mc,
        "r3": r3_summary(mc),
        "table": table_rows(mc),
    }
    return data, {"claims": claims, "montecarlo": dataclasses.asdict(mc_cfg)}

"""Theory: the SymPy/SciPy derivations of docs/claims.md, and claim R3 by Monte Carlo in both frameworks.

The computations are `linrnn.experiments.derivations.run` (the derivations of `linrnn.theory` and the
Monte Carlo of `linrnn.experiments.montecarlo`); this module adds the Monte Carlo figures' descriptions
(plain data, drawn when the page renders) and names the template. The MathML of the derivation steps
comes from SymPy's printer; the page inserts it only after `linrnn.reports.render.mathml` has checked
that it is MathML and nothing else.
"""

from __future__ import annotations

from linrnn.experiments.derivations import run
from linrnn.experiments.montecarlo import STARTS
from linrnn.reports import plots

NAME = "theory"
TITLE = "Theory: derivations and the normalisation by Monte Carlo"
TEMPLATE = "theory.html.j2"

START_TITLES = {"zero": "x_0 = 0 (the code)", "stationary": "stationary start, E||x_0||^2 = 1",
                "unit_first_input": "first input scaled by 1/||B||_F"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
MARKERS = {"torch": "o", "jax": "x"}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    data, config = run(quick, progress)
    data["plots"] = figures(data["montecarlo"])
    return data, config


def summary(data: dict) -> str:
    claims = ", ".join(f"{c['claim']} {c['verdict']}" + (" in part" if c.get("partly") else "") for c in data["claims"])
    mc = data["montecarlo"]
    return (f"Derived in SymPy and checked on random instances: {claims}. R3 by Monte Carlo in both frameworks: "
            + ("every curve agrees with its closed form." if mc.get("agrees") else
               "some curves disagree with their closed forms."))


def _series(result: dict, model: str, start: str) -> list[dict]:
    out = []
    for c in result["curves"]:
        if c["model"] != model or c["start"] != start:
            continue
        colour = COLOURS[c["unit"] % len(COLOURS)]
        out.append(plots.series(f"{c['framework']} MC, {c['label'].split(',')[0]}", result["t"], c["mean"], colour,
                                low=c["ci_low"], high=c["ci_high"], line="none", marker=MARKERS[c["framework"]]))
        if c["framework"] == "torch":
            out.append(plots.series(f"closed form, {c['label']}", result["t"], c["closed"], colour))
    return out


def figures(result: dict) -> dict:
    level = int(round(100 * result["config"]["confidence"]))
    top = 1.05 * max(max(c["ci_high"]) for c in result["curves"] if c["model"] == "rotrnn")
    rot = [plots.panel(START_TITLES[start], "t", "E||x_t||^2 per head", _series(result, "rotrnn", start),
                       xscale="log", ylim=(0.0, top), legend=start == STARTS[1])   # one scale for all starts
           for start in STARTS]
    lru = [plots.panel("LRU modes from x_0 = 0", "t", "E|x_t,j|^2 per mode", _series(result, "lru", "zero"),
                       xscale="log")]
    return {
        "rotrnn": plots.figure(f"RotRNN E||x_t||^2 per head vs t (log scale): Monte Carlo means with {level}% bands "
                               f"(torch, jax) and closed forms, from three starts", rot, 11.0, 3.6),
        "lru": plots.figure(f"LRU E|x_t,j|^2 per mode vs t (log scale): Monte Carlo means with {level}% bands "
                            f"(torch, jax) and the closed form, from x_0 = 0", lru, 9.0, 3.6),
    }

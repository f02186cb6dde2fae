"""The cross-check matrix: reference, torch and jax on the same bundles (`linrnn crosscheck`'s selection).

The measurement is `linrnn.experiments.crosscheck.run_selection` (the report's selection of `linrnn.verify.crosscheck`);
this module names it and its template.
"""

from __future__ import annotations

from linrnn.experiments.crosscheck import run_selection

NAME = "crosscheck"
TITLE = "Cross-check: reference vs PyTorch vs JAX, outputs and gradients"
TEMPLATE = "crosscheck.html.j2"


def compute(quick: bool, progress) -> tuple[dict, dict]:
    return run_selection(quick, progress)


def summary(data: dict) -> str:
    entries = data["entries"]
    bad = sum(not e["ok"] for e in entries)
    worst = max(data["summary"], key=lambda r: r["worst_ratio"], default=None)
    head = (f"All {len(entries)} comparisons within tolerance" if not bad else
            f"{bad} of {len(entries)} comparisons exceed the tolerance")
    if worst is None:
        return head + "."
    return (f"{head}; the worst cell, {worst['mixer']} {worst['mode']} {worst['dtype']} {worst['pair']} "
            f"{worst['quantity']}, reaches {worst['worst_ratio']:.2g} of its tolerance ({worst['worst']}). "
            "The heatmap at the top of the page shows every cell.")

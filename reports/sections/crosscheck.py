"""The cross-check matrix: reference, torch and jax on the same bundles (`linrnn crosscheck`'s selection).

The engine is `linrnn.verify.crosscheck`; this module picks the report's selection and names the template.
"""

from __future__ import annotations

from linrnn.verify.crosscheck import DEFAULT_SHAPES, Selection, Shape, run

NAME = "crosscheck"
TITLE = "Cross-check: reference vs PyTorch vs JAX, outputs and gradients"
TEMPLATE = "crosscheck.html.j2"

# --quick: one causal shape (odd length, decays near one, so every mode including `step` is compared); L = 1
# and the bidirectional shape are in the full selection (DEFAULT_SHAPES) and in the test suite's cross-checks, whose
# causal case is this shape (tests/models/conftest.py, properties/test_crossframework_properties.py: one program each)
QUICK_SHAPES = (Shape(2, 17, 3, 4, False, True),)


def compute(quick: bool, progress) -> tuple[dict, dict]:
    selection = Selection(shapes=QUICK_SHAPES if quick else DEFAULT_SHAPES)
    data = run(selection, progress)
    return data, data["selection"]


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

"""The cross-check matrix: reference, torch and jax on the same bundles (`linrnn crosscheck`'s selection).

The engine is `linrnn.impls.crosscheck`; this module picks the report's selection and names the template.
"""

from __future__ import annotations

from linrnn.impls.crosscheck import DEFAULT_SHAPES, Selection, Shape, run

NAME = "crosscheck"
TITLE = "Cross-check: reference vs PyTorch vs JAX, outputs and gradients"
TEMPLATE = "crosscheck.html.j2"

QUICK_SHAPES = (Shape(2, 1, 3, 4, False, False), Shape(1, 17, 3, 4, True, True))


def compute(quick: bool, progress) -> tuple[dict, dict]:
    selection = Selection(shapes=QUICK_SHAPES if quick else DEFAULT_SHAPES)
    data = run(selection, progress)
    return data, data["selection"]

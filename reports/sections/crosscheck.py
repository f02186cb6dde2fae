"""The cross-check matrix: reference, torch and jax on the same bundles (`linrnn crosscheck`'s selection).

The engine is `linrnn.impls.crosscheck`; this module picks the report's selection and names the template.
"""

from __future__ import annotations

from linrnn.impls.crosscheck import DEFAULT_SHAPES, Selection, Shape, run

NAME = "crosscheck"
TITLE = "Cross-check: reference vs PyTorch vs JAX, outputs and gradients"
TEMPLATE = "crosscheck.html.j2"

# --quick: one causal shape (odd length, decays near one, so every mode including `step` is compared); L = 1
# and the bidirectional shape are in the full selection (DEFAULT_SHAPES) and in the test suite's cross-checks
QUICK_SHAPES = (Shape(2, 17, 3, 4, False, True),)


def compute(quick: bool, progress) -> tuple[dict, dict]:
    selection = Selection(shapes=QUICK_SHAPES if quick else DEFAULT_SHAPES)
    data = run(selection, progress)
    return data, data["selection"]

"""The report's cross-check matrix: reference, torch and jax on the same bundles, at `linrnn crosscheck`'s selection.

The engine is `linrnn.verify.crosscheck`; this module picks the report's selection and runs it (`run_selection`); the
report's section (`linrnn.reports.sections.crosscheck`) names it and its template.
"""

from __future__ import annotations

from linrnn.verify.crosscheck import DEFAULT_SHAPES, Selection, Shape, run

# --quick: one causal shape (odd length, decays near one, so every mode including `step` is compared); L = 1
# and the bidirectional shape are in the full selection (DEFAULT_SHAPES) and in the test suite's cross-checks, whose
# causal case is this shape (tests/models/conftest.py, properties/test_crossframework_properties.py: one program each)
QUICK_SHAPES = (Shape(2, 17, 3, 4, False, True),)


def run_selection(quick: bool, progress) -> tuple[dict, dict]:
    selection = Selection(shapes=QUICK_SHAPES if quick else DEFAULT_SHAPES)
    data = run(selection, progress)
    return data, data["selection"]

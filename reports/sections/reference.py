"""The reference's self-check (recurrent view vs kernel view), with the R4 and R5 measurements.

The experiment is `linrnn.experiments.reference.run`; this module names it and its page template.
"""

from __future__ import annotations

from linrnn.experiments.reference import run

NAME = "reference"
TITLE = "Reference: recurrent view vs kernel view"
TEMPLATE = "reference.html.j2"


def compute(quick: bool, progress) -> tuple[dict, dict]:
    return run(quick, progress)

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


def summary(data: dict) -> str:
    """The section's finding in one line (the page shows it above the details)."""
    n, bad = len(data["rows"]), sum(not r["ok"] for r in data["rows"])
    worst = max((r["worst_ratio"] for r in data["summary"]), default=float("nan"))
    return ((f"The recurrent and kernel views agree in all {n} cases" if not bad else
             f"{bad} of {n} cases exceed the tolerance") + f"; worst error / tolerance {worst:.1e}.")

"""Conformance: the built-in targets of `linrnn conform` against the reference, each check with its error.

The measurement is `linrnn.experiments.conformance.run_all` (the targets, their runs, the peers' stored findings,
the verdicts); this module names it and its page template.
"""

from __future__ import annotations

from linrnn.experiments.conformance import run_all, verdict

NAME = "conformance"
TITLE = "Conformance: implementations written elsewhere, checked by linrnn conform"
TEMPLATE = "conformance.html.j2"


def compute(quick: bool, progress) -> tuple[dict, dict]:
    return run_all(quick, progress)


def summary(data: dict) -> str:
    runs = [(r, verdict(r)) for r in data["runs"]]
    peers = "; ".join(f"{r['target']} as {r['model']} {v['verdict']}"
                      + (f" ({v['failed']} of {v['checks']} checks fail)" if v["verdict"] != "conforms" else "")
                      + (f" ({v['stored']})" if v["stored"] else "")
                      for r, v in runs if r["group"] == "peer")
    own = [v["verdict"] for r, v in runs if r["group"] != "peer"]
    return (f"Peers: {peers or 'none run'}. This project's layers: {own.count('conforms')} of {len(own)} conform."
            + (" Each deviation is named under its target." if peers else ""))

"""Conformance: the built-in targets of `linrnn conform` against the reference, each check with its error.

The engine is `linrnn.impls.conform`; this module picks the targets and names the template. The peers
(`lru-pytorch`, `s5-pytorch`, the optional extra `linrnn[peers]`) run at the contract they are loaded with;
the project's own adapters (`linrnn-torch`, `linrnn-jax`) at every mixer kind. A target that cannot run
here (its package or framework missing) is listed with the reason instead.

    data = {"runs": [{"target", "model", "group": "peer" | "own", "absent": reason or None,
                      "result": conform.Result.to_dict() or None}, ...],
            "lengths": [...], "seed": S, "quick_omitted": [[target, why], ...]}

`quick` leaves out `linrnn-jax`: JAX compiles each shape and config of the battery, about 10 s per kind
and dtype on a 2-core CPU, more than the quick report's few seconds for this section.
"""

from __future__ import annotations

from linrnn.impls.conform import DEFAULT_LENGTHS, DTYPES, run, unavailable
from linrnn.impls.config import KINDS

NAME = "conformance"
TITLE = "Conformance: implementations written elsewhere, checked by linrnn conform"
TEMPLATE = "conformance.html.j2"

SEED = 0
PEER_RUNS = (("lru-pytorch", "lru"), ("s5-pytorch", "s5"), ("s5-pytorch", "lru"))
OWN_TARGETS = ("linrnn-torch", "linrnn-jax")
QUICK_OMITTED = {"linrnn-jax": "JAX compiles each shape and config of the battery (about 10 s per kind and dtype "
                               "on a 2-core CPU); it runs in the full report"}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    planned = [(target, kind, "peer") for target, kind in PEER_RUNS]
    planned += [(target, kind, "own") for target in OWN_TARGETS if not (quick and target in QUICK_OMITTED)
                for kind in KINDS]
    runs = []
    for i, (target, kind, group) in enumerate(planned):
        progress(i, len(planned), f"{target} --model {kind}")
        absent = unavailable(target)
        result = None if absent else run(target, kind, DTYPES, DEFAULT_LENGTHS, SEED).to_dict()
        runs.append({"target": target, "model": kind, "group": group, "absent": absent, "result": result})
    progress(len(planned), len(planned), "done")
    omitted = [[t, why] for t, why in QUICK_OMITTED.items()] if quick else []
    data = {"runs": runs, "lengths": list(DEFAULT_LENGTHS), "seed": SEED, "quick_omitted": omitted}
    return data, {"lengths": list(DEFAULT_LENGTHS), "seed": SEED, "dtypes": list(DTYPES)}


def verdict(run: dict) -> dict:
    """One run's verdict: {"verdict": "conforms" | "deviates" | "not run here", "failed", "checks", "diagnoses"}."""
    result = run.get("result")
    if run.get("absent") or not isinstance(result, dict):
        return {"verdict": "not run here", "failed": 0, "checks": 0, "diagnoses": [str(run.get("absent") or "")]}
    checks = result.get("checks") or []
    return {"verdict": "conforms" if result.get("conforms") else "deviates",
            "failed": sum(c.get("status") == "fail" for c in checks), "checks": len(checks),
            "diagnoses": [str(d.get("words", "")) for d in result.get("diagnoses") or []]}


def summary(data: dict) -> str:
    runs = [(r, verdict(r)) for r in data["runs"]]
    peers = "; ".join(f"{r['target']} as {r['model']} {v['verdict']}"
                      + (f" ({v['failed']} of {v['checks']} checks fail)" if v["verdict"] == "deviates" else "")
                      for r, v in runs if r["group"] == "peer")
    own = [v["verdict"] for r, v in runs if r["group"] != "peer"]
    return (f"Peers: {peers or 'none run'}. This project's layers: {own.count('conforms')} of {len(own)} conform."
            + (" Each deviation is named under its target." if peers else ""))

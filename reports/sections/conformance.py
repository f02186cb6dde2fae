"""Conformance: the built-in targets of `linrnn conform` against the reference, each check with its error.

The engine is `linrnn.verify.conform`; this module picks the targets and names the template. The peers
(the optional extra `linrnn[peers]`) run at the contracts their adapters implement; the project's own
adapters (`linrnn-torch`, `linrnn-jax`) at every mixer kind, and its scans at the scan contract. A target that
cannot run here (its package or framework missing) is listed with the reason instead. The findings table
has one row per peer run: its verdict, the variants that fail, and each named deviation, with the command
that reproduces it.

    data = {"runs": [{"target", "model", "group": "peer" | "own", "absent": reason or None,
                      "result": conform.Result.to_dict() or None}, ...],
            "peers": conform.peers_table(), "findings": [{"target", "model", "command", "verdict", "failing",
            "deviations"}, ...], "lengths": [...], "seed": S, "quick_omitted": [[target, why], ...]}

mamba-ssm runs only where it is installed (it needs CUDA to build; `linrnn gpucheck` checks it on a GPU machine), so
elsewhere its two targets are listed as not run here, with that reason.

The very long check (`VERY_LONG`) is left out of every run here; `linrnn conform` runs it.

`quick` leaves out `linrnn-jax` (JAX compiles each shape and config of the battery, about 10 s per kind and
dtype on a 2-core CPU), `accelerated-scan` (Triton's interpreter runs its kernels, about 90 s) and `fla-hgrn`
(the same, about 12 s).
"""

from __future__ import annotations

from linrnn.verify.conform import DEFAULT_LENGTHS, DTYPES, peers_table, run, unavailable
from linrnn.impls.config import KINDS

NAME = "conformance"
TITLE = "Conformance: implementations written elsewhere, checked by linrnn conform"
TEMPLATE = "conformance.html.j2"

SEED = 0
# The very long check (L = 2^16 + 1) is left out of the report: a 2-core CPU runs each target's layers at that length
# in seconds per kind and dtype (the project's PyTorch DLR 4.3 s a call); `linrnn conform NAME --model KIND` runs it
VERY_LONG = 0
PEER_RUNS = (("lru-pytorch", "lru"), ("s5-pytorch", "s5"), ("s5-pytorch", "lru"), ("lrnnx", "lru"), ("lrnnx", "s5"),
             ("accelerated-scan", "scan"), ("accelerated-scan-ref", "scan"), ("torch-associative-scan", "scan"),
             ("recurrentgemma", "scan"), ("mamba-ssm-ref", "scan"), ("mamba-ssm", "scan"), ("fla-hgrn-naive", "scan"),
             ("fla-hgrn", "scan"), ("mambapy", "scan"))
OWN_TARGETS = ("linrnn-torch", "linrnn-jax")
OWN_SCANS = ("linrnn-torch-scan", "linrnn-jax-scan")
QUICK_OMITTED = {"linrnn-jax": "JAX compiles each shape and config of the battery (about 10 s per kind and dtype "
                               "on a 2-core CPU); it runs in the full report",
                 "accelerated-scan": "Triton's interpreter runs its kernels on the CPU (about 90 s); it runs in the "
                                     "full report",
                 "fla-hgrn": "Triton's interpreter runs its kernel on the CPU (about 12 s); it runs in the full report"}


def findings(run_: dict) -> dict:
    """One row of the findings table: the verdict, the failing variants, the named deviations, the command."""
    res = run_["result"]
    command = f"linrnn conform {run_['target']} --model {run_['model']}"
    if res is None:
        return {"target": run_["target"], "model": run_["model"], "command": command, "verdict": "not run here",
                "failing": [], "deviations": [run_["absent"]]}
    failing = sorted({c["name"] for c in res["checks"] if c["status"] == "fail"})
    skipped = sorted({f"{c['name']} ({c['dtype']})" for c in res["checks"] if c["status"] == "n/a"})
    return {"target": run_["target"], "model": run_["model"], "command": command,
            "verdict": "conforms" if res["conforms"] else "deviates", "failing": failing,
            "deviations": [d["words"] for d in res["diagnoses"]], "not_applicable": len(skipped)}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    planned = [(target, kind, "peer") for target, kind in PEER_RUNS if not (quick and target in QUICK_OMITTED)]
    planned += [(target, kind, "own") for target in OWN_TARGETS if not (quick and target in QUICK_OMITTED)
                for kind in KINDS]
    planned += [(target, "scan", "own") for target in OWN_SCANS]
    runs = []
    for i, (target, kind, group) in enumerate(planned):
        progress(i, len(planned), f"{target} --model {kind}")
        absent = unavailable(target)
        result = None if absent else run(target, kind, DTYPES, DEFAULT_LENGTHS, SEED,
                                         very_long_length=VERY_LONG).to_dict()
        runs.append({"target": target, "model": kind, "group": group, "absent": absent, "result": result})
    progress(len(planned), len(planned), "done")
    omitted = [[t, why] for t, why in QUICK_OMITTED.items()] if quick else []
    data = {"runs": runs, "peers": peers_table(), "findings": [findings(r) for r in runs if r["group"] == "peer"],
            "lengths": list(DEFAULT_LENGTHS), "seed": SEED, "quick_omitted": omitted}
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

"""Conformance: the built-in targets of `linrnn conform` against the reference, each check with its error.

The engine is `linrnn.verify.conform`; this module picks the targets, runs them and reads the stored findings (`run`);
the report's section (`linrnn.reports.sections.conformance`) names it and its template. The peers
(the optional extra `linrnn[peers]`) run at the contracts their adapters implement; the project's own
adapters (`linrnn-torch`, `linrnn-jax`) at every mixer kind, and its scans at the scan contract. A target that
cannot run here (its package or framework missing) is listed with the reason instead. The findings table
has one row per peer run: its verdict, the variants that fail, and each named deviation, with the command
that reproduces it.

    data = {"runs": [{"target", "model", "group": "peer" | "own", "absent": reason or None,
                      "result": conform.Result.to_dict() or None, "stored": None or {"file", "date", "command",
                      "package", "version", "machine", "code_version"}}, ...],
            "peers": conform.peers_table(), "findings": [{"target", "model", "command", "verdict", "verdict_why",
            "failing", "deviations", "stored"}, ...], "lengths": [...], "seed": S,
            "quick_omitted": [[target, why], ...]}

The verdicts are `conforms`, `conforms (float32 only)` (right, but not in float64) and `deviates` (the maths differs),
judged from the checks (`linrnn.verify.conform.judge`), a stored finding's too.

mamba-ssm's reference runs wherever it is installed (`tools/install-peers.sh` installs it without its CUDA build); its
fused kernel needs a CUDA device (`linrnn gpucheck` checks it on a GPU machine), so elsewhere that target shows its
stored finding, or is listed as not run here with the reason.

The very long check (`VERY_LONG`) is left out of every run here; `linrnn conform` runs it.

`quick` leaves out `linrnn-jax` (JAX compiles each shape and config of the battery, about 10 s per kind and
dtype on a 2-core CPU), `accelerated-scan` (Triton's interpreter runs its kernels, about 90 s) and `fla-hgrn`
(the same, about 12 s).

The Triton peers (`FRESH_PROCESS`) run in a fresh Python process (`linrnn conform ... --json`): their kernels are
decorated for Triton's interpreter only where TRITON_INTERPRET=1 is set before triton is first imported, and the
report's earlier sections have imported it through PyTorch's compiler.

A peer that cannot run here shows its stored finding (`STORED_FINDINGS`: reports/results/conform/TARGET--MODEL.json,
the `conform` record `linrnn conform TARGET --model MODEL --json FILE` writes, with the package's version, the date,
the machine and the command), marked as stored: the run's "stored" says where it came from, and its "absent" why it
did not run here. A peer with neither is "not run here".
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from linrnn.verify.conform import DEFAULT_LENGTHS, PEERS, dtypes_for, judge, peers_table, run, unavailable
from linrnn.impls.config import RECURRENT_KINDS
from linrnn.base.results import STORED_DIR, ConformRecord, ResultsError, read

SEED = 0
# The very long check (L = 2^16 + 1) is left out of the report: a 2-core CPU runs each target's layers at that length
# in seconds per kind and dtype (the project's PyTorch DLR 4.3 s a call); `linrnn conform NAME --model KIND` runs it
VERY_LONG = 0
PEER_RUNS = (("lru-pytorch", "lru"), ("s5-pytorch", "s5"), ("s5-pytorch", "lru"), ("lrnnx", "lru"), ("lrnnx", "s5"),
             ("accelerated-scan", "scan"), ("accelerated-scan-ref", "scan"), ("torch-associative-scan", "scan"),
             ("recurrentgemma", "scan"), ("mamba-ssm-ref", "scan"), ("mamba-ssm", "scan"), ("fla-hgrn-naive", "scan"),
             ("fla-hgrn", "scan"), ("mambapy", "scan"), ("recurrentgemma-rglru-torch", "rglru"),
             ("recurrentgemma-rglru-jax", "rglru"), ("recurrentgemma-rglru-jax-assoc", "rglru"))
OWN_TARGETS = ("linrnn-torch", "linrnn-jax")
OWN_SCANS = ("linrnn-torch-scan", "linrnn-jax-scan")
QUICK_OMITTED = {"linrnn-jax": "JAX compiles each shape and config of the battery (about 10 s per kind and dtype "
                               "on a 2-core CPU); it runs in the full report",
                 "accelerated-scan": "Triton's interpreter runs its kernels on the CPU (about 90 s); it runs in the "
                                     "full report",
                 "fla-hgrn": "Triton's interpreter runs its kernel on the CPU (about 12 s); it runs in the full report",
                 "recurrentgemma-rglru-torch": "its layer loops over the positions in Python (the battery's four "
                                               "dtypes, about 3 minutes on a 2-core CPU); it runs in the full report",
                 "recurrentgemma-rglru-jax": "JAX compiles each shape of the battery (its four dtypes, about 10 "
                                             "minutes on a 2-core CPU); it runs in the full report",
                 "recurrentgemma-rglru-jax-assoc": "JAX compiles each shape of the battery (its four dtypes, about 10 "
                                                   "minutes on a 2-core CPU); it runs in the full report"}
# Peers whose Triton kernels run on the CPU only when TRITON_INTERPRET=1 is set before triton is first imported: the
# report runs them in a fresh process (the sections before this one import triton through PyTorch's compiler)
FRESH_PROCESS = ("accelerated-scan", "fla-hgrn")
FRESH_TIMEOUT_S = 1800
# The peers' stored findings: `linrnn conform TARGET --model MODEL --json STORED_FINDINGS/TARGET--MODEL.json`
STORED_FINDINGS = STORED_DIR / "conform"


def stored_path(target: str, model: str, directory: Path | None = None) -> Path:
    return Path(STORED_FINDINGS if directory is None else directory) / f"{target}--{model}.json"


def stored_finding(target: str, model: str, directory: Path | None = None) -> tuple[dict | None, dict | None, str]:
    """(result, provenance, why) of the stored finding of `target` as `model`: the record's result (a
    `conform.Result.to_dict()`) and {"file", "date", "command", "package", "version", "machine", "code_version"};
    (None, None, why not) where there is none or it does not read (one line)."""
    path = stored_path(target, model, directory)
    if not path.exists():
        return None, None, f"no stored finding ({path.name} is not in {path.parent.name}/)"
    try:
        record = read(path, ConformRecord)
    except ResultsError as err:
        return None, None, f"its stored finding does not read ({err})"
    result = record.result
    if result.get("target") != target or result.get("model") != model:
        return None, None, (f"its stored finding {path.name} is of {result.get('target')} as {result.get('model')}, "
                            f"not of {target} as {model}")
    envelope = record.envelope
    package = PEERS[target].distribution if target in PEERS else "linrnn"
    root = STORED_DIR.parents[1]                      # the checkout: the file as the repository names it
    name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return result, {"file": name, "date": envelope.date,
                    "command": envelope.command, "package": package,
                    "version": (envelope.libraries or {}).get(package) or "not recorded",
                    "machine": (envelope.machine or {}).get("label") or "not recorded",
                    "code_version": envelope.code_version}, ""


def run_fresh(target: str, kind: str, lengths=DEFAULT_LENGTHS, seed: int = SEED,
              very_long: int = VERY_LONG) -> tuple[dict | None, str | None]:
    """`linrnn conform TARGET --model KIND ... --json FILE` in a fresh Python process with TRITON_INTERPRET=1 (no
    CUDA here: Triton's interpreter): -> (its result, None), or (None, the one line it failed with)."""
    with tempfile.TemporaryDirectory(prefix="linrnn-conform-") as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, "-m", "linrnn", "conform", target, "--model", kind, "--seed", str(seed),
                   "--very-long", str(very_long), "--json", str(out), "--lengths", *map(str, lengths)]
        env = {**os.environ, "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "1")}
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=FRESH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, f"{target}: `linrnn conform` in a fresh process took over {FRESH_TIMEOUT_S} s"
        if done.returncode in (0, 1) and out.exists():
            try:
                return read(out, ConformRecord).result, None
            except ResultsError as err:
                return None, f"{target}: {err}"
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
        return None, why.removeprefix("linrnn conform: error: ")


def findings(run_: dict) -> dict:
    """One row of the findings table: the verdict, the failing variants, the named deviations, the command."""
    res, stored = run_["result"], run_.get("stored")
    command = (stored or {}).get("command") or f"linrnn conform {run_['target']} --model {run_['model']}"
    if res is None:
        return {"target": run_["target"], "model": run_["model"], "command": command, "verdict": "not run here",
                "failing": [], "deviations": [run_["absent"]], "stored": None}
    failing = sorted({c["name"] for c in res["checks"] if c["status"] == "fail"})
    skipped = sorted({f"{c['name']} ({c['dtype']})" for c in res["checks"] if c["status"] == "n/a"})
    verdict_, why = judged(res)
    return {"target": run_["target"], "model": run_["model"], "command": command, "verdict": verdict_,
            "verdict_why": why, "failing": failing, "deviations": [d["words"] for d in res["diagnoses"]],
            "not_applicable": len(skipped), "stored": stored}


def judged(result: dict) -> tuple[str, str]:
    """(verdict, the checks behind it) of a run's result: `conforms`, `conforms (float32 only)` or `deviates`, judged
    from its checks (`linrnn.verify.conform.judge`), so a stored record written before the categories reads alike."""
    return judge(result.get("checks") or [])


def run_all(quick: bool, progress) -> tuple[dict, dict]:
    planned = [(target, kind, "peer") for target, kind in PEER_RUNS if not (quick and target in QUICK_OMITTED)]
    planned += [(target, kind, "own") for target in OWN_TARGETS if not (quick and target in QUICK_OMITTED)
                for kind in RECURRENT_KINDS]
    planned += [(target, "scan", "own") for target in OWN_SCANS]
    runs = []
    for i, (target, kind, group) in enumerate(planned):
        progress(i, len(planned), f"{target} --model {kind}")
        runs.append(one_run(target, kind, group))
    progress(len(planned), len(planned), "done")
    omitted = [[t, why] for t, why in QUICK_OMITTED.items()] if quick else []
    table = peers_table()
    ran_apart = {r["target"] for r in runs if r["target"] in FRESH_PROCESS and not r["absent"]}
    for row in table:            # this process cannot import them (triton came first); their own process did
        if row["target"] in ran_apart:
            row["missing"] = None
    data = {"runs": runs, "peers": table, "findings": [findings(r) for r in runs if r["group"] == "peer"],
            "lengths": list(DEFAULT_LENGTHS), "seed": SEED, "quick_omitted": omitted}
    return data, {"lengths": list(DEFAULT_LENGTHS), "seed": SEED, "dtypes": list(dtypes_for("lru"))}


def one_run(target: str, kind: str, group: str) -> dict:
    """One target's run here: in this process, or a fresh one (`FRESH_PROCESS`); where it cannot run, a peer's stored
    finding (`stored_finding`) with the reason it did not run here."""
    stored = None
    if target in FRESH_PROCESS:
        result, absent = run_fresh(target, kind)
    else:
        absent = unavailable(target)
        result = None if absent else run(target, kind, None, DEFAULT_LENGTHS, SEED,
                                         very_long_length=VERY_LONG).to_dict()
    if absent and group == "peer":
        result, stored, why = stored_finding(target, kind)
        if result is None:
            absent = f"{absent}; {why}"
    return {"target": target, "model": kind, "group": group, "absent": absent, "result": result, "stored": stored}


def stored_words(stored: dict) -> str:
    """How a stored finding is named wherever its verdict is shown: the package and version, the date, the command."""
    return (f"stored finding: {stored.get('package')} {stored.get('version')}, {str(stored.get('date'))[:10]}, "
            f"`{stored.get('command')}`")


def verdict(run: dict) -> dict:
    """One run's verdict: {"verdict": "conforms" | "conforms (float32 only)" | "deviates" | "not run here", "failed",
    "checks", "diagnoses", "stored": None, or the stored finding's words (`stored_words`) where the verdict is a
    stored one}."""
    result, stored = run.get("result"), run.get("stored")
    if (run.get("absent") and not stored) or not isinstance(result, dict):
        return {"verdict": "not run here", "failed": 0, "checks": 0, "diagnoses": [str(run.get("absent") or "")],
                "stored": None}
    checks = result.get("checks") or []
    return {"verdict": judged(result)[0],
            "failed": sum(c.get("status") == "fail" for c in checks), "checks": len(checks),
            "diagnoses": [str(d.get("words", "")) for d in result.get("diagnoses") or []],
            "stored": stored_words(stored) if stored else None}

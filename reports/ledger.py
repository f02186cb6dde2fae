"""The claims ledger (docs/claims.md): every claim of the two seed papers with its verdict.

Verdicts, weakest first: contradicted (a derivation or an experiment here shows otherwise, with the
exact condition; "in part" when some parts hold) < inconclusive (the evidence exists but does not
decide, e.g. a run that diverged) < not run here (needs data or compute this machine lacks; the
command that would settle it is given, or the reason none can) < verified = reproduced (numeric checks
on random instances hold / an experiment here shows the effect at the scale named) < proved (the claim
as stated is derived in general; only where the theory record itself says "proved").

A claim gathers *all* its evidence, one `Part` per source (a derivation, a measurement in the
reference section, a training run...), each with its own verdict and scope; the claim's verdict is its
weakest part's. So R1 "proved" in SymPy but contradicted in training is contradicted.

Verdicts are computed from the saved measurements when the page renders, so `linrnn report --from`
re-settles them. Only a results file that is missing, or whose record does not have the shape a
settle function reads (checked up front, `conforms`), gives "not run here" with the reason; an
exception in a settle function's own logic propagates: a bug fails loudly instead of hiding as
"not run here".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

Records = dict[str, list[dict[str, Any]]]   # section name -> its results records (each: meta, data)

RANK = {"contradicted": 0, "contradicted (in part)": 0, "inconclusive": 1, "not run here": 2,
        "verified": 3, "reproduced": 3, "proved": 4}
REPORT_COMMAND = "linrnn report --out DIR"   # recomputes every section (add --quick for the small sizes)

# Thresholds of the experimental verdicts (ours: the papers give no numbers).
SOLVED_R2 = 0.99        # D4 "near-perfect": a task counts as solved at or above this validation R^2
FAILS_R2 = 0.5          # D4 "fails": at or below this validation R^2 (half the target variance unexplained)
CV_REPRODUCED = 0.5     # R8: RotRNN's CV over training at most this fraction of LRU's, in every layer
DRIFT_FACTOR = 10.0     # R9: final gamma_log drift above this multiple of the float32 rounding floor
STEP_GROWTH = 2.0       # D9: time per position in step mode may grow at most this much over the lengths


@dataclass(frozen=True)
class Part:
    """One piece of evidence for a claim, with its own verdict."""

    source: str          # what the evidence is, e.g. "derivation (theory)", "training (norms)"
    verdict: str         # one of RANK
    evidence: str        # what was found, with numbers
    scope: str = ""      # what the verdict covers (sizes, instances, scale)
    command: str = ""    # for "not run here": the exact command that would settle it ("" only with a reason)

    def __post_init__(self) -> None:
        if self.verdict not in RANK:
            raise ValueError(f"verdict: expected one of {', '.join(RANK)}, found {self.verdict!r}")


@dataclass(frozen=True)
class Source:
    """Evidence a claim takes from one section's results."""

    section: str                                  # the results file's section
    name: str                                     # the Part's `source`
    shape: Any                                    # what the settle function reads (see `conforms`)
    settle: Callable[[dict], list[Part]]          # the section's `data` -> parts
    anchor: str = ""                              # where on the page the evidence is (default: the section)


@dataclass(frozen=True)
class Claim:
    id: str                          # docs/claims.md
    paper: str                       # RotRNN or DLR
    text: str                        # the claim, shortened
    sources: tuple[Source, ...] = ()  # evidence from results
    unrun: Part | None = None        # the claim cannot be settled here: why, and the command that would
    full_scale: str = ""             # the commands that settle it at the papers' scale (where this machine cannot)
    published: str = ""              # the published numbers it is about, with their source and status


def combine(parts: list[Part]) -> str:
    """The weakest part's verdict (contradicted < inconclusive < not run here < verified = reproduced < proved)."""
    if not parts:
        raise ValueError("a claim needs at least one part")
    low = min(RANK[p.verdict] for p in parts)
    weakest = [p.verdict for p in parts if RANK[p.verdict] == low]
    if low == RANK["contradicted"]:
        return "contradicted" if "contradicted" in weakest else "contradicted (in part)"
    if low == RANK["verified"]:
        return "verified" if "verified" in weakest else "reproduced"
    return weakest[0]


# -- the shape of a record ----------------------------------------------------------------------

class Number:
    """Shape: a finite or non-finite number (results files store NaN as the string 'nan')."""


def conforms(value: Any, shape: Any, path: str = "data") -> str | None:
    """None when `value` has `shape`, else where it does not.

    Shapes: a type (`str`, `bool`, `int`, `Number`, `dict`, `list`), a frozenset of allowed values,
    a dict {key: shape} (those keys required, others allowed), a one-element list [shape] (a list whose
    every element has it), `None` (anything), or a callable value -> problem or None.
    """
    if shape is None:
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{path}: expected an object"
        for key, sub in shape.items():
            if key not in value:
                return f"{path}.{key}: missing"
            problem = conforms(value[key], sub, f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{path}: expected a list"
        for i, item in enumerate(value):
            problem = conforms(item, shape[0], f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(shape, frozenset):
        return None if value in shape else f"{path}: expected one of {sorted(shape)}, found {value!r}"
    if shape is Number:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in ("nan", "inf", "-inf")
        return None if ok else f"{path}: expected a number"
    if isinstance(shape, type):
        ok = isinstance(value, shape) and not (shape is int and isinstance(value, bool))
        return None if ok else f"{path}: expected {shape.__name__}"
    return shape(value)


def _num(v: Any) -> float:
    """A number of a results file as a float ('nan', 'inf' are how the files store non-finite ones)."""
    return float(v)


# -- theory -------------------------------------------------------------------------------------

THEORY_VERDICTS = frozenset({"proved", "verified", "fails", "inconclusive"})
THEORY_SHAPE = {"claims": [{"claim": str, "verdict": THEORY_VERDICTS, "partly": bool, "condition": str,
                            "findings": [{"statement": str, "verdict": THEORY_VERDICTS}]}]}
THEORY_SCOPE = "SymPy (symbolic) and SciPy/NumPy (random instances)"


def _theory_verdict(verdict: str, partly: bool) -> str:
    if verdict == "fails":
        return "contradicted (in part)" if partly else "contradicted"
    return verdict


def theory_part(claim_id: str) -> Source:
    """A claim's derivation in `theory/`: its own verdict ("proved" only where the record says so) and scope."""
    def settle(data: dict) -> list[Part]:
        record = next((c for c in data["claims"] if c["claim"] == claim_id), None)
        if record is None:
            return [Part("derivation (theory)", "not run here", f"no derivation of {claim_id} in these theory results",
                         command=f"linrnn theory --claim {claim_id}")]
        findings = "; ".join(
            f"{f['statement']} [{_theory_verdict(f['verdict'], False)}"
            + (f", {f['scope']}" if f.get("scope") else "") + "]" for f in record["findings"])
        text = findings + (f". Fails when: {record['condition']}" if record["condition"] else "")
        if record.get("conclusion"):
            text += f". Conclusion: {record['conclusion']}"
        return [Part("derivation (theory)", _theory_verdict(record["verdict"], record["partly"]), text,
                     record.get("scope") or THEORY_SCOPE)]
    return Source("theory", "derivation (theory)", THEORY_SHAPE, settle)


def _r3_montecarlo(data: dict) -> list[Part]:
    rows = {r["start"]: r for r in data["r3"]}
    mc = data["montecarlo"]["config"]
    holds = [s for s, r in rows.items() if r["constant"]]
    text = ("E||x_t||^2 = 1 at every stored t (1 inside the family-wise band), torch and JAX layers: "
            + "; ".join(f"from {s}: {'holds' if r['constant'] else 'does not hold'}" for s, r in rows.items())
            + ("; every curve agrees with its closed form" if all(r["agrees"] for r in rows.values())
               else "; some curves disagree with their closed forms"))
    if not all(r["agrees"] for r in rows.values()):
        verdict = "inconclusive"
    elif len(holds) == len(rows):
        verdict = "verified"
    else:
        verdict = "contradicted (in part)" if holds else "contradicted"
    return [Part("Monte Carlo (theory)", verdict, text,
                 f"{mc['n_seq']} sequences per framework, t up to {mc['T']}, float64")]


R3_MC = Source("theory", "Monte Carlo (theory)",
               {"r3": [{"start": str, "constant": bool, "agrees": bool}],
                "montecarlo": {"config": {"n_seq": int, "T": int}}}, _r3_montecarlo)


# -- reference: R4, R5 --------------------------------------------------------------------------

def _param_counts(data: dict) -> list[Part]:
    checks = data["param_counts"]
    ok = all(c["count"] == c["formula_value"] for c in checks)
    text = ("parameter counts against heads(N^2 + N/2 + 1 + NH) + H heads N + H: "
            + "; ".join(f"{c['config']}: {c['count']} vs {c['formula_value']}" for c in checks))
    return [Part("parameter count (reference)", "verified" if ok else "contradicted", text, "bundle shapes")]


def _head_independence(data: dict) -> list[Part]:
    cases = data["head_independence"]
    others = max(_num(c["other_max_ratio"]) for c in cases)
    moved = min(_num(c["changed_rel"]) / _num(c["changed_rtol"]) for c in cases)
    mixed = max(_num(c["sum_ratio"]) for c in cases)
    ok = others <= 1.0 and moved > 1.0 and mixed <= 1.0
    c0 = cases[0]
    text = (f"changing one head's {', '.join(c0['changed'])} moves that head's contribution C[:, head] x^h_t "
            f"(smallest change {moved:.3g} x the tolerance) and leaves every other head's within "
            f"{others:.3g} x the float64 tolerance; the output equals the sum of the heads' contributions "
            f"+ D u within {mixed:.3g} x the tolerance")
    return [Part("head independence (reference)", "verified" if ok else "contradicted", text,
                 f"{len(cases)} cases: heads = {c0['heads']}, H = {c0['H']}, N = {c0['N']}, L = {c0['L']}, "
                 f"float64 reference")]


PARAM_COUNTS = Source("reference", "parameter count (reference)",
                      {"param_counts": [{"config": str, "count": int, "formula_value": int}]}, _param_counts)
HEADS = Source("reference", "head independence (reference)",
               {"head_independence": [{"changed": [str], "heads": int, "H": int, "N": int, "L": int,
                                       "other_max_ratio": Number, "changed_rel": Number, "changed_rtol": Number,
                                       "sum_ratio": Number}]}, _head_independence)


def _converters(data: dict) -> list[Part]:
    conv = data["converters"]
    worst = max(_num(c["rel"]) / _num(c["rtol"]) for c in conv)
    return [Part("converters (reference)", "verified" if worst <= 1 else "contradicted",
                 f"RotRNN <-> LRU converters on {len(conv)} random bundles: outputs agree, worst error / "
                 f"tolerance {worst:.3g}", "float64 reference, H = 6, L = 33")]


CONVERTERS = Source("reference", "converters (reference)",
                    {"converters": [{"rel": Number, "rtol": Number}]}, _converters)


# -- norms: R8, R9, R1 in training --------------------------------------------------------------

def _runs_shape(model: str, shape: dict) -> Callable[[Any], str | None]:
    """Shape: data.runs is a list, and each run of `model` has `shape`."""
    def check(runs: Any) -> str | None:
        if not isinstance(runs, list) or not all(isinstance(r, dict) and isinstance(r.get("model"), str) for r in runs):
            return "data.runs: expected a list of runs with a model name"
        mine = [r for r in runs if r["model"] == model]
        if not mine:
            return f"data.runs: no {model} run"
        for i, r in enumerate(mine):
            problem = conforms(r, shape, f"data.runs[{model} {i}]")
            if problem:
                return problem
        return None
    return check


def norms_scale(config: dict) -> str:
    return (f"task {config['task']} at L = {config['length']} (the paper: LRA ListOps, not available here), "
            f"{config['n_layers']} blocks, H = {config['d_model']}, {config['steps']} steps of batch "
            f"{config['batch_size']}, {len(config['seeds'])} seeds, torch float32")


def _three_way(ratio: float) -> str:
    """RotRNN's spread / LRU's spread -> reproduced (clearly below), contradicted (not below), inconclusive."""
    if ratio <= CV_REPRODUCED:
        return "reproduced"
    return "contradicted" if ratio >= 1.0 else "inconclusive"


def settle_r8(data: dict, scale: str = "") -> list[Part]:
    """Constant over training, per layer: RotRNN's CV at most CV_REPRODUCED x LRU's in every layer
    (reproduced), at least LRU's in some layer (contradicted), else inconclusive. The spread across
    layers and seeds at the end of training is reported beside it."""
    table = data["table"]
    layers = sorted({r["layer"] for r in table})
    cv = {(r["model"], r["layer"]): _num(r["cv_mean"]) for r in table}
    settle = {(r["model"], r["layer"]): _num(r["settle_mean"]) for r in table}
    ratios = [cv[("rotrnn", i)] / cv[("lru", i)] if cv[("lru", i)] > 0 else math.inf for i in layers]
    if any(math.isnan(q) for q in ratios):
        verdict = "inconclusive"
    elif all(q <= CV_REPRODUCED for q in ratios):
        verdict = "reproduced"
    elif any(q >= 1.0 for q in ratios):
        verdict = "contradicted"
    else:
        verdict = "inconclusive"
    across = {m: _num(v) for m, v in data["across"].items()}
    across_ratio = across["rotrnn"] / across["lru"] if across["lru"] > 0 else math.inf
    text = ("over training, coefficient of variation of each layer's mean state norm (mean over seeds), RotRNN vs "
            "LRU: " + "; ".join(f"layer {i}: {cv[('rotrnn', i)]:.3g} vs {cv[('lru', i)]:.3g} (ratio {q:.2f}), "
                                 f"settled from step {settle[('rotrnn', i)]:.0f} vs {settle[('lru', i)]:.0f}"
                                 for i, q in zip(layers, ratios))
            + f". Thresholds: reproduced if every ratio <= {CV_REPRODUCED}, contradicted if one >= 1. Beside it, "
            f"across layers and seeds, CV of the end-of-training norms: {across['rotrnn']:.3g} vs {across['lru']:.3g} "
            f"(ratio {across_ratio:.2f}: {_three_way(across_ratio)} by the same thresholds)")
    return [Part("training (norms)", verdict, text, scale)]


def settle_r9_training(data: dict, scale: str = "") -> list[Part]:
    runs = [r for r in data["runs"] if r["model"] == "lru"]
    final_max = max(_num(m[-1]) for r in runs for m in r["drift"]["max"])
    floor = max(_num(r["drift"]["rounding_floor"]) for r in runs)
    verdict = "verified" if final_max > DRIFT_FACTOR * floor else "inconclusive"
    text = (f"after training, |gamma_log - log sqrt(1 - |lambda|^2)| reaches {final_max:.3g} (max over modes, layers "
            f"and seeds); at initialisation {floor:.2g} (float32 rounding): nothing in the LRU keeps its input scaling "
            f"tied to |lambda| (threshold: {DRIFT_FACTOR:g} x the rounding floor)")
    return [Part("training (norms)", verdict, text, scale)]


def settle_r1_training(data: dict, scale: str = "") -> list[Part]:
    runs = [r for r in data["runs"] if r["model"] == "rotrnn"]
    worst = [r["orthogonality"]["worst"] for r in runs]
    ratio = max(_num(w["max_ratio"]) for w in worst)
    error = max(_num(w["max_error"]) for w in worst)
    f32 = max(_num(w["max_error_float32"]) for w in worst)
    checked = sum(w["steps_checked"] for w in worst)
    verdict = "inconclusive" if math.isnan(ratio) else ("verified" if ratio <= 1.0 else "contradicted")
    text = (f"max |P^T P - I| = {error:.3g} over every head and layer after each of {checked} parameter states "
            f"({len(runs)} seeds), P = expm(M - M^T) in float64 from the trained M: {ratio:.3g} of its tolerance "
            f"(float64 expm_orthogonality); the float32 P used in training: {f32:.3g}")
    return [Part("training (norms)", verdict, text, scale)]


NORMS_TABLE = {"table": [{"model": str, "layer": int, "cv_mean": Number, "settle_mean": Number}],
               "across": {"rotrnn": Number, "lru": Number}}
DRIFT_RUN = {"drift": {"max": [[Number]], "rounding_floor": Number}}
ORTHO_RUN = {"orthogonality": {"worst": {"max_ratio": Number, "max_error": Number, "max_error_float32": Number,
                                         "steps_checked": int}}}


def _norms_source(settle: Callable[[dict, str], list[Part]], shape: dict) -> Source:
    return Source("norms", "training (norms)", shape, settle)


R8_NORMS = _norms_source(settle_r8, NORMS_TABLE)
R9_NORMS = _norms_source(settle_r9_training, {"runs": _runs_shape("lru", DRIFT_RUN)})
R1_NORMS = _norms_source(settle_r1_training, {"runs": _runs_shape("rotrnn", ORTHO_RUN)})


# -- tasks: D4 ----------------------------------------------------------------------------------

def diverged(row: dict) -> bool:
    """A run that did not finish with a finite R^2: evidence for nothing."""
    r2 = row.get("r2")
    return row.get("status") != "ok" or r2 is None or isinstance(r2, str) or not math.isfinite(r2)


def outcome(rows: list[dict]) -> dict:
    """model -> task -> mean final R^2 over the finished seeds, how many diverged, solved, fails.

    A diverged run is neither solved nor failing: the entry is then undecided (both False), so a
    verdict that needs it comes out inconclusive.
    """
    result: dict = {}
    for r in rows:
        result.setdefault(r["model"], {}).setdefault(r["task"], []).append(r)
    out: dict = {}
    for model, tasks in result.items():
        for task, runs in tasks.items():
            finished = [r["r2"] for r in runs if not diverged(r)]
            lost = len(runs) - len(finished)
            r2 = float(np.mean(finished)) if finished else None
            decided = lost == 0 and r2 is not None
            out.setdefault(model, {})[task] = {"r2": r2, "seeds": len(runs), "diverged": lost,
                                               "solved": decided and r2 >= SOLVED_R2,
                                               "fails": decided and r2 <= FAILS_R2}
    return out


def tasks_scale(config: dict) -> str:
    return (f"L = {config['length']} (paper: 4096, Shift up to 2^20), {config['steps']} steps "
            f"(paper: 12 epochs of 14 400 samples), 1 layer, torch float32, seeds "
            f"{', '.join(map(str, config['seeds']))}")


def settle_d4(data: dict, scale: str = "") -> list[Part]:
    """reproduced: DLR solves Shift and fails ContextShift; contradicted: DLR solves ContextShift; otherwise
    (a diverged run, Shift not solved within the budget, ContextShift in between) inconclusive."""
    verdict, text = d4_verdict(outcome(data["rows"]))
    return [Part("training (tasks)", verdict, text, scale)]


def d4_verdict(solved: dict) -> tuple[str, str]:
    """The D4 verdict and its evidence from `outcome(rows)` (model -> task -> entry)."""
    dlr = solved.get("dlr", {})
    shift, context = dlr.get("shift"), dlr.get("context_shift")

    def fmt(entry: dict) -> str:
        if entry["r2"] is None:
            return "diverged"
        return f"R^2 = {entry['r2']:.4f}" + (f" ({entry['diverged']} of {entry['seeds']} runs diverged)"
                                              if entry["diverged"] else "")

    if shift is None or context is None:
        return "inconclusive", "DLR was not run on both Shift and ContextShift"
    others = "; ".join(f"{m}: Shift {fmt(solved[m]['shift'])}, ContextShift {fmt(solved[m]['context_shift'])}"
                       for m in ("lru", "rotrnn") if {"shift", "context_shift"} <= set(solved.get(m, {})))
    text = (f"DLR: Shift {fmt(shift)} ({'solved' if shift['solved'] else 'not solved'}, threshold {SOLVED_R2}), "
            f"ContextShift {fmt(context)} ({'fails' if context['fails'] else 'does not fail'}, threshold {FAILS_R2})"
            + (f". Beside it, {others}" if others else ""))
    if context["solved"]:
        return "contradicted", text
    if shift["solved"] and context["fails"]:
        return "reproduced", text
    return "inconclusive", text


def settle_d4_experiment(stored: dict) -> list[Part]:
    """D4 on the synthetic-tasks record: the Shift / ContextShift verdict (every framework's run pooled), and per
    model the mean R^2 and the count of solved (>= SOLVED_R2) and failed (<= FAILS_R2) tasks in each group."""
    rows = [{"task": r["task"], "model": r["model"], "status": r["status"], "r2": r["value"]} for r in stored["runs"]]
    solved = outcome(rows)
    verdict, text = d4_verdict(solved)
    from linrnn.experiments.claims import D4_GROUP_ORDER, D4_GROUPS

    groups = {r["task"]: D4_GROUPS.get(r["task"]) for r in stored["runs"]}
    summary = []
    for model, tasks in solved.items():
        per_group = []
        for group in (g for g in D4_GROUP_ORDER if g in groups.values()):
            entries = [e for t, e in tasks.items() if groups.get(t) == group]
            finished = [e["r2"] for e in entries if e["r2"] is not None]
            if entries:
                mean = f"mean R^2 {sum(finished) / len(finished):.3f}" if finished else "every run diverged"
                per_group.append(f"{group} {mean}, {sum(e['solved'] for e in entries)} of {len(entries)} solved, "
                                 f"{sum(e['fails'] for e in entries)} failed")
        summary.append(f"{model}: " + "; ".join(per_group))
    return [Part("", verdict, text + ". By group of tasks: " + " | ".join(summary))]


TASK_ROW = {"task": str, "model": str, "seed": int, "status": str}
D4_TASKS = Source("tasks", "training (tasks)", {"rows": [TASK_ROW]}, settle_d4)


# -- speed: D9 ----------------------------------------------------------------------------------

def settle_d9(data: dict, scale: str = "") -> list[Part]:
    ratios = []
    for backend in ("torch", "jax"):
        for kind in ("rotrnn", "lru", "dlr"):
            pts = sorted((r["L"], _num(r["us_per_position"])) for r in data["rows"] if r["mode"] == "step"
                         and r["backend"] == backend and r["mixer"] == kind and r["ms"] is not None)
            if len(pts) >= 2:
                ratios.append((pts[-1][1] / pts[0][1], f"{backend} {kind}", pts[0][0], pts[-1][0]))
    if not ratios:
        return [Part("benchmark (speed)", "inconclusive", "no step-mode timings at two lengths", scale)]
    worst = max(ratios)
    return [Part("benchmark (speed)", "verified" if worst[0] <= STEP_GROWTH else "contradicted",
                 f"streaming step mode: time per position from L = {worst[2]} to {worst[3]} changes by at most "
                 f"x{worst[0]:.2f} ({worst[1]}; threshold x{STEP_GROWTH:g}); O(1) state per position by construction",
                 scale or "one layer, sizes as in the speed section")]


D9_SPEED = Source("speed", "benchmark (speed)",
                  {"rows": [{"backend": str, "mixer": str, "mode": str, "L": int, "ms": None,
                             "us_per_position": None}]}, settle_d9)


# -- experiments: D5, D8, R7, D6 at this machine's scale ------------------------------------------

Z_DECIDES = 2.0     # a difference decides a comparison when it exceeds this many standard errors (ours)

EXPERIMENT_SHAPE = {"stored": [{"experiment": str, "quick": bool, "complete": bool, "scale": str, "command": str,
                                "cells": [{"n": int, "mean": None, "se": None, "sd": None}]}]}


def _experiment(name: str, settle: Callable[[dict], list[Part]]) -> Source:
    """Evidence from the stored record of `linrnn experiment NAME`; none stored: not run here, with the command."""
    source = f"experiment ({name})"

    def settle_stored(data: dict) -> list[Part]:
        full = [s for s in data["stored"] if s["experiment"] == name and not s["quick"]]
        if not full:
            return [Part(source, "not run here", f"no stored record of this experiment (the report renders "
                         f"reports/results/experiment-{name}.json)", command=f"linrnn experiment {name} --data DIR")]
        parts = []
        for stored in full:
            found = settle(stored)
            if not stored["complete"]:
                found = [Part(p.source, "inconclusive", "the experiment was interrupted before its last run; "
                              + p.evidence, p.scope) for p in found]
            parts.extend(Part(source, p.verdict, p.evidence, p.scope or stored["scale"], p.command) for p in found)
        return parts
    return Source("experiments", source, EXPERIMENT_SHAPE, settle_stored, anchor=f"experiment-{name}")


def _cell(stored: dict, **labels) -> dict | None:
    return next((c for c in stored["cells"] if all(c.get(k) == v for k, v in labels.items())), None)


def _fmt(cell: dict | None) -> str:
    if cell is None or cell["mean"] is None:
        return "no finished run"
    spread = f" ± {cell['sd']:.3f}" if cell["sd"] is not None else ""
    return f"{cell['mean']:.3f}{spread} (n = {cell['n']})"


def _compare(a: dict, b: dict, se_a: float | None, se_b: float | None) -> tuple[float, float | None]:
    """(mean a - mean b, its z-score; None when neither side has a spread)."""
    diff = a["mean"] - b["mean"]
    se = math.sqrt((se_a or 0.0) ** 2 + (se_b or 0.0) ** 2)
    return diff, (diff / se if se > 0 else None)


def _decide(z: float | None, diff: float) -> str:
    """better / worse / tied (within Z_DECIDES standard errors); "undecided" when there is no spread to judge by."""
    if z is None:
        return "undecided"
    return "better" if z > Z_DECIDES else "worse" if z < -Z_DECIDES else "tied"


def settle_d8(stored: dict) -> list[Part]:
    """D8: per model, the mean over tasks of |mean R^2 pre-norm - mean R^2 post-norm|, with its standard error."""
    tasks = list(dict.fromkeys(c["task"] for c in stored["cells"]))
    sensitivity = {}
    for model in ("dlr", "attention"):
        gaps, variances = [], []
        for task in tasks:
            pre, post = _cell(stored, task=task, model=model, norm="pre"), _cell(stored, task=task, model=model,
                                                                                 norm="post")
            if pre is None or post is None or pre["mean"] is None or post["mean"] is None or \
                    pre["diverged"] or post["diverged"]:
                return [Part("", "inconclusive", f"{model} on {task}: a norm position has no finished run or a "
                             "diverged one, so its spread is not measured")]
            gaps.append(abs(pre["mean"] - post["mean"]))
            variances.append((pre["se"] or 0.0) ** 2 + (post["se"] or 0.0) ** 2)
        sensitivity[model] = (sum(gaps) / len(gaps), math.sqrt(sum(variances)) / len(gaps), gaps)
    (s_dlr, se_dlr, g_dlr), (s_att, se_att, g_att) = sensitivity["dlr"], sensitivity["attention"]
    se = math.hypot(se_dlr, se_att)
    z = (s_att - s_dlr) / se if se > 0 else None
    verdict = ("inconclusive" if z is None or abs(z) <= Z_DECIDES else "reproduced" if z > 0 else "contradicted")
    text = (f"mean |R^2 pre - R^2 post| over {len(tasks)} tasks: DLR {s_dlr:.4f} ± {se_dlr:.4f}, attention "
            f"{s_att:.4f} ± {se_att:.4f} (standard errors over seeds); difference "
            + (f"{z:.1f} standard errors" if z is not None else "without a spread")
            + f" (decides beyond {Z_DECIDES:g}); per task DLR / attention: "
            + "; ".join(f"{t} {a:.3f} / {b:.3f}" for t, a, b in zip(tasks, g_dlr, g_att)))
    return [Part("", verdict, text)]


def settle_d5(stored: dict) -> list[Part]:
    """D5: DLR against local attention on each task (and above the majority baseline)."""
    verdicts, texts = [], []
    for task in dict.fromkeys(c["task"] for c in stored["cells"]):
        dlr, att = _cell(stored, task=task, model="dlr"), _cell(stored, task=task, model="attention")
        if dlr is None or att is None or dlr["mean"] is None or att["mean"] is None:
            return [Part("", "inconclusive", f"{task}: DLR or local attention has no finished run")]
        diff, z = _compare(dlr, att, dlr["se"], att["se"])
        outcome = _decide(z, diff) if learned(dlr) or learned(att) else "both at chance"
        verdicts.append(outcome)
        others = "; ".join(f"{m} {_fmt(_cell(stored, task=task, model=m))}" for m in ("lru", "rotrnn")
                           if _cell(stored, task=task, model=m))
        base = dlr.get("baseline")
        texts.append(f"{task} ({dlr['metric']}): DLR {_fmt(dlr)} vs local attention {_fmt(att)}: "
                     + ("neither above the majority baseline" if outcome == "both at chance" else f"DLR {outcome}")
                     + (f" ({z:+.1f} standard errors)" if z is not None else "")
                     + (f"; {others}" if others else "") + (f"; majority baseline {base:.3f}" if base is not None
                                                              else ""))
    if all(v == "better" for v in verdicts):
        verdict = "reproduced"
    elif all(v == "worse" for v in verdicts):
        verdict = "contradicted"
    elif "worse" in verdicts:
        verdict = "contradicted (in part)"
    else:
        verdict = "inconclusive"
    return [Part("", verdict, "; ".join(texts) + f" (a difference decides beyond {Z_DECIDES:g} standard errors "
                 "over seeds)")]


def _accuracy_se(cell: dict) -> float | None:
    """Binomial standard error of a test accuracy over the test split (one seed has no spread of its own)."""
    n = cell.get("test_examples")
    if not n or cell["mean"] is None:
        return None
    p = min(max(cell["mean"], 0.0), 1.0)
    return math.sqrt(max(p * (1 - p), 1.0 / n) / n)


def _speech_pair(stored: dict, task: str, model: str, against: str) -> tuple[str, str]:
    a, b = _cell(stored, task=task, model=model), _cell(stored, task=task, model=against)
    if a is None or b is None or a["mean"] is None or b["mean"] is None:
        return "missing", f"{task}: {model} or {against} has no finished run"
    diff, z = _compare(a, b, _accuracy_se(a), _accuracy_se(b))
    outcome = _decide(z, diff)
    params = f"{a['parameters']:,} vs {b['parameters']:,} parameters" if a["parameters"] and b["parameters"] else ""
    return outcome, (f"{task} test accuracy: {model} {a['mean']:.3f}, {against} {b['mean']:.3f} ({diff:+.3f}, "
                     + (f"{z:+.1f} binomial standard errors over {a.get('test_examples')} test clips" if z is not None
                        else "no spread") + (f"; {params}" if params else "") + ")"
                     + ("; one training seed each, so the seed-to-seed spread is not in this error"
                        if a["n"] < 2 or b["n"] < 2 else ""))


def settle_r7(stored: dict) -> list[Part]:
    """R7 at this scale: RotRNN on the SC35 layout at least as accurate as the LRU (tied or better)."""
    outcome, text = _speech_pair(stored, "sc35", "rotrnn", "lru")
    verdict = {"better": "reproduced", "tied": "reproduced", "worse": "contradicted"}.get(outcome, "inconclusive")
    return [Part("", verdict, text + "; synthetic speech, not Speech Commands")]


def settle_d6(stored: dict) -> list[Part]:
    """D6 at this scale: DLR on the SC10 layout as accurate as the best other model (tied or better)."""
    others = [m for m in ("lru", "rotrnn") if _cell(stored, task="sc10", model=m)]
    if not others:
        return [Part("", "inconclusive", "sc10: no other model to compare DLR with")]
    best = max(others, key=lambda m: _cell(stored, task="sc10", model=m)["mean"] or -1.0)
    outcome, text = _speech_pair(stored, "sc10", "dlr", best)
    verdict = {"better": "reproduced", "tied": "reproduced", "worse": "contradicted"}.get(outcome, "inconclusive")
    return [Part("", verdict, text + "; MFCC features of synthetic speech, not raw Speech Commands audio; "
                 "the O(1)-per-step decoding is D9's")]


def _ranking(stored: dict, task: str) -> tuple[list[tuple[str, dict]], str]:
    cells = [(c["model"], c) for c in stored["cells"] if c["task"] == task and c["mean"] is not None]
    cells.sort(key=lambda mc: -mc[1]["mean"])
    base = next((c["baseline"] for _, c in cells if c.get("baseline") is not None), None)
    chance = next((c["chance"] for _, c in cells if c.get("chance") is not None), None)
    text = f"{task}: " + " > ".join(f"{m} {_fmt(c)}" for m, c in cells) + \
        (f" (majority baseline {base:.3f}" + (f", best constant answer {chance:.3f})" if chance is not None and
                                              chance > base else ")") if base is not None else "")
    return cells, text


def learned(cell: dict) -> bool:
    """Above chance by more than Z_DECIDES standard errors: chance is the best constant answer on test (at least
    the train-majority baseline); the error is the larger of the seeds' and the binomial one over the test
    examples (seeds that all predict one constant have no spread). A cell without a baseline (a regression
    task) counts as learned."""
    chance = cell.get("chance") if cell.get("chance") is not None else cell.get("baseline")
    if chance is None:
        return True
    se = max(cell["se"] or 0.0, _accuracy_se(cell) or 0.0)
    return cell["mean"] - chance > Z_DECIDES * se


def _against(stored: dict, task: str, model: str, others: tuple[str, ...]) -> dict[str, str]:
    """model vs each other model on task: better / tied / worse (standard errors over seeds), missing, or "both at
    chance" when neither is above the majority baseline (a tie of two models that learnt nothing shows nothing)."""
    mine = _cell(stored, task=task, model=model)
    out = {}
    for other in others:
        theirs = _cell(stored, task=task, model=other)
        if mine is None or theirs is None or mine["mean"] is None or theirs["mean"] is None:
            out[other] = "missing"
            continue
        if not learned(mine) and not learned(theirs):
            out[other] = "both at chance"
            continue
        diff, z = _compare(mine, theirs, mine["se"], theirs["se"])
        out[other] = _decide(z, diff)
    return out


def _lra_verdict(outcomes: list[str]) -> str:
    if "missing" in outcomes or "undecided" in outcomes or "both at chance" in outcomes:
        return "inconclusive"
    if all(o in ("better", "tied") for o in outcomes):
        return "reproduced"
    return "contradicted" if all(o == "worse" for o in outcomes) else "contradicted (in part)"


def settle_r6(stored: dict) -> list[Part]:
    """R6 at this scale: RotRNN tied with or better than LRU, S4D, S5 on every task (competitive), and on ListOps
    better than each (best)."""
    tasks = list(dict.fromkeys(c["task"] for c in stored["cells"]))
    competitive = {t: _against(stored, t, "rotrnn", ("lru", "s4d", "s5")) for t in tasks}
    texts = [_ranking(stored, t)[1] for t in tasks]
    parts = [Part("", _lra_verdict([o for t in tasks for o in competitive[t].values()]),
                  "competitive (RotRNN tied or better against LRU, S4D, S5): " + "; ".join(
                      f"{t}: " + ", ".join(f"{k} {v}" for k, v in competitive[t].items()) for t in tasks)
                  + ". " + "; ".join(texts) + f" (decided beyond {Z_DECIDES:g} standard errors over seeds)")]
    if "listops" in competitive:
        best = list(competitive["listops"].values())
        verdict = "inconclusive" if "missing" in best or "undecided" in best else (
            "reproduced" if all(o == "better" for o in best) else
            "contradicted" if any(o == "worse" for o in best) else "inconclusive")
        parts.append(Part("", verdict, "best on ListOps (RotRNN better than each of LRU, S4D, S5): "
                          + ", ".join(f"{k} {v}" for k, v in competitive["listops"].items())
                          + "; Text and Retrieval are not run at this scale"))
    return parts


def settle_d1(stored: dict) -> list[Part]:
    """D1 at this scale: DLR tied with or better than S4D on every task."""
    tasks = list(dict.fromkeys(c["task"] for c in stored["cells"]))
    outcomes = {t: _against(stored, t, "dlr", ("s4d",))["s4d"] for t in tasks}
    return [Part("", _lra_verdict(list(outcomes.values())),
                 "DLR against S4D: " + ", ".join(f"{t} {o}" for t, o in outcomes.items()) + ". "
                 + "; ".join(_ranking(stored, t)[1] for t in tasks)
                 + f" (decided beyond {Z_DECIDES:g} standard errors over seeds)")]


def _fmt_small(cell: dict) -> str:
    """`_fmt` for small statistics (3 significant digits)."""
    return f"{cell['mean']:.3g}" + (f" ± {cell['sd']:.2g}" if cell["sd"] is not None else "") + f" (n = {cell['n']})"


def settle_r8_listops(stored: dict) -> list[Part]:
    """R8 on ListOps, per layer: RotRNN's coefficient of variation over training (mean over seeds) flatter than the
    LRU's, at most CV_REPRODUCED x it and lower by more than Z_DECIDES standard errors, in every layer (reproduced);
    higher by more than Z_DECIDES standard errors in some layer (contradicted); otherwise inconclusive."""
    layers = sorted({c["layer"] for c in stored["cells"] if c.get("layer") is not None})
    outcomes, texts = [], []
    for layer in layers:
        rot, lru = _cell(stored, model="rotrnn", layer=layer), _cell(stored, model="lru", layer=layer)
        if rot is None or lru is None or rot["mean"] is None or lru["mean"] is None:
            return [Part("", "inconclusive", f"layer {layer}: RotRNN or LRU has no finished run")]
        diff, z = _compare(lru, rot, lru["se"], rot["se"])          # > 0: RotRNN flatter
        ratio = rot["mean"] / lru["mean"] if lru["mean"] > 0 else math.inf
        if z is None:
            outcomes.append("undecided")
        elif ratio <= CV_REPRODUCED and z > Z_DECIDES:
            outcomes.append("flatter")
        elif z < -Z_DECIDES:
            outcomes.append("less flat")
        else:
            outcomes.append("undecided")
        texts.append(f"layer {layer}: RotRNN {_fmt_small(rot)} vs LRU {_fmt_small(lru)} (ratio {ratio:.2f}"
                     + (f", {z:+.1f} standard errors" if z is not None else ", no spread") + f"): {outcomes[-1]}")
    verdict = ("reproduced" if outcomes and all(o == "flatter" for o in outcomes) else
               "contradicted" if "less flat" in outcomes else "inconclusive")
    return [Part("", verdict, "coefficient of variation over training of each layer's mean state norm, mean ± sd "
                 "over seeds: " + "; ".join(texts) + f". Reproduced when RotRNN's is at most {CV_REPRODUCED} x the "
                 f"LRU's and lower beyond {Z_DECIDES:g} standard errors in every layer")]


def settle_d2_experiment(stored: dict) -> list[Part]:
    """D2 on the long-shift record: per model and length the final validation R^2 on Shift, solved at or above
    SOLVED_R2 (D4's "near-perfect"). Reproduced when DLR (its synthetic-task initialisation, the model of the
    claim) solves every length run; contradicted when it fails (R^2 <= FAILS_R2) at a length within its state
    size N, where its initial phases already tell every lag apart; otherwise inconclusive (the budget, not the
    model, may be what stops it at L > N)."""
    def variant(r: dict) -> str:
        return f"{r['model']} ({r['init']})"

    rows = [{"task": r["length"], "model": variant(r), "status": r["status"], "r2": r["value"]} for r in stored["runs"]]
    found = outcome(rows)
    state = {variant(r): r["d_state"] for r in stored["runs"]}
    texts = []
    for model, lengths in found.items():
        ordered = sorted(lengths)
        longest = None
        for length in ordered:              # the longest L solved with every shorter one solved too
            if not lengths[length]["solved"]:
                break
            longest = length
        r2 = ", ".join(f"L = {length}: " + ("diverged" if lengths[length]["r2"] is None else
                                            f"{lengths[length]['r2']:.3f}") for length in ordered)
        texts.append(f"{model}: {r2} ({'solves up to L = ' + str(longest) if longest else 'solves no length run'})")
    claimed = "dlr (synthetic)"
    dlr = found.get(claimed, {})
    if not dlr:
        return [Part("", "inconclusive", "DLR (synthetic-task initialisation) was not run")]
    if any(e["fails"] and length <= state[claimed] for length, e in dlr.items()):
        verdict = "contradicted"
    elif all(e["solved"] for e in dlr.values()):
        verdict = "reproduced"
    else:
        verdict = "inconclusive"
    return [Part("", verdict, "final validation R^2 on Shift: " + "; ".join(texts) + f". Solved: R^2 >= {SOLVED_R2}; "
                 f"reproduced when DLR (dt = 1e-5) solves every length, contradicted when it fails (R^2 <= {FAILS_R2}) "
                 f"at L <= its N = {state[claimed]}")]


R6_EXPERIMENT = _experiment("lra-reduced", settle_r6)
D1_EXPERIMENT = _experiment("lra-reduced", settle_d1)
D8_EXPERIMENT = _experiment("norm-position", settle_d8)
D5_EXPERIMENT = _experiment("subtrees-segmentation", settle_d5)
D4_EXPERIMENT = _experiment("synthetic-tasks", settle_d4_experiment)
D2_EXPERIMENT = _experiment("long-shift", settle_d2_experiment)
R8_EXPERIMENT = _experiment("norms-listops", settle_r8_listops)
R7_EXPERIMENT = _experiment("speech", settle_r7)
D6_EXPERIMENT = _experiment("speech", settle_d6)


# -- claims that cannot be settled here ---------------------------------------------------------

def not_run(need: str, command: str) -> Part:
    return Part("not run here", "not run here", need, "", command)


LRA = "ListOps, Text, Retrieval, Image, Pathfinder, Path-X"
LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder", "pathx")


def full_scale(tasks: tuple[str, ...], models: tuple[str, ...]) -> str:
    """The exact full-scale commands, one per (task, model), with their configs in tasks/configs/ (docs/training.md)."""
    return " ; ".join(f"linrnn train --config tasks/configs/{t}-{m}.toml --data DIR --out runs/{t}-{m}"
                      for t in tasks for m in models)
CLAIMS: tuple[Claim, ...] = (
    Claim("R1", "RotRNN", "A = exp(M - M^T) is a rotation (orthogonal, det +1) for every M, so A stays valid "
          "all through training", (theory_part("R1"), R1_NORMS)),
    Claim("R2", "RotRNN", "A = P Theta P^T with 2x2 blocks gives A^k cheaply, without dense matrix powers",
          (theory_part("R2"),)),
    Claim("R3", "RotRNN", "the normalisation keeps E||x_t||^2 constant for all t (LRU's only as t -> infinity)",
          (theory_part("R3"), R3_MC)),
    Claim("R4", "RotRNN", "multi-head: independent A, B, gamma per head, outputs concatenated and mixed linearly",
          (HEADS, PARAM_COUNTS)),
    Claim("R5", "RotRNN", "an LRU whose eigenvalues come in conjugate pairs is equivalent to a multi-head RotRNN",
          (theory_part("R5"), CONVERTERS)),
    Claim("R6", "RotRNN", "LRA: competitive with S4, S5, LRU; best on ListOps, Text, Retrieval", (R6_EXPERIMENT,),
          full_scale=full_scale(LRA_TASKS, ("rotrnn", "lru")),
          published="ListOps / Text / Retrieval / Image / Pathfinder / Path-X: LRU 60.2 / 89.4 / 89.9 / (89.0 colour) / "
                    "95.1 / 94.2; S4 59.60 / 86.82 / 90.90 / 88.65 / 94.20 / 96.35; S5 62.15 / 89.31 / 91.40 / 88.00 / "
                    "95.33 / 98.58 (docs/training.md: only LRU's Image cell confirmed); RotRNN's own numbers not "
                    "retrievable (its reviews: best only on Text, by a small margin)"),
    Claim("R7", "RotRNN", "Speech Commands 35: 95.2%, as a reproduced LRU at similar parameter count",
          (R7_EXPERIMENT,), full_scale=full_scale(("sc35",), ("rotrnn", "lru")),
          published="RotRNN 95.2% on SC35 as the claim was recorded (not checked against the paper's table); "
                    "S4 96.08, S5 96.52 as the S5 paper tabulates them (not confirmed); no LRU figure"),
    Claim("R8", "RotRNN", "hidden-state norm stays almost constant over training, across depth and seeds; "
          "LRU's fluctuates and settles slowly", (R8_NORMS, R8_EXPERIMENT)),
    Claim("R9", "RotRNN", "LRU does not enforce conjugate pairs, real outputs, or a normalisation that keeps the "
          "state's magnitude coherent", (theory_part("R9"), R9_NORMS)),
    Claim("D1", "DLR", "without discretisation, DLR matches S4/S4D on LRA (incl. Path-X and ListOps)", (D1_EXPERIMENT,),
          full_scale=full_scale(LRA_TASKS, ("dlr",)),
          published="DLR's LRA numbers not retrievable; S4D-LegS 60.47 / 86.18 / 89.46 / 88.19 / 93.06 / 91.95 "
                    "(S4D paper, not confirmed)"),
    Claim("D2", "DLR", "eigenvalues near the unit circle propagate signal over a million steps and more",
          (theory_part("D2"), D2_EXPERIMENT),
          full_scale="for L in 16384 65536 262144 1048576; do " + " ; ".join(
              f"linrnn tasks grid --tasks shift --models {m} --length $L --steps 24000 --set batch_size=4 --set lr=1e-5 "
              f"--set d_state={n}{extra} --out runs/long-shift{suffix}"
              for m, n, extra, suffix in (("dlr", 4096, "", ""), ("dlr", 4096, " --set dt_min=1e-4 --set dt_max=1e-1",
                                                                    "-default"),
                                          ("lru", 4096, "", ""), ("rotrnn", 1024, "", ""))) + "; done",
          published="the DLR paper: Shift learnt perfectly at L = 0.5M (N = 4,096, H = 32, DLR-prod); the steps of "
                    "those runs (24,000 = 12 epochs of 8,000 samples) are this project's assumption"),
    Claim("D3", "DLR", "periodic initialisation: a size-N DLR expresses any length-N kernel", (theory_part("D3"),)),
    Claim("D4", "DLR", "synthetic tasks: near-perfect where few kernels suffice (Shift), poor where "
          "context-dependent shifts are needed (ContextShift fails)", (D4_TASKS, D4_EXPERIMENT)),
    Claim("D5", "DLR", "strong on ListOpsSubTrees and PathfinderSegmentation, better than local attention",
          (D5_EXPERIMENT,),
          full_scale=full_scale(("listops-subtrees", "pathfinder-segmentation"), ("dlr", "lru", "rotrnn")),
          published="DLR's ListOpsSubTrees and PathfinderSegmentation numbers were not retrievable (only the abstract: "
                    "'does well' at 8K and 65K tokens)"),
    Claim("D6", "DLR", "Speech Commands 10 (raw): 97.1% with O(L) decoding", (D6_EXPERIMENT,),
          full_scale=full_scale(("sc10",), ("dlr",)),
          published="DLR 97.1% on raw SC10 as the claim was recorded (not checked against the paper); S4 98.32 "
                    "(S4 paper, not confirmed)"),
    Claim("D7", "DLR", "PG-19 language modelling at 1.2B parameters: loss comparable to a Transformer",
          unrun=not_run("out of reach of this project's machines: a 1.2B-parameter model and the PG-19 corpus need "
                        "a multi-GPU cluster for weeks; no command here would settle it, and no number is given", "")),
    Claim("D8", "DLR", "more robust to the position of layer norm than Transformers", (D8_EXPERIMENT,),
          published="no number retrievable; the claim is from the paper's text as recorded for this project"),
    Claim("D9", "DLR", "O(L) inference", (D9_SPEED,)),
)

# section -> (the shape of its meta.config, config -> the scope of its parts)
CONTEXT = {"norms": ({"task": str, "length": int, "n_layers": int, "d_model": int, "steps": int, "batch_size": int,
                      "seeds": [int]}, norms_scale),
           "tasks": ({"length": int, "steps": int, "seeds": [int]}, tasks_scale)}


def _machine(record: dict) -> str:
    return str(((record.get("meta") or {}).get("machine") or {}).get("label", "?"))


def settle_source(source: Source, records: list[dict]) -> list[Part]:
    """The parts one source gives: per results record; missing or malformed results: not run here, with why."""
    if not records:
        return [Part(source.name, "not run here", f"the {source.section} section has no results in this report",
                     command=REPORT_COMMAND)]
    parts = []
    for record in records:
        data = record.get("data")
        problem = conforms(data, source.shape)
        prefix = f"{_machine(record)}: " if len(records) > 1 else ""
        if problem:
            parts.append(Part(prefix + source.name, "not run here",
                              f"the {source.section} results cannot be read for this claim ({problem}); "
                              "they were probably written by older code", command=REPORT_COMMAND))
            continue
        context = CONTEXT.get(source.section)
        if context is None:
            found = source.settle(data)
        else:
            shape, scope_of = context
            config = (record.get("meta") or {}).get("config")
            problem = conforms(config, shape, "meta.config")
            if problem:
                parts.append(Part(prefix + source.name, "not run here", f"the {source.section} results cannot be "
                                  f"read for this claim ({problem})", command=REPORT_COMMAND))
                continue
            found = source.settle(data, scope_of(config))
        parts.extend(Part(prefix + p.source, p.verdict, p.evidence, p.scope, p.command) for p in found)
    return parts


def parts_of(claim: Claim, records: Records) -> list[Part]:
    if claim.unrun is not None:
        return [claim.unrun]
    return [p for source in claim.sources for p in settle_source(source, records.get(source.section) or [])]


def record_parts(record: dict) -> dict[str, list[dict]]:
    """claim id -> the parts one results record gives (the sections show their own verdicts with these)."""
    out = {}
    for claim in CLAIMS:
        parts = [p for s in claim.sources if s.section == record.get("section") for p in settle_source(s, [record])]
        if parts:
            out[claim.id] = [asdict(p) for p in parts]
    return out


def build(records: Records) -> list[dict[str, Any]]:
    """One row per claim of docs/claims.md, in order: verdict (weakest part), evidence, scale, command, parts."""
    rows = []
    for claim in CLAIMS:
        parts = parts_of(claim, records)
        evidence = " | ".join(f"{p.source} [{p.verdict}]: {p.evidence}" for p in parts)
        scopes = list(dict.fromkeys(p.scope for p in parts if p.scope))
        commands = list(dict.fromkeys(p.command for p in parts if p.verdict == "not run here" and p.command))
        rows.append({"id": claim.id, "paper": claim.paper, "claim": claim.text, "verdict": combine(parts),
                     "evidence": evidence, "scale": "; ".join(scopes), "command": "; ".join(commands),
                     "full_scale": claim.full_scale, "published": claim.published,
                     "links": list(dict.fromkeys((s.anchor or s.section) for s in claim.sources)),
                     "parts": [asdict(p) for p in parts]})
    return rows

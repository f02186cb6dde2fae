"""The claims ledger (docs/claims.md): every claim of the two seed papers, its verdict, and the table that says
where each claim's evidence comes from.

Verdicts, weakest first: contradicted (a derivation or an experiment here shows otherwise, with the exact condition;
"in part" when some parts hold) < inconclusive (the evidence exists but does not decide: a test short of alpha, fewer
than 3 seeds per arm, a diverged run, an arm or control that did not learn) < not run here (needs data or compute
this machine lacks; the command that would settle it is given, or the reason none can) < verified (in part) =
reproduced (in part) (what is tested holds; the claim has parts no rule here tests) < verified = reproduced < proved.

A claim gathers *all* its evidence, one `Part` per source and test. The rules that decide a part live with the
evidence (`linrnn.experiments.decide.evidence`), and each claim's settle functions beside its experiment or section in
`linrnn.experiments` (its jobs, rule and record in one file). An experiment declares the claims it settles once
(`Experiment.settles`, in its module of `linrnn.experiments.claims`): `EXPERIMENT_SOURCES` is derived from that
registry, never written here. This module holds the sections' sources, the rules that combine parts into a claim and
the table of claims:

- a claim's verdict is its weakest *deciding* part's (`combine`); a side finding (`Part.decides` False: another
  model, setting or initialisation than the claim speaks of) is shown beside it and never counts;
- every claim is a conjunction of its parts: the parts that would show it holds are each judged at alpha on their
  own (an intersection-union test needs no family correction), while the tests that would contradict it are one
  family across the whole claim, Holm-adjusted together whichever source they come from (`holm_contradictions`);
- every claim carries the paper's own words (`linrnn.reports.quotes`), and every undecided part what would settle
  it (`Part.power`), gathered per claim as "what would settle it".

Verdicts are computed from the saved measurements when the page renders, so `linrnn report --from` re-settles them.
Only a results file that is missing, or whose record does not have the shape a settle function reads (checked up
front, `conforms`), gives "not run here" with the reason; an exception in a settle function's own logic propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from linrnn.experiments import montecarlo, normstudy, reference, tasks as tasks_section
from linrnn.experiments.claims import EXPERIMENTS
from linrnn.experiments.claims.full_scale import LRA_TASKS, commands, paper_scale
from linrnn.experiments.decide.evidence import (ALMOST_CONSTANT_CV, DRIFT_FACTOR, EXPONENT_BOUND, FAILS_R2,  # noqa: F401
                                                FLATTER_RATIO, MARGIN_ACCURACY, RANK, SOLVED_R2, Part, num)
from linrnn.experiments.decide.rules import holm_contradictions, holm_side_findings
from linrnn.experiments.speed import settle_d9
from linrnn.reports.quotes import QUOTES
from linrnn.reports.results import Number, conforms  # noqa: F401  (Number: the shapes below; both re-exported)

Records = dict[str, list[dict[str, Any]]]   # section name -> its results records (each: meta, data)

REPORT_COMMAND = "linrnn report --out DIR"   # recomputes every section (add --quick for the small sizes)
# what a part's `test` is when it is not a statistical test
NON_STATISTICAL_TESTS = ("derivation", "numeric", "structure")
_num = num


@dataclass(frozen=True)
class Source:
    """Evidence a claim takes from one section's results."""

    section: str                                  # the results file's section
    name: str                                     # the Part's `source`
    shape: Any                                    # what the settle function reads (see `conforms`)
    settle: Callable[[dict], list[Part]]          # the section's `data` -> parts
    anchor: str = ""                              # where on the page the evidence is (default: the section)
    command: str = REPORT_COMMAND                 # the command that reproduces its parts


@dataclass(frozen=True)
class Claim:
    id: str                          # docs/claims.md
    paper: str                       # RotRNN or DLR
    text: str                        # the claim, shortened (the paper's own words: `quote`)
    sources: tuple[Source, ...] = ()  # evidence from results
    unrun: Part | None = None        # the claim cannot be settled here: why, and the command that would
    full_scale: str = ""             # the commands that settle it at the papers' scale (where this machine cannot)
    published: str = ""              # the published numbers it is about, with their source and status
    untested: tuple[str, ...] = ()   # the parts of the claim no rule here tests (the verdict is then "in part")
    paper_scale: str = ""            # what the paper's scale costs, in words (`paper_scale`)

    @property
    def quote(self) -> dict[str, str]:
        """The claim as the paper wrote it: {"source", "text" (exactly as the source has it), "english"}."""
        return dict(QUOTES[self.id])


def combine(parts: list[Part], untested: tuple[str, ...] = ()) -> str:
    """The weakest deciding part's verdict (contradicted < inconclusive < not run here < in part < verified =
    reproduced < proved); side findings (`decides` False) never count. Among the weakest, one plainly contradicted
    part makes the claim contradicted, even when other parts hold (a measurement can contradict what a derivation
    proves); "contradicted (in part)" only when the weakest parts are themselves contradicted in part. A claim whose
    rules leave some of it untested (`untested`) is at most "verified (in part)" / "reproduced (in part)"."""
    parts = [p for p in parts if p.decides]
    if not parts:
        raise ValueError("a claim needs at least one deciding part")
    low = min(RANK[p.verdict] for p in parts)
    weakest = [p.verdict for p in parts if RANK[p.verdict] == low]
    if low == RANK["contradicted"]:
        return "contradicted" if "contradicted" in weakest else "contradicted (in part)"
    if low >= RANK["verified (in part)"]:
        verdict = "verified" if any(v.startswith("verified") for v in weakest) else \
            "reproduced" if any(v.startswith("reproduced") for v in weakest) else "proved"
        partial = untested or any(v.endswith("(in part)") for v in weakest)
        if partial:
            return f"{'verified' if verdict == 'proved' else verdict} (in part)"
        return verdict
    return weakest[0]


# -- theory -------------------------------------------------------------------------------------

THEORY_VERDICTS = frozenset({"proved", "verified", "fails", "inconclusive"})
THEORY_SHAPE = {"claims": [{"claim": str, "verdict": THEORY_VERDICTS, "partly": bool, "condition": str,
                            "findings": [{"statement": str, "verdict": THEORY_VERDICTS}]}]}
THEORY_SCOPE = "SymPy (symbolic) and SciPy/NumPy (random instances)"


def _theory_verdict(verdict: str, partly: bool) -> str:
    if verdict == "fails":
        return "contradicted (in part)" if partly else "contradicted"
    return verdict


def _findings_text(findings: list[dict]) -> str:
    return "; ".join(f"{f['statement']} [{_theory_verdict(f['verdict'], False)}"
                     + (f", {f['scope']}" if f.get("scope") else "") + "]" for f in findings)


def theory_part(claim_id: str) -> Source:
    """A claim's derivation in `theory/`: its own verdict ("proved" only where the record says so) and scope; the
    record's side findings (another setting than the claim's) as a part that does not decide."""
    def settle(data: dict) -> list[Part]:
        record = next((c for c in data["claims"] if c["claim"] == claim_id), None)
        if record is None:
            return [Part("derivation (theory)", "not run here", f"no derivation of {claim_id} in these theory results",
                         command=f"linrnn theory --claim {claim_id}")]
        deciding = [f for f in record["findings"] if not f.get("side")]
        beside = [f for f in record["findings"] if f.get("side")]
        text = _findings_text(deciding) + (f". Fails when: {record['condition']}" if record["condition"] else "")
        if record.get("conclusion"):
            text += f". Conclusion: {record['conclusion']}"
        verdict = _theory_verdict(record["verdict"], record["partly"])
        command = f"linrnn theory --claim {claim_id}"
        parts = [Part("derivation (theory)", verdict, text, record.get("scope") or THEORY_SCOPE, test="derivation",
                      scale="symbolic, in general" if verdict == "proved" else "symbolic and numeric instances",
                      command=command)]
        for f in beside:
            parts.append(Part("derivation (theory)", "contradicted" if f["verdict"] == "fails" else f["verdict"],
                              f"{f['statement']}" + (f". When: {f['condition']}" if f.get("condition") else ""),
                              f.get("scope", ""), part="another setting than the claim's", test="derivation",
                              decides=False, command=command))
        return parts
    return Source("theory", "derivation (theory)", THEORY_SHAPE, settle)


R3_MC = Source("theory", "Monte Carlo (theory)",
               {"r3": [{"start": str, "constant": bool, "agrees": bool}],
                "montecarlo": {"config": {"n_seq": int, "T": int}}}, montecarlo.settle_r3_montecarlo)


# -- reference: R4, R5 --------------------------------------------------------------------------

PARAM_COUNTS = Source("reference", "parameter count (reference)",
                      {"param_counts": [{"config": str, "count": int, "formula_value": int}]},
                      reference.settle_param_counts)
HEADS = Source("reference", "head independence (reference)",
               {"head_independence": [{"changed": [str], "heads": int, "H": int, "N": int, "L": int,
                                       "other_max_ratio": Number, "changed_rel": Number, "changed_rtol": Number,
                                       "sum_ratio": Number}]}, reference.settle_head_independence)


CONVERTERS = Source("reference", "converters (reference)",
                    {"converters": [{"rel": Number, "rtol": Number}]}, reference.settle_converters)


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




# -- the sections' measurements: R8, R9, R1 (norms), D4 (tasks), D9 (speed) --------------------------------

NORMS_TABLE = {"table": [{"model": str, "layer": int, "cv": [Number], "cv_mean": Number}],
               "across": {"rotrnn": Number, "lru": Number}}
DRIFT_RUN = {"drift": {"max": [[Number]], "rounding_floor": Number}}
ORTHO_RUN = {"orthogonality": {"worst": {"max_ratio": Number, "max_error": Number, "max_error_float32": Number,
                                         "steps_checked": int}}}
R8_NORMS = Source("norms", "training (norms)", NORMS_TABLE, normstudy.settle_r8,
                  command="linrnn report --recompute --out DIR")
R9_NORMS = Source("norms", "training (norms)", {"runs": _runs_shape("lru", DRIFT_RUN)}, normstudy.settle_r9_training,
                  command="linrnn report --recompute --out DIR")
R1_NORMS = Source("norms", "training (norms)", {"runs": _runs_shape("rotrnn", ORTHO_RUN)}, normstudy.settle_r1_training,
                  command="linrnn report --recompute --out DIR")
TASK_ROW = {"task": str, "model": str, "seed": int, "status": str}
D4_TASKS = Source("tasks", "training (tasks)", {"rows": [TASK_ROW]}, tasks_section.settle_d4,
                  command="linrnn report --recompute --out DIR")
D9_SPEED = Source("speed", "benchmark (speed)",
                  {"step_rounds": [{"backend": str, "mixer": str, "L": int, "ms": [Number]}]}, settle_d9)


# -- experiments: the empirical claims at this machine's scale -----------------------------------

EXPERIMENT_SHAPE = {"stored": [{"experiment": str, "quick": bool, "complete": bool, "scale": str, "command": str,
                                "cells": [{"n": int, "mean": None, "se": None, "sd": None, "values": [Number]}],
                                "runs": [dict]}]}


def _missing(stored: dict, plan, only: dict) -> list[str]:
    """The runs of the experiment's plan (`plan`: its `Experiment`) whose labels match `only` that the record lacks."""
    have = {run.get("name") for run in stored["runs"]}
    return [job.name for job in plan.all_jobs(stored["quick"])
            if all(str(job.labels.get(k)) == str(v) for k, v in only.items()) and job.name not in have]


def _interrupted(stored: dict, plan, only: dict | None) -> str | None:
    """Why the record cannot decide the claim yet, or None: a record that holds every run of its plan decides; one that
    does not, where `only` names the runs the claim reads (an experiment of two claims), decides the claim whose runs
    of the current plan are all there while the other's are not."""
    if stored["complete"]:
        return None
    if only is None:
        return "the experiment was interrupted before its last run"
    missing = _missing(stored, plan, only)
    if not missing:
        return None
    return (f"{len(missing)} of the runs this claim reads ({', '.join(f'{k} {v}' for k, v in only.items())}) are not "
            f"in the record yet (e.g. {missing[0]})")


def _experiment(name: str, settle: Callable[[dict], list[Part]], plan=None, only: dict | None = None) -> Source:
    """Evidence from the stored record of `linrnn experiment NAME`; none stored: not run here, with the command.
    `only`: the labels of the runs the claim reads, judged complete against `plan` (the experiment's jobs)."""
    source = f"experiment ({name})"
    command = f"linrnn experiment {name} --data DIR"

    def settle_stored(data: dict) -> list[Part]:
        full = [s for s in data["stored"] if s["experiment"] == name and not s["quick"]]
        if not full:
            return [Part(source, "not run here", f"no stored record of this experiment (the report renders "
                         f"reports/results/experiment-{name}.json)", command=command)]
        parts = []
        for stored in full:
            found = settle(stored)
            why = _interrupted(stored, plan, only)
            if why:
                found = [replace(p, verdict="inconclusive", evidence=f"{why}; " + p.evidence, power=p.power or {
                                     "seeds_per_arm": None, "cpu_hours": None,
                                     "assumption": f"the experiment's remaining runs: `{command}` trains only what is "
                                                   "missing"}) for p in found]
            parts.extend(replace(p, source=source, scope=p.scope or stored["scale"],
                                 scale=p.scale or _brief(stored)) for p in found)
        return parts
    return Source("experiments", source, EXPERIMENT_SHAPE, settle_stored, anchor=f"experiment-{name}",
                  command=command)


def derive_experiment_sources(experiments=None) -> dict[str, tuple[Source, ...]]:
    """claim id -> its sources from the experiments' own declarations (`Experiment.settles`), in the registry's order
    (`experiments`: a registry like `linrnn.experiments.claims.EXPERIMENTS`, which it defaults to)."""
    found: dict[str, tuple[Source, ...]] = {}
    for experiment in (EXPERIMENTS if experiments is None else experiments).values():
        for settles in experiment.settles:
            source = _experiment(experiment.name, settles.settle, experiment if settles.only else None, settles.only)
            found[settles.claim] = found.get(settles.claim, ()) + (source,)
    return found


def _brief(stored: dict) -> str:
    """A record's scale in a few words: its own `brief`, or (older records) its seeds per arm."""
    if stored.get("brief"):
        return stored["brief"]
    seeds = max((c["n"] for c in stored["cells"]), default=0)
    return f"{seeds} seed{'' if seeds == 1 else 's'} per arm, experiment {stored['experiment']}"


EXPERIMENT_SOURCES: dict[str, tuple[Source, ...]] = derive_experiment_sources()


def experiment_source(claim_id: str) -> Source:
    """The one experiment source of a claim (a claim settled by two experiments has two: `EXPERIMENT_SOURCES`)."""
    [source] = EXPERIMENT_SOURCES[claim_id]
    return source


def sources_of(claim: Claim) -> tuple[Source, ...]:
    """Every source of a claim: the sections' (`Claim.sources`), then the experiments' that declare it."""
    return claim.sources + EXPERIMENT_SOURCES.get(claim.id, ())


def wiring_problems(claims: tuple[Claim, ...], experiments) -> list[str]:
    """Where the table of claims and the experiments' declarations (`experiments`, a registry) do not give every claim
    exactly one source of each kind, one line each: a source twice in a claim, an experiment source written into a
    claim by hand (its wiring is the experiment's `settles`), a claim an experiment settles twice, or one the table
    does not have. [] when the wiring is whole."""
    ids = {c.id for c in claims}
    problems = []
    for experiment in experiments.values():
        named = [s.claim for s in experiment.settles]
        problems += [f"experiment {experiment.name} settles {c}, which is not a claim of the ledger" for c in named
                     if c not in ids]
        problems += [f"experiment {experiment.name} settles {c} twice" for c in dict.fromkeys(named)
                     if named.count(c) > 1]
    derived = derive_experiment_sources(experiments)
    for claim in claims:
        problems += [f"{claim.id}: the source {s.name!r} is written into the claim by hand; declare it in the "
                     f"experiment's settles" for s in claim.sources if s.section == "experiments"]
        keys = [(s.section, s.name) for s in claim.sources + derived.get(claim.id, ())]
        problems += [f"{claim.id}: the {section} source {name!r} appears {keys.count((section, name))} times"
                     for section, name in dict.fromkeys(keys) if keys.count((section, name)) > 1]
    return problems


# -- claims that cannot be settled here ---------------------------------------------------------

def not_run(need: str, command: str) -> Part:
    return Part("not run here", "not run here", need, "", command)


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
    Claim("R6", "RotRNN", "LRA: competitive with S4, S5, LRU; best on ListOps, Text, Retrieval; a little lower on the "
          "pixel tasks (Path-X, CIFAR)",
          full_scale=commands(LRA_TASKS, ("rotrnn", "lru")),
          paper_scale=paper_scale(LRA_TASKS, ("rotrnn", "lru", "dlr")),
          untested=("Text, Retrieval, Image and Path-X (their archives are not generated here), so 'best on Text and "
                    "Retrieval' and 'a little lower on Image and Path-X' (Pathfinder's gap is shown as a side finding)",
                    "S4 itself (S4D stands in for it)"),
          published="ListOps / Text / Retrieval / Image / Pathfinder / Path-X: LRU 60.2 / 89.4 / 89.9 / (89.0 colour) / "
                    "95.1 / 94.2; S4 59.60 / 86.82 / 90.90 / 88.65 / 94.20 / 96.35; S5 62.15 / 89.31 / 91.40 / 88.00 / "
                    "95.33 / 98.58 (the LRU row confirmed against the LRU paper's Table 3, docs/papers.md; the S4 and S5 rows "
                    "not confirmed); RotRNN's own numbers not "
                    "retrievable (its reviews: best only on Text, by a small margin)"),
    Claim("R7", "RotRNN", "Speech Commands 35: 95.2%, as a reproduced LRU at similar parameter count",
          full_scale=commands(("sc35",), ("rotrnn", "lru")),
          paper_scale=paper_scale(("sc35",), ("rotrnn", "lru")),
          untested=("95.2 % on the Speech Commands recordings (synthetic speech here)",),
          published="RotRNN 95.2% on SC35 as the claim was recorded (not checked against the paper's table); "
                    "S4 96.08, S5 96.52 as the S5 paper tabulates them (not confirmed); no LRU figure"),
    Claim("R8", "RotRNN", "hidden-state norm stays almost constant over training, across depth and seeds; "
          "LRU's fluctuates and settles slowly", (R8_NORMS,),
          untested=("the LRU's norm 'settles slowly' (its settle step is reported beside, not decided)",
                    "a trained ListOps model (the models here stay near chance on real-length ListOps: the early "
                    "phase of training)")),
    Claim("R9", "RotRNN", "LRU does not enforce conjugate pairs, real outputs, or a normalisation that keeps the "
          "state's magnitude coherent", (theory_part("R9"), R9_NORMS)),
    Claim("D1", "DLR", "without discretisation, DLR matches S4/S4D on LRA (incl. Path-X and ListOps)",
          full_scale=commands(LRA_TASKS, ("dlr",)), paper_scale=paper_scale(LRA_TASKS, ("dlr",)),
          untested=("Text, Retrieval, Image and Path-X (their archives are not generated here)",
                    "S4 itself (S4D only)"),
          published="DLR's LRA numbers not retrievable; S4D-LegS 60.47 / 86.18 / 89.46 / 88.19 / 93.06 / 91.95 "
                    "(S4D paper, not confirmed)"),
    Claim("D2", "DLR", "eigenvalues near the unit circle propagate signal over a million steps and more",
          (theory_part("D2"),),
          full_scale="for L in 16384 65536 262144 1048576; do " + " ; ".join(
              f"linrnn tasks grid --tasks shift --models {m} --length $L --steps 24000 --set batch_size=4 --set lr=1e-5 "
              f"--set d_state={n}{extra} --out runs/long-shift{suffix}"
              for m, n, extra, suffix in (("dlr", 4096, "", ""), ("dlr", 4096, " --set dt_min=1e-4 --set dt_max=1e-1",
                                                                    "-default"),
                                          ("lru", 4096, "", ""), ("rotrnn", 1024, "", ""))) + "; done",
          published="the DLR paper: Shift learnt perfectly at L = 0.5M (N = 4,096, H = 32, DLR-prod); the steps of "
                    "those runs (24,000 = 12 epochs of 8,000 samples) are this project's assumption"),
    Claim("D3", "DLR", "periodic initialisation: a size-N DLR expresses any length-N kernel", (theory_part("D3"),)),
    Claim("D4", "DLR", "synthetic tasks: near-perfect where few kernels suffice (Shift), struggles where the shift "
          "depends on the context (ContextShift)", (D4_TASKS,),
          untested=("poor where many kernels are needed: at L = 64 = N the periodic initialisation expresses every "
                    "kernel of length L (D3), so these runs cannot show it; the many-kernel tasks are reported beside",
                    "Shift at 0.5M length (the long-shift experiment of D2 reaches 4,096)")),
    Claim("D5", "DLR", "strong on ListOpsSubTrees and PathfinderSegmentation, better than local attention",
          full_scale=commands(("listops-subtrees", "pathfinder-segmentation"), ("dlr", "lru", "rotrnn")),
          paper_scale=paper_scale(("listops-subtrees", "pathfinder-segmentation"), ("dlr",)) + " (and local "
                      "attention's, which the configs do not include)",
          untested=("'strong': the paper gives no bar (the best trivial predictor, chance and the other models are "
                    "reported beside)",
                    "the papers' lengths: PathfinderSegmentation-256 (65K) and -512 (262K); here 32 x 32 (1K), where "
                    "nearly every subtree fits inside local attention's window, so the long-range advantage is not "
                    "tested"),
          published="DLR's ListOpsSubTrees and PathfinderSegmentation numbers were not retrievable (only the abstract: "
                    "'does well' at 8K and 65K tokens)"),
    Claim("D6", "DLR", "Speech Commands 10 (raw): 97.1% with O(L) decoding, comparable to S4 and S4D",
          full_scale=commands(("sc10",), ("dlr",)), paper_scale=paper_scale(("sc10",), ("dlr",)),
          untested=("97.1 % on raw Speech Commands audio (MFCC features of synthetic speech here)",
                    "S4 itself (S4D stands in for it)", "O(L) decoding (settled under D9)"),
          published="DLR 97.1% on raw SC10 as the claim was recorded (not checked against the paper); S4 98.32 "
                    "(S4 paper, not confirmed)"),
    Claim("D7", "DLR", "PG-19 language modelling at 1.2B parameters: loss comparable to a Transformer",
          unrun=not_run("out of reach of this project's machines: a 1.2B-parameter model and the PG-19 corpus need "
                        "a multi-GPU cluster for weeks; no command here would settle it, and no number is given", "")),
    Claim("D8", "DLR", "more robust to the position of layer norm than Transformers",
          published="no number retrievable; the claim is from the paper's text as recorded for this project"),
    Claim("D9", "DLR", "O(L) inference", (D9_SPEED,)),
)


# section -> (the shape of its meta.config, config -> the scope of its parts)
CONTEXT = {"norms": ({"task": str, "length": int, "n_layers": int, "d_model": int, "steps": int, "batch_size": int,
                      "seeds": [int]}, normstudy.norms_scale),
           "tasks": ({"length": int, "steps": int, "seeds": [int]}, tasks_section.tasks_scale)}


def _machine(record: dict) -> str:
    return str(((record.get("meta") or {}).get("machine") or {}).get("label", "?"))


def settle_source(source: Source, records: list[dict]) -> list[Part]:
    """The parts one source gives: per results record; missing or malformed results: not run here, with why. Every
    part names the command that reproduces it."""
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
        parts.extend(replace(p, source=prefix + p.source, command=p.command or source.command) for p in found)
    return parts


def parts_of(claim: Claim, records: Records) -> list[Part]:
    """Every part of a claim from every source, the claim's contradiction tests Holm-adjusted together, and its side
    findings' tests Holm-adjusted together as a family of their own."""
    if claim.unrun is not None:
        return [claim.unrun]
    return holm_side_findings(holm_contradictions([p for source in sources_of(claim)
                                                   for p in settle_source(source, records.get(source.section) or [])]))


def record_parts(record: dict) -> dict[str, list[dict]]:
    """claim id -> the parts one results record gives (the sections show their own verdicts with these)."""
    out = {}
    for claim in CLAIMS:
        parts = [p for s in sources_of(claim) if s.section == record.get("section") for p in settle_source(s, [record])]
        if parts:
            out[claim.id] = [p.record() for p in holm_side_findings(holm_contradictions(parts))]
    return out


def scale_words(parts: list[Part]) -> str:
    """The scale of a claim's evidence in a few words: each deciding experiment's (seeds, length, steps, data), else
    what kind of evidence it is."""
    parts = [p for p in parts if p.decides] or parts
    words = [p.scale for p in parts if p.scale]
    if not words:
        words = ["symbolic, in general" if p.verdict == "proved" else
                 "not run here" if p.verdict == "not run here" else
                 "numeric checks" if p.test in (None, "numeric", "derivation") else p.test for p in parts]
    return "; ".join(dict.fromkeys(words))


def family(parts: list[Part]) -> str:
    """How the claim's tests combine, in words."""
    deciding = [p for p in parts if p.decides]
    tests = [p for p in deciding if p.p is not None]
    against = [p for p in deciding if p.against is not None]
    if not tests:
        return f"every one of its {len(deciding)} deciding part(s) must hold; no statistical test"
    return (f"every one of its {len(deciding)} deciding part(s) must hold: an intersection-union test, each part at "
            f"alpha 0.05 with no family correction"
            + (f"; the {len(against)} tests that would contradict it are Holm-adjusted together" if len(against) > 1
               else ""))


def settle_words(claim: Claim, parts: list[Part], verdict: str) -> str:
    """What would settle an undecided claim: its undecided parts' powered seed counts and compute, or the paper's
    scale where more seeds cannot."""
    if verdict not in ("inconclusive", "not run here") and not verdict.endswith("(in part)"):
        return ""
    out = []
    for p in parts:
        if not p.decides or p.verdict != "inconclusive" or p.power is None:
            continue
        if p.power.get("seeds_per_arm"):
            hours = p.power.get("cpu_hours")
            out.append(f"{p.part or p.source}: {p.power['seeds_per_arm']} seeds per arm"
                       + (f", about {hours:g} CPU-hours here" if hours is not None else ""))
        elif claim.paper_scale and "the paper's scale" in p.power["assumption"]:
            out.append(claim.paper_scale)
        else:
            out.append(f"{p.part or p.source}: {p.power['assumption']}")
    if verdict == "not run here" and claim.paper_scale:
        out.append(claim.paper_scale)
    if verdict.endswith("(in part)") and claim.untested and claim.paper_scale and not out:
        out.append(f"the untested parts: {claim.paper_scale}")
    return "; ".join(dict.fromkeys(out))


def build(records: Records) -> list[dict[str, Any]]:
    """One row per claim of docs/claims.md, in order: verdict (weakest deciding part, "in part" where the rules leave
    some of the claim untested), evidence, scale, quote, family, what would settle it, parts (each `Part.record()`)."""
    rows = []
    for claim in CLAIMS:
        parts = parts_of(claim, records)
        evidence = " | ".join(f"{p.source} [{p.verdict}{'' if p.decides else ', side finding'}]: {p.evidence}"
                              for p in parts)
        if claim.untested:
            evidence += " | Not tested here: " + "; ".join(claim.untested)
        commands = list(dict.fromkeys(p.command for p in parts if p.verdict == "not run here" and p.command))
        verdict = combine(parts, claim.untested)
        rows.append({"id": claim.id, "paper": claim.paper, "claim": claim.text, "quote": claim.quote,
                     "verdict": verdict, "evidence": evidence, "scale": scale_words(parts),
                     "scope": "; ".join(dict.fromkeys(p.scope for p in parts if p.scope)),
                     "command": "; ".join(commands), "untested": list(claim.untested),
                     "full_scale": claim.full_scale, "published": claim.published, "family": family(parts),
                     "settle": settle_words(claim, parts, verdict),
                     "links": list(dict.fromkeys((s.anchor or s.section) for s in sources_of(claim))),
                     "parts": [p.record() for p in parts]})
    return rows


def ledger_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ledger.json: one object per claim {"claim", "paper", "statement", "quote", "verdict", "scale", "untested",
    "family", "settle", "parts"}, each part with every field of `Part.record()` (null where it does not apply)."""
    return [{"claim": r["id"], "paper": r["paper"], "statement": r["claim"], "quote": r["quote"],
             "verdict": r["verdict"], "scale": r["scale"], "untested": r["untested"], "family": r["family"],
             "settle": r["settle"] or None, "parts": r["parts"]} for r in rows]

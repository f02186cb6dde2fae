"""The experiment `speech` (claims R7 and D6): the Speech Commands pipeline on the espeak-ng corpus (synthetic speech
in the Speech Commands layout, as MFCCs), SC35 for RotRNN against the LRU, SC10 for DLR against S4D.

R7: "Speech Commands 35: 95.2 %, the same as a reproduced LRU at a similar parameter count". `settle_r7`: RotRNN
equivalent to the LRU within MARGIN_ACCURACY (TOST, at alpha); a difference beyond the margin on either side
contradicts ("the same": a significantly better RotRNN is not the same either). The
arms are trained until their validation accuracy stops improving, 16 seeds each (the TOST's power at 3 seeds was
3.5 % even at a true difference of 0).

D6: "Speech Commands 10 (raw): 97.1 % with O(L) decoding, comparable to S4 and S4D". `settle_d6`: DLR comparable to
or better than S4D by one-sided non-inferiority at -MARGIN_ACCURACY, at a fixed budget of epochs scored at the last
one (early stopping on the 107-clip validation split gave DLR a spread of 0.065), decided by a confirmatory run whose
seeds, rule and size were registered before it trained (`speech_design`, kept in the record); the 12 exploratory
seeds, whose plan changed after an interim look, are reported as exploratory, beside. S4 itself is not implemented
here (S4D stands in); the LRU and RotRNN on SC10 are side findings.

Every comparison needs both arms above the task's best trivial predictor (`linrnn.tasks.trivial`: a linear
classifier on the clip's bag of MFCC values, no order), and the LRU arm (the control) to have learned.
"""

from __future__ import annotations

from dataclasses import replace

from linrnn.experiments.decide.evidence import MARGIN_ACCURACY, Part, baseline_of, needs, side, tested, trivial_for
from linrnn.experiments.decide.rules import arm_runs, matches_parts
from linrnn.tasks.datasets import SPEECH, DataSet
from linrnn.experiments.claims.runner import Control, Experiment, Job, Settles

NAMES = {"dlr": "DLR", "lru": "LRU", "rotrnn": "RotRNN", "s4d": "S4D"}
SPEECH_QUICK = DataSet("speech-quick", "speech", dict(n_train=2, n_val=1, n_test=1))
SPEECH_MODELS = ("rotrnn", "lru", "dlr")


SPEECH_SEEDS = (0, 1, 2)
# D6 says DLR is comparable to S4 and S4D on SC10: S4D (ZOH, S4D-Lin) is an arm there; SC35 compares RotRNN with the LRU
SPEECH_BASELINES = {"sc10": ("s4d",), "sc35": ()}
# SC35 (R7) is trained until the validation accuracy stops improving: evaluated at every epoch end, stopped after
# PATIENCE epochs without a new best, at most EPOCHS epochs (the cosine schedule spans the most); the test accuracy
# and the per-example test predictions are those of the best validation epoch
SPEECH_EPOCHS = {"sc10": 30, "sc35": 40}
SPEECH_PATIENCE = {"sc10": 5, "sc35": 5}
# R7's TOST within +-0.02 at the first record's spread (SD 0.018 over RotRNN's and the LRU's 3 seeds): 80 % power
# when the true difference is 0 needs each one-sided test at 90 % power, 15.2 seeds per arm (statsmodels'
# TTestIndPower, effect 0.02 / 0.018): 16 seeds per arm; DLR on SC35 is beside it (3 seeds)
R7_SEEDS = tuple(range(16))
# D6 on SC10 at a fixed budget: every run trains SC10_EPOCHS epochs and is scored on test at its last epoch (no
# early stopping and no model selection on the 107-clip validation split, which gave DLR a spread of 0.065 in the
# first record); DLR and S4D, the claim's pair, at D6_SEEDS, the LRU and RotRNN beside at SPEECH_SEEDS. 12 seeds:
# at the spread of the first 5 per arm (pooled SD 0.0159), equivalence within +-0.02 at a true difference of 0 has
# 80 % power with 12 seeds per arm (statsmodels' TTestIndPower, the ledger's `power`)
SC10_EPOCHS = 20
D6_SEEDS = tuple(range(12))
# D6's confirmatory run, registered on 2026-12-07 before any of its runs trained (the record's `design`): DLR and S4D
# at seeds fixed in advance, disjoint from the 12 exploratory ones that were looked at, on the same fixed budget;
# decided once all of them have finished by one-sided non-inferiority at -MARGIN_ACCURACY. 16 seeds per arm: 91 %
# power at a true difference of 0 and the exploratory runs' pooled SD 0.0185, 82 % at that SD's one-sided 80 % upper
# confidence bound 0.0214 (statsmodels' TTestIndPower, one-sided, alpha 0.05)
D6_CONFIRMATORY_SEEDS = tuple(range(1000, 1016))
CONFIRMATORY = "confirmatory"


def speech_jobs(quick: bool) -> list[Job]:
    data = SPEECH_QUICK if quick else SPEECH
    common = dict(data_options={"mfcc": True}, d_model=64, n_layers=2, norm="batch",
                  batch_size=16, steps=None, lr=4e-3, recurrence_lr=1e-3, weight_decay=0.05, warmup_steps=20,
                  eval_every=None, eval_batches=None, checkpoint_every=100, workers=1, backend="torch")
    mixer = {"rotrnn": {"heads": 8, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999},      # bidirectional, N = 64
             "lru": {"d_state": 64, "r_min": 0.9, "r_max": 0.999}, "dlr": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1},
             "s4d": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1}}

    def job(task: str, model: str, seed: int, stage: str | None = None) -> Job:
        fixed = task == "sc10"
        epochs = 1 if quick else SC10_EPOCHS if fixed else SPEECH_EPOCHS[task]
        patience = None if quick or fixed else SPEECH_PATIENCE[task]
        return Job({"task": task, "model": model, "seed": seed, **({"stage": stage} if stage else {})},
                   {**common, "mixer": {**mixer[model], "bidirectional": True}, "task": task, "model": model,
                    "seed": seed, "epochs": epochs, "patience": patience}, data,
                   {"score": "final" if fixed else "best"})

    if quick:
        return [job(task, model, 0) for task in ("sc10", "sc35") for model in SPEECH_MODELS + SPEECH_BASELINES[task]]
    seeds = {("sc35", "rotrnn"): R7_SEEDS, ("sc35", "lru"): R7_SEEDS, ("sc35", "dlr"): SPEECH_SEEDS,
             ("sc10", "dlr"): D6_SEEDS, ("sc10", "s4d"): D6_SEEDS, ("sc10", "lru"): SPEECH_SEEDS,
             ("sc10", "rotrnn"): SPEECH_SEEDS}
    # seed-major: an interrupted record holds whole seeds of every arm
    top = max(len(v) for v in seeds.values())
    exploratory = [job(task, model, seed) for i in range(top) for task in ("sc10", "sc35")
                   for model in SPEECH_MODELS + SPEECH_BASELINES[task] if i < len(seeds[task, model])
                   for seed in (seeds[task, model][i],)]
    # D6's confirmatory runs, seed-major: an interrupted record holds whole seeds of both arms
    return exploratory + [job("sc10", model, seed, CONFIRMATORY) for seed in D6_CONFIRMATORY_SEEDS
                          for model in ("dlr", "s4d")]


def speech_design(quick: bool) -> list[dict]:
    """What was fixed before D6's confirmatory runs trained, and the interim look of the exploratory ones."""
    if quick:
        return []
    return [
        {"claim": "D6", "stage": CONFIRMATORY, "registered": "2026-12-07",
         "select": {"task": "sc10", "stage": CONFIRMATORY}, "arms": ["dlr", "s4d"],
         "seeds": list(D6_CONFIRMATORY_SEEDS),
         "budget": f"{SC10_EPOCHS} epochs, scored on test at the last epoch (no early stopping, no model selection)",
         "rule": f"one-sided non-inferiority: Welch's t that DLR - S4D > -{MARGIN_ACCURACY:g} at alpha 0.05 decides "
                 f"(reproduced); DLR worse than S4D by more than {MARGIN_ACCURACY:g} by the one-sided Welch test at "
                 "alpha 0.05 contradicts; otherwise inconclusive; judged once, when every planned run has finished",
         "margin": MARGIN_ACCURACY, "alpha": 0.05,
         "plan": "16 seeds per arm: 91 % power at a true difference of 0 and the exploratory runs' pooled SD 0.0185, "
                 "82 % at its one-sided 80 % upper confidence bound 0.0214 (statsmodels' TTestIndPower)",
         "secondary": "clip-level, not deciding: each test clip's share of seeds right, DLR minus S4D, a one-sided "
                      f"one-sample t over the clips against -{MARGIN_ACCURACY:g} (SciPy); it treats the clips as "
                      "the sampled unit and averages the seeds"},
        {"claim": "D6", "stage": "exploratory", "select": {"task": "sc10"}, "arms": ["dlr", "s4d"],
         "seeds": list(D6_SEEDS),
         "looks": ["the first record trained SC10 with early stopping on the 107-clip validation split, 3 seeds per "
                   "arm; seeing DLR's spread (0.065), the budget was changed to a fixed 20 epochs scored at the last",
                   "after 5 seeds per arm at the fixed budget (DLR 0.931 vs S4D 0.916) the plan was raised to 12 "
                   "seeds per arm (2026-12-05): an unplanned interim look"],
         "looked_at": {"seeds": list(D6_SEEDS[:5])},
         "use": "reported as exploratory, never deciding D6: the confirmatory run decides"},
    ]


def speech_controls(quick: bool) -> list[Control]:
    """The arms learn the words here (test accuracy 0.7-0.9 against 0.03-0.10 by chance in the first record): the
    LRU arm, the model the claims compare with, is the control of each task."""
    return [Control(f"{task}-lru-arm", task, f"the experiment's own LRU arm on {task.upper()}: learned when its test "
                    "accuracy is above the best trivial predictor (a linear classifier on the clip's bag of MFCC "
                    "values) and the best constant answer", arm={"task": task, "model": "lru"})
            for task in ("sc10", "sc35")]


def speech_scale(quick: bool) -> str:
    if quick:
        return "toy: 2 / 1 / 1 clips per word, one epoch"
    return ("the espeak-ng corpus in the Speech Commands layout (synthetic speech; 60 / 10 / 10 clips per word "
            "and split, S4's stratified split of the SC10 and SC35 words), 20 MFCCs x 161 frames; bidirectional, "
            "2 blocks of H = 64 (N = 64; RotRNN 8 heads of 16), BatchNorm, batch 16. SC35: RotRNN and the LRU "
            f"{len(R7_SEEDS)} seeds each, DLR {len(SPEECH_SEEDS)}, each until the validation accuracy stops "
            f"improving ({SPEECH_PATIENCE['sc35']} epochs without a new best, at most {SPEECH_EPOCHS['sc35']}), "
            f"scored at the best validation epoch. SC10: a fixed budget of {SC10_EPOCHS} epochs, scored on test at "
            f"the last epoch; DLR and S4D {len(D6_SEEDS)} exploratory seeds each and D6's confirmatory run of "
            f"{len(D6_CONFIRMATORY_SEEDS)} seeds each (seeds {D6_CONFIRMATORY_SEEDS[0]}-{D6_CONFIRMATORY_SEEDS[-1]}, "
            f"registered before it ran), the LRU and RotRNN {len(SPEECH_SEEDS)}; per-example test predictions kept "
            "(SC10's from the confirmatory run on)")



def _parameters(stored: dict, task: str, model: str) -> int | None:
    rows = [r for r in stored["runs"] if r.get("task") == task and r.get("model") == model
            and isinstance(r.get("parameters"), int)]
    return rows[0]["parameters"] if rows else None


def settle_r7(stored: dict) -> list[Part]:
    """R7 at this scale: RotRNN's SC35 accuracy the same as the LRU's (`matches_parts`: equivalent within the margin,
    or better); the parameter counts are reported beside."""
    parts = matches_parts(stored, [("sc35", "rotrnn", "lru")], "the same accuracy as the LRU on SC35", NAMES,
                          reading="the same")
    rot, lru = _parameters(stored, "sc35", "rotrnn"), _parameters(stored, "sc35", "lru")
    params = f"; {rot:,} vs {lru:,} parameters" if rot and lru else ""
    return [replace(p, evidence=p.evidence + params + "; synthetic speech, not Speech Commands") for p in parts]


def _stage_runs(stage: str | None):
    """Which runs are an arm: those of D6's confirmatory stage, or (None) the runs outside it."""
    def select(stored: dict, task: str, model: str) -> list[dict]:
        return [r for r in arm_runs(stored, task=task, model=model) if r.get("stage") == stage]
    return select


def _confirmatory_complete(stored: dict, design: dict) -> tuple[bool, str]:
    """Whether every planned run of the design has finished (a diverged one counts: it is in the record)."""
    have = {(r.get("model"), r.get("seed")) for r in stored["runs"]
            if all(r.get(k) == v for k, v in design["select"].items())}
    missing = [(m, s) for m in design["arms"] for s in design["seeds"] if (m, s) not in have]
    counts = ", ".join(f"{NAMES[m]} {sum(1 for (mm, _) in have if mm == m)} of {len(design['seeds'])}"
                       for m in design["arms"])
    return not missing, counts


def _design(stored: dict, stage: str) -> dict | None:
    return next((d for d in stored.get("design") or [] if d.get("claim") == "D6" and d.get("stage") == stage), None)


def _clip_level(stored: dict) -> Part | None:
    """The design's secondary, clip-level analysis (a side finding): per test clip, the share of DLR's seeds right
    minus S4D's, one-sided one-sample t over the clips against -margin."""
    import numpy as np

    from linrnn.experiments.decide import stats
    from linrnn.experiments.decide.rules import _correct

    arms = {m: [c for c in (_correct(r) for r in _stage_runs(CONFIRMATORY)(stored, "sc10", m)) if c is not None]
            for m in ("dlr", "s4d")}
    if min(len(v) for v in arms.values()) < stats.MIN_SEEDS or len({len(c) for v in arms.values() for c in v}) != 1:
        return None
    share = {m: np.mean(np.asarray(v, dtype=float), axis=0) for m, v in arms.items()}     # (clips,)
    diff = share["dlr"] - share["s4d"]
    test = replace(stats.one_sample(list(diff), -MARGIN_ACCURACY, "greater"),
                   name=f"one-sample t over the test clips, one-sided (above {-MARGIN_ACCURACY:g})")
    runs = _stage_runs(CONFIRMATORY)(stored, "sc10", "dlr")
    return Part("", "reproduced" if test.significant else "inconclusive",
                f"sc10, per clip (the confirmatory runs' {len(diff)} test clips, DLR's {len(arms['dlr'])} and S4D's "
                f"{len(arms['s4d'])} seeds averaged): " + test.words("mean share right, DLR - S4D"),
                part="comparable to or better than S4D on SC10, clip by clip",
                baseline=baseline_of(trivial_for(stored, runs[0])), **tested(test))


def settle_d6(stored: dict) -> list[Part]:
    """D6 at this scale: DLR's SC10 accuracy comparable to or better than S4D's (the claim's family: S4 and S4D;
    S4 is not implemented here), decided by the confirmatory run the record's design registered (`matches_parts`,
    non-inferiority), once every planned run has finished. The exploratory runs (an unplanned interim look changed
    their plan) and the clip-level analysis are side findings, as are the LRU and RotRNN."""
    family = [m for m in ("s4d",) if any(r.get("task") == "sc10" and r.get("model") == m for r in stored["runs"])]
    others = [m for m in ("lru", "rotrnn") if any(r.get("task") == "sc10" and r.get("model") == m
                                                  for r in stored["runs"])]
    if not family:
        return [Part("", "inconclusive", "sc10: S4D was not run, the claim's comparison", part="comparable to S4D on SC10",
                     power=needs("S4D's SC10 runs (the experiment runs them)"))]
    note = "; MFCC features of synthetic speech, not raw Speech Commands audio"
    this = "comparable to or better than {} on SC10"
    confirmatory = _design(stored, CONFIRMATORY)
    parts: list[Part] = []
    if confirmatory is None:
        parts.append(Part("", "inconclusive", "sc10: this record has no confirmatory design of D6 (records before "
                          "2026-12-07): its runs are exploratory", part=this.format("S4D"),
                          power=needs("D6's confirmatory run (linrnn experiment speech --only stage=confirmatory)")))
    else:
        done, counts = _confirmatory_complete(stored, confirmatory)
        if done:
            decided = matches_parts(stored, [("sc10", "dlr", m) for m in family], "{task}", NAMES,
                                    runs=_stage_runs(CONFIRMATORY))
            parts += [replace(p, part=this.format(NAMES[m]), evidence=f"confirmatory run (registered "
                              f"{confirmatory['registered']}, seeds {confirmatory['seeds'][0]}-"
                              f"{confirmatory['seeds'][-1]}): " + p.evidence + note) for p, m in zip(decided, family)]
            clip = _clip_level(stored)
            parts += side([clip] if clip else [], "the design's secondary, clip-level analysis")
        else:
            parts.append(Part("", "inconclusive", f"sc10: the confirmatory run has {counts} planned seeds finished; "
                              "its design judges it once, when all have finished (no look before)",
                              part=this.format("S4D"),
                              power=needs("the confirmatory run's remaining seeds (rerunning the experiment trains "
                                          "only what is missing)", len(confirmatory["seeds"]))))
    explored = matches_parts(stored, [("sc10", "dlr", m) for m in family], "{task}", NAMES, runs=_stage_runs(None))
    look = _design(stored, "exploratory")
    why = "exploratory: " + ("; ".join(look["looks"]) if look else "runs outside the confirmatory design")
    parts += side([replace(p, part=this.format(NAMES[m]) + " (exploratory runs)", evidence=p.evidence + note
                           + _after_look(stored, look)) for p, m in zip(explored, family)], why)
    beside = [replace(p, part=this.format(NAMES[m]), evidence=p.evidence + note)
              for p, m in zip(matches_parts(stored, [("sc10", "dlr", m) for m in others], "{task}", NAMES,
                                            runs=_stage_runs(None)), others)]
    return parts + side(beside, "the claim compares DLR with S4 and S4D")


def _after_look(stored: dict, look: dict | None) -> str:
    """The exploratory difference split at the interim look: the seeds looked at, and those added after it."""
    import numpy as np

    if not look or not look.get("looked_at"):
        return ""
    seen = set(look["looked_at"]["seeds"])
    out = []
    for label, keep in (("the seeds looked at", lambda s: s in seen), ("the seeds added after the look",
                                                                        lambda s: s not in seen)):
        va = [float(r["value"]) for r in _stage_runs(None)(stored, "sc10", "dlr") if keep(r.get("seed"))]
        vb = [float(r["value"]) for r in _stage_runs(None)(stored, "sc10", "s4d") if keep(r.get("seed"))]
        if va and vb:
            out.append(f"{label} ({len(va)} / {len(vb)}): DLR - S4D = {np.mean(va) - np.mean(vb):+.4f}")
    return ("; " + "; ".join(out)) if out else ""


EXPERIMENT = Experiment(
    "speech", (Settles("R7", settle_r7, only={"task": "sc35"}), Settles("D6", settle_d6, only={"task": "sc10"})),
    "Speech Commands layouts (SC10, SC35) on synthetic speech: RotRNN, LRU, DLR, S4D",
    "test accuracy (SC35: at the best validation epoch; SC10: at the last epoch of a fixed budget)", speech_jobs,
    speech_scale, controls=speech_controls, design=speech_design,
    brief=f"SC35 {len(R7_SEEDS)} seeds per arm until validation stops improving, SC10 {len(D6_SEEDS)} exploratory + "
          f"{len(D6_CONFIRMATORY_SEEDS)} confirmatory seeds at {SC10_EPOCHS} epochs; synthetic speech (espeak-ng) as "
          "MFCCs",
    note="synthetic speech (espeak-ng words), not the claims' Speech Commands recordings")

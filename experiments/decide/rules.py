"""The rules that decide a part of a claim: a threshold over seeds, "a is better than b", "a matches b", "flatter"
(R8), and the Holm adjustment of a claim's contradiction tests. Each is judged with the tests of
`linrnn.experiments.decide.stats`, on arms that learned and controls at the arms' own setting (`linrnn.experiments.decide.evidence`,
which also says what "learned" and a part are); the experiments' settle functions call them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from linrnn.experiments.decide import stats
from linrnn.experiments.decide.evidence import (ALMOST_CONSTANT_CV, FLATTER_RATIO, MARGIN_ACCURACY, Part, experiment_control,
                                         fmt_p, learned, mean_sd, needs, not_learned_power, power_dict,
                                         power_one_sample, power_two_arms, public, run_seconds, tested, with_control)

def threshold_part(values: list[float], bar: float, side_: str, source: str, part: str, what: str, scale: str,
                   holds: str, control: dict | None = None, baseline: dict | None = None,
                   seconds: float | None = None) -> Part:
    """A mean over seeds above (side "greater") or below ("less") a bar, by the one-sided one-sample t-test at
    alpha (an intersection-union part: no family correction): `holds` when it decides with enough seeds, otherwise
    inconclusive with the seeds that would settle it. Above a bar also means above the best trivial predictor
    (`baseline`): the test is against the higher of the two."""
    level = max(bar, baseline["score"]) if side_ == "greater" and baseline is not None else bar
    if len(values) < 2:
        wrong = bool(values) and ((values[0] <= level) if side_ == "greater" else (values[0] >= level))
        power = (power_dict(None, None, f"one run at {values[0]:.3g}, on the wrong side of {level:g}: at the observed "
                            "value no seed count at this setting would show it; a setting at which it is on the "
                            "right side would", effect=float(values[0])) if wrong else
                 power_dict(stats.MIN_SEEDS, None if seconds is None else round(stats.MIN_SEEDS * seconds / 3600, 1),
                            "one value: no spread to compute power from; the minimum the ledger decides with",
                            effect=float(values[0]) if values else None))
        return Part(source, "inconclusive", f"{what}: {mean_sd(values)}: a decision needs {stats.MIN_SEEDS} seeds",
                    part=part, control=public(control), scale=scale, baseline=baseline,
                    n=(len(values),), effect=float(values[0]) if values else None, power=power)
    test = stats.one_sample(values, level, side_)
    if min(test.n) < stats.MIN_SEEDS:
        verdict, why = "inconclusive", f"{min(test.n)} seeds: a decision needs {stats.MIN_SEEDS}"
    elif test.significant:
        verdict, why = holds, f"{'above' if side_ == 'greater' else 'below'} {level:g} at alpha {test.alpha:g}"
    else:
        verdict, why = "inconclusive", f"not shown {'above' if side_ == 'greater' else 'below'} {level:g} at alpha " \
            f"{test.alpha:g}"
    shown = verdict
    verdict, why = with_control(verdict, why, control)
    bar_words = "" if level == bar else f" (the best trivial predictor, {baseline['name']}, scores {level:.3f})"
    power = power_one_sample(values, level, side_, seconds) if verdict == "inconclusive" else None
    if shown != verdict:              # shown at these seeds, held back by the control: more seeds would not help
        power = needs("these seeds suffice; a positive control that learns at the arms' own task, length and data "
                      "would decide it")
    return Part(source, verdict, f"{what}: {mean_sd(values)}{bar_words}; " + test.words("mean") + f": {why}",
                part=part, control=public(control), scale=scale, baseline=baseline, power=power, **tested(test))


def arm_runs(stored: dict, **labels) -> list[dict]:
    """The finished runs of one arm (positive controls' own runs excluded)."""
    return [r for r in stored["runs"] if not r.get("control") and r.get("status") == "ok"
            and r.get("value") is not None and all(r.get(k) == v for k, v in labels.items())]


def cell(stored: dict, **labels) -> dict | None:
    return next((c for c in stored["cells"] if all(c.get(k) == v for k, v in labels.items())), None)


def _correct(run: dict) -> list[bool] | None:
    pred = run.get("predictions")
    if not isinstance(pred, dict) or not isinstance(pred.get("predicted"), list):
        return None
    return [a == b for a, b in zip(pred["predicted"], pred["label"])]


def paired_or_seeds(a: list[dict], b: list[dict]) -> tuple[str, list[float], list[float], list | None, list | None]:
    """How two arms can be compared: "seeds" (3 or more finished seeds each), "paired" (one run each, with
    per-example test predictions on the same examples), or "none"."""
    va, vb = [float(r["value"]) for r in a], [float(r["value"]) for r in b]
    if min(len(va), len(vb)) >= stats.MIN_SEEDS:
        return "seeds", va, vb, None, None
    if len(a) == 1 and len(b) == 1:
        ca, cb = _correct(a[0]), _correct(b[0])
        same = ca is not None and cb is not None and a[0]["predictions"]["label"] == b[0]["predictions"]["label"]
        if same:
            return "paired", va, vb, ca, cb
    return "none", va, vb, None, None


def _why_none(va: list[float], vb: list[float]) -> str:
    return (f"{len(va)} / {len(vb)} finished seeds per arm and no paired per-example predictions: a decision needs "
            f"{stats.MIN_SEEDS} seeds per arm or a paired test over the test examples")


def _both_learned(stored: dict, ra: list[dict], rb: list[dict], A: str, B: str) -> tuple[bool, str, dict | None, dict]:
    """Whether both arms learned (above the best trivial predictor and chance), the words, the task's baseline, and
    what would settle a comparison that cannot decide for that reason (a `Part.power`)."""
    la, ta, base = learned(ra, stored)
    lb, tb, base_b = learned(rb, stored)
    words = f"{A}: {ta}; {B}: {tb}"
    missing = [name for name, ok in ((A, la), (B, lb)) if ok is not True]
    if not missing:
        return True, words, base or base_b, {}
    failed = [name for name, ok in ((A, la), (B, lb)) if ok is False]
    who = " and ".join(missing)
    verb = "are" if len(missing) > 1 else "is"
    if failed:
        how = f"{' and '.join(failed)} did not learn" + (f", {' and '.join(n for n in missing if n not in failed)} "
                                                          "is not shown to have" if len(failed) < len(missing) else "")
        power = not_learned_power(f"{' and '.join(failed)} did not learn above the trivial bar at this budget")
    else:
        how = f"{who} {verb} not shown to have learned"
        no_bar = base is None and base_b is None
        power = {"seeds_per_arm": None, "cpu_hours": None,
                 "assumption": ("the record has no trivial baseline of this task: rerunning its experiment measures it "
                                "(no training: the finished runs are reused)") if no_bar else
                 "more seeds: whether the arms learned is not decided at this number of runs"}
    return False, f"{how} (above the best trivial predictor and chance): {words}", base or base_b, power


def _gated(verdict: str, why: str, both: bool, learned_words: str, unlearned: dict, control: dict | None,
           power: Callable[[], dict]) -> tuple[str, str, dict | None]:
    """A comparison's verdict once its arms and control are judged: it decides only when both arms learned and the
    control (where needed) learned; an undecided one says what would settle it (`unlearned` where an arm did not
    learn, else `power()`)."""
    if not both:
        verdict, why = "inconclusive", why + f"; but {learned_words}: an arm that did not learn decides no comparison"
    shown = verdict
    verdict, why = with_control(verdict, why, control)
    if verdict != "inconclusive":
        return verdict, why, None
    if shown != verdict:              # shown at these seeds, held back by the control: more seeds would not help
        return verdict, why, needs("these seeds suffice; a positive control that learns at the arms' own task, "
                                   "length and data would decide it")
    return verdict, why, (unlearned if not both else power())


def better_parts(stored: dict, comparisons: list[tuple[str, str, str]], part: str, names: dict[str, str],
                 control_needed: bool = True) -> list[Part]:
    """"a is better than b" on each (task, a, b): Welch's t over seeds (or exact McNemar for one paired run each),
    two-sided, each at alpha (an intersection-union part). Reproduced when a is better, contradicted when worse (its
    raw test in `against`, Holm-adjusted over the claim by the ledger), otherwise inconclusive. A comparison decides
    only when both arms learned (above the task's best trivial predictor) and the task's control at the arms'
    setting learned."""
    parts = []
    for task, a, b in comparisons:
        ra, rb = arm_runs(stored, task=task, model=a), arm_runs(stored, task=task, model=b)
        A, B = names.get(a, a), names.get(b, b)
        this = part.format(task=task)
        control = experiment_control(stored, task, ra + rb) if control_needed else None
        if not ra or not rb:
            parts.append(Part("", "inconclusive", f"{task}: {A} or {B} has no finished run", part=this,
                              control=public(control), power=needs(f"finished runs of {A} and {B} (rerunning the "
                                                                   "experiment trains only what is missing)")))
            continue
        how, va, vb, ca, cb = paired_or_seeds(ra, rb)
        what = f"{task}: {A} {mean_sd(va)} vs {B} {mean_sd(vb)}"
        test = stats.welch(va, vb) if how == "seeds" else stats.mcnemar(ca, cb) if how == "paired" else None
        both, learned_words, baseline, unlearned = _both_learned(stored, ra, rb, A, B)
        seconds = (run_seconds(ra), run_seconds(rb))
        if test is None:
            parts.append(Part("", "inconclusive", f"{what}: {_why_none(va, vb)}", part=this, control=public(control),
                              baseline=baseline, power=power_two_arms(va, vb, seconds=seconds, what=what,
                                                                      goal="difference")))
            continue
        if test.significant and test.effect > 0:
            verdict, why = "reproduced", f"{A} better at alpha {test.alpha:g}"
        elif test.significant:
            verdict, why = "contradicted", f"{B} better at alpha {test.alpha:g}"
        else:
            verdict, why = "inconclusive", "no difference shown"
        verdict, why, power = _gated(verdict, why, both, learned_words, unlearned, control,
                                     lambda: power_two_arms(va, vb, seconds=seconds, what=what, goal="difference"))
        parts.append(Part("", verdict, f"{what}; " + test.words(f"{A} - {B}") + f": {why}"
                          + (f". Learned: {learned_words}" if both else "")
                          + (f"; {control['evidence']}" if control and control.get('evidence') else ""),
                          part=this, control=public(control), baseline=baseline, power=power,
                          against=test if test.effect < 0 else None, **tested(test)))
    return parts


READINGS = ("no worse", "the same")


def _paired_margin(ca: list, cb: list, A: str, margin: float, reading: str):
    """One paired run each (exact McNemar over the test examples): the verdict, why, the deciding test and the raw
    contradiction test. One run each cannot show equivalence: "the same" is only ever contradicted this way."""
    test = stats.mcnemar(ca, cb)
    if reading == "no worse" and test.significant and test.effect > 0:
        return "reproduced", f"{A} better at alpha {test.alpha:g}", test, None
    if test.significant and test.ci[1] < -margin:
        return "contradicted", f"{A} worse by more than the margin {margin:g}", test, test
    if reading == "the same" and test.significant and test.ci[0] > margin:
        return "contradicted", f"{A} better by more than the margin {margin:g}: not the same", test, test
    return "inconclusive", (f"neither better nor worse beyond the margin {margin:g} (one run each: "
                            f"{'equivalence' if reading == 'the same' else 'non-inferiority'} needs seeds)"), test, None


def _seeds_no_worse(va: list[float], vb: list[float], A: str, B: str, margin: float):
    """"a matches or beats b": one-sided non-inferiority (a - b > -margin) decides; a worse beyond the margin
    (one-sided) contradicts; Welch's two-sided difference is shown beside."""
    ni, worse, diff = stats.non_inferiority(va, vb, margin), stats.beyond_margin(va, vb, margin), stats.welch(va, vb)
    if ni.significant:
        verdict, why, decided = "reproduced", f"no worse than {B} by more than {margin:g} at alpha {ni.alpha:g}", ni
    elif worse.significant:
        verdict, why, decided = "contradicted", f"{A} worse by more than {margin:g} at alpha {worse.alpha:g}", worse
    else:
        verdict, why, decided = "inconclusive", (f"neither shown no worse than -{margin:g} nor worse beyond it at this "
                                                 "number of seeds"), ni
    detail = "; ".join([ni.words(f"{A} - {B}"), f"worse beyond the margin: p = {fmt_p(worse.p)}",
                        f"Welch's t (two-sided) p = {fmt_p(diff.p)}"])
    return verdict, why, decided, worse, detail, tuple(t for t in (ni, worse, diff) if t is not decided)


def _seeds_the_same(va: list[float], vb: list[float], A: str, B: str, margin: float):
    """"a has the same accuracy as b": equivalence within +-margin (TOST) decides; a difference beyond the margin on
    either side (the two one-sided Welch tests, Holm-adjusted as a pair) contradicts: a significantly better a is not
    "the same" either."""
    tost = stats.tost(va, vb, margin)
    below = stats.beyond_margin(va, vb, margin)
    above = stats.welch_one_sided(va, vb, "greater", margin, name="Welch's t, one-sided, above the margin",
                                  margin=margin)
    below_h, above_h = stats.holm([below, above])
    if tost.significant:
        verdict, why, decided, against = "reproduced", f"equivalent within +-{margin:g} at alpha {tost.alpha:g}",             tost, None
    elif below_h.significant or above_h.significant:
        side_ = below_h if below_h.significant else above_h
        word = "worse" if side_ is below_h else "better"
        verdict, why, decided, against = "contradicted", (f"{A} {word} by more than {margin:g} at alpha "
                                                          f"{side_.alpha:g} (Holm over the two sides): not the same"),             side_, side_
    else:
        verdict, why, decided, against = "inconclusive", (f"neither equivalent within +-{margin:g} nor different "
                                                          "beyond it at this number of seeds"), tost, None
    detail = "; ".join([tost.words(f"{A} - {B}"), f"beyond the margin below: p = {fmt_p(below_h.p)}, above: "
                        f"p = {fmt_p(above_h.p)} (Holm over the two)"])
    return verdict, why, decided, against, detail, tuple(t for t in (tost, below_h, above_h) if t is not decided)


def matches_parts(stored: dict, comparisons: list[tuple[str, str, str]], part: str, names: dict[str, str],
                  margin: float = MARGIN_ACCURACY, reading: str = "no worse",
                  runs: "Callable[[dict, str, str], list[dict]] | None" = None) -> list[Part]:
    """"a matches b" on each (task, a, b), against the margin MARGIN_ACCURACY, each at alpha (an intersection-union
    part), in one of two READINGS fixed by the claim's words:

    - "no worse" ("matches or beats", "comparable or better", "competitive"): one-sided non-inferiority, a - b >
      -margin (Welch's t), decides; a worse by more than the margin (one-sided) contradicts. Its power goes to 1
      with the seeds when the arms are truly equal (equivalence-or-better caps it at 0.5 there).
    - "the same" ("the same accuracy"): equivalence within +-margin (TOST) decides; a difference beyond the margin
      on either side contradicts.

    With one paired run each, exact McNemar over the test examples. The contradiction test is kept raw in `against`
    for the ledger's Holm over the claim. A comparison decides only when both arms learned and the control at the
    arms' setting learned. `runs(stored, task, model)`: which runs are an arm (default: every finished run of it)."""
    if reading not in READINGS:
        raise ValueError(f"reading: expected one of {READINGS}, found {reading!r}")
    goal = "non-inferiority" if reading == "no worse" else "equivalence"
    select = runs or (lambda st, task, model: arm_runs(st, task=task, model=model))
    parts = []
    for task, a, b in comparisons:
        ra, rb = select(stored, task, a), select(stored, task, b)
        A, B = names.get(a, a), names.get(b, b)
        this = part.format(task=task)
        control = experiment_control(stored, task, ra + rb)
        if not ra or not rb:
            parts.append(Part("", "inconclusive", f"{task}: {A} or {B} has no finished run", part=this,
                              control=public(control), margin=margin,
                              power=needs(f"finished runs of {A} and {B} (rerunning the experiment trains only what "
                                          "is missing)")))
            continue
        how, va, vb, ca, cb = paired_or_seeds(ra, rb)
        what = f"{task}: {A} {mean_sd(va)} vs {B} {mean_sd(vb)}"
        both, learned_words, baseline, unlearned = _both_learned(stored, ra, rb, A, B)
        seconds = (run_seconds(ra), run_seconds(rb))
        if how == "none":
            parts.append(Part("", "inconclusive", f"{what}: {_why_none(va, vb)}", part=this, control=public(control),
                              margin=margin, baseline=baseline,
                              power=power_two_arms(va, vb, margin=margin, seconds=seconds, goal=goal)))
            continue
        if how == "paired":
            verdict, why, decided, against = _paired_margin(ca, cb, A, margin, reading)
            detail, others = decided.words(f"{A} - {B}"), ()
        elif reading == "no worse":
            verdict, why, decided, against, detail, others = _seeds_no_worse(va, vb, A, B, margin)
        else:
            verdict, why, decided, against, detail, others = _seeds_the_same(va, vb, A, B, margin)
        verdict, why, power = _gated(verdict, why, both, learned_words, unlearned, control,
                                     lambda: power_two_arms(va, vb, margin=margin, seconds=seconds, goal=goal))
        fields = tested(decided, *others)
        parts.append(Part("", verdict, f"{what}; {detail}: {why}" + (f". Learned: {learned_words}" if both else "")
                          + (f"; {control['evidence']}" if control and control.get('evidence') else ""),
                          part=this, control=public(control), baseline=baseline, power=power, against=against,
                          **{**fields, "margin": margin}))
    return parts


def _log_values(values: list[float]) -> np.ndarray:
    return np.log(np.asarray(values, dtype=np.float64))


def _flatter(rot: list[float], lru: list[float], layer: int, source: str, scale: str,
             seconds: tuple[float | None, float | None]) -> Part:
    """'Flatter than the LRU's': RotRNN's CV below the LRU's, a one-sided Welch t of the log CVs (the ratio of
    geometric means below FLATTER_RATIO); RotRNN's higher (two-sided Welch t of the log CVs) contradicts."""
    part = f"flatter than the LRU's in layer {layer}"
    lr, ll = _log_values(rot), _log_values(lru)
    bound = math.log(FLATTER_RATIO)
    one = stats.welch_one_sided(lr, ll, "less", bound, name=f"Welch's t of log CVs, one-sided (ratio below "
                                f"{FLATTER_RATIO:g})")
    ratio = replace(one, effect=math.exp(one.effect), ci=(0.0, math.exp(one.ci[1])),
                    note="effect and interval as the ratio of geometric means exp(mean log RotRNN - mean log LRU); "
                         "the interval is the one-sided 95 % bound")
    higher = stats.welch(lr, ll)
    if min(ratio.n) < stats.MIN_SEEDS:
        verdict, why = "inconclusive", f"{min(ratio.n)} seeds per arm: a decision needs {stats.MIN_SEEDS}"
    elif ratio.significant:
        verdict, why = "reproduced", f"RotRNN's CV below the LRU's at alpha {ratio.alpha:g}"
    elif higher.significant and higher.effect > 0:
        verdict, why = "contradicted", "RotRNN's CV higher than the LRU's at alpha"
    else:
        verdict, why = "inconclusive", f"not shown below the LRU's (ratio {ratio.effect:.2f}, p = {fmt_p(ratio.p)})"
    power = None if verdict != "inconclusive" else power_two_arms(
        list(ll), list(lr), seconds=(seconds[1], seconds[0]), what=f"RotRNN's CV is not below the LRU's (ratio "
        f"{ratio.effect:.2f})", goal="difference", side="greater")
    return Part(source, verdict, f"layer {layer}: CV of the mean state norm over training, RotRNN {mean_sd(rot)} vs "
                f"LRU {mean_sd(lru)}; " + ratio.words("ratio of geometric means") + f": {why}", scale, part=part,
                power=power, against=higher if higher.effect > 0 else None, **tested(ratio, higher))


def _almost_constant(rot: list[float], layer: int, source: str, scale: str, seconds: float | None) -> Part:
    """'Almost constant': RotRNN's CV over training below ALMOST_CONSTANT_CV, a one-sided one-sample t of the log
    CVs against its log (the geometric mean below the bar); significantly above it contradicts (one-sided)."""
    part = f"almost constant in layer {layer}"
    lr = _log_values(rot)
    bar = math.log(ALMOST_CONSTANT_CV)
    below, above = stats.one_sample(list(lr), bar, "less"), stats.one_sample(list(lr), bar, "greater")
    note = "effect and interval as the geometric mean of the CVs; the interval is the one-sided 95 % bound"
    shown = replace(below, name=f"one-sample t of log CVs, one-sided (below {ALMOST_CONSTANT_CV:g})",
                    effect=math.exp(below.effect), ci=(0.0, math.exp(below.ci[1])), note=note)
    against = replace(above, name=f"one-sample t of log CVs, one-sided (above {ALMOST_CONSTANT_CV:g})",
                      effect=math.exp(above.effect), ci=(math.exp(above.ci[0]), math.inf), note=note)
    if min(shown.n) < stats.MIN_SEEDS:
        verdict, why = "inconclusive", f"{min(shown.n)} seeds: a decision needs {stats.MIN_SEEDS}"
    elif shown.significant:
        verdict, why = "reproduced", f"below {ALMOST_CONSTANT_CV:g} at alpha {shown.alpha:g}"
    elif against.significant:
        verdict, why = "contradicted", f"above {ALMOST_CONSTANT_CV:g} at alpha {against.alpha:g}"
    else:
        verdict, why = "inconclusive", f"not shown below {ALMOST_CONSTANT_CV:g}"
    power = None if verdict != "inconclusive" else power_one_sample(list(lr), bar, "less", seconds)
    return Part(source, verdict, f"layer {layer}: RotRNN's CV of the mean state norm over training {mean_sd(rot)}; "
                + shown.words("geometric mean CV") + f": {why}", scale, part=part, power=power,
                against=against if against.effect > ALMOST_CONSTANT_CV else None,
                **tested(shown, against))


def norms_by_layer(cvs: dict[tuple[str, int], list[float]], layers: list[int], source: str, scale: str,
                   seconds: tuple[float | None, float | None] = (None, None)) -> list[Part]:
    """R8, two parts per layer from the coefficient of variation (CV) of each layer's mean state norm over training
    (one value per seed), every part at alpha (an intersection-union claim: every layer must hold both):

    - "flatter than the LRU's" (the paper's contrast: the LRU's "fluctuates strongly"): RotRNN's CV below the LRU's,
      a one-sided Welch t of the log CVs (the ratio of geometric means below FLATTER_RATIO = 1); RotRNN's higher
      (two-sided) contradicts;
    - "almost constant" (the paper's own words for RotRNN): RotRNN's CV below ALMOST_CONSTANT_CV, a one-sided
      one-sample t of the log CVs; above it (one-sided) contradicts.

    Contradiction tests are kept raw in `against` for the ledger's Holm over the claim; an undecided part says what
    would settle it at the observed effect."""
    parts = []
    for layer in layers:
        rot, lru = cvs.get(("rotrnn", layer), []), cvs.get(("lru", layer), [])
        if min(len(rot), len(lru)) < 2 or min(rot + lru) <= 0:
            for what in ("flatter than the LRU's", "almost constant"):
                parts.append(Part(source, "inconclusive", f"layer {layer}: RotRNN has {len(rot)} and the LRU "
                                  f"{len(lru)} finished seeds with positive CVs: no spread to judge by", scale,
                                  part=f"{what} in layer {layer}",
                                  power=needs("at least 3 finished seeds per model", stats.MIN_SEEDS)))
            continue
        parts.append(_flatter(rot, lru, layer, source, scale, seconds))
        parts.append(_almost_constant(rot, layer, source, scale, seconds[0]))
    return parts


def holm_contradictions(parts: list[Part]) -> list[Part]:
    """The claim's family of contradiction tests (each deciding part's `against`) Holm-adjusted together, whatever
    source they come from: a part stays contradicted only when its adjusted p is below alpha; otherwise it becomes
    inconclusive and says so. Parts without a contradiction test are unchanged."""
    family = [i for i, p in enumerate(parts) if p.decides and p.against is not None]
    if len(family) < 2:
        return parts
    adjusted = stats.holm([parts[i].against for i in family])
    out = list(parts)
    for i, test in zip(family, adjusted):
        p = out[i]
        if p.verdict == "contradicted" and not test.significant:
            out[i] = replace(p, verdict="inconclusive", evidence=p.evidence + (
                f"; not contradicted once the claim's {len(family)} contradiction tests are Holm-adjusted together "
                f"(adjusted p = {fmt_p(test.p)})"))
        elif p.verdict == "contradicted":
            out[i] = replace(p, p=test.p, test=test.name, evidence=p.evidence + (
                f"; Holm over the claim's {len(family)} contradiction tests: adjusted p = {fmt_p(test.p)}"))
    return out


def holm_side_findings(parts: list[Part]) -> list[Part]:
    """A claim's side findings (parts that do not decide) with a statistical test are one family of their own: their
    p-values are Holm-adjusted together, so that a claim with many side findings does not report chance ones. A side
    finding that decided (reproduced or contradicted) stays so only when its adjusted p is below its alpha; otherwise
    it becomes inconclusive and says so. Deciding parts are untouched (`holm_contradictions` adjusts their own
    contradiction family)."""
    family = [i for i, p in enumerate(parts) if not p.decides and p.p is not None and math.isfinite(p.p)
              and p.alpha is not None and p.test is not None]
    if len(family) < 2:
        return parts
    raw = [stats.Test(parts[i].test, tuple(parts[i].n or ()), parts[i].effect if parts[i].effect is not None
                      else math.nan, tuple(parts[i].ci or (math.nan, math.nan)), parts[i].p, parts[i].alpha)
           for i in family]
    adjusted = stats.holm(raw)
    out = list(parts)
    for i, test in zip(family, adjusted):
        p = out[i]
        words = (f"; Holm over the claim's {len(family)} side findings with a test: adjusted p = {fmt_p(test.p)}")
        name = f"{p.test}, Holm over {len(family)} side findings"
        if p.verdict in ("reproduced", "contradicted", "verified") and not test.p < p.alpha:
            out[i] = replace(p, verdict="inconclusive", p=test.p, test=name, evidence=p.evidence + words +
                             " (not below alpha: undecided once adjusted)")
        else:
            out[i] = replace(p, p=test.p, test=name, evidence=p.evidence + words)
    return out

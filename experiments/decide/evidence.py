"""How a measurement becomes evidence for a claim: the `Part`, the thresholds, what "learned" and a control mean,
and what would settle an undecided part. The rules that decide a part with them are in `linrnn.experiments.decide.rules`.

A claim of the ledger (`linrnn.reports.ledger`) gathers parts; each experiment's module settles its own parts with
the rules (`threshold_part`, `better_parts`, `matches_parts`, `norms_by_layer`), so a claim's runs, rule and
record are read in one file. The rules decide only by a test of `linrnn.experiments.decide.stats` (SciPy, statsmodels),
and never on an arm that did not learn:

- **learned** means above the task's best trivial predictor (`linrnn.tasks.trivial`: a lookup per token or pixel,
  a local window, a bag of tokens, fit on train), not only above chance (the best constant or no-information
  answer): `learned` tests the arm's scores against the higher of the two bars. A comparison of two arms decides
  only when both learned; a threshold part ("solved") is judged against the higher of its bar and the trivial one.
- **a control vouches for its own setting only**: `experiment_control` takes the record's control of the arms'
  task only when its runs share the arms' task, length and data (`setting`); otherwise the part says so and does
  not decide.
- **an all-parts-must-hold claim is an intersection-union test**: every part that would show the claim holds is
  judged at alpha on its own, with no family correction (the claim holds only if all reject, and that rule's error
  rate is at most alpha). The tests that would *contradict* a claim are one family across the whole claim (any one
  contradicts it): each part keeps its raw contradiction test in `Part.against`, and the ledger adjusts them by
  Holm over the claim's parts (`holm_contradictions`), whichever source they come from.
- **an undecided part says what would settle it** (`Part.power`): the seeds per arm for 80 % power at the observed
  spread, for the effect the claim states or for equivalence within the margin (statsmodels' power classes), and
  the compute, from the record's measured time per run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from linrnn.experiments.decide import stats

RANK = {"contradicted": 0, "contradicted (in part)": 0, "inconclusive": 1, "not run here": 2,
        "verified (in part)": 3, "reproduced (in part)": 3, "verified": 4, "reproduced": 4, "proved": 5}

# Thresholds of the experimental verdicts (ours: the papers give no numbers).
SOLVED_R2 = 0.99        # D4 "near-perfect": a task counts as solved at or above this validation R^2
FAILS_R2 = 0.5          # D4 "fails": at or below this validation R^2 (half the target variance unexplained)
# R8 (fixed 2026-12-07, when "at most half the LRU's", this project's own bar, was dropped; the stored ListOps record's
# first 7 seeds had been seen, their CVs and ratios published in docs/experiments.md, so only the 13 seeds still to
# run are blind to these bars; the record's `design` says so; docs/claims.md, "R8"):
FLATTER_RATIO = 1.0       # "flatter than the LRU's": RotRNN's CV below the LRU's (the paper gives no factor)
ALMOST_CONSTANT_CV = 0.1  # "almost constant": the norm's CV over training below 0.1, its SD a tenth of its mean
DRIFT_FACTOR = 10.0     # R9: final gamma_log drift above this multiple of the float32 rounding floor
# D9: the timing fit's exponent bound. O(L^2) gives 2; O(L log L) over the lengths timed fits about 1.1; 1.2 leaves
# the timing noise of a shared 2-core machine without admitting anything quadratic, or more than a log factor
EXPONENT_BOUND = 1.2
# "matches", "competitive", "the same as", "comparable" on test accuracy: equivalent within this margin (TOST),
# worse beyond it contradicts. Two points of accuracy: our reading of the papers' wording (the DLR paper calls its
# 97.1 % on SC10 comparable to S4 and S4D; RotRNN's 95.2 % on SC35 is called the same as the LRU it reproduced),
# and wider than the seed-to-seed spread of the accuracies measured here (docs/claims.md)
MARGIN_ACCURACY = 0.02
POWER = 0.8             # the power an undecided part's "what would settle it" is computed for


@dataclass(frozen=True)
class Part:
    """One piece of evidence for a claim, with its own verdict, and the test that decided it.

    An experimental part says reproduced or contradicted only when its `test` decides at `alpha` with at least
    `stats.MIN_SEEDS` values per arm (or a paired test over test examples), its arms learned (above the best
    trivial predictor), and its positive `control` (where the rule needs one) learned at the arms' own setting;
    otherwise it is inconclusive, with the effect and its interval printed. A part with `decides` False is a side
    finding: shown beside the claim, never in its verdict."""

    source: str          # what the evidence is, e.g. "derivation (theory)", "training (norms)"
    verdict: str         # one of RANK
    evidence: str        # what was found, with numbers
    scope: str = ""      # what the verdict covers (sizes, instances, scale)
    command: str = ""    # the command that reproduces the part (for "not run here": the one that would settle it)
    part: str = ""       # the part of the claim this piece tests ("" : the whole claim)
    test: str | None = None          # the test's name, or "derivation" / "numeric" / "structure"; None: none decided
    n: tuple[int, ...] | None = None  # per arm (seeds, or paired test examples)
    effect: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    alpha: float | None = None
    margin: float | None = None      # equivalence and margin tests
    control: dict | None = None      # {"name", "learned"}: the positive control this verdict relies on
    scale: str = ""                  # a few words: seeds, length, steps, data (experiments)
    decides: bool = True             # False: a side finding (another setting or model than the claim speaks of)
    baseline: dict | None = None     # {"name", "score"}: the best trivial predictor of the part's task
    power: dict | None = None        # undecided: {"seeds_per_arm", "cpu_hours", "assumption"}
    tests: tuple[dict, ...] = ()     # every test computed for the part (`Test.to_dict`), the deciding one first
    against: Any = None              # the raw test that would contradict the claim (Holm-adjusted by the ledger)

    def __post_init__(self) -> None:
        if self.verdict not in RANK:
            raise ValueError(f"verdict: expected one of {', '.join(RANK)}, found {self.verdict!r}")

    def record(self) -> dict:
        """The part as ledger.json has it: every field present, null where it does not apply."""
        def finite(v):
            return float(v) if v is not None and math.isfinite(v) else None

        return {"part": self.part or None, "source": self.source, "verdict": self.verdict, "decides": self.decides,
                "test": self.test, "n": list(self.n) if self.n is not None else None, "effect": finite(self.effect),
                "ci": [finite(v) for v in self.ci] if self.ci is not None else None, "p": finite(self.p),
                "alpha": self.alpha, "margin": self.margin, "tests": [dict(t) for t in self.tests] or None,
                "scope": self.scope or None, "control": dict(self.control) if self.control is not None else None,
                "baseline": dict(self.baseline) if self.baseline is not None else None,
                "power": {"effect": None, **self.power} if self.power is not None else None,
                "scale": self.scale or None, "evidence": self.evidence, "command": self.command or None}


def tested(test: "stats.Test", *others: "stats.Test | None") -> dict:
    """A Part's test fields from the deciding `stats.Test` (and the others computed beside it, for `tests`)."""
    return {"test": test.name, "n": tuple(test.n), "effect": test.effect, "ci": tuple(test.ci), "p": test.p,
            "alpha": test.alpha, "margin": test.margin,
            "tests": tuple(t.to_dict() for t in (test, *others) if t is not None)}


def side(parts: list[Part], why: str) -> list[Part]:
    """`parts` as side findings: shown, not deciding, with the reason in their evidence. An undecided one keeps what
    would settle it (its own power, or, where none applies, that it decides nothing for the claim)."""
    return [replace(p, decides=False, against=None, evidence=p.evidence + f" [side finding: {why}]",
                    power=p.power if p.verdict != "inconclusive" or p.power else
                    needs(f"nothing, for the claim: a side finding ({why}); settling it would take its own test"))
            for p in parts]


def mean_sd(values: list[float]) -> str:
    if not values:
        return "no finished run"
    sd = f" ± {np.std(values, ddof=1):.2g}" if len(values) > 1 else ""
    return f"{np.mean(values):.3g}{sd} (n = {len(values)})"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else f"{p:.2g}"


def num(v: Any) -> float:
    """A number of a results file as a float ('nan', 'inf' are how the files store non-finite ones)."""
    return float(v)


# -- controls and what "learned" means -------------------------------------------------------------------

def with_control(verdict: str, why: str, control: dict | None) -> tuple[str, str]:
    """A reproduced or contradicted verdict that relies on a positive control stands only if the control learned."""
    if control is None or verdict not in ("reproduced", "contradicted") or control.get("learned") is True:
        return verdict, why
    if control.get("learned") is False:
        return "inconclusive", why + f"; but the control did not learn ({control['name']}), so the pipeline is not " \
            "shown to learn this task at this scale"
    return "inconclusive", why + f"; but {control.get('evidence') or 'no positive control decided'}"


def public(control: dict | None) -> dict | None:
    return None if control is None else {"name": control["name"], "learned": control["learned"]}


def setting(row: dict) -> str:
    """A run's task, length and data as one comparable key: what a control must share with the arms it vouches for."""
    config = row.get("config") if isinstance(row.get("config"), dict) else {}
    task = row.get("task", config.get("task"))
    if row.get("data") is not None:
        key = {"task": task, "data": row["data"], "data_options": config.get("data_options") or {}}
    else:
        key = {"task": task, "length": config.get("length", row.get("length"))}
    return json.dumps(key, sort_keys=True)


def describe_setting(row: dict) -> str:
    key = json.loads(setting(row))
    if "length" in key:
        return f"{key['task']} at L = {key['length']}"
    data = key["data"] or {}
    opts = ", ".join(f"{k} {v}" for k, v in sorted((data.get("options") or {}).items()))
    return f"{key['task']} on {data.get('generator')} data ({opts})"


def trivial_for(stored: dict, row: dict) -> dict | None:
    """The record's trivial baseline entry (`linrnn.tasks.trivial`) of a run's task, length and data, or None."""
    want = json.loads(setting(row))
    for entry in stored.get("trivial") or []:
        if not isinstance(entry, dict) or entry.get("task") != want["task"]:
            continue
        if "length" in want and entry.get("length") == want["length"]:
            return entry
        if "data" in want and entry.get("data") == want["data"] and \
                (entry.get("data_options") or {}) == want["data_options"]:
            return entry
    return None


def baseline_of(entry: dict | None) -> dict | None:
    return None if entry is None else {"name": entry["best"]["name"], "score": float(entry["best"]["score"])}


def chance_of(row: dict) -> float | None:
    """What a model that learnt nothing scores on test, from a run's baseline: the best of the train majority, the
    best constant answer and (macro F1) the best no-information answer."""
    base = row.get("baseline")
    if not isinstance(base, dict):
        return None
    levels = [base.get("value")] + [(base.get(k) or {}).get("value") for k in ("best_constant", "no_information")]
    levels = [float(v) for v in levels if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max(levels) if levels else None


def learned(runs: list[dict], stored: dict) -> tuple[bool | None, str, dict | None]:
    """Whether a set of runs (one arm or one control, one setting) learned: its test scores above the higher of
    chance and the task's best trivial predictor, by a one-sided one-sample t-test over 3 or more seeds, or, for one
    run scored by accuracy, an exact binomial test over its test examples. -> (learned, words, baseline); learned
    None: not decidable (no trivial baseline in the record, 2 seeds, or one run of another metric)."""
    if not runs:
        return None, "no finished run", None
    entry = trivial_for(stored, runs[0])
    baseline = baseline_of(entry)
    values = [float(r["value"]) for r in runs]
    metric = runs[0].get("metric")
    chances = [c for c in (chance_of(r) for r in runs) if c is not None]
    chance = max(chances) if chances else None
    if baseline is None:
        return None, (f"{metric} {mean_sd(values)}: no trivial baseline of {describe_setting(runs[0])} in this record "
                      "(rerunning its experiment measures it)"), None
    bar = max(baseline["score"], chance) if chance is not None else baseline["score"]
    against = (f"the best trivial predictor ({baseline['name']}: {baseline['score']:.3f})"
               + (f", chance {chance:.3f}" if chance is not None else ""))
    if len(values) >= stats.MIN_SEEDS:
        test = stats.one_sample(values, bar, "greater")
        return test.significant, f"{metric} {mean_sd(values)} against {against}: " + test.words("mean"), baseline
    examples = (runs[0].get("examples") or {}).get("test") if isinstance(runs[0].get("examples"), dict) else None
    if len(values) == 1 and metric == "accuracy" and isinstance(examples, int) and examples > 0:
        test = stats.binomial_above(int(round(values[0] * examples)), examples, min(bar, 0.999999))
        return test.significant, f"accuracy {values[0]:.3f} against {against}: " + test.words("accuracy"), baseline
    return None, f"{metric} {mean_sd(values)} against {against}: {len(values)} run(s), not decidable", baseline


def regression_learned(values: list[float], bar: float | None, trivial: dict | None) -> tuple[bool | None, str]:
    """A regression arm or control above max(bar, the trivial predictor's R^2) (`bar` None: the trivial predictor's
    alone) by a one-sided one-sample t-test over 3 or more seeds."""
    if trivial is None:
        return None, f"R^2 {mean_sd(values)}: no trivial baseline of its task and length in this record"
    level = trivial["score"] if bar is None else max(bar, trivial["score"])
    if len(values) < 2:
        return None, f"R^2 {mean_sd(values)}: not enough runs to decide whether it learned"
    test = stats.one_sample(values, level, "greater")
    ok = None if min(test.n) < stats.MIN_SEEDS else test.significant
    against = (f"the best trivial predictor ({trivial['name']}: {trivial['score']:.3f})" if bar is None else
               f"{level:.3g}, the higher of {bar:g} and the best trivial predictor ({trivial['name']}: "
               f"{trivial['score']:.3f})")
    return ok, f"R^2 {mean_sd(values)} against {against}, " + test.words("mean")


def diverged(row: dict) -> bool:
    """A run that did not finish with a finite R^2 (or metric): evidence for nothing."""
    value = row.get("r2", row.get("value"))
    return row.get("status") != "ok" or value is None or isinstance(value, str) or not math.isfinite(value)


def experiment_control(stored: dict, task: str, arms: list[dict] | None = None) -> dict:
    """The positive control of `task` in a record at the arms' own setting, and whether it learned. A control whose
    runs are at another task, length or data than `arms` vouches for nothing here: learned None, with the reason; so
    does a record without one. A regression control learned when its mean R^2 is above its bar and the best trivial
    predictor; a classification control when `learned`."""
    specs = [c for c in stored.get("controls") or [] if isinstance(c, dict) and c.get("task") == task]
    if not specs:
        return {"name": None, "learned": None, "evidence": f"no positive control for {task} in this record"}
    wanted = {setting(a) for a in arms or []}
    found = []
    for spec in specs:
        select = spec.get("select") or {}
        own = "control" in select
        rows = [r for r in stored["runs"] if all(r.get(k) == v for k, v in select.items())
                and bool(r.get("control")) == own]
        if rows and (not wanted or {setting(r) for r in rows} <= wanted):
            found.append((spec, rows))
    if not found:
        spec = specs[0]
        select = spec.get("select") or {}
        rows = [r for r in stored["runs"] if all(r.get(k) == v for k, v in select.items())]
        where = describe_setting(rows[0]) if rows else "no run"
        arms_at = ", ".join(sorted({describe_setting(a) for a in arms or []}))
        return {"name": spec["name"], "learned": None,
                "evidence": f"the control {spec['name']} ran at another setting ({where}) than the arms ({arms_at}): "
                            "a control vouches only for its own task, length and data, so no control learned here"}
    spec, rows = found[0]
    name = spec["name"]
    if spec.get("bar") is not None:
        values = [float(r["value"]) for r in rows if not diverged(r)]
        ok, text = regression_learned(values, spec["bar"], baseline_of(trivial_for(stored, rows[0])))
        return {"name": name, "learned": ok, "baseline": baseline_of(trivial_for(stored, rows[0])),
                "evidence": f"control {name} ({spec.get('setting', '')}): {text}"
                            + (": learned" if ok else ": not shown to learn" if ok is False else "")}
    ok, text, baseline = learned([r for r in rows if r.get("status") == "ok" and r.get("value") is not None], stored)
    return {"name": name, "learned": ok, "baseline": baseline,
            "evidence": f"control {name} ({spec.get('setting', '')}): {text}"
                        + (": learned" if ok else ": not shown to learn" if ok is False else "")}


# -- what would settle an undecided part -----------------------------------------------------------------

def run_seconds(runs: list[dict]) -> float | None:
    """The mean training time of a run (steps x seconds per step, or its wall time), from a record's rows."""
    times = []
    for r in runs:
        if isinstance(r.get("steps"), (int, float)) and isinstance(r.get("seconds_per_step"), (int, float)):
            times.append(r["steps"] * r["seconds_per_step"])
        elif isinstance(r.get("wall_seconds"), (int, float)):
            times.append(r["wall_seconds"])
    return float(np.mean(times)) if times else None


def seeds_for(analysis, effect: float, target: float, alternative: str, largest: int = 100_000) -> int | None:
    """The smallest n (per arm) at which statsmodels' power `analysis` (TTestIndPower, TTestPower) of a test at
    alpha reaches `target` for standardised `effect`, searched on its `power` function (its solver fails where the
    answer is below 2 or very large); at least MIN_SEEDS; None beyond `largest`."""
    from statsmodels.stats.power import TTestIndPower

    kwargs = {"alpha": stats.ALPHA, "alternative": alternative}

    def power(n: int) -> float:
        if isinstance(analysis, TTestIndPower):
            return float(analysis.power(effect_size=effect, nobs1=n, ratio=1.0, **kwargs))
        return float(analysis.power(effect_size=effect, nobs=n, **kwargs))

    low, high = stats.MIN_SEEDS, stats.MIN_SEEDS
    while power(high) < target:
        low, high = high, high * 2
        if high > largest:
            return None
    while low < high:                     # the smallest n in [low, high] with power >= target
        mid = (low + high) // 2
        if power(mid) >= target:
            high = mid
        else:
            low = mid + 1
    return high


def _pooled_sd(a: list[float], b: list[float]) -> float:
    return math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2) if min(len(a), len(b)) >= 2 else math.nan


def _hours(n: int | None, seconds: tuple[float | None, float | None]) -> float | None:
    return None if n is None or None in seconds else round(n * (seconds[0] + seconds[1]) / 3600, 1)


def _equivalence_seeds(difference: float, margin: float, sd: float) -> int | None:
    """Seeds per arm at which TOST within +-margin has POWER when the true difference is `difference`: the smallest
    n whose two one-sided Welch tests' powers (statsmodels' TTestIndPower, each at alpha) satisfy
    P(upper) + P(lower) - 1 >= POWER, a lower bound of the power of rejecting both (Bonferroni's inequality)."""
    from statsmodels.stats.power import TTestIndPower

    if abs(difference) >= margin:
        return None
    analysis = TTestIndPower()

    def power(n: int) -> float:
        up = analysis.power(effect_size=(margin - difference) / sd, nobs1=n, alpha=stats.ALPHA, alternative="larger")
        down = analysis.power(effect_size=(margin + difference) / sd, nobs1=n, alpha=stats.ALPHA, alternative="larger")
        return float(up + down - 1)

    n = stats.MIN_SEEDS
    while power(n) < POWER:
        n = n * 2 if n < 1024 else n + 1024
        if n > 100_000:
            return None
    low = max(stats.MIN_SEEDS, n // 2)
    while low < n:                        # the smallest n in [low, n] with power >= POWER
        mid = (low + n) // 2
        low, n = (low, mid) if power(mid) >= POWER else (mid + 1, n)
    return n


def _one_sided_seeds(gap: float, sd: float) -> int | None:
    """Seeds per arm for POWER of a one-sided Welch test when the true difference lies `gap` beyond its bound."""
    from statsmodels.stats.power import TTestIndPower

    return None if gap <= 0 else seeds_for(TTestIndPower(), gap / sd, POWER, "larger")


def power_two_arms(a: list[float], b: list[float], *, margin: float | None = None, effect: float | None = None,
                   seconds: tuple[float | None, float | None] = (None, None), what: str = "",
                   goal: str = "equivalence", side: str = "two-sided") -> dict:
    """What would settle a two-arm part: the seeds per arm for POWER at the OBSERVED difference mean(a) - mean(b) and
    pooled SD (the effect it assumes is in `effect`), with the compute (each arm's measured mean run time x the
    seeds), and, for a margin, the same at a true difference of 0 beside it (`at_zero`, labelled).

    goal "equivalence" (TOST within +-margin), "non-inferiority" (a - b > -margin, one-sided) or "difference" (a
    Welch test of a - b in the claimed direction: `side` "greater" for one-sided, "two-sided"; `effect`, when given,
    is the difference in the claimed direction to plan for, the observed one otherwise). Where the observed
    difference lies on the wrong side (beyond the margin, or against the claimed direction) no seed count at this
    setting would show the claim: seeds_per_arm None, and the assumption says so."""
    sd = _pooled_sd(a, b)
    if not math.isfinite(sd) or sd == 0:
        return power_dict(None, None, "no spread to compute power from (fewer than 2 runs per arm, or all equal)")
    d = float(np.mean(a) - np.mean(b))
    tail = f", alpha {stats.ALPHA:g}, {int(POWER * 100)} % power (statsmodels' TTestIndPower)"
    if goal == "difference" or margin is None:
        gap = d if effect is None else effect
        if gap <= 0:
            return power_dict(None, None, f"no difference in the claimed direction was measured ({what}): no seed "
                              "count at this setting would show it", effect=gap)
        if side == "two-sided":
            from statsmodels.stats.power import TTestIndPower

            n = seeds_for(TTestIndPower(), gap / sd, POWER, "two-sided")
        else:
            n = _one_sided_seeds(gap, sd)
        return power_dict(n, _hours(n, seconds), f"a true difference of {gap:.3g} in the claimed direction (the "
                          f"observed one) at the observed pooled SD {sd:.3g}, {side} Welch test" + tail, effect=gap)
    if goal == "non-inferiority":
        n, n0 = _one_sided_seeds(d + margin, sd), _one_sided_seeds(margin, sd)
        name = f"non-inferiority at -{margin:g}"
    else:
        n, n0 = _equivalence_seeds(d, margin, sd), _equivalence_seeds(0.0, margin, sd)
        name = f"equivalence within +-{margin:g} (TOST; power bounded below by Bonferroni's inequality)"
    at_zero = {"effect": 0.0, "seeds_per_arm": n0, "cpu_hours": _hours(n0, seconds),
               "label": "beside it: were the true difference 0"}
    if n is None:
        return power_dict(None, None, f"{name}: the observed difference {d:+.3g} lies at or beyond the margin, so no "
                          f"seed count at this setting would show it (at a true difference of 0 it would take "
                          f"{n0} seeds per arm)", effect=d, at_zero=at_zero)
    return power_dict(n, _hours(n, seconds), f"{name} at the observed difference {d:+.3g} and pooled SD {sd:.3g}"
                      + tail + ("" if _hours(n, seconds) is None else
                                "; compute: the seeds x both arms' mean run time here"), effect=d, at_zero=at_zero)


def power_one_sample(values: list[float], bar: float, side_: str, seconds: float | None = None) -> dict:
    """Seeds for POWER of a one-sided one-sample t-test of the mean against `bar`, at the observed mean and SD."""
    from statsmodels.stats.power import TTestPower

    if len(values) < 2 or np.std(values, ddof=1) == 0:
        return power_dict(None, None, "no spread to compute power from")
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    gap = (mean - bar) if side_ == "greater" else (bar - mean)
    if gap <= 0:
        return power_dict(None, None, f"the observed mean {mean:.3g} is on the wrong side of {bar:g}: no seed count "
                          "at this setting would show it", effect=mean)
    n = seeds_for(TTestPower(), gap / sd, POWER, "larger")
    return power_dict(n, None if seconds is None or n is None else round(n * seconds / 3600, 1),
                      f"the observed mean {mean:.3g} and SD {sd:.3g} against {bar:g}, one-sided, alpha "
                      f"{stats.ALPHA:g}, {int(POWER * 100)} % power (statsmodels' TTestPower)", effect=mean)


def power_dict(seeds: int | None, hours: float | None, assumption: str, effect: float | None = None,
               at_zero: dict | None = None) -> dict:
    """A `Part.power`: the seeds per arm and compute that would settle the part, the effect that assumes (None:
    no effect assumed, the assumption says what would settle it) and, for a margin, the same at a true difference
    of 0 beside it."""
    out = {"seeds_per_arm": seeds, "cpu_hours": hours, "effect": effect, "assumption": assumption}
    if at_zero is not None:
        out["at_zero"] = at_zero
    return out


def needs(what: str, seeds: int | None = None) -> dict:
    """A `Part.power` where no power computation applies: what would settle the part, in words."""
    return power_dict(seeds, None, what)


def not_learned_power(why: str) -> dict:
    return power_dict(None, None, f"{why}: more seeds at this budget cannot settle it; a budget at which the arms "
                      "learn (the paper's scale, below) would")

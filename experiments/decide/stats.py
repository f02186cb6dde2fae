"""The statistics the claims ledger decides with: few-seed comparisons a reviewer of the field would accept.

Every test is taken from SciPy or statsmodels (none is written out here), and each returns a `Test`: its
name, the sample size per arm, the effect with its confidence interval, the p-value, the alpha it is judged
at and, for an equivalence, the margin. `tests/experiments/decide/test_stats.py` checks each against the library's
own numbers on known inputs and by simulation (the false-decision rate at 3 seeds is what alpha says).

    welch(a, b)                 two means over seeds: Welch's t (unequal variances) with its degrees of
                                freedom, and the confidence interval of the difference a - b
    welch_one_sided(a, b, side) one-sided Welch's t that a - b is above (below) a value, with its one-sided interval
    beyond_margin(a, b, m)      one-sided Welch's t that a - b < -m (worse by more than the margin)
    non_inferiority(a, b, m)    one-sided Welch's t that a - b > -m (no worse than the margin): "matches or beats"
    tost(a, b, m)               equivalence within +-m: two one-sided Welch tests (TOST); the interval is
                                the 1 - 2 alpha one, which lies inside (-m, m) exactly when TOST decides
    one_sample(x, bar, side)    the mean over seeds above (or below) a threshold: one-sample t, one-sided
    mcnemar(a, b)               two models on the same test examples: exact McNemar on per-example
                                correctness; the interval of the accuracy difference is the exact
                                (Clopper-Pearson) one of the discordant pairs, the interval the test inverts
    binomial_above(k, n, rate)  one run's accuracy above a chance rate: exact binomial test, one-sided
    holm(tests)                 a family of tests: Holm's step-down adjustment of their p-values
    exponent(lengths, times, b) the exponent of time against L fitted by least squares on log-log over
                                repeated, interleaved timings, with its one-sided interval; it is below b
                                when the one-sided upper bound is
    exponent_clustered(...)     the same fit with each round a cluster (statsmodels' cluster-robust
                                covariance, t with rounds - 1 degrees of freedom) and the median of the
                                per-round Theil-Sen slopes beside it: timings of one round share the
                                machine's load, so they are not independent

A test never decides with fewer than `MIN_SEEDS` values per arm where its error comes from the seeds: with
2 seeds the standard error has 1 degree of freedom, and a 2-standard-error rule then errs about 30 % of
the time when nothing differs (the 95 % cut-off of t with 1 degree of freedom is 12.7).
"""

from __future__ import annotations

import gc
import math
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np

from linrnn.base.errors import LinrnnError

ALPHA = 0.05        # every decision of the ledger is at this level unless its rule says otherwise
MIN_SEEDS = 3       # values per arm below which a seed-level test does not decide


@dataclass(frozen=True)
class Test:
    """One statistical test and what it found."""

    name: str                          # e.g. "Welch's t", "exact McNemar", "TOST (Welch)"
    n: tuple[int, ...]                 # the sample size per arm (seeds, or paired test examples)
    effect: float                      # the estimate: a difference of means, a mean, an exponent
    ci: tuple[float, float]            # its confidence interval at `level`
    p: float                           # the p-value (NaN when the data cannot give one: no spread at all)
    alpha: float = ALPHA
    level: float = 1 - ALPHA           # the interval's confidence level
    margin: float | None = None        # equivalence and margin tests
    df: float | None = None            # degrees of freedom of a t statistic
    note: str = ""                     # what else the reader needs (e.g. the discordant pairs)

    @property
    def significant(self) -> bool:
        """p below alpha (False when p is NaN)."""
        return bool(self.p < self.alpha)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["n"], out["ci"] = list(self.n), [_finite(v) for v in self.ci]
        out["effect"], out["p"] = _finite(self.effect), _finite(self.p)
        return out

    def words(self, effect_name: str = "difference") -> str:
        """e.g. 'difference -0.065 [-0.140, +0.010] (95 % CI), Welch's t, df 3.4, p = 0.12, n = 3 / 3'."""
        df = f", df {self.df:.1f}" if self.df is not None and math.isfinite(self.df) else ""
        margin = f", margin +-{self.margin:g}" if self.margin is not None else ""
        n = " / ".join(str(k) for k in self.n)
        return (f"{effect_name} {self.effect:+.4g} [{self.ci[0]:+.4g}, {self.ci[1]:+.4g}] ({100 * self.level:g} % CI), "
                f"{self.name}{df}, p = {_p(self.p)}{margin}, n = {n}" + (f"; {self.note}" if self.note else ""))


def _finite(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _values(name: str, values: Sequence[float], minimum: int = 1) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or len(a) < minimum or not np.all(np.isfinite(a)):
        raise LinrnnError(f"{name}: expected at least {minimum} finite numbers, found {list(values)!r}")
    return a


def _constant(a: np.ndarray) -> bool:
    """Every value equal (no spread at all; exact, so float rounding of a mean does not fake a spread)."""
    return bool(np.all(a == a[0]))


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 0.5:
        raise LinrnnError(f"alpha: expected a level in (0, 0.5), found {alpha!r}")
    return alpha


def welch(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Test:
    """Welch's two-sided t-test of mean(a) = mean(b), and the (1 - alpha) interval of mean(a) - mean(b).

    Two arms whose values are all equal give p = NaN (no spread to judge by): the test does not decide."""
    from scipy import stats

    a, b, alpha = _values("a", a, 2), _values("b", b, 2), _check_alpha(alpha)
    effect = float(a.mean() - b.mean())
    if _constant(a) and _constant(b):
        return Test("Welch's t", (len(a), len(b)), effect, (effect, effect), math.nan, alpha, 1 - alpha,
                    note="no spread in either arm")
    res = stats.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(1 - alpha)
    return Test("Welch's t", (len(a), len(b)), effect, (float(ci.low), float(ci.high)), float(res.pvalue), alpha,
                1 - alpha, df=float(res.df))


def welch_one_sided(a: Sequence[float], b: Sequence[float], side: str, value: float = 0.0, alpha: float = ALPHA,
                    name: str | None = None, margin: float | None = None) -> Test:
    """One-sided Welch's t-test that mean(a) - mean(b) > value (side "greater") or < value ("less"), with the
    one-sided (1 - alpha) interval of the difference that the test inverts: [low, +inf) or (-inf, high], below
    (above) `value` exactly when p < alpha."""
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    a, b, alpha = _values("a", a, 2), _values("b", b, 2), _check_alpha(alpha)
    if side not in ("greater", "less"):
        raise LinrnnError(f"side: expected greater or less, found {side!r}")
    name = name or f"Welch's t, one-sided ({'above' if side == 'greater' else 'below'} {value:g})"
    effect = float(a.mean() - b.mean())
    if _constant(a) and _constant(b):
        return Test(name, (len(a), len(b)), effect, (effect, effect), math.nan, alpha, 1 - alpha, margin,
                    note="no spread in either arm")
    compare = CompareMeans(DescrStatsW(a), DescrStatsW(b))
    alternative = "larger" if side == "greater" else "smaller"
    _, p, df = compare.ttest_ind(alternative=alternative, usevar="unequal", value=value)
    low, high = compare.tconfint_diff(alpha=alpha, alternative=alternative, usevar="unequal")
    ci = (float(low), math.inf) if side == "greater" else (-math.inf, float(high))
    return Test(name, (len(a), len(b)), effect, ci, float(p), alpha, 1 - alpha, margin, float(df))


def beyond_margin(a: Sequence[float], b: Sequence[float], margin: float, alpha: float = ALPHA) -> Test:
    """One-sided Welch's t-test that mean(a) - mean(b) < -margin (a worse than b by more than the margin),
    with the one-sided (1 - alpha) upper bound as the interval's high end."""
    if not margin >= 0:
        raise LinrnnError(f"margin: expected a number >= 0, found {margin!r}")
    return welch_one_sided(a, b, "less", -margin, alpha, "Welch's t, one-sided, beyond the margin", margin)


def non_inferiority(a: Sequence[float], b: Sequence[float], margin: float, alpha: float = ALPHA) -> Test:
    """One-sided Welch's t-test of non-inferiority: mean(a) - mean(b) > -margin (a no worse than b by the margin),
    with the one-sided (1 - alpha) lower bound as the interval's low end. Unlike "equivalent, or better", its power
    goes to 1 with the seeds when a and b are truly equal."""
    if not margin > 0:
        raise LinrnnError(f"margin: expected a number > 0, found {margin!r}")
    return welch_one_sided(a, b, "greater", -margin, alpha, "Welch's t, one-sided non-inferiority", margin)


def tost(a: Sequence[float], b: Sequence[float], margin: float, alpha: float = ALPHA) -> Test:
    """Equivalence of two means within +-margin: two one-sided Welch tests (statsmodels' ttost_ind).

    p is the larger of the two one-sided p-values; the interval is the (1 - 2 alpha) interval of the
    difference, which lies inside (-margin, margin) exactly when p < alpha."""
    from scipy import stats
    from statsmodels.stats.weightstats import ttost_ind

    a, b, alpha = _values("a", a, 2), _values("b", b, 2), _check_alpha(alpha)
    if not margin > 0:
        raise LinrnnError(f"margin: expected a number > 0, found {margin!r}")
    effect = float(a.mean() - b.mean())
    if _constant(a) and _constant(b):
        return Test("TOST (Welch)", (len(a), len(b)), effect, (effect, effect), math.nan, alpha, 1 - 2 * alpha, margin,
                    note="no spread in either arm")
    p, _, _ = ttost_ind(a, b, -margin, margin, usevar="unequal")
    res = stats.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(1 - 2 * alpha)
    return Test("TOST (Welch)", (len(a), len(b)), effect, (float(ci.low), float(ci.high)), float(p), alpha,
                1 - 2 * alpha, margin, float(res.df))


def one_sample(values: Sequence[float], bar: float, side: str, alpha: float = ALPHA) -> Test:
    """One-sided one-sample t-test that the mean is above (side "greater") or below ("less") `bar`; the
    effect is the mean and the interval its one-sided (1 - alpha) bound (the other end infinite)."""
    from scipy import stats

    x, alpha = _values("values", values, 2), _check_alpha(alpha)
    if side not in ("greater", "less"):
        raise LinrnnError(f"side: expected greater or less, found {side!r}")
    mean = float(x.mean())
    name = f"one-sample t, one-sided ({'above' if side == 'greater' else 'below'} {bar:g})"
    if _constant(x):
        return Test(name, (len(x),), mean, (mean, mean), math.nan, alpha, 1 - alpha, note="no spread: every value equal")
    res = stats.ttest_1samp(x, bar, alternative=side)
    ci = res.confidence_interval(1 - alpha)
    return Test(name, (len(x),), mean, (float(ci.low), float(ci.high)), float(res.pvalue), alpha, 1 - alpha,
                df=float(res.df))


def mcnemar(correct_a: Sequence[bool], correct_b: Sequence[bool], alpha: float = ALPHA) -> Test:
    """Exact McNemar test of two models' per-example correctness on the same test examples.

    The effect is accuracy(a) - accuracy(b) = (n10 - n01) / n; its interval is the exact (Clopper-Pearson)
    interval of n10 / (n10 + n01) among the discordant pairs, mapped to the difference (conditional on their
    count): the interval that the exact test inverts, so it excludes 0 exactly when p < alpha."""
    from scipy import stats
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    alpha = _check_alpha(alpha)
    if a.ndim != 1 or a.shape != b.shape or len(a) == 0:
        raise LinrnnError(f"mcnemar: expected two equally long, non-empty vectors of per-example correctness, "
                          f"found shapes {a.shape} and {b.shape}")
    n = len(a)
    n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
    effect = (n10 - n01) / n
    table = [[int(np.sum(a & b)), n10], [n01, int(np.sum(~a & ~b))]]
    note = f"discordant pairs: {n10} only a right, {n01} only b right"
    if n10 + n01 == 0:
        return Test("exact McNemar", (n,), 0.0, (0.0, 0.0), 1.0, alpha, 1 - alpha, note=note)
    p = float(sm_mcnemar(table, exact=True).pvalue)
    ci = stats.binomtest(n10, n10 + n01).proportion_ci(1 - alpha, method="exact")
    scale = (n10 + n01) / n
    return Test("exact McNemar", (n,), effect, (scale * (2 * ci.low - 1), scale * (2 * ci.high - 1)), p, alpha,
                1 - alpha, note=note)


def binomial_above(successes: int, n: int, rate: float, alpha: float = ALPHA) -> Test:
    """One run's accuracy k / n above a chance `rate`: exact binomial test, one-sided, with the one-sided
    exact (Clopper-Pearson) lower bound."""
    from scipy import stats

    alpha = _check_alpha(alpha)
    if not (isinstance(n, int) and n > 0 and isinstance(successes, int) and 0 <= successes <= n):
        raise LinrnnError(f"binomial_above: expected 0 <= successes <= n with n > 0, found {successes} of {n}")
    if not 0.0 <= rate < 1.0:
        raise LinrnnError(f"rate: expected a chance rate in [0, 1), found {rate!r}")
    res = stats.binomtest(successes, n, rate, alternative="greater")
    ci = res.proportion_ci(1 - alpha, method="exact")
    return Test(f"exact binomial, one-sided (above {rate:.4g})", (n,), successes / n, (float(ci.low), float(ci.high)),
                float(res.pvalue), alpha, 1 - alpha)


def holm(tests: Sequence[Test], alpha: float = ALPHA) -> list[Test]:
    """The tests of one family with Holm-adjusted p-values (statsmodels' multipletests), each judged at alpha:
    the family's chance of any false decision stays at most alpha. A NaN p-value stays NaN and decides nothing."""
    from statsmodels.stats.multitest import multipletests

    alpha = _check_alpha(alpha)
    tests = list(tests)
    finite = [i for i, t in enumerate(tests) if math.isfinite(t.p)]
    out = [replace(t, alpha=alpha) for t in tests]
    if len(finite) > 1:
        _, adjusted, _, _ = _without_full_collection(multipletests, [tests[i].p for i in finite], alpha=alpha,
                                                     method="holm")
        for i, p in zip(finite, adjusted):
            note = "; ".join(x for x in (tests[i].note, "p Holm-adjusted, the interval not") if x)
            out[i] = replace(out[i], p=float(p), name=f"{tests[i].name}, Holm over {len(finite)}", note=note)
    return out


def _without_full_collection(fn, *args, **kwargs):
    """fn(*args, **kwargs) with the objects that exist before the call left out of any garbage collection in it.

    statsmodels' `multipletests` calls `gc.collect()` on its Holm path (statsmodels 0.14), a full collection whose
    time grows with everything the process holds: 0.3 s a call in a process that holds JAX and PyTorch, most of the
    ledger's settling of a claim (5.0 of 5.9 s for the stored records' parts). `gc.freeze()` moves the objects
    tracked so far to the collector's permanent generation, which a collection does not scan, and `gc.unfreeze()`
    gives them back afterwards: the result is the same, only the scan is skipped. Nothing is freed or kept alive
    by it. A process that has frozen objects itself keeps its own state: the call then runs as it is.
    """
    if gc.get_freeze_count():
        return fn(*args, **kwargs)
    gc.freeze()
    try:
        return fn(*args, **kwargs)
    finally:
        gc.unfreeze()


def exponent(lengths: Sequence[float], times: Sequence[float], bound: float, alpha: float = ALPHA,
             side: str = "less") -> Test:
    """The exponent b of time = c L^b, fitted by ordinary least squares of log time on log L over every
    timing (several interleaved repeats per length), with its (1 - 2 alpha) interval; p is the one-sided
    p-value that b < bound (side "less") or b > bound ("greater"), from statsmodels' t-test of the slope."""
    import statsmodels.api as sm

    L, t, alpha = _values("lengths", lengths, 3), _values("times", times, 3), _check_alpha(alpha)
    if side not in ("less", "greater"):
        raise LinrnnError(f"side: expected less or greater, found {side!r}")
    if len(L) != len(t) or np.any(L <= 0) or np.any(t <= 0):
        raise LinrnnError("exponent: expected as many positive times as positive lengths")
    if len(np.unique(L)) < 3:
        raise LinrnnError(f"exponent: expected timings at 3 or more lengths, found {sorted(set(L.tolist()))}")
    fit = sm.OLS(np.log(t), sm.add_constant(np.log(L))).fit()
    slope = float(fit.params[1])
    # the one-sided (1 - alpha) interval: the high (low) end of the (1 - 2 alpha) two-sided one, below (above)
    # `bound` exactly when the one-sided p is below alpha
    low, high = (float(v) for v in fit.conf_int(2 * alpha)[1])
    low, high = (-math.inf, high) if side == "less" else (low, math.inf)
    # one-sided p: the two-sided p of b = bound, halved on the side the estimate lies on
    two_sided = float(fit.t_test(([0.0, 1.0], bound)).pvalue)
    below = slope < bound if side == "less" else slope > bound
    p = two_sided / 2 if below else 1 - two_sided / 2
    word = "below" if side == "less" else "above"
    end = "high" if side == "less" else "low"
    return Test("least-squares exponent of time against L (log-log)", (len(L),), slope, (low, high), p, alpha,
                1 - alpha, margin=None, df=float(fit.df_resid),
                note=f"one-sided p that the exponent is {word} {bound:g}; the interval's {end} end is its "
                     f"one-sided {100 * (1 - alpha):g} % bound")


def exponent_clustered(lengths: Sequence[float], times: Sequence[float], rounds: Sequence[int], bound: float,
                       alpha: float = ALPHA) -> Test:
    """The exponent b of time = c L^b by least squares on log-log, its interval and one-sided p (b < bound) from
    statsmodels' cluster-robust covariance with each interleaved round a cluster (t with clusters - 1 degrees of
    freedom): the timings of one round share the machine's load at that moment, so a loaded round moves them
    together and widens the interval instead of passing as many independent points. The note gives the median of
    the per-round Theil-Sen slopes (SciPy), a statistic robust to one disturbed timing."""
    import statsmodels.api as sm
    from scipy.stats import theilslopes

    L, t, alpha = _values("lengths", lengths, 3), _values("times", times, 3), _check_alpha(alpha)
    groups = np.asarray(rounds)
    if len(L) != len(t) or len(groups) != len(L) or np.any(L <= 0) or np.any(t <= 0):
        raise LinrnnError("exponent_clustered: expected as many positive times and round labels as positive lengths")
    if len(np.unique(L)) < 3 or len(np.unique(groups)) < 3:
        raise LinrnnError("exponent_clustered: expected timings at 3 or more lengths in 3 or more rounds")
    x, y = np.log(L), np.log(t)
    fit = sm.OLS(y, sm.add_constant(x)).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    slope = float(fit.params[1])
    high = float(fit.conf_int(2 * alpha)[1][1])       # the one-sided (1 - alpha) upper bound
    two_sided = float(fit.t_test(([0.0, 1.0], bound)).pvalue)
    p = two_sided / 2 if slope < bound else 1 - two_sided / 2
    per_round = [float(theilslopes(y[groups == g], x[groups == g])[0]) for g in np.unique(groups)
                 if len(np.unique(x[groups == g])) >= 2]
    clusters = len(np.unique(groups))
    return Test("least-squares exponent of time against L (log-log), rounds as clusters", (len(L),), slope,
                (-math.inf, high), p, alpha, 1 - alpha, df=float(clusters - 1),
                note=f"one-sided p that the exponent is below {bound:g}; the interval's high end is its one-sided "
                     f"{100 * (1 - alpha):g} % bound; cluster-robust over {clusters} rounds; median of the per-round "
                     f"Theil-Sen slopes {float(np.median(per_round)):.3f} (range {min(per_round):.3f} to "
                     f"{max(per_round):.3f})")

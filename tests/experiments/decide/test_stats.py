"""The ledger's statistics (linrnn.experiments.decide.stats) against independent computations and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from linrnn.experiments.decide import stats
from linrnn.base.errors import LinrnnError


def test_welch_matches_the_welch_satterthwaite_formulas_worked_by_hand():
    a, b = [0.91, 0.93, 0.92], [0.86, 0.85, 0.90]
    t = stats.welch(a, b)
    va, vb = np.var(a, ddof=1) / 3, np.var(b, ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    diff = np.mean(a) - np.mean(b)
    assert t.effect == pytest.approx(diff)
    assert t.df == pytest.approx(df)
    assert t.ci == pytest.approx((diff - half, diff + half))
    assert t.p == pytest.approx(2 * sps.t.sf(diff / math.sqrt(va + vb), df))
    assert t.n == (3, 3) and t.level == 0.95 and t.significant == (t.p < 0.05)


def test_welch_with_two_seeds_and_t_of_2_5_does_not_decide():
    # the reviewer's case: |t| > 2 with 2 seeds per arm is not evidence (1-2 degrees of freedom)
    a, b = [0.508, 0.512], [0.491, 0.497]
    t = stats.welch(a, b)
    z = t.effect / math.sqrt(np.var(a, ddof=1) / 2 + np.var(b, ddof=1) / 2)
    assert z > 2.5
    assert not t.significant and t.ci[0] < 0 < t.ci[1]


def test_welch_without_any_spread_has_no_p_value_and_decides_nothing():
    t = stats.welch([0.5095, 0.5095, 0.5095], [0.5095, 0.5095, 0.5095])
    assert math.isnan(t.p) and not t.significant
    assert t.to_dict()["p"] is None


@pytest.mark.parametrize("test", ["welch", "tost", "one_sample"])
def test_the_false_decision_rate_at_three_seeds_is_alpha(test):
    """Under no difference (or at the margin's edge), 3 seeds per arm: the tests decide falsely about alpha of
    the time (2000 draws: a 99.9 % binomial band around 0.05); TOST at most that (with few seeds it is
    conservative: both one-sided tests must decide)."""
    rng = np.random.default_rng(0)
    draws, decided = 2000, 0
    for _ in range(draws):
        a, b = rng.normal(0.0, 1.0, 3), rng.normal(0.0, 2.0, 3)
        if test == "welch":
            decided += stats.welch(a, b).significant
        elif test == "tost":      # true difference exactly at the margin: equivalence must not be claimed
            decided += stats.tost(a + 1.0, b, margin=1.0).significant
        else:
            decided += stats.one_sample(a, 0.0, "greater").significant
    low, high = sps.binom.ppf([0.0005, 0.9995], draws, 0.05) / draws
    assert (0 if test == "tost" else low) <= decided / draws <= high, decided / draws


def test_the_old_two_standard_error_rule_errs_far_more_often_with_two_seeds():
    """The ledger's old rule: |diff| > 2 standard errors with 2 seeds per arm and no real difference happens
    about 18 % of the time (the two arms' errors give t about 2 degrees of freedom; with one arm's 1 degree of
    freedom alone it is 30 %), not 5 %; Welch's t at alpha 0.05 keeps its rate."""
    rng = np.random.default_rng(1)
    old = new = 0
    draws = 2000
    for _ in range(draws):
        a, b = rng.normal(0, 1, 2), rng.normal(0, 1, 2)
        se = math.sqrt(np.var(a, ddof=1) / 2 + np.var(b, ddof=1) / 2)
        old += abs(a.mean() - b.mean()) > 2 * se
        new += stats.welch(a, b).significant
    assert 0.15 < old / draws < 0.22
    assert new / draws < 0.07


def test_tost_decides_exactly_when_its_interval_lies_inside_the_margin():
    rng = np.random.default_rng(2)
    for _ in range(300):
        a, b = rng.normal(0.8, 0.01, 3), rng.normal(0.8 + rng.normal(0, 0.01), 0.01, 4)
        t = stats.tost(a, b, margin=0.02)
        assert t.significant == (-0.02 < t.ci[0] and t.ci[1] < 0.02), (t, a, b)
        assert t.level == pytest.approx(0.90)


def test_beyond_margin_is_the_one_sided_welch_test_shifted_by_the_margin():
    a, b = [0.70, 0.72, 0.69], [0.80, 0.79, 0.82]
    t = stats.beyond_margin(a, b, margin=0.02)
    ref = sps.ttest_ind(np.add(a, 0.02), b, equal_var=False, alternative="less")
    assert t.p == pytest.approx(ref.pvalue)
    assert t.ci[1] == pytest.approx(ref.confidence_interval(0.95).high - 0.02)
    assert t.significant and t.ci[1] < -0.02


def test_one_sample_above_and_below_a_bar():
    assert stats.one_sample([0.9991, 0.9994, 0.9990], 0.99, "greater").significant
    assert stats.one_sample([0.02, 0.04, 0.03], 0.5, "less").significant
    assert not stats.one_sample([0.98, 0.999, 0.995], 0.99, "greater").significant
    with pytest.raises(LinrnnError, match="side: expected greater or less"):
        stats.one_sample([1, 2], 0, "above")


def test_exact_mcnemar_is_the_binomial_test_of_the_discordant_pairs_worked_by_hand():
    # 12 examples only a gets right, 3 only b: p = 2 P(X <= 3), X ~ Binomial(15, 1/2)
    a = np.array([True] * 12 + [False] * 3 + [True] * 50 + [False] * 35)
    b = np.array([False] * 12 + [True] * 3 + [True] * 50 + [False] * 35)
    t = stats.mcnemar(a, b)
    assert t.p == pytest.approx(2 * sum(math.comb(15, k) for k in range(4)) / 2 ** 15)
    assert t.effect == pytest.approx((12 - 3) / 100) and t.n == (100,)
    # the interval is the exact test inverted: it excludes 0 exactly when p < alpha
    rng = np.random.default_rng(3)
    for _ in range(200):
        x, y = rng.random(60) < 0.7, rng.random(60) < rng.uniform(0.4, 0.9)
        m = stats.mcnemar(x, y)
        assert m.significant == (m.ci[0] > 0 or m.ci[1] < 0), m


def test_mcnemar_refuses_vectors_of_different_lengths():
    with pytest.raises(LinrnnError, match="equally long"):
        stats.mcnemar([True, False], [True])


def test_binomial_above_chance():
    t = stats.binomial_above(40, 100, 0.182)
    assert t.p == pytest.approx(sps.binom.sf(39, 100, 0.182))
    assert t.significant and t.ci[0] > 0.182
    assert not stats.binomial_above(20, 100, 0.182).significant


def test_holm_adjusts_a_family_as_worked_by_hand():
    family = [stats.Test("t", (3, 3), 0.1, (0, 0.2), p) for p in (0.01, 0.04, 0.03)]
    adjusted = stats.holm(family)
    # sorted p 0.01, 0.03, 0.04: 3 x 0.01 = 0.03; 2 x 0.03 = 0.06; max(0.06, 1 x 0.04) = 0.06
    assert [t.p for t in adjusted] == pytest.approx([0.03, 0.06, 0.06])
    assert [t.significant for t in adjusted] == [True, False, False]
    assert "Holm over 3" in adjusted[0].name


def test_holm_leaves_the_garbage_collector_as_it_found_it():
    """holm() keeps statsmodels' full collection from scanning the process's objects (`gc.freeze` around it):
    afterwards nothing is left frozen, and a caller's own frozen objects stay frozen.

    A frozen object is in the collector's permanent generation, which `gc.get_objects()` does not list; the
    check follows one such object rather than `gc.get_freeze_count()`, which also drops whenever any frozen
    object elsewhere in the process is freed (another thread's, a cache's)."""
    import gc

    def frozen(obj):
        return not any(o is obj for o in gc.get_objects())

    family = [stats.Test("t", (3, 3), 0.1, (0, 0.2), p) for p in (0.01, 0.04, 0.03)]
    assert gc.get_freeze_count() == 0
    assert [t.p for t in stats.holm(family)] == pytest.approx([0.03, 0.06, 0.06])
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    callers = [object()]  # a container: tracked by the collector
    assert not frozen(callers)
    gc.freeze()
    try:
        assert frozen(callers)
        assert [t.p for t in stats.holm(family)] == pytest.approx([0.03, 0.06, 0.06])
        assert frozen(callers) and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert not frozen(callers)


def test_exponent_recovers_a_power_law_and_its_interval():
    rng = np.random.default_rng(4)
    L = np.repeat([256, 512, 1024, 2048, 4096], 5)
    linear = 1e-3 * L * np.exp(rng.normal(0, 0.05, L.size))
    t = stats.exponent(L, linear, bound=1.2)
    assert t.ci[0] < 1.0 < t.ci[1] and t.significant and t.ci[1] < 1.2
    quadratic = 1e-6 * L ** 2 * np.exp(rng.normal(0, 0.05, L.size))
    q = stats.exponent(L, quadratic, bound=1.2)
    assert q.effect == pytest.approx(2.0, abs=0.05) and not q.significant
    with pytest.raises(LinrnnError, match="3 or more lengths"):
        stats.exponent([1, 1, 2, 2], [1, 1, 2, 2], bound=1.2)


def test_bad_input_is_a_one_line_error():
    with pytest.raises(LinrnnError, match="at least 2 finite numbers"):
        stats.welch([0.5], [0.4, 0.6])
    with pytest.raises(LinrnnError, match="finite"):
        stats.welch([0.5, float("nan")], [0.4, 0.6])
    with pytest.raises(LinrnnError, match="alpha"):
        stats.welch([0.5, 0.6], [0.4, 0.6], alpha=0.7)
    with pytest.raises(LinrnnError, match="margin"):
        stats.tost([0.5, 0.6], [0.4, 0.6], margin=0)


def test_a_test_prints_its_effect_interval_and_n():
    words = stats.welch([0.86, 0.84, 0.85], [0.92, 0.93, 0.925]).words("DLR - RotRNN")
    assert words.startswith("DLR - RotRNN -0.07") and "95 % CI" in words and "n = 3 / 3" in words and "df" in words


# -- the dualities: a one-sided test decides exactly when its interval lies past the bound -------------------------

def test_the_one_sample_test_decides_exactly_when_its_95_percent_bound_lies_past_the_bar():
    """Over simulated draws, p < alpha if and only if the one-sided 95 % bound lies beyond the bar, on both sides;
    and the bound is SciPy's own 95 % one. A 90 % interval, or a two-sided p, breaks the equivalence on some draw."""
    rng = np.random.default_rng(5)
    for _ in range(400):
        x = rng.normal(0.5 + rng.normal(0, 0.05), 0.05, int(rng.integers(3, 8)))
        above, below = stats.one_sample(x, 0.5, "greater"), stats.one_sample(x, 0.5, "less")
        assert above.significant == (above.ci[0] > 0.5) and below.significant == (below.ci[1] < 0.5)
        assert above.level == below.level == 0.95
        ref = sps.ttest_1samp(x, 0.5, alternative="greater").confidence_interval(0.95)
        assert above.ci[0] == pytest.approx(ref.low)


@pytest.mark.parametrize("fit", ["exponent", "exponent_clustered"])
def test_the_exponent_is_below_its_bound_exactly_when_its_one_sided_bound_is(fit):
    """D9's fit: the one-sided p (below the bound) decides exactly when the interval's high end, its one-sided 95 %
    bound, lies below the bound; a two-sided p (twice as large) would not decide on some of these draws."""
    rng = np.random.default_rng(6)
    L = np.tile([128, 256, 512, 1024, 2048], 5)
    rounds = np.repeat(np.arange(5), 5)
    flips = 0
    for _ in range(300):
        b = 1.2 + rng.normal(0, 0.05)
        t = 1e-3 * L ** b * np.exp(rng.normal(0, 0.1, L.size) + rng.normal(0, 0.1, 5)[rounds])
        test = stats.exponent(L, t, 1.2) if fit == "exponent" else stats.exponent_clustered(L, t, rounds, 1.2)
        assert test.significant == (test.ci[1] < 1.2), test
        flips += (test.p < 0.05) != (min(1.0, 2 * test.p) < 0.05)
    assert flips > 0          # the draws include cases where halving the p-value matters


def test_the_clustered_exponent_treats_a_round_as_one_unit_and_reports_theil_sen():
    """Five rounds of five lengths: the timings of one round share its load. A round slowed as a whole moves the
    fit's interval little; a round slowed at its long lengths widens it, where OLS on 25 points would call it tight."""
    rng = np.random.default_rng(7)
    L = np.tile([128, 256, 512, 1024, 2048], 5)
    rounds = np.repeat(np.arange(5), 5)
    t = 1e-3 * L * np.exp(rng.normal(0, 0.02, L.size))
    clean = stats.exponent_clustered(L, t, rounds, 1.2)
    assert clean.significant and clean.df == 4 and clean.n == (25,) and "Theil-Sen slopes 0.99" in clean.note
    loaded = t.copy()
    loaded[(rounds == 4) & (L >= 1024)] *= 6.0
    naive, clustered = stats.exponent(L, loaded, 1.2), stats.exponent_clustered(L, loaded, rounds, 1.2)
    # one-sided intervals (the test is one-sided): the same slope, a higher upper bound when a round is one unit
    assert clustered.ci[0] == naive.ci[0] == -np.inf and clustered.effect == pytest.approx(naive.effect)
    assert clustered.ci[1] - clustered.effect > naive.ci[1] - naive.effect
    with pytest.raises(LinrnnError, match="3 or more rounds"):
        stats.exponent_clustered(L[:10], t[:10], rounds[:10], 1.2)

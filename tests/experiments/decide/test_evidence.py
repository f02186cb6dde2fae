"""The rules that turn measurements into evidence (linrnn.experiments.decide.evidence, linrnn.experiments.decide.rules): what
"learned" is judged against, which control vouches for which arms, how a claim's contradiction tests are adjusted,
and what would settle an undecided part."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestIndPower, TTestPower

from linrnn.experiments.decide import evidence, rules, stats
from linrnn.experiments.decide.evidence import Part


def test_a_controls_rows_vouch_only_for_arms_of_their_own_task_length_and_data():
    arm = {"task": "context_shift", "config": {"length": 64}}
    stored = {"runs": [{"task": "context_shift", "model": "attention", "control": "c", "status": "ok",
                        "value": v, "config": {"length": 16}} for v in (0.87, 0.95, 0.91)],
              "controls": [{"name": "c", "task": "context_shift", "bar": 0.5, "select": {"control": "c"}}],
              "trivial": [{"task": "context_shift", "length": 16, "best": {"name": "bag", "score": 0.08}}]}
    elsewhere = evidence.experiment_control(stored, "context_shift", [arm])
    assert elsewhere["learned"] is None and "another setting (context_shift at L = 16)" in elsewhere["evidence"]
    here = evidence.experiment_control(stored, "context_shift", [{**arm, "config": {"length": 16}}])
    assert here["learned"] is True and here["baseline"] == {"name": "bag", "score": 0.08}
    data_arm = {"task": "listops", "data": {"generator": "listops", "options": {"max_depth": 10}}, "config": {}}
    short = {"task": "listops", "data": {"generator": "listops", "options": {"max_depth": 3}}, "config": {}}
    assert evidence.setting(data_arm) != evidence.setting(short)
    assert "max_depth 3" in evidence.describe_setting(short)


def test_learned_needs_the_trivial_predictor_and_chance_both_beaten():
    runs = [{"task": "t", "value": v, "metric": "macro_f1", "baseline": {"value": 0.33}} for v in (0.50, 0.51, 0.505)]
    above = {"trivial": [{"task": "t", "best": {"name": "lookup", "score": 0.45}}]}
    below = {"trivial": [{"task": "t", "best": {"name": "lookup", "score": 0.548}}]}
    assert evidence.learned(runs, above)[0] is True
    ok, words, baseline = evidence.learned(runs, below)
    assert ok is False and baseline == {"name": "lookup", "score": 0.548} and "lookup: 0.548" in words
    assert evidence.learned(runs, {"trivial": []})[0] is None          # no bar: not decidable
    # one run scored by accuracy: the exact binomial test against the bar
    one = [{"task": "t", "value": 0.60, "metric": "accuracy", "examples": {"test": 1000}}]
    assert evidence.learned(one, {"trivial": [{"task": "t", "best": {"name": "bag", "score": 0.55}}]})[0] is True
    assert evidence.learned(one, {"trivial": [{"task": "t", "best": {"name": "bag", "score": 0.59}}]})[0] is False


def _part(verdict: str, p: float, effect: float = -0.1) -> Part:
    return Part("s", verdict, "e", against=stats.Test("Welch's t", (3, 3), effect, (-1, 1), p))


def test_a_claims_contradiction_tests_are_holm_adjusted_together_across_its_sources():
    """Two parts from two sources, each contradicted at p = 0.03: Holm over the claim's two contradiction tests
    gives 0.06, so neither stands; at p = 0.01 and 0.02 both do. The tests that would show the claim holds are
    left alone (an intersection-union test needs no correction)."""
    parts = [_part("contradicted", 0.03), _part("contradicted", 0.03), Part("s", "reproduced", "holds", p=0.04)]
    adjusted = rules.holm_contradictions(parts)
    assert [p.verdict for p in adjusted] == ["inconclusive", "inconclusive", "reproduced"]
    assert "Holm-adjusted together (adjusted p = 0.06)" in adjusted[0].evidence and adjusted[2].p == 0.04
    kept = rules.holm_contradictions([_part("contradicted", 0.01), _part("contradicted", 0.02)])
    assert [p.verdict for p in kept] == ["contradicted", "contradicted"] and kept[1].p == pytest.approx(0.02)
    side = evidence.side([_part("contradicted", 0.001)], "another model")
    assert side[0].against is None and not side[0].decides            # a side finding is in no family


def _seeds(power_of, target: float = 0.8) -> int:
    """The smallest n >= 3 at which power_of(n) reaches target (a plain scan: the tests' own search)."""
    n = 3
    while power_of(n) < target:
        n += 1
    return n


def test_power_is_at_the_observed_difference_with_the_zero_difference_figure_beside():
    """Equivalence and non-inferiority are planned at the observed difference and pooled SD (the figure at a true
    difference of 0 beside it, labelled); every power states the effect it assumes."""
    a, b = [0.9314, 0.9171, 0.9486], [0.9286, 0.9629, 0.9257]
    sd = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)
    d = float(np.mean(a) - np.mean(b))
    analysis = TTestIndPower()

    def one_sided(effect, n):
        return analysis.power(effect_size=effect / sd, nobs1=n, alpha=0.05, alternative="larger")

    tost = evidence.power_two_arms(a, b, margin=0.02, seconds=(300.0, 300.0))
    expected = _seeds(lambda n: one_sided(0.02 - d, n) + one_sided(0.02 + d, n) - 1)
    assert tost["seeds_per_arm"] == expected and tost["effect"] == pytest.approx(d)
    assert tost["cpu_hours"] == pytest.approx(round(expected * 600 / 3600, 1))
    at_zero = math.ceil(analysis.solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.9, alternative="larger"))
    assert tost["at_zero"]["seeds_per_arm"] == at_zero and tost["at_zero"]["effect"] == 0.0
    assert at_zero < expected                        # the observed difference (-0.0087) makes it harder
    ni = evidence.power_two_arms(a, b, margin=0.02, goal="non-inferiority")
    assert ni["seeds_per_arm"] == math.ceil(analysis.solve_power(effect_size=(d + 0.02) / sd, alpha=0.05, power=0.8,
                                                                 alternative="larger"))
    far = evidence.power_two_arms([0.90, 0.91, 0.92], [0.95, 0.96, 0.97], margin=0.02)
    assert far["seeds_per_arm"] is None and "no seed count at this setting" in far["assumption"]
    assert far["effect"] == pytest.approx(-0.05)
    assert evidence.power_two_arms(a, b, goal="difference")["seeds_per_arm"] is None        # a < b: wrong direction
    assert "no seed count" in evidence.power_two_arms(a, b, goal="difference")["assumption"]


def test_r7_at_its_observed_difference_needs_about_five_times_the_seeds_of_a_zero_difference():
    """The reviewer's figure: at the stored SC35 arms (difference -0.012, pooled SD 0.032) TOST within 0.02 needs
    about 219 seeds per arm; 46 per arm (the plan at a true difference of 0) gives it about 30 % power."""
    rng = np.random.default_rng(0)
    a = list(0.927 + 0.0322 * _standardised(rng.normal(size=9)))
    b = list(0.9393 + 0.0322 * _standardised(rng.normal(size=8)))
    power = evidence.power_two_arms(a, b, margin=0.02)
    assert 200 <= power["seeds_per_arm"] <= 240 and 40 <= power["at_zero"]["seeds_per_arm"] <= 50


def _standardised(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / x.std(ddof=1)


def test_one_sample_power_and_the_wrong_side():
    one = evidence.power_one_sample([0.45, 0.511, 0.388], 0.5, "less")
    d = (0.5 - np.mean([0.45, 0.511, 0.388])) / np.std([0.45, 0.511, 0.388], ddof=1)
    assert one["seeds_per_arm"] == math.ceil(TTestPower().solve_power(effect_size=d, alpha=0.05, power=0.8,
                                                                       alternative="larger"))
    assert one["effect"] == pytest.approx(np.mean([0.45, 0.511, 0.388]))
    assert evidence.power_one_sample([0.6, 0.7, 0.65], 0.5, "less")["seeds_per_arm"] is None
    # where the solver gives up (the answer is below 2 seeds), the search still answers
    assert evidence.seeds_for(TTestPower(), 80.0, 0.8, "larger") == stats.MIN_SEEDS


def test_a_threshold_part_is_judged_against_the_higher_of_its_bar_and_the_trivial_predictor():
    values = [0.995, 0.996, 0.994]
    low = rules.threshold_part(values, 0.99, "greater", "s", "p", "x", "", "reproduced",
                                  baseline={"name": "window", "score": 0.2})
    high = rules.threshold_part(values, 0.99, "greater", "s", "p", "x", "", "reproduced",
                                   baseline={"name": "window", "score": 0.999})
    assert low.verdict == "reproduced" and high.verdict == "inconclusive" and "(above 0.999)" in high.test
    # one run on the wrong side of the bar (D2 at L = 4,096: 0.647 against 0.99): no seed count at this setting
    single = rules.threshold_part([0.647], 0.99, "greater", "s", "p", "x", "", "reproduced", seconds=480.0)
    assert single.n == (1,) and single.effect == 0.647 and single.power["seeds_per_arm"] is None
    assert "no seed count at this setting" in single.power["assumption"] and single.power["cpu_hours"] is None
    right = rules.threshold_part([0.995], 0.99, "greater", "s", "p", "x", "", "reproduced")
    assert right.power["seeds_per_arm"] == stats.MIN_SEEDS          # on the right side: at least a spread is needed


def test_an_undecided_part_says_what_would_settle_it_even_as_a_side_finding_or_held_by_its_control():
    """Every inconclusive part carries `power`: a side finding keeps its own (or says it decides nothing for the
    claim), and a threshold shown at these seeds but held back by a control at another setting says that a control
    would settle it, not more seeds (the seed count computed at the observed spread would be wrong advice)."""
    values = [0.031, 0.025, 0.038]
    elsewhere = {"name": "c", "learned": None, "evidence": "the control ran at another setting"}
    held = rules.threshold_part(values, 0.5, "less", "s", "fails", "x", "", "reproduced", control=elsewhere)
    assert held.verdict == "inconclusive" and held.p < 0.05
    assert held.power["seeds_per_arm"] is None and "positive control" in held.power["assumption"]
    alone = rules.threshold_part([0.45, 0.55, 0.50], 0.5, "less", "s", "fails", "x", "", "reproduced")
    assert alone.verdict == "inconclusive" and alone.power["seeds_per_arm"] is None   # wrong side: no seed count
    kept, described = evidence.side([held, Part("s", "inconclusive", "described")], "another reading")
    assert kept.power == held.power and not kept.decides
    assert described.power is not None and "side finding (another reading)" in described.power["assumption"]
    assert evidence.side([Part("s", "reproduced", "shown")], "x")[0].power is None


def _side(verdict: str, p: float) -> Part:
    return Part("s", verdict, "a side finding", decides=False, test="Welch's t", p=p, alpha=0.05, n=(3, 3),
                effect=0.1, ci=(0.01, 0.2))


def test_side_findings_are_holm_adjusted_as_a_family_of_their_own():
    """A claim's side findings with a test are one family: raw p = 0.0004, 0.03 and 0.031 become 0.0012, 0.06 and
    0.06 (statsmodels' Holm), so the last two are undecided; the deciding parts are untouched, and one side finding
    alone is its own family."""
    deciding = Part("s", "reproduced", "deciding", test="Welch's t", p=0.04, alpha=0.05)
    parts = rules.holm_side_findings([deciding, _side("contradicted", 0.0004), _side("contradicted", 0.03),
                                      _side("reproduced", 0.031)])
    assert parts[0] == deciding
    assert [p.verdict for p in parts[1:]] == ["contradicted", "inconclusive", "inconclusive"]
    assert [p.p for p in parts[1:]] == pytest.approx([0.0012, 0.06, 0.06])
    assert "adjusted p = 0.06" in parts[3].evidence and "undecided once adjusted" in parts[3].evidence
    assert parts[1].test == "Welch's t, Holm over 3 side findings"
    alone = rules.holm_side_findings([deciding, _side("contradicted", 0.031)])
    assert alone[1].verdict == "contradicted" and alone[1].p == 0.031


def test_what_would_settle_a_claim_never_quotes_a_side_findings_power():
    """The claim's "what would settle it" gathers its deciding parts only: a side finding's 154 seeds per arm (D4's
    'fails' reading once) is not advice for the claim."""
    from linrnn.reports import ledger

    claim = next(c for c in ledger.CLAIMS if c.id == "D4")
    deciding = Part("s", "inconclusive", "x", part="struggles", power=evidence.power_dict(12, 3.0, "planted"))
    beside = evidence.side([Part("s", "inconclusive", "y", part="fails",
                                 power=evidence.power_dict(154, 40.0, "planted"))], "another reading")
    words = ledger.settle_words(claim, [deciding] + beside, "inconclusive")
    assert "struggles: 12 seeds per arm" in words and "154" not in words

"""The rules that turn measurements into evidence (linrnn.experiments.evidence, linrnn.experiments.rules): what
"learned" is judged against, which control vouches for which arms, how a claim's contradiction tests are adjusted,
and what would settle an undecided part."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestIndPower, TTestPower

from linrnn.experiments import evidence, rules, stats
from linrnn.experiments.evidence import Part


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


def test_power_matches_statsmodels_and_says_when_no_seed_count_would_do():
    a, b = [0.9314, 0.9171, 0.9486], [0.9286, 0.9629, 0.9257]
    sd = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)
    power = evidence.power_two_arms(a, b, margin=0.02, seconds=(300.0, 300.0))
    n = math.ceil(TTestIndPower().solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.9, alternative="larger"))
    assert power["seeds_per_arm"] == n and power["cpu_hours"] == pytest.approx(round(n * 600 / 3600, 1))
    assert evidence.power_two_arms(a, b, effect=-0.01)["seeds_per_arm"] is None
    one = evidence.power_one_sample([0.45, 0.511, 0.388], 0.5, "less")
    d = (0.5 - np.mean([0.45, 0.511, 0.388])) / np.std([0.45, 0.511, 0.388], ddof=1)
    assert one["seeds_per_arm"] == math.ceil(TTestPower().solve_power(effect_size=d, alpha=0.05, power=0.8,
                                                                       alternative="larger"))
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
    single = rules.threshold_part([0.7], 0.99, "greater", "s", "p", "x", "", "reproduced")
    assert single.n == (1,) and single.effect == 0.7 and single.power["seeds_per_arm"] == stats.MIN_SEEDS


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

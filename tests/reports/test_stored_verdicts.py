"""The verdicts the checkout's own stored records give: every empirical part that says reproduced or
contradicted carries the test that decided it, enough values per arm, p below its alpha and an interval on
the decided side (docs/claims.md, "How an experiment decides").

The crafted-record tests (test_ledger.py, tests/experiments/claims/test_claims_experiments.py) check each rule;
this one checks what a reader of `reports/results/` is actually shown.
"""

from __future__ import annotations

import math
import re

import pytest

from linrnn.experiments.decide import stats
from linrnn.reports import ledger
from linrnn.reports.cli import STORED_RESULTS, STORED_SECTIONS
from linrnn.reports.results import read_section
from linrnn.reports.sections import experiments

PAIRED = ("McNemar", "binomial")          # tests over the test examples of one run each: n counts examples
NOT_STATISTICAL = ("derivation", "numeric", "structure")


def stored_ledger() -> list[dict]:
    data, config = experiments.compute(False, lambda *a: None)
    records = {"experiments": [{"section": "experiments", "data": data,
                                "meta": {"config": config, "machine": {"label": "stored"}}}]}
    for name in STORED_SECTIONS:
        path = STORED_RESULTS / f"{name}.json"
        if path.exists():
            records[name] = [read_section(path, name)]
    if not data["stored"] and len(records) == 1:
        pytest.skip(f"no stored records under {experiments.STORED_DIR} (an installed package without a checkout)")
    return ledger.ledger_json(ledger.build(records))


def decided_side(part: dict) -> str | None:
    """None when the part's interval lies where its verdict says, else what is wrong."""
    low = -math.inf if part["ci"][0] is None else part["ci"][0]
    high = math.inf if part["ci"][1] is None else part["ci"][1]
    threshold = re.search(r"\((?:ratio )?(above|below) ([-+0-9.e]+)\)", part["test"])
    if threshold:                                                   # a one-sided test against a bar (or a ratio's)
        side, bar = threshold.group(1), float(threshold.group(2))
        fine = low > bar if side == "above" else high < bar
        return None if fine else f"interval [{low}, {high}] does not lie {side} {bar}"
    m = part["margin"]
    if m is not None:
        if "non-inferiority" in part["test"]:                        # no worse than -m
            return None if low > -m else f"interval [{low}, {high}] reaches -{m} (non-inferiority)"
        if "beyond the margin" in part["test"]:                      # worse by more than m
            return None if high < -m else f"interval [{low}, {high}] is not below -{m}"
        if "above the margin" in part["test"]:                       # better by more than m
            return None if low > m else f"interval [{low}, {high}] is not above {m}"
        if "TOST" in part["test"] and part["verdict"].startswith("reproduced"):
            return None if -m < low and high < m else f"interval [{low}, {high}] not within +-{m}"
    return None if (low > 0 or high < 0) else f"interval [{low}, {high}] contains 0"


def test_every_decided_part_of_the_stored_records_carries_its_test():
    claims = stored_ledger()
    decided = [(c["claim"], p) for c in claims for p in c["parts"]
               if p["verdict"].startswith(("reproduced", "contradicted"))]
    assert decided, "the stored records decide no empirical part: nothing to check"
    sides: set[str] = set()
    for claim, p in decided:
        where = f"{claim} {p['part'] or p['source']}"
        assert p["test"] and not p["test"].startswith(NOT_STATISTICAL), where
        assert p["alpha"] is not None and p["p"] is not None and p["p"] < p["alpha"], where
        if any(name in p["test"] for name in PAIRED):
            assert p["n"] and all(k >= 1 for k in p["n"]), where
        else:
            assert p["n"] and all(k >= stats.MIN_SEEDS for k in p["n"]), where
        assert p["ci"] is not None and decided_side(p) is None, f"{where}: {decided_side(p)}"
        assert p["effect"] is not None and p["scale"], where
        if not p["decides"]:     # a side finding decided on its own statement (D6: DLR against the LRU): checked below
            sides.add(claim)
        if p["source"].startswith(("experiment", "training (tasks)")) and "CV" not in p["evidence"][:40] and \
                "sensitivity" not in p["evidence"][:20]:
            # an arm or control judged on its task: above its task's best trivial predictor, whose score is recorded
            assert p["baseline"] is not None, where
            if p["test"].startswith("one-sample t, one-sided (above"):
                assert p["effect"] > p["baseline"]["score"], where
    # every stored experiment's claim has a verdict, and no rule gives a bare "tied"
    assert all(c["verdict"] in ledger.RANK for c in claims)
    # a decided side finding never reaches its claim's verdict: the claim is contradicted only by a deciding part, and
    # holds only where every deciding part holds
    for c in claims:
        if c["claim"] not in sides:
            continue
        deciding = [p["verdict"] for p in c["parts"] if p["decides"]]
        if c["verdict"].startswith("contradicted"):
            assert any(v.startswith("contradicted") for v in deciding), c["claim"]
        if c["verdict"].startswith(("reproduced", "verified")):
            assert deciding and all(v.startswith(("reproduced", "verified", "proved")) for v in deciding), c["claim"]


def test_every_undecided_part_says_what_would_settle_it_and_every_equivalence_its_margin_and_tost():
    claims = stored_ledger()
    for c in claims:
        for p in c["parts"]:
            where = f"{c['claim']} {p['part'] or p['source']}"
            if p["verdict"] == "inconclusive":
                assert p["power"] and p["power"]["assumption"], where
            if p["power"]:                  # every power states the effect it assumes (null: it assumes none)
                assert "effect" in p["power"], where
                if isinstance(p["power"].get("seeds_per_arm"), int) and p["test"] and p["tests"]:
                    assert p["power"]["effect"] is not None, where
            if p["margin"] is not None and p["tests"]:          # a margin part states its margin test
                assert any(t["name"].startswith("TOST") or "non-inferiority" in t["name"] or "McNemar" in t["name"]
                           for t in p["tests"]), where
        if c["verdict"] == "inconclusive":
            assert c["settle"], c["claim"]


def one_sided(test: dict) -> bool:
    name = test["name"]
    return "one-sided" in name or name.startswith("least-squares exponent")


def test_every_one_sided_test_stores_a_one_sided_interval():
    """A one-sided test inverts a one-sided interval: one end open (stored as null), or 0 where a test on logs is shown
    on the original scale (a ratio of geometric means, a geometric mean). A two-sided interval beside a one-sided p (D4's [-0.401, -0.196] once) says the wrong thing."""
    claims = stored_ledger()
    seen = 0
    for c in claims:
        for p in c["parts"]:
            for t in p["tests"] or []:
                if not one_sided(t):
                    continue
                seen += 1
                low, high = t["ci"]
                assert low is None or high is None or (low == 0.0 and "log" in t["name"]), \
                    f"{c['claim']} {p['part']}: {t['name']} stores [{low}, {high}]"
    assert seen > 0, "no one-sided test in the stored ledger: nothing checked"


@pytest.mark.parametrize("test, ci, margin, verdict, wrong", [
    ("Welch's t", [0.01, 0.2], None, "reproduced", False),
    ("Welch's t", [-0.01, 0.2], None, "reproduced", True),                  # contains 0
    ("Welch's t", [None, -0.02], None, "contradicted", False),
    ("one-sample t, one-sided (above 0.99)", [0.991, None], None, "reproduced", False),
    ("one-sample t, one-sided (above 0.99)", [0.98, None], None, "reproduced", True),   # above 0, not above the bar
    ("one-sample t, one-sided (below 0.5)", [None, 0.6], None, "reproduced", True),
    ("TOST (Welch)", [-0.01, 0.015], 0.02, "reproduced", False),            # within the margin
    ("TOST (Welch)", [-0.01, 0.03], 0.02, "reproduced", True),              # neither within it nor beyond 0
    ("Welch's t, one-sided non-inferiority", [-0.015, None], 0.02, "reproduced", False),
    ("Welch's t, one-sided non-inferiority", [-0.025, None], 0.02, "reproduced", True),     # reaches the margin
    ("Welch's t, one-sided, beyond the margin", [None, -0.03], 0.02, "contradicted", False),
    ("Welch's t, one-sided, beyond the margin", [None, -0.01], 0.02, "contradicted", True),
    ("Welch's t of log CVs, one-sided (ratio below 1)", [0.0, 0.8], None, "reproduced", False),
    ("Welch's t of log CVs, one-sided (ratio below 1)", [0.0, 1.2], None, "reproduced", True),
])
def test_the_check_of_the_interval_rejects_planted_parts(test, ci, margin, verdict, wrong):
    part = {"test": test, "ci": ci, "margin": margin, "verdict": verdict}
    assert (decided_side(part) is not None) == wrong

"""The result records: verdict aggregation, rendering, JSON, the SymPy zero test, tolerances."""

import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import sympy as sp

from linrnn.theory.records import (
    TOLERANCES,
    ClaimResult,
    Finding,
    Lemma,
    Step,
    claim_from_lemmas,
    is_zero,
    numeric_finding,
    symbolic_finding,
    tolerance,
)


def _result(*verdicts, witness=None):
    findings = tuple(Finding(f"part {i}", v, f"cond {i}", "sympy", "all n (symbolic)", general=True, covers="the claim")
                     for i, v in enumerate(verdicts))
    return ClaimResult("X1", "title", ("a",), (Step.of("s", sp.Symbol("x") + 1),), findings, witness or {"w": 1})


def _claim(*findings):
    return ClaimResult("X1", "title", ("a",), (Step.of("s", sp.Symbol("x") + 1),), findings, {"w": 1})


def test_verdict_aggregation():
    assert _result("proved", "verified").verdict == "proved"
    assert _result("verified", "verified").verdict == "verified"
    mixed = _result("proved", "fails", "fails")
    assert mixed.verdict == "fails" and mixed.partly
    assert mixed.condition == "cond 1; cond 2"
    only_fails = _result("fails")
    assert only_fails.verdict == "fails" and not only_fails.partly
    assert _result("proved").condition == ""


def test_small_case_symbolic_findings_cannot_prove_a_claim():
    small = _claim(symbolic_finding("n = 2", True, scope="n = 2 (symbolic)", covers="P", fails_when="x"),
                   symbolic_finding("n = 3", True, scope="n = 3 (symbolic)", covers="P", fails_when="x"),
                   numeric_finding("random", True, scope="n <= 64 (numeric)", covers="P", fails_when="x"))
    assert small.verdict == "verified" and not small.partly
    assert small.scope == "P: holds on n = 2 (symbolic) + n = 3 (symbolic) + n <= 64 (numeric)"
    assert "not derived in general" in small.conclusion
    # A general symbolic proof of a lemma that is not the claim does not prove it either.
    lemma = _claim(symbolic_finding("lemma", True, scope="all n (symbolic)", general=True, fails_when="x"),
                   numeric_finding("random", True, scope="n <= 64 (numeric)", covers="P", fails_when="x"))
    assert lemma.verdict == "verified"


def test_a_general_symbolic_finding_proves_its_part_and_every_part_is_needed():
    general = symbolic_finding("all n", True, scope="all n (symbolic)", general=True, covers="P", fails_when="x")
    small = symbolic_finding("n = 2", True, scope="n = 2 (symbolic)", covers="P", fails_when="x")
    proved = _claim(small, general)
    assert proved.verdict == "proved" and proved.scope == "P: proved for all n (symbolic)"
    assert proved.conclusion.startswith("X1 is proved in general")
    timed = numeric_finding("cheap", True, scope="N <= 128 (timing)", covers="Q", fails_when="x", evidence="timing")
    two_parts = _claim(general, timed)
    assert two_parts.parts == ("P", "Q") and two_parts.verdict == "verified"
    assert two_parts.scope == "P: proved for all n (symbolic); Q: holds on N <= 128 (timing)"


def test_a_failing_finding_makes_the_claim_fail_whatever_else_is_proved():
    general = symbolic_finding("all n", True, scope="all n (symbolic)", general=True, covers="P", fails_when="x")
    failing = numeric_finding("cheap", False, scope="N = 8 (timing)", covers="Q", fails_when="slower at N = 8",
                              evidence="timing")
    result = _claim(general, failing)
    assert result.verdict == "fails" and result.partly and result.condition == "slower at N = 8"
    assert result.scope == "P: proved for all n (symbolic); Q: fails on N = 8 (timing)"
    assert "slower at N = 8" in result.conclusion


def test_findings_need_a_scope_general_needs_sympy_and_a_claim_needs_a_covered_part():
    with pytest.raises(ValueError, match="scope"):
        Finding("s", "proved", "", "sympy", " ")
    with pytest.raises(ValueError, match="only a symbolic derivation"):
        Finding("s", "verified", "", "numeric", "n <= 64", general=True)
    with pytest.raises(ValueError, match="evidence"):
        Finding("s", "verified", "", "hunch", "n <= 64")
    with pytest.raises(ValueError, match="covers"):
        _claim(symbolic_finding("lemma", True, scope="all n (symbolic)", general=True, fails_when="x"))


def test_finding_rejects_unknown_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Finding("s", "contradicted", "", "sympy", "all n (symbolic)")


def test_findings_follow_the_computed_boolean():
    assert symbolic_finding("s", True, scope="n = 2", fails_when="x").verdict == "proved"
    failed = symbolic_finding("s", False, scope="n = 2", fails_when="when x < 0")
    assert failed.verdict == "fails" and failed.condition == "when x < 0"
    assert numeric_finding("s", True, scope="n = 2", fails_when="x").verdict == "verified"
    assert numeric_finding("s", False, scope="n = 2", fails_when="x").verdict == "fails"
    assert not numeric_finding("s", True, scope="n = 2", fails_when="x").general


def test_witness_must_be_finite_floats():
    with pytest.raises(ValueError, match="not finite"):
        _result("proved", witness={"bad": math.inf})
    r = _result("proved", witness={"n": 3, "x": np.float32(0.5)})
    assert r.witness == {"n": 3.0, "x": 0.5} and all(type(v) is float for v in r.witness.values())
    with pytest.raises(TypeError):
        r.witness["n"] = 4.0  # read-only view


def test_to_dict_is_json_and_carries_latex_and_mathml():
    r = _result("proved", "fails")
    data = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert data["verdict"] == "fails" and data["partly"] is True
    assert data["scope"] == r.scope and data["conclusion"] == r.conclusion and data["parts"] == ["the claim"]
    assert {"statement", "verdict", "condition", "evidence", "scope", "general", "covers", "side"} == \
        set(data["findings"][0])
    assert data["findings"][0]["scope"] == "all n (symbolic)" and data["findings"][0]["general"] is True
    step = data["steps"][0]
    assert step["latex"] == "x + 1"
    assert step["mathml"].startswith('<math xmlns="http://www.w3.org/1998/Math/MathML"')
    assert "<mi>x</mi>" in step["mathml"] and step["mathml"].endswith("</math>")


def test_mathml_is_well_formed_xml():
    n = sp.Symbol("n", integer=True, positive=True)
    for expr in (sp.ZeroMatrix(n, n), sp.Symbol("a") * sp.Symbol("b"), sp.Eq(sp.Symbol("x") < 1, True),
                 sp.Matrix([[sp.cos(sp.Symbol("t")), 0]])):
        root = ET.fromstring(Step.of("s", expr).mathml)
        assert root.tag == "{http://www.w3.org/1998/Math/MathML}math"
    assert "&lt;" in Step.of("s", sp.Symbol("x") < 1).mathml


def test_is_zero_decides_by_computation():
    x, k = sp.Symbol("x", real=True), sp.Symbol("k", integer=True)
    assert is_zero(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1)
    assert is_zero(sp.Matrix([[sp.cos(2 * x) - (sp.cos(x) ** 2 - sp.sin(x) ** 2), 0]]))
    assert is_zero(sp.exp(sp.I * x) ** k - sp.exp(sp.I * k * x))
    assert not is_zero(sp.sin(x) - sp.cos(x))
    assert not is_zero(sp.Matrix([[0, x]]))


def test_tolerance_scales_with_eps_and_scale():
    t64 = tolerance("kernel_phase", "float64", 10.0)
    t32 = tolerance("kernel_phase", "float32", 10.0)
    assert t64 == pytest.approx(TOLERANCES[("kernel_phase", "float64")].factor * 10 * np.finfo(np.float64).eps)
    assert t32 / t64 == pytest.approx(np.finfo(np.float32).eps / np.finfo(np.float64).eps)
    assert all(t.reason for t in TOLERANCES.values())


def test_claim_from_lemmas_joins_findings_steps_and_witness_in_order():
    x = sp.Symbol("x")
    first = Lemma(findings=(symbolic_finding("a", True, scope="all x (symbolic)", general=True, covers="part",
                                             fails_when="never"),),
                  steps=(("s1", x + 1), ("s2", x + 2)), witness={"w1": 1, "gone": math.nan}, value="for later")
    second = Lemma(findings=(numeric_finding("b", False, scope="x = 1 (numeric)", fails_when="at x = 1"),),
                   steps=(("s3", x + 3),), witness={"w2": 2.5})
    result = claim_from_lemmas("X1", title="t", assumptions=["a"], lemmas=(first, Lemma(), second), start=0.0,
                               keep_witness=math.isfinite)
    assert [f.statement for f in result.findings] == ["a", "b"] and [s.label for s in result.steps] == ["s1", "s2", "s3"]
    assert list(result.witness.items()) == [("w1", 1.0), ("w2", 2.5)] and result.seconds > 0
    assert result.verdict == "fails" and result.partly and result.condition == "at x = 1"
    with pytest.raises(ValueError, match="not finite"):
        claim_from_lemmas("X1", title="t", assumptions=(), lemmas=(first,), start=0.0)
    with pytest.raises(ValueError, match=r"X1: witness number\(s\) \['w2'\] given by two lemmas"):
        claim_from_lemmas("X1", title="t", assumptions=(), lemmas=(second, second), start=0.0)

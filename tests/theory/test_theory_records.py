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
    Step,
    is_zero,
    numeric_finding,
    symbolic_finding,
    tolerance,
)


def _result(*verdicts, witness=None):
    findings = tuple(Finding(f"part {i}", v, f"cond {i}", "sympy") for i, v in enumerate(verdicts))
    return ClaimResult("X1", "title", ("a",), (Step.of("s", sp.Symbol("x") + 1),), findings, witness or {"w": 1})


def test_verdict_aggregation():
    assert _result("proved", "verified").verdict == "proved"
    assert _result("verified", "verified").verdict == "verified"
    mixed = _result("proved", "fails", "fails")
    assert mixed.verdict == "fails" and mixed.partly
    assert mixed.condition == "cond 1; cond 2"
    only_fails = _result("fails")
    assert only_fails.verdict == "fails" and not only_fails.partly
    assert _result("proved").condition == ""


def test_finding_rejects_unknown_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Finding("s", "contradicted", "", "sympy")


def test_findings_follow_the_computed_boolean():
    assert symbolic_finding("s", True, fails_when="x").verdict == "proved"
    failed = symbolic_finding("s", False, fails_when="when x < 0")
    assert failed.verdict == "fails" and failed.condition == "when x < 0"
    assert numeric_finding("s", True, fails_when="x").verdict == "verified"
    assert numeric_finding("s", False, fails_when="x").verdict == "fails"


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

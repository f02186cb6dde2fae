"""The conform battery on the bugs published layers have (issue 47): each bug class planted in a small layer written
for these tests (planted_layers.py, apart from the project's implementations) fails with its cause named, and the
faithful layer passes; findings are true (no float64 error below 1e-9 is "float32 only", a probe whose precondition
fails follows the output's deviation, no two findings contradict); the verdicts are `conforms`, `conforms (float32
only)` and `deviates`; docs/conform.md lists every finding.

Sizes are the battery's (H = 3, N = 4), lengths (1, 8) or (1, 16), the long and very long checks left out or short.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import hypothesis
import numpy as np
import pytest

from linrnn.base import results
from linrnn.verify import conform
from linrnn.verify.conform_diagnoses import FLOAT32_FLOOR, float32_level

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs" / "conform.md"
F64, BOTH = ("float64",), ("float64", "float32")


def _planted():
    """planted_layers.py as the module `planted_layers` (also what `linrnn conform planted_layers:NAME` imports)."""
    if "planted_layers" not in sys.modules:
        spec = importlib.util.spec_from_file_location("planted_layers", HERE / "planted_layers.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["planted_layers"] = module
        spec.loader.exec_module(module)
    return sys.modules["planted_layers"]


P = _planted()


def run(build, kind, dtypes=F64, lengths=(1, 8), **kwargs):
    kwargs.setdefault("long_length", 0)
    kwargs.setdefault("very_long_length", 0)
    return conform.run(build, kind, dtypes, lengths, **kwargs)


def keys(result) -> set[str]:
    return {d.key for d in result.diagnoses()}


def failed(result) -> set[str]:
    return {f"{c.name} ({c.dtype})" for c in result.checks if c.status == "fail"}


def check(result, name: str, dtype: str = "float64") -> conform.Check:
    return next(c for c in result.checks if c.name == name and c.dtype == dtype)


# -- 1. findings that are true -------------------------------------------------------------------------------------

def test_no_float64_error_below_1e9_is_called_float32_only():
    """The rule itself over errors from 1e-16 to 1e-9, lengths and radii; then planted float64 layers whose output is
    off by 1e-12 to 9e-10: each fails, named float64 rounding beyond the table, never float32 arithmetic."""
    assert 1e-9 < FLOAT32_FLOOR < 6e-8                 # above every such error, below float32's unit roundoff
    for rel in np.logspace(-16, -9, 29):
        for length, radius in ((1, 0.0), (16, 0.9), (4096, 0.9999), (65537, 0.99999)):
            for row in ("forward", "gradient"):
                found = float32_level("float64", float(rel), length, radius, row)
                assert found is None or found.key == "float64_excess", (rel, length, radius, row, found)
    for eps in (1e-12, 1e-10, 9e-10):
        result = run(P.lru(eps), "lru")
        assert not result.ok and keys(result) == {"float64_excess"}, conform.format_result(result)
        assert result.verdict == "deviates"


def test_float32_arithmetic_is_still_named_and_judged_conforms_float32_only(tmp_path, cli, monkeypatch):
    """A layer right in float32 but computing in float32 when asked for float64: its float64 checks fail at the float32
    level, each named so; the verdict says it, in the text, --json and the report's verdict function."""
    result = run(P.lru("float32"), "lru", BOTH)
    assert keys(result) == {"float32_only"} and result.verdict == "conforms (float32 only)", \
        conform.format_result(result)
    assert all(c.status != "fail" for c in result.checks if c.dtype == "float32")
    monkeypatch.chdir(HERE)
    code, out, _ = cli.run("conform", "planted_layers:lru_float32", "--model", "lru", "--lengths", "1", "8", "--long",
                           "0", "--very-long", "0", "--json", tmp_path / "f32.json")
    assert code == 1 and out.splitlines()[-2].startswith("conforms (float32 only): "), out    # a check fails: exit 1
    assert "float64 checks fail at a rounding level only" in out
    record = results.read(tmp_path / "f32.json", results.ConformRecord).result
    assert record["verdict"] == "conforms (float32 only)" and record["conforms"] is False
    code, out, _ = cli.run("conform", "planted_layers:lru_faithful", "--model", "lru", "--lengths", "1", "8",
                           "--long", "0", "--very-long", "0", "--dtype", "float64")
    assert code == 0 and out.splitlines()[-1].startswith("conforms: every applicable check"), out


def test_a_probe_whose_precondition_fails_follows_the_output():
    """An LRU whose recurrent part is halved (named: a constant factor 0.5) that pads and packs faithfully: the
    padding, packing, very long and short-lengths checks fail only because its output does, and say so, naming
    no cause of their own (no padding_leaks, packing_no_reset, long_tail, short_lengths)."""
    result = run(P.lru("half"), "lru", lengths=(1, 16), very_long_length=64)
    assert keys(result) == {"factor", "padding_follows_output", "packing_follows_output", "very_long_follows_output",
                            "short_lengths_follows_output"}, conform.format_result(result)
    assert "the padding check follows the output's deviation" in check(result, "padding").diagnoses[0].words
    faithful = run(P.lru(), "lru", lengths=(1, 16), very_long_length=64)
    assert faithful.verdict == "conforms", conform.format_result(faithful)


@pytest.mark.parametrize("build, kind", [(P.rotrnn("bidirectional_heads"), "rotrnn"),
                                         (P.rotrnn("transposed"), "rotrnn"), (P.lru("half"), "lru"),
                                         (P.dlr("shift"), "dlr")])
def test_no_run_names_two_findings_that_contradict(build, kind):
    result = run(build, kind)
    found = keys(result)
    assert not result.ok
    for group, members in conform.EXCLUSIVE.items():
        assert len(found & set(members)) <= 1, (group, found)


def test_contradicting_findings_are_shown_as_one_with_where_each_was_found():
    backward = [("bidirectional", "float64", conform.Diagnosis("backward_not_anticausal", "not anti-causal")),
                ("variant heads=4, bidirectional=true", "float64", conform.Diagnosis("backward_wrong", "wrong")),
                ("impulse", "float64", conform.Diagnosis("dense_D", "dense"))]
    merged = conform.merged(backward)
    assert [d.key for d in merged] == ["backward_varies", "dense_D"]
    assert merged[0].words == ("the backward direction deviates differently from one check to another: in "
                               "bidirectional (float64): not anti-causal; in variant heads=4, bidirectional=true "
                               "(float64): wrong")


# -- 2. the verdicts ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("checks, verdict", [
    ([("float64", "pass", []), ("float32", "pass", [])], "conforms"),
    ([("float64", "fail", ["float32_only"]), ("float32", "pass", [])], "conforms (float32 only)"),
    ([("float64", "n/a", []), ("float32", "pass", [])], "conforms (float32 only)"),       # refuses float64
    ([("float64", "fail", ["float32_only"]), ("float32", "fail", ["factor"])], "deviates"),
    ([("float64", "fail", ["float32_only", "factor"]), ("float32", "pass", [])], "deviates"),
    ([("float64", "fail", ["float32_only"])], "deviates"),                  # float32 not checked: not shown right
    ([("float64", "fail", ["float64_excess"]), ("float32", "pass", [])], "deviates"),    # float64, rounding more
    ([("float64", "fail", ["float32_only"]), ("float64", "fail", ["float64_excess"]), ("float32", "pass", [])],
     "conforms (float32 only)"),                                # float32 rounding too small to name in one check
    ([("float64", "fail", ["float32_only"]), ("float64", "fail", []), ("float32", "pass", [])], "deviates"),
    ([("float32", "pass", []), ("bfloat16", "fail", ["low_precision_recurrence"])], "deviates"),
    ([("float32", "pass", []), ("bfloat16", "n/a", [])], "conforms"),                     # a refused low dtype
])
def test_the_verdict_is_judged_from_the_checks(checks, verdict):
    rows = [{"name": f"c{i}", "dtype": d, "status": s, "detail": "why", "diagnoses": [{"key": k, "words": k}
                                                                                       for k in keys_]}
            for i, (d, s, keys_) in enumerate(checks)]
    assert conform.judge(rows)[0] == verdict


def test_what_deviates_is_said_before_the_float64_checks_that_fail_at_a_rounding_level_only():
    """RecurrentGemma's RG-LRU (its stored finding): right in float32, float64 at float32's level, and its bfloat16
    checks beyond the table's row. The bfloat16 checks decide "deviates" and
    come first; the float64 ones are said apart, as rounding. A run with no rounding-level check reads as before."""
    def row(name, dtype, status, keys_):
        return {"name": name, "dtype": dtype, "status": status, "detail": "why",
                "diagnoses": [{"key": k, "words": k} for k in keys_]}

    rows = [row("impulse", "float64", "fail", ["float32_only"]), row("gradient", "float64", "fail", ["float32_only"]),
            row("impulse", "float32", "pass", []), row("long L=512", "bfloat16", "fail", []),
            row("radius near 1", "bfloat16", "fail", ["low_precision_recurrence"])]
    verdict, why = conform.judge(rows)
    assert verdict == "deviates"
    assert why == ("2 of 5 checks exceed the tolerance table (long L=512 (bfloat16), radius near 1 (bfloat16)); "
                   "besides, 2 float64 checks fail at a rounding level only, computing in float32 (impulse (float64), "
                   "gradient (float64))")
    plain = [row("impulse", "float64", "fail", ["factor"]), row("impulse", "float32", "fail", [])]
    assert conform.judge(plain) == ("deviates", "2 of 2 checks exceed the tolerance table (impulse (float64), "
                                                "impulse (float32))")
    stored = results.STORED_DIR / "conform" / "recurrentgemma-rglru-torch--rglru.json"
    if stored.exists():
        verdict, why = conform.judge(json.loads(stored.read_text())["result"]["checks"])
        assert verdict == "deviates" and why.split(" (", 1)[0].endswith("checks exceed the tolerance table")
        assert "(float64)" not in why.split("; besides", 1)[0] and "bfloat16" in why.split("; besides", 1)[0], why


# -- 3. probes that find what real code gets wrong ------------------------------------------------------------------

def test_the_small_steps_check_names_expm1_that_the_radius_checks_miss():
    """S4D's C (exp(dt A) - 1) / A (a published kernel's): in float64 the radius checks pass; at steps down to 1e-6
    the cancellation shows, named expm1. The faithful kernel (expm1) passes every step."""
    result = run(P.s4d("difference"), "s4d", BOTH)
    assert "steps 1e-1 to 1e-6 (float64)" in failed(result) and keys(result) == {"expm1"}, \
        conform.format_result(result)
    assert check(result, "radius near 1").status == "pass"
    assert "C~ computed as exp(Delta Lambda) - 1: use expm1" in result.diagnoses()[0].words
    assert run(P.s4d(), "s4d", BOTH).verdict == "conforms"


@pytest.mark.parametrize("kind, bug, words", [
    ("rotrnn", "xi_difference", "xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F computed with 1 - gamma^2 as a difference: use "
                                "-expm1(-2 exp(gamma_log)), as the contract does"),
    ("lru", "gamma_difference", "gamma = sqrt(1 - |lambda|^2) recomputed with 1 - |lambda|^2 as a difference"),
])
def test_the_radius_sweep_names_a_difference_that_cancels_toward_1(kind, bug, words):
    build = getattr(P, kind)
    result = run(build(bug), kind, BOTH)
    assert keys(result) == {"radius_cancellation"}, conform.format_result(result)
    assert failed(result) <= {"radius near 1 (float64)", "radius near 1 (float32)", "impulse (float64)"}
    assert result.diagnoses()[0].words.startswith(words)
    assert "the recurrent part's error grows like eps / (1 - r^2) toward radius 1" in result.diagnoses()[0].words
    assert run(build(), kind, BOTH).verdict == "conforms"


@pytest.mark.parametrize("kind, bug, key, words", [
    ("rotrnn", "transposed", "rotation_transposed", "the rotation P is applied transposed"),
    ("rotrnn", "p2b", "input_P2B", "the input matrix is P^2 B where the contract has B"),
    ("rotrnn", "interleaved", "heads_interleaved", "the heads' states are interleaved"),
    ("rotrnn", "bidirectional_heads", "bidirectional_heads", "the bidirectional states are stored per head as "
                                                             "[fwd_h, bwd_h]"),
    ("lru", "no_gamma", "gamma_missing", "the input normalisation gamma is missing"),
    ("dlr", "shift", "kernel_shift_late", "the kernel is shifted by one lag: K_l = Re(sum_n W_n lambda_n^(l+1))"),
])
def test_what_published_layers_compute_instead_is_named(kind, bug, key, words):
    result = run(getattr(P, kind)(bug), kind, lengths=(1, 16))
    causes = {k for k in keys(result) if not k.endswith("_follows_output")}
    assert causes == {key}, conform.format_result(result)
    assert next(d.words for d in result.diagnoses() if d.key == key).startswith(words)


@pytest.mark.parametrize("kind", ["rotrnn", "dlr", "lru"])   # the layers written apart in planted_layers.py
def test_the_faithful_small_layers_conform(kind):
    result = run(getattr(P, kind)(), kind, BOTH, lengths=(1, 16))
    assert result.verdict == "conforms", conform.format_result(result)


# -- 4. checks for what was not checked -----------------------------------------------------------------------------

def test_state_and_parameter_gradients_of_a_hand_written_backward():
    """A PyTorch LRU: its state gradient (through state=) and parameter gradients (through params=) pass; a backward
    that drops the gradient of the state passed in, or doubles d/d nu_log (= d/d log(-log|lambda|)), fails naming it."""
    pytest.importorskip("torch")
    ok = run(P.torch_lru(), "lru", BOTH)
    assert ok.verdict == "conforms", conform.format_result(ok)
    assert {check(ok, n, d).status for n in ("state gradient", "parameter gradient") for d in BOTH} == {"pass"}
    state = run(P.torch_lru("state_grad"), "lru")
    assert failed(state) == {"state gradient (float64)"} and keys(state) == {"state_gradient_in"}, \
        conform.format_result(state)
    nu = run(P.torch_lru("nu_grad"), "lru")
    assert failed(nu) == {"parameter gradient (float64)"} and keys(nu) == {"parameter_gradient"}, \
        conform.format_result(nu)
    words = nu.diagnoses()[0].words
    assert "d<w, y>/d nu_log is wrong" in words and "theta_log" in words.split("the other keys conform")[1]


def test_a_step_that_reads_the_output_before_the_update_is_named():
    ok = run(P.lru(), "lru")
    assert check(ok, "step").status == "pass"
    late = run(P.lru("step_late"), "lru")
    assert failed(late) == {"step (float64)"} and keys(late) == {"step_reads_before_update"}, \
        conform.format_result(late)


def test_packed_sequences_with_a_returning_id_and_their_grouping_by_id():
    ok = run(P.lru(), "lru", lengths=(1, 16))
    packing = check(ok, "packing")
    assert packing.status == "pass" and "(0, " in packing.detail and re.search(r"\(0, \d+\), \(1, \d+\), \(0, ",
                                                                               packing.detail), packing.detail
    grouped = run(P.lru("grouped"), "lru", lengths=(1, 16))
    assert failed(grouped) == {"packing (float64)"} and keys(grouped) == {"packing_grouped_by_id"}, \
        conform.format_result(grouped)


def test_the_strategy_draws_segment_ids_that_return():
    from linrnn.testing import strategies

    def returns(segments):
        row = segments[0]
        runs = np.split(row, np.flatnonzero(np.diff(row)) + 1)
        return len(runs) > len(np.unique(row))

    drawn = hypothesis.find(strategies.segments(8, 1), returns)
    assert returns(drawn) and np.all(np.isin(drawn, (0, 1, 2)))


def test_a_scan_accumulated_in_bfloat16_fails_its_low_dtype_check():
    """S5 under the mixed-precision policy passes the bfloat16 checks; its scan accumulated in bfloat16 fails the long
    one, named, where the whole output (the random input, D u about its size) stays within the bound: the recurrent
    part (the impulse responses at lags >= 1) is judged on its own. A target that takes no bfloat16: n/a."""
    sets = {"discretization": "zoh", "clip_eigs": False}
    ok = run(P.s5(), "s5", ("float32", "bfloat16"), (1, 16), sets=sets, long_length=256)
    assert ok.verdict == "conforms" and check(ok, "long L=256", "bfloat16").status == "pass", \
        conform.format_result(ok)
    bad = run(P.s5("bf16_scan"), "s5", ("float32", "bfloat16"), (1, 16), sets=sets, long_length=256)
    long = check(bad, "long L=256", "bfloat16")
    assert failed(bad) == {"long L=256 (bfloat16)"} and keys(bad) == {"low_precision_recurrence"}, \
        conform.format_result(bad)
    parts = dict(re.findall(r"(lags >= 1|random input) ([\d.e+-]+)", long.detail))
    assert float(parts["lags >= 1"]) > long.rtol >= float(parts["random input"]), long.detail
    refused = run(P.lru(), "lru", ("bfloat16", "float16"))               # it raises NotImplementedError for them
    assert [(c.dtype, c.status) for c in refused.checks] == [("bfloat16", "n/a"), ("float16", "n/a")]
    assert refused.checks[0].detail == "not supported by the target: this LRU computes in float64 and float32"
    no_dtype = run(P.dlr(), "dlr", ("bfloat16",))                         # its build function takes no dtype=
    assert no_dtype.checks[0].detail == ("not supported by the target: the target refuses bfloat16: its build "
                                         "function takes no dtype= parameter")


def test_a_numpy_adapter_whose_call_cannot_take_bfloat16_refuses_it():
    """A user's NumPy adapter with a dtype parameter that looks its dtype up only when called (plain NumPy has no
    bfloat16): the call raises for bfloat16, which is the target refusing that dtype (n/a), not a failure."""
    def build(bundle, config, dtype="float64"):
        faithful = P.lru()(bundle, config, "float64")

        def call(u, state=None):
            return faithful(np.asarray(u, dtype={"float64": np.float64, "float32": np.float32}[dtype]), state)
        return call

    result = run(build, "lru", ("float64", "bfloat16"))
    assert result.verdict == "conforms", conform.format_result(result)
    refused = [c for c in result.checks if c.dtype == "bfloat16"]
    assert [(c.name, c.status) for c in refused] == [("build", "n/a")]
    assert "the target refuses bfloat16: impulse: KeyError: 'bfloat16'" in refused[0].detail


# -- docs/conform.md ---------------------------------------------------------------------------------------------

def finding_keys() -> set[str]:
    """Every finding's key the battery can name, read from its sources: Diagnosis(...), Finding(...),
    Hypothesis(...) and the keys built by `follows` and `merged`."""
    found = set()
    for path in (HERE.parents[1] / "verify").glob("conform_*.py"):
        text = path.read_text()
        found |= set(re.findall(r'(?:Diagnosis|Finding|Hypothesis)\(\s*"(\w+)"', text))
        found |= set(re.findall(r'return "(\w+)", \(f?"', text))                 # radius_cancellation
    found |= {f"{check}_follows_output" for check in ("padding", "packing", "very_long", "short_lengths", "steps",
                                                      "step", "state_gradient", "parameter_gradient")}
    found |= {f"{group}_varies" for group in conform.EXCLUSIVE}
    return found


def test_docs_list_every_finding_with_its_probe():
    text = DOCS.read_text()
    keys_ = finding_keys()
    assert len(keys_) > 40 and "gradient_follows_output" in keys_
    missing = sorted(k for k in keys_ if f"`{k}`" not in text)
    assert not missing, f"docs/conform.md does not list {missing}"

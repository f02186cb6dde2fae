"""The theory section: every derivation with a verdict, R3 by Monte Carlo in both frameworks, the rendered page."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from linrnn.base.tolerance import tolerance
from linrnn.experiments.montecarlo import QUICK, STARTS
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import theory as theory_section
from linrnn.theory.registry import DERIVATIONS


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    calls = []
    data, config = theory_section.compute(True, lambda done, total, what: calls.append((done, total, what)))
    out = tmp_path_factory.mktemp("theory")
    write_result(out, theory_section.NAME, data, {**config, "quick": True})
    assert calls and calls[-1][0] == calls[-1][1]
    return out, json.loads((out / "theory.json").read_text())["data"]


def test_every_claim_is_present_with_a_verdict_and_rendered_steps(computed):
    _, data = computed
    assert [c["claim"] for c in data["claims"]] == list(DERIVATIONS)
    for c in data["claims"]:
        assert c["verdict"] in ("proved", "verified", "fails") and c["findings"] and c["steps"]
        assert (c["condition"] != "") == (c["verdict"] == "fails")
        for step in c["steps"]:
            assert step["mathml"].startswith("<math") and step["latex"] and step["text"]
    r3 = next(c for c in data["claims"] if c["claim"] == "R3")
    assert r3["verdict"] == "fails" and r3["partly"]      # constant only from E||x_0||^2 = 1, not from x_0 = 0


def test_monte_carlo_matches_the_closed_forms_in_both_frameworks(computed):
    _, data = computed
    mc = data["montecarlo"]
    assert mc["config"]["n_seq"] == QUICK.n_seq and mc["t"][-1] == QUICK.T
    assert {(c["model"], c["start"], c["framework"]) for c in mc["curves"]} == \
        {("rotrnn", s, f) for s in STARTS for f in ("torch", "jax")} | {("lru", "zero", f) for f in ("torch", "jax")}
    for c in mc["curves"]:
        assert c["agrees"], (c["model"], c["start"], c["framework"], c["label"], c["worst_z"], mc["z_family"])
    # the zero start: 1 - gamma^(2t) inside the family-wise band at every stored t, and inside most 95% bands
    for c in (c for c in mc["curves"] if c["start"] == "zero"):
        mean, closed, se = (np.array(c[k]) for k in ("mean", "closed", "std_error"))
        assert np.all(np.abs(mean - closed) <= mc["z_family"] * se)
        assert c["within_ci"] >= 0.8
    # the returned final state equals the last output of the identity read-out (C = I, D = 0)
    assert all(v <= tolerance("state", "float64", QUICK.T).rtol for v in mc["state_mismatch"].values())
    r3 = {row["start"]: row for row in data["r3"]}
    assert not r3["zero"]["constant"] and r3["stationary"]["constant"] and r3["unit_first_input"]["constant"]
    for head in r3["zero"]["heads"]:                         # E||x_1||^2 = 1 - gamma^2 from x_0 = 0, far below 1
        assert head["closed_t1"] == pytest.approx(1 - head["gamma"] ** 2)


def test_page_renders_mathml_and_the_plots_and_escapes_text(computed, tmp_path):
    out, data = computed
    record = json.loads((out / "theory.json").read_text())
    record["data"]["claims"][0]["title"] = "<script>alert(1)</script>"
    (tmp_path / "theory.json").write_text(json.dumps(record))
    html = render(read_results([tmp_path], ["theory"]), (theory_section,), tmp_path / "page").read_text()
    assert 'id="theory"' in html and "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    maths = re.findall(r"<math\b.*?</math>", html, flags=re.S)
    assert len(maths) == sum(len(c["steps"]) for c in data["claims"])
    for m in maths:
        ET.fromstring(m)                                     # well-formed XML, inserted unescaped
    svgs = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(svgs) == 2 and all("<title>" in s for s in svgs)
    assert "log" in svgs[0] and "every curve agrees with its closed form" in html
    for claim in DERIVATIONS:
        assert f'id="theory-{claim}"' in html
    assert not re.search(r'(src|href)="https?:', html)     # nothing loads from the network (xmlns names only)

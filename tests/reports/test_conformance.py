"""The "Conformance" section: each built-in target of `linrnn conform`, each check with its status and error.

- computed for real (quick): the project's torch layers conform at every kind, the peers show their findings
  (or the reason they are absent), linrnn-jax is left out with the reason;
- a peer that cannot run here is listed with the reason, and what a result holds is escaped on the page.
"""

from __future__ import annotations

import re

from markupsafe import escape

from linrnn.impls.config import KINDS
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import conformance as section

FINDINGS = {("lru-pytorch", "lru"): ("D is applied as a dense matrix, not elementwise", "computes in float32 only",
                                     "the state is applied to batch element 0 only"),
            ("s5-pytorch", "s5"): ("the output is missing the factor 2 of conjugate symmetry",),
            ("s5-pytorch", "lru"): ("computes in float32 only",),
            ("lrnnx", "lru"): (),
            ("lrnnx", "s5"): ("the output is missing the factor 2 of conjugate symmetry", "use expm1",
                              "the bilinear transform with the sign of Delta flipped"),
            ("accelerated-scan-ref", "scan"): (),
            ("torch-associative-scan", "scan"): (),
            ("recurrentgemma", "scan"): ("computes in float32 only",),
            ("mamba-ssm-ref", "scan"): (), ("mamba-ssm", "scan"): (),     # mamba-ssm: where installed (a GPU machine)
            ("fla-hgrn-naive", "scan"): (), ("mambapy", "scan"): ()}      # fla-hgrn: left out of the quick report
OWN_SCANS = {("linrnn-torch-scan", "scan"), ("linrnn-jax-scan", "scan")}


def build(tmp_path) -> tuple[dict, str]:
    data, config = section.compute(True, lambda *args: None)
    write_result(tmp_path / "out", section.NAME, data, {**config, "quick": True})
    page = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    start = page.index(f'<section id="{section.NAME}"')
    return data, page[start:page.index("</section>", start)]


def block(html: str, target: str, kind: str) -> str:
    """The part of the section about one run: from its heading to the next."""
    start = html.index(f'<h3 id="conformance-{target}-{kind}">')
    end = html.find("<h3", start + 1)
    return html[start:end if end > 0 else len(html)]


def test_every_target_and_check_is_on_the_page(tmp_path):
    data, html = build(tmp_path)
    runs = {(r["target"], r["model"]): r for r in data["runs"]}
    assert set(runs) == set(FINDINGS) | {("linrnn-torch", k) for k in KINDS} | OWN_SCANS   # quick: no linrnn-jax
    assert "Quick run: <code>linrnn-jax</code> left out (JAX compiles" in html
    for kind in KINDS:
        own = block(html, "linrnn-torch", kind)
        assert runs["linrnn-torch", kind]["result"]["conforms"] and ">conforms</span>" in own
        rows = re.findall(r"<tr><td>([^<]+)</td><td>(float\d\d)</td><td>(.*?)</td>", own)
        assert {(name, dtype) for name, dtype, _ in rows if not name.startswith("variant")} == \
            {(n, d) for n in ("impulse", "random L=1", "random L=7", "random L=16", "radius near 1", "radius small",
                              "long L=4096", "bidirectional", "state", "gradient", "state hand-over", "lengths 1-8",
                              "packing", "padding") for d in ("float64", "float32")}       # the very long one left out
        assert all("pass" in status for *_, status in rows)
    for (target, kind), words in FINDINGS.items():
        part = block(html, target, kind)
        if runs[target, kind]["absent"]:
            assert str(escape(f"Not run here: {runs[target, kind]['absent']}")) in part   # as the template escapes it
            continue
        verdict = ">deviates</span>" if words else ">conforms</span>"
        assert verdict in part and all(w in part for w in words), part
        assert ("FAIL" in part) == bool(words)
    table = html[html.index('<h3 id="conformance-findings">'):html.index('<h3 id="conformance-peers">')]
    for (target, kind), words in FINDINGS.items():
        assert f"<code>linrnn conform {target} --model {kind}</code>" in table
        assert all(w in table for w in words) if not runs[target, kind]["absent"] else "not run here" in table
    peers = html[html.index('<h3 id="conformance-peers">'):]
    assert all(f"<code>{name}</code>" in peers for name in section.peers_table.__globals__["BUILTINS"])


def test_an_absent_peer_is_named_with_the_reason(tmp_path, monkeypatch):
    reason = "lru-pytorch is not installed (LRU-pytorch: `import LRU_pytorch` failed: No module named <x>)"
    monkeypatch.setattr(section, "PEER_RUNS", (("lru-pytorch", "lru"),))
    monkeypatch.setattr(section, "OWN_TARGETS", ())
    monkeypatch.setattr(section, "OWN_SCANS", ())
    monkeypatch.setattr(section, "unavailable", lambda target: reason)
    data, html = build(tmp_path)
    assert data["runs"] == [{"target": "lru-pytorch", "model": "lru", "group": "peer", "absent": reason,
                             "result": None}]
    assert "Not run here: lru-pytorch is not installed" in html and "No module named &lt;x&gt;)" in html
    assert '<table class="conformance">' not in html                # no checks: only the findings and peers tables
    assert "<td>not run here</td>" in html

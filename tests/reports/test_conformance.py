"""The "Conformance" section: each built-in target of `linrnn conform`, each check with its status and error.

- computed for real (quick): the project's torch layers conform at every kind, the peers show their findings
  (run here, or their stored findings marked as stored, or the reason they are absent), linrnn-jax is left out with
  the reason;
- a peer that cannot run here is listed with the reason, and what a result holds is escaped on the page;
- a peer that cannot run here shows its stored finding (package version, date, command), marked as stored; the
  committed stored findings read, are of the target and contract their names say, and hold the findings below;
- the Triton peers run in a fresh process (Triton's interpreter is chosen before triton is imported).
"""

from __future__ import annotations

import re

from markupsafe import escape

from linrnn.impls import specs
from linrnn.impls.config import RECURRENT_KINDS
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.experiments import conformance as measured
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
# the stored findings of peers the quick report leaves out (QUICK_OMITTED): RecurrentGemma's RG-LRU layers, float32
# inside a float64 run, and in bfloat16 / float16 the recurrence's transition in the low dtype (its `a_t`, beyond the
# mixed-precision policy)
OMITTED_FINDINGS = {("recurrentgemma-rglru-torch", "rglru"): ("computes in float32 only",
                                                              "the recurrence computes in float16"),
                    ("recurrentgemma-rglru-jax", "rglru"): ("computes in float32 only",
                                                            "the recurrence computes in float16"),
                    ("recurrentgemma-rglru-jax-assoc", "rglru"): ("computes in float32 only",
                                                                  "the recurrence computes in float16")}
# each peer's verdict (issue 47's categories): right but not in float64 (its float64 checks at the float32 level, or
# refused) is "conforms (float32 only)"
VERDICTS = {("lru-pytorch", "lru"): "deviates", ("s5-pytorch", "s5"): "deviates",
            ("s5-pytorch", "lru"): "conforms (float32 only)", ("lrnnx", "lru"): "conforms (float32 only)",
            ("lrnnx", "s5"): "deviates", ("accelerated-scan-ref", "scan"): "conforms",
            ("torch-associative-scan", "scan"): "conforms", ("recurrentgemma", "scan"): "conforms (float32 only)",
            ("mamba-ssm-ref", "scan"): "conforms (float32 only)", ("mamba-ssm", "scan"): "conforms (float32 only)",
            ("fla-hgrn-naive", "scan"): "conforms (float32 only)", ("mambapy", "scan"): "conforms",
            ("accelerated-scan", "scan"): "conforms", ("fla-hgrn", "scan"): "conforms (float32 only)",
            ("recurrentgemma-rglru-torch", "rglru"): "deviates", ("recurrentgemma-rglru-jax", "rglru"): "deviates",
            ("recurrentgemma-rglru-jax-assoc", "rglru"): "deviates"}
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
    torch_runs = {("linrnn-torch", k) for k in RECURRENT_KINDS}
    assert set(runs) == set(FINDINGS) | torch_runs | OWN_SCANS   # quick: no linrnn-jax
    assert "Quick run: <code>linrnn-jax</code> left out (JAX compiles" in html
    for kind in RECURRENT_KINDS:
        own = block(html, "linrnn-torch", kind)
        assert runs["linrnn-torch", kind]["result"]["verdict"] == "conforms" and ">conforms</span>" in own
        rows = re.findall(r"<tr><td>([^<]+)</td><td>(float\d\d|bfloat16)</td><td>(.*?)</td>", own)
        steps = ("steps 1e-1 to 1e-6",) if specs.spec(kind).discretisation is not None else ()
        outputs = ("impulse", "random L=1", "random L=7", "random L=16", "radius near 1", "radius small")
        assert {(name, dtype) for name, dtype, _ in rows if not name.startswith("variant")} == \
            {(n, d) for n in outputs + steps + ("long L=4096", "bidirectional", "state", "gradient", "state gradient",
                                                "parameter gradient", "state hand-over", "step", "lengths 1-8",
                                                "packing", "padding") for d in ("float64", "float32")} | \
            {(n, d) for n in outputs + ("long L=512",) for d in ("bfloat16", "float16")}   # the very long one left out
        assert all("pass" in status for *_, status in rows)
    for (target, kind), words in FINDINGS.items():
        part = block(html, target, kind)
        if runs[target, kind]["absent"] and not runs[target, kind]["stored"]:
            assert str(escape(f"Not run here: {runs[target, kind]['absent']}")) in part   # as the template escapes it
            continue
        if runs[target, kind]["stored"]:
            stored = runs[target, kind]["stored"]
            assert str(escape(f"Stored finding, not run here ({runs[target, kind]['absent']}): {stored['package']} "
                              f"{stored['version']}")) in part, part
        verdict = VERDICTS[target, kind]
        assert f">{verdict}</span>" in part and all(w in part for w in words), part
        assert ("FAIL" in part) == bool(words)
    table = html[html.index('<h3 id="conformance-findings">'):html.index('<h3 id="conformance-peers">')]
    for (target, kind), words in FINDINGS.items():
        assert f"<code>linrnn conform {target} --model {kind}" in table
        if runs[target, kind]["result"] is not None:
            row = table[table.index(f"<tr><td><code>{target}</code></td><td>{kind}</td>"):]
            assert row.split("</tr>")[0].count(VERDICTS[target, kind]) >= 1, row[:400]
        assert all(w in table for w in words) if not runs[target, kind]["absent"] or runs[target, kind]["stored"] \
            else "not run here" in table
    peers = html[html.index('<h3 id="conformance-peers">'):]
    assert all(f"<code>{name}</code>" in peers for name in measured.peers_table.__globals__["BUILTINS"])


def test_an_absent_peer_is_named_with_the_reason(tmp_path, monkeypatch):
    reason = "lru-pytorch is not installed (LRU-pytorch: `import LRU_pytorch` failed: No module named <x>)"
    monkeypatch.setattr(measured, "PEER_RUNS", (("lru-pytorch", "lru"),))
    monkeypatch.setattr(measured, "OWN_TARGETS", ())
    monkeypatch.setattr(measured, "OWN_SCANS", ())
    monkeypatch.setattr(measured, "unavailable", lambda target: reason)
    monkeypatch.setattr(measured, "STORED_FINDINGS", tmp_path / "none")
    data, html = build(tmp_path)
    why = "no stored finding (lru-pytorch--lru.json is not in none/)"
    assert data["runs"] == [{"target": "lru-pytorch", "model": "lru", "group": "peer", "absent": f"{reason}; {why}",
                             "result": None, "stored": None}]
    assert "Not run here: lru-pytorch is not installed" in html and "No module named &lt;x&gt;); no stored" in html
    assert '<table class="conformance">' not in html                # no checks: only the findings and peers tables
    assert "<td>not run here</td>" in html


def stored_record(target: str, model: str, deviates: bool = True, version: str = "9.9"):
    from linrnn.base.results import ConformRecord, Envelope

    checks = [{"name": "impulse", "dtype": "float32", "status": "fail" if deviates else "pass", "rel": 0.5,
               "rtol": 1e-5, "detail": "planted <b>", "diagnoses": []}]
    result = {"target": target, "model": model, "dtypes": ["float32"], "lengths": [1], "seed": 0, "pins": {},
              "long_length": 0, "very_long_length": 0, "conforms": not deviates, "checks": checks,
              "diagnoses": [{"key": "dense_D", "words": "D is applied as a dense matrix, not elementwise"}]
              if deviates else []}
    envelope = Envelope(date="2026-12-05T07:00:00+00:00", machine={"label": "the 2-core CPU"},
                        libraries={"LRU-pytorch": version}, command=f"linrnn conform {target} --model {model} --json F",
                        code_version="0.2.0+gabc")
    return ConformRecord(result=result, envelope=envelope)


def test_a_peer_that_cannot_run_here_shows_its_stored_finding_marked_as_stored(tmp_path, monkeypatch):
    from linrnn.base.results import write
    from linrnn.reports import digest

    monkeypatch.setattr(measured, "PEER_RUNS", (("lru-pytorch", "lru"),))
    monkeypatch.setattr(measured, "OWN_TARGETS", ())
    monkeypatch.setattr(measured, "OWN_SCANS", ())
    monkeypatch.setattr(measured, "unavailable", lambda target: "lru-pytorch is not installed (here)")
    monkeypatch.setattr(measured, "STORED_FINDINGS", tmp_path / "conform")
    write(tmp_path / "conform" / "lru-pytorch--lru.json", stored_record("lru-pytorch", "lru"))
    data, html = build(tmp_path)
    run = data["runs"][0]
    assert run["absent"] == "lru-pytorch is not installed (here)" and run["result"]["conforms"] is False
    assert run["stored"] == {"file": str(tmp_path / "conform" / "lru-pytorch--lru.json"),
                             "date": "2026-12-05T07:00:00+00:00", "command": "linrnn conform lru-pytorch --model lru "
                             "--json F", "package": "LRU-pytorch", "version": "9.9", "machine": "the 2-core CPU",
                             "code_version": "0.2.0+gabc"}
    assert ("Stored finding, not run here (lru-pytorch is not installed (here)): LRU-pytorch 9.9,\nmeasured "
            "2026-12-05T07:00:00+00:00 on the 2-core CPU") in html
    assert "D is applied as a dense matrix, not elementwise" in html and "planted &lt;b&gt;" in html
    assert ">deviates</span><div class=\"stored\">stored finding: LRU-pytorch 9.9, 2026-12-05 (the 2-core CPU); not " \
        "run here</div>" in html
    assert "<code>linrnn conform lru-pytorch --model lru --json F</code>" in html and "not run here</td>" not in html
    verdict = measured.verdict(run)
    assert verdict["verdict"] == "deviates" and verdict["stored"] == (
        "stored finding: LRU-pytorch 9.9, 2026-12-05, `linrnn conform lru-pytorch --model lru --json F`")
    assert "lru-pytorch as lru deviates (1 of 1 checks fail) (stored finding: LRU-pytorch 9.9" in section.summary(data)
    assert digest.conformance([{"data": data, "meta": {}}])[0]["stored"] == verdict["stored"]
    md = (tmp_path / "page" / "report.md").read_text()
    assert "- lru-pytorch as lru: **deviates** (stored finding: LRU-pytorch 9.9, 2026-12-05, \\`linrnn conform " \
        "lru-pytorch --model lru --json F\\`): D is applied as a dense matrix, not elementwise" in md, md
    page = (tmp_path / "page" / "report.html").read_text()
    # the first screen counts the peers by verdict and names a deviating one with its stored marker
    assert '1 deviates</span> (<span class="peer"' in page
    assert 'lru-pytorch as lru 1/1 <span class="stored" title="stored finding: LRU-pytorch 9.9' in page


def test_a_stored_finding_of_another_target_or_unreadable_is_no_finding(tmp_path):
    from linrnn.base.results import write

    write(tmp_path / "lru-pytorch--lru.json", stored_record("s5-pytorch", "lru"))
    (tmp_path / "lrnnx--lru.json").write_text("{")
    assert measured.stored_finding("lru-pytorch", "lru", tmp_path) == (
        None, None, "its stored finding lru-pytorch--lru.json is of s5-pytorch as lru, not of lru-pytorch as lru")
    result, stored, why = measured.stored_finding("lrnnx", "lru", tmp_path)
    assert result is None and stored is None and why.startswith("its stored finding does not read (") and \
        "unreadable JSON" in why


def test_the_committed_stored_findings_are_the_documented_ones():
    """Every peer run of the report has a stored finding but mamba-ssm's fused kernel (never measured: no CUDA device
    here); each reads, is of the target and contract its name says, records the package's version, the date and the
    command, and holds the findings the page is tested for above."""
    stored = {p.name for p in measured.STORED_FINDINGS.glob("*.json")}
    assert stored == {f"{t}--{m}.json" for t, m in measured.PEER_RUNS if t != "mamba-ssm"}
    for target, model in measured.PEER_RUNS:
        if target == "mamba-ssm":
            continue
        result, info, why = measured.stored_finding(target, model)
        assert why == "" and info["version"] != "not recorded" and info["command"].startswith(
            f"linrnn conform {target} --model {model}") and info["date"].startswith("2026-"), (target, info)
        words = {**FINDINGS, **OMITTED_FINDINGS}.get((target, model), ())
        deviations = [d["words"] for d in result["diagnoses"]]
        assert result["verdict"] == measured.judged(result)[0] == VERDICTS[target, model], (target, model, deviations)
        assert all(any(w in d for d in deviations) for w in words), (target, model, deviations)


def test_the_triton_peers_run_in_a_fresh_process():
    """`run_fresh`: `linrnn conform` in a process of its own with TRITON_INTERPRET=1, its record read back; a target
    that cannot run is the one line it failed with."""
    result, why = measured.run_fresh("linrnn-torch-scan", "scan", lengths=(1, 3))
    assert why is None and result["target"] == "linrnn-torch-scan" and result["conforms"], result
    assert result["very_long_length"] == 0 and result["lengths"] == [1, 3]
    result, why = measured.run_fresh("nope", "scan")
    assert result is None and why.startswith("target: expected module:function or one of lru-pytorch, "), why


def test_a_triton_peer_that_ran_apart_is_listed_as_runnable(monkeypatch):
    """In the report's process triton is imported before the Triton peers' kernels could choose the interpreter; they
    run in a process of their own, and the list of targets says they ran (not this process's import error)."""
    result = stored_record("fla-hgrn", "scan", deviates=False).result
    monkeypatch.setattr(measured, "PEER_RUNS", (("fla-hgrn", "scan"),))
    monkeypatch.setattr(measured, "OWN_TARGETS", ())
    monkeypatch.setattr(measured, "OWN_SCANS", ())
    monkeypatch.setattr(measured, "run_fresh", lambda target, kind: (result, None))
    monkeypatch.setattr(measured, "peers_table", lambda: [
        {"target": "fla-hgrn", "missing": "fla-hgrn cannot be imported (triton was imported before ...)"},
        {"target": "mambapy", "missing": "mambapy is not installed"}])
    data, _ = section.compute(False, lambda *a: None)
    assert data["runs"][0]["absent"] is None and data["runs"][0]["result"] is result
    assert [r["missing"] for r in data["peers"]] == [None, "mambapy is not installed"]

"""What a reader takes in first, as plain data: the digest of a results folder, `report.md`, and what changed.

The page's first screen, `report.md` (for CI and pull requests) and `linrnn report --from A --against B`
all read the same digest of the loaded results and the settled ledger (`build`):

    {"claims":      [{"id", "short", "claim", "verdict", "scale", "rank"}, ...]     the ledger's rows, in order
     "crosscheck":  {"present", "ok", "comparisons", "failed", "rows", "columns", "row_groups", "column_groups",
                     "cells": {(row, column): cell}, "worst": cell | None}           worst error / tolerance per cell
     "speed":       {"present", "sweeps": [...], "ratios": {key: {"value", "range"}}}   training speed beside the peers
     "conformance": [{"target", "model", "group", "verdict", "failed", "checks", "diagnoses", "stored"}, ...]}
                     (stored: None, or the words naming a peer's stored finding where it did not run here)

Nothing here decides a verdict (the ledger does) or measures anything: it only reads. `changes` compares two
digests; `markdown` writes report.md.
"""

from __future__ import annotations

import math
from typing import Any

from linrnn.reports import plots
from linrnn.reports.ledger import RANK
from linrnn.experiments import conformance as conformance_measured
from linrnn.reports.sections import training_speed as training_speed_section

# Each claim in a few words (the ledger's statement is the hover text and the ledger's own block)
SHORT = {
    "R1": "exp(M \u2212 M\u1d40) stays a rotation",
    "R2": "A\u1d4f cheaply from 2\u00d72 blocks",
    "R3": "normalisation keeps E\u2016x\u209c\u2016\u00b2 constant",
    "R4": "independent heads, mixed linearly",
    "R5": "conjugate-pair LRU = multi-head RotRNN",
    "R6": "LRA: competitive with S4, S5, LRU",
    "R7": "Speech Commands 35: as an LRU",
    "R8": "state norm steady over training",
    "R9": "LRU lacks pairs and a coherent norm",
    "D1": "LRA without discretisation \u2248 S4/S4D",
    "D2": "signal over a million steps",
    "D3": "size N expresses any length-N kernel",
    "D4": "Shift solved, ContextShift a struggle",
    "D5": "SubTrees, Segmentation: beats attention",
    "D6": "Speech Commands 10: 97.1 %, as S4",
    "D7": "PG-19 at 1.2B: as a Transformer",
    "D8": "robust to the layer norm's position",
    "D9": "O(L) inference",
}

PAIRS = (("reference-torch", "output", "ref\u2013torch"), ("reference-jax", "output", "ref\u2013jax"),
         ("torch-jax", "output", "torch\u2013jax"), ("torch-jax", "gradients", "gradients"))
# a cross-check cell got worse (--against): it fails now and did not, or its ratio grew by more than WORSE_FACTOR
# (rounding differs that much between machines and library versions) to at least WORSE_FLOOR of the tolerance
# (below it, the heatmap's lightest greens, a change is rounding noise however large its factor)
WORSE_FACTOR = 4.0
WORSE_FLOOR = 0.01
MAX_MARKDOWN_CHANGES = 12


def build(results: list[dict], ledger_rows: list[dict]) -> dict[str, Any]:
    """The digest of the loaded results (`Loaded.results`) and the ledger's rows (`ledger.build`)."""
    of = {}
    for r in results:
        of.setdefault(r["section"], []).append(r)
    return {"claims": claims(ledger_rows), "crosscheck": crosscheck(of.get("crosscheck", [])),
            "speed": speed(of.get("training_speed", [])), "conformance": conformance(of.get("conformance", []))}


def claims(rows: list[dict]) -> list[dict]:
    return [{"id": r["id"], "short": SHORT.get(r["id"], r["claim"]), "claim": r["claim"], "verdict": r["verdict"],
             "scale": r.get("scale") or "", "settle": r.get("settle") or "", "rank": RANK.get(r["verdict"], 0),
             "links": list(r.get("links") or [])}
            for r in rows]


def _machine(record: dict) -> str:
    return str(((record.get("meta") or {}).get("machine") or {}).get("label", "?"))


def crosscheck(records: list[dict]) -> dict[str, Any]:
    """Worst error / tolerance per mixer x mode (rows) and dtype x pair (columns), over every record."""
    cells, rows, dtypes = {}, [], []
    comparisons = failed = 0
    for record in records:
        data = record["data"]
        entries = data.get("entries") or []
        comparisons += len(entries)
        failed += sum(not e.get("ok") for e in entries)
        for s in data.get("summary") or []:
            row, label = (s["mixer"], s["mode"]), _pair_label(s["pair"], s["quantity"])
            if label is None:
                continue
            rows += [row] if row not in rows else []
            dtypes += [s["dtype"]] if s["dtype"] not in dtypes else []
            key = (row, (s["dtype"], label))
            ratio = _float(s.get("worst_ratio"))
            machine = f"{_machine(record)}: " if len(records) > 1 else ""
            cell = {"row": f"{s['mixer']} {s['mode']}", "column": f"{s['dtype']} {label}", "ratio": ratio,
                    "ok": bool(s.get("ok")), "comparisons": s.get("comparisons"), "worst": str(s.get("worst", "")),
                    "note": f"{machine}{s['mixer']} {s['mode']}, {s['dtype']}, {s['pair']} {s['quantity']}: worst "
                            f"error / tolerance {_g(ratio)} ({s.get('worst', '')}), {s.get('comparisons')} "
                            f"comparison(s), largest relative error {_float(s.get('max_rel')):.2e}"}
            if key not in cells or _worse(ratio, cells[key]["ratio"]):
                cells[key] = cell
    columns = [(d, label) for d in dtypes for _, _, label in PAIRS]
    worst = max(cells.values(), key=lambda c: _order(c["ratio"]), default=None)
    return {"present": bool(records), "ok": bool(records) and failed == 0, "comparisons": comparisons,
            "failed": failed, "rows": rows, "columns": columns, "cells": cells, "worst": worst,
            "row_groups": _runs([m for m, _ in rows]), "column_groups": _runs([d for d, _ in columns])}


def _pair_label(pair: str, quantity: str) -> str | None:
    return next((label for p, q, label in PAIRS if p == pair and q == quantity), None)


def _runs(keys: list[str]) -> list[list]:
    """[label, count] for each run of equal neighbours."""
    out: list[list] = []
    for k in keys:
        if out and out[-1][0] == k:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return out


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _order(v: float) -> float:
    """NaN sorts as the worst value (a comparison that produced no number fails)."""
    return math.inf if math.isnan(v) else v


def _worse(a: float, b: float) -> bool:
    return _order(a) > _order(b)


def _g(v: float) -> str:
    return "nan" if math.isnan(v) else plots.heat_value(v)


def heatmap(cc: dict, marks=()) -> dict:
    """The cross-check digest as a heatmap description (`plots.heatmap`): colour = worst error / tolerance."""
    values = [[cc["cells"].get((r, c), {}).get("ratio") for c in cc["columns"]] for r in cc["rows"]]
    notes = [[cc["cells"].get((r, c), {}).get("note", "no such comparison") for c in cc["columns"]] for r in cc["rows"]]
    worst = cc["worst"]
    desc = (f"{cc['comparisons'] - cc['failed']} of {cc['comparisons']} comparisons within tolerance; worst cell "
            f"{worst['row']}, {worst['column']}: {_g(worst['ratio'])} of its tolerance" if worst else "no comparisons")
    return plots.heatmap("Cross-check: worst error / tolerance per mixer and mode (rows), dtype and pair of "
                         "implementations (columns), log colour scale; below 1 passes",
                         [m for _, m in cc["rows"]], [label for _, label in cc["columns"]], values, notes=notes,
                         marks=marks, row_groups=cc["row_groups"], column_groups=cc["column_groups"], low=1e-4,
                         high=1.0, threshold=1.0, label="error / tolerance", desc=desc)


def speed(records: list[dict]) -> dict[str, Any]:
    """The stored training-speed sweeps' headline (`training_speed.headline`) and every ratio timed in rounds."""
    sweeps, ratios = [], {}
    for record in records[:1]:                # every record renders the same stored sweeps of the checkout
        for s in record["data"].get("stored") or []:
            head = training_speed_section.headline(s)
            if head is not None:
                sweeps.append(head)
            ratios.update(training_speed_section.round_ratios(s))
    return {"present": bool(sweeps), "sweeps": sweeps, "ratios": ratios}


def conformance(records: list[dict]) -> list[dict]:
    out = []
    for record in records:
        prefix = f"{_machine(record)}: " if len(records) > 1 else ""
        for run in record["data"].get("runs") or []:
            out.append({**conformance_measured.verdict(run), "target": prefix + str(run.get("target")),
                        "model": str(run.get("model")), "group": run.get("group")})
    return out


# -- what changed between two runs ----------------------------------------------------------------

def changes(new: dict, old: dict) -> dict[str, Any]:
    """What moved from `old` (the --against folder) to `new`: verdicts, cross-check cells that got worse, ratios
    timed in rounds that left the old rounds' range, conformance verdicts. Each item: {"kind", "what", "before",
    "after", "worse", "text"}; with "marks": the heatmap cells of `new` that got worse."""
    items = []
    before = {c["id"]: c for c in old["claims"]}
    for c in new["claims"]:
        b = before.get(c["id"])
        if b is not None and b["verdict"] != c["verdict"]:
            items.append({"kind": "verdict", "what": c["id"], "before": b["verdict"], "after": c["verdict"],
                          "worse": c["rank"] < b["rank"],
                          "text": f"{c['id']} ({c['short']}): {b['verdict']} \u2192 {c['verdict']}"})
    marks = []
    ncc, occ = new["crosscheck"], old["crosscheck"]
    for key, cell in ncc["cells"].items():
        was = occ["cells"].get(key)
        if was is None:
            continue
        a, b = cell["ratio"], was["ratio"]
        now_fails, failed = not cell["ok"], not was["ok"]
        grew = _order(a) > WORSE_FACTOR * _order(b) and _order(a) >= WORSE_FLOOR
        if (now_fails and not failed) or grew:
            marks.append([ncc["rows"].index(key[0]), ncc["columns"].index(key[1])])
            items.append({"kind": "crosscheck", "what": f"{cell['row']}, {cell['column']}", "before": b, "after": a,
                          "worse": True, "text": f"cross-check {cell['row']}, {cell['column']}: error / tolerance "
                                                 f"{_g(b)} \u2192 {_g(a)}" + (" (now fails)" if now_fails and not failed else "")})
    for key, r in new["speed"]["ratios"].items():
        was = old["speed"]["ratios"].get(key)
        if was is None or was.get("range") is None:
            continue
        low, high = was["range"]
        if not low <= r["value"] <= high:
            items.append({"kind": "speed", "what": key, "before": was["value"], "after": r["value"],
                          "worse": r["value"] > high,
                          "text": f"{key}: {was['value']:.3g} (rounds {low:.3g}\u2013{high:.3g}) \u2192 {r['value']:.3g}"})
    earlier = {(c["target"], c["model"]): c for c in old["conformance"]}
    for c in new["conformance"]:
        b = earlier.get((c["target"], c["model"]))
        if b is not None and b["verdict"] != c["verdict"]:
            items.append({"kind": "conformance", "what": f"{c['target']} as {c['model']}", "before": b["verdict"],
                          "after": c["verdict"], "worse": c["verdict"] == "deviates",
                          "text": f"{c['target']} as {c['model']}: {b['verdict']} \u2192 {c['verdict']}"})
    return {"items": items, "marks": marks}


# -- report.md ------------------------------------------------------------------------------------

def _md(text: Any) -> str:
    """Text for a Markdown table cell or line: no line breaks, table pipes and HTML escaped."""
    out = " ".join(str(text).split())
    for a, b in (("\\", "\\\\"), ("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("`", "\\`"), ("*", "\\*"),
                 ("_", "\\_"), ("[", "\\["), ("]", "\\]")):
        out = out.replace(a, b)
    return out


def _why(c: dict) -> str:
    """What a peer's line says after its verdict: the name of each deviation (a diagnosis up to its first colon), or
    for a target not run here, why: its reason without the target's name in front, up to the first semicolon."""
    if c["verdict"] == "not run here":
        reason = c["diagnoses"][0] if c["diagnoses"] else ""
        return reason.removeprefix(f"{c['target']}: ").split("; ")[0]
    return "; ".join(d.split(":")[0] for d in c["diagnoses"])


def _settle_short(text: str, width: int = 140) -> str:
    """A claim's "what would settle it" in one table cell: cut at a word, the page has the rest."""
    if not text:
        return "-"
    return text if len(text) <= width else text[:width].rsplit(" ", 1)[0] + " ..."


def markdown(digest: dict, *, rendered: str, files: int, quick: bool, against: str | None = None,
             changed: dict | None = None) -> str:
    """report.md: GitHub-flavoured Markdown, at most about 80 lines (the claims table, the cross-check's result
    and worst cell, the speed headline, a line per peer; with --against, what changed first)."""
    lines = ["# linrnn report", "",
             f"Rendered {_md(rendered)} from {files} results file(s)"
             + (" (a **quick** run: smaller sizes, numbers indicative)" if quick else "") + ". The page: `report.html`.",
             ""]
    if changed is not None:
        items = changed["items"]
        lines += [f"## Changes against {_md(against)}", ""]
        if not items:
            lines.append("Nothing moved: the same verdicts, no cross-check cell worse, every ratio within its rounds.")
        for item in items[:MAX_MARKDOWN_CHANGES]:
            lines.append(f"- {'**worse** ' if item['worse'] else ''}{_md(item['text'])}")
        if len(items) > MAX_MARKDOWN_CHANGES:
            lines.append(f"- and {len(items) - MAX_MARKDOWN_CHANGES} more (the page lists them all)")
        lines.append("")
    lines += ["## Claims", "", "| claim | in a few words | verdict | scale | what would settle it |",
              "|---|---|---|---|---|"]
    lines += [f"| {c['id']} | {_md(c['short'])} | **{_md(c['verdict'])}** | {_md(c['scale'] or '-')} | "
              f"{_md(_settle_short(c['settle']))} |" for c in digest["claims"]]
    lines += ["", "## Cross-check", ""]
    cc = digest["crosscheck"]
    if not cc["present"]:
        lines.append("No cross-check results in this report.")
    else:
        overall = (f"all {cc['comparisons']} comparisons within tolerance" if cc["failed"] == 0 else
                   f"**{cc['failed']} of {cc['comparisons']} comparisons exceed the tolerance**")
        w = cc["worst"]
        lines.append(f"Reference, PyTorch and JAX: {overall}; worst cell {_md(w['row'])}, {_md(w['column'])}: "
                     f"{_md(_g(w['ratio']))} of its tolerance ({_md(w['worst'])})."
                     if w else f"Reference, PyTorch and JAX: {overall}.")
    lines += ["", "## Speed", ""]
    sp = digest["speed"]
    if not sp["present"]:
        lines.append("No stored training-speed sweep beside the peers in this report.")
    for s in sp["sweeps"]:
        lines.append(_md(s["text"]))
    lines += ["", "## Conformance", ""]
    peers = [c for c in digest["conformance"] if c["group"] == "peer"]
    own = [c for c in digest["conformance"] if c["group"] != "peer"]
    for c in peers:
        why = _why(c)
        lines.append(f"- {_md(c['target'])} as {_md(c['model'])}: **{_md(c['verdict'])}**"
                     + (f" ({_md(c['stored'])})" if c.get("stored") else "") + (f": {_md(why)}" if why else ""))
    if own:
        ok = sum(c["verdict"] == "conforms" for c in own)
        lines.append(f"- this project's layers: {ok} of {len(own)} conform"
                     + ("" if ok == len(own) else " (" + ", ".join(_md(f"{c['target']} as {c['model']}") for c in own
                                                              if c["verdict"] != "conforms") + " do not)"))
    if not digest["conformance"]:
        lines.append("No conformance results in this report.")
    return "\n".join(lines) + "\n"

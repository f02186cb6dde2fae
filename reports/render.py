"""Render the report page from saved results: one self-contained HTML file, and report.md beside it.

The page's layout (docs/report.md): a first screen with the claims' verdicts, the cross-check's heatmap and the
speed and conformance headlines (from `linrnn.reports.digest`); then the ledger, one block per claim; then each
section's one-line finding, its lead figures, and its details in a closed <details> block.

No network: the CSS is inline, plots are inline SVG, formulas are MathML (rendered by the browser
itself), and there are no scripts or web fonts. Jinja2 autoescaping is on for every template, and no
template marks anything read from a results file as safe. Markup enters the page only two ways:

- figures: the results store each figure's *description* (`linrnn.reports.plots`), or a section derives it
  from its saved data here (`render_plots`); the renderer draws the SVG itself, here, merging the same
  figure from several results files (one series per machine), and the cross-check's heatmap from the
  digest (`linrnn.reports.digest`), whose every label and hover text is escaped as it is written;
- formulas: SymPy's MathML, stored in the theory results, is parsed and written out again by
  `mathml` from an allow-list of presentation-MathML elements and attributes, so nothing else
  (a script, an event handler, a link) can pass; anything outside the list shows as a note instead.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from linrnn.base.errors import LinrnnError
from linrnn.reports import digest, ledger, plots
from linrnn.reports.results import Loaded

MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
MATHML_ELEMENTS = frozenset(
    "math mrow mi mn mo ms mtext mspace msup msub msubsup munder mover munderover mfrac msqrt mroot mfenced "
    "mtable mtr mtd mlabeledtr mstyle mpadded mphantom menclose merror mmultiscripts mprescripts none "
    "semantics annotation".split())
MATHML_ATTRIBUTES = frozenset(
    "display mathvariant mathsize stretchy fence separator separators lspace rspace open close accent "
    "accentunder movablelimits form largeop symmetric linethickness columnalign rowalign columnspacing "
    "rowspacing columnlines rowlines frame width height depth scriptlevel displaystyle notation "
    "encoding".split())


def verdict_class(verdict: str) -> str:
    """The CSS classes of a verdict badge: one colour per strength (proved, verified, reproduced at reduced scale,
    inconclusive, contradicted, not run here), lighter when "in part"."""
    base = verdict.replace(" (in part)", "")
    name = {"proved": "v-proved", "verified": "v-verified", "reproduced": "v-reproduced",
            "inconclusive": "v-inconclusive", "contradicted": "v-contradicted", "not run here": "v-notrun"}.get(base,
                                                                                                          "v-other")
    return f"verdict {name}" + (" v-part" if verdict.endswith("(in part)") else "")


def environment() -> Environment:
    env = Environment(loader=PackageLoader("linrnn.reports", "templates"),
                      autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["sci"] = lambda x, digits=2: (f"{x:.{digits}e}" if isinstance(x, (int, float)) else str(x))
    env.filters["fixed"] = lambda x, digits=3: (f"{x:.{digits}f}" if isinstance(x, (int, float)) else str(x))
    env.filters["mathml"] = mathml
    env.globals["claim_parts"] = ledger.record_parts
    env.filters["verdict_class"] = verdict_class
    env.globals["thresholds"] = {"solved_r2": ledger.SOLVED_R2, "fails_r2": ledger.FAILS_R2,
                                 "flatter_ratio": ledger.FLATTER_RATIO, "almost_constant_cv": ledger.ALMOST_CONSTANT_CV, "drift_factor": ledger.DRIFT_FACTOR}
    return env


# -- formulas -----------------------------------------------------------------------------------

def _write(element: ET.Element, out: list[str]) -> None:
    if not element.tag.startswith(MATHML_NS):
        raise ValueError(f"element {element.tag!r} is not MathML")
    tag = element.tag[len(MATHML_NS):]
    if tag not in MATHML_ELEMENTS:
        raise ValueError(f"element <{tag}> is not on the MathML allow-list")
    attrs = []
    for name, value in element.attrib.items():
        if name not in MATHML_ATTRIBUTES:
            raise ValueError(f"attribute {name!r} is not on the MathML allow-list")
        attrs.append(f' {name}="{html.escape(value, quote=True)}"')
    if tag == "math":
        attrs.insert(0, ' xmlns="http://www.w3.org/1998/Math/MathML"')
    out.append(f"<{tag}{''.join(attrs)}>" + html.escape(element.text or "", quote=False))
    for child in element:
        _write(child, out)
        out.append(html.escape(child.tail or "", quote=False))
    out.append(f"</{tag}>")


def mathml(text: object) -> Markup:
    """Stored MathML, re-written from its parsed tree if it is MathML and nothing else; else an escaped note."""
    try:
        if not isinstance(text, str):
            raise ValueError("expected text")
        root = ET.fromstring(text)
        if root.tag != MATHML_NS + "math":
            raise ValueError("the root element is not <math>")
        out: list[str] = []
        _write(root, out)
        return Markup("".join(out))
    except (ET.ParseError, ValueError) as err:
        return Markup('<span class="bad">formula omitted: {}</span>').format(str(err))


# -- figures ------------------------------------------------------------------------------------

def figures(records: list[dict]) -> dict[str, Markup]:
    """name -> the SVG the renderer draws from every record's description of figure `name` (merged)."""
    names: list[str] = []
    for record in records:
        stored = record["data"].get("plots")
        if isinstance(stored, dict):
            names.extend(n for n in stored if n not in names)
    out = {}
    for name in names:
        labelled, problems = [], []
        for record in records:
            fig = (record["data"].get("plots") or {}).get(name)
            machine = str(record["meta"]["machine"].get("label", "?"))
            try:
                plots.check(fig)
            except plots.PlotError as err:
                problems.append(f"{machine}: {err}")
                continue
            labelled.append((machine, fig))
        svg = Markup(plots.draw(plots.merge(labelled))) if labelled else Markup("")
        if problems:
            svg += Markup('<p class="note">Not drawn from {}.</p>').format("; ".join(problems))
        out[name] = svg
    return out


def _settled(loaded: Loaded) -> list[dict]:
    """The ledger's rows from every loaded result, drawn sections or not."""
    every = {name: [r for r in loaded.results if r["section"] == name] for name in {r["section"] for r in loaded.results}}
    return ledger.build(every)


def _with_render_plots(section, records: list[dict]) -> list[dict]:
    """The records with the figures a section draws from its saved data at render time (`render_plots`) added."""
    if not hasattr(section, "render_plots"):
        return records
    return [{**r, "data": {**r["data"], "plots": {**(r["data"].get("plots") or {}), **section.render_plots(r["data"])}}}
            for r in records]


def _lead(section, name: str) -> bool:
    """Whether figure `name` of `section` is shown above its details (the section's LEAD names or prefixes)."""
    return any(name.startswith(prefix) for prefix in getattr(section, "LEAD", ()))


def _summaries(section, records: list[dict]) -> list[str]:
    """The section's one-line finding per results record (`summary(data)`), each named by its machine when several."""
    if not hasattr(section, "summary"):
        return []
    return [(f"{r['meta']['machine'].get('label', '?')}: " if len(records) > 1 else "") + section.summary(r["data"])
            for r in records]


def render(loaded: Loaded, sections, out: str | os.PathLike, quick: bool | None = None,
           against: Loaded | None = None, against_label: str = "") -> Path:
    """Write `<out>/report.html` and `<out>/report.md` (and the ledger beside them) from the loaded results;
    with `against`, the results of another run, both mark what changed since it. Returns the page's path."""
    by_section = {s.NAME: [r for r in loaded.results if r["section"] == s.NAME] for s in sections}
    claims = _settled(loaded)
    brief = digest.build(loaded.results, claims)
    changed = digest.changes(brief, digest.build(against.results, _settled(against))) if against is not None else None
    drawn, lead = {}, {}
    for s in sections:
        records = _with_render_plots(s, by_section[s.NAME])
        figs = figures(records)
        titles = {name: fig.get("title", "") for r in reversed(records)
                  for name, fig in (r["data"].get("plots") or {}).items() if isinstance(fig, dict)}
        lead[s.NAME] = [(titles.get(name, ""), svg) for name, svg in figs.items() if _lead(s, name)]
        drawn[s.NAME] = {name: svg for name, svg in figs.items() if not _lead(s, name)}
    cc = brief["crosscheck"]
    heat = Markup(plots.draw(digest.heatmap(cc, changed["marks"] if changed else ()))) if cc["cells"] else None
    sources = {c.id: {src.section for src in c.sources} for c in ledger.CLAIMS}
    settles = {s.NAME: [r for r in claims if s.NAME in sources.get(r["id"], ())] for s in sections}
    quick_flags = {bool(r["meta"]["config"].get("quick")) for r in loaded.results}
    quick = any(quick_flags) if quick is None else quick
    rendered = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    page = environment().get_template("report.html.j2").render(
        sections=sections, by_section=by_section, skipped=loaded.skipped, ledger=claims, figures=drawn,
        lead=lead, results=loaded.results, quick=quick, rendered=rendered, digest=brief, heatmap=heat,
        changed=changed, against=against_label, settles=settles,
        summaries={s.NAME: _summaries(s, by_section[s.NAME]) for s in sections})
    summary = digest.markdown(brief, rendered=rendered, files=len(loaded.results), quick=quick,
                              against=against_label, changed=changed)
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "report.html"
        path.write_text(page, encoding="utf-8")
        (out / "report.md").write_text(summary, encoding="utf-8")
        (out / "ledger.txt").write_text(ledger_text(claims), encoding="utf-8")
        (out / "ledger.json").write_text(json.dumps(ledger.ledger_json(claims), indent=1, allow_nan=False) + "\n",
                                         encoding="utf-8")
    except OSError as err:
        raise LinrnnError(f"cannot write the report to {out}: {err.strerror or err}") from None
    return path


def ledger_text(rows: list[dict]) -> str:
    """The claims ledger as plain text (written beside the page, printed by `linrnn report`)."""
    import textwrap

    lines = []
    for r in rows:
        lines.append(f"{r['id']:<3} {r['verdict'].upper()}: {r['claim']}" + (f" [{r['scale']}]" if r.get("scale") else ""))
        quote = r.get("quote")
        if quote:
            lines.extend(textwrap.wrap(f"the paper ({quote['source']}): {quote['english']}", 110, initial_indent="    ",
                                       subsequent_indent="      "))
        for p in r["parts"]:
            text = (f"{p['source']}" + (f", {p['part']}" if p.get("part") else "")
                    + f" [{p['verdict']}{'' if p.get('decides', True) else ', side finding: not deciding'}]: "
                    f"{p['evidence']}" + (f" (scope: {p['scope']})" if p["scope"] else ""))
            lines.extend(textwrap.wrap(text, 110, initial_indent="    ", subsequent_indent="      "))
        if r.get("settle"):
            lines.extend(textwrap.wrap(f"what would settle it: {r['settle']}", 110, initial_indent="    ",
                                       subsequent_indent="      "))
        if r.get("untested"):
            lines.extend(textwrap.wrap("not tested here: " + "; ".join(r["untested"]), 110, initial_indent="    ",
                                       subsequent_indent="      "))
        if r["command"]:
            lines.extend(textwrap.wrap(f"command: {r['command']}", 110, initial_indent="    ",
                                       subsequent_indent="      "))
        for label, key in (("full scale", "full_scale"), ("published", "published")):
            if r.get(key):
                lines.extend(textwrap.wrap(f"{label}: {r[key]}", 110, initial_indent="    ",
                                           subsequent_indent="      "))
    return "\n".join(lines) + "\n"

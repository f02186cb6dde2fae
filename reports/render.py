"""Render the report page from saved results: one self-contained HTML file.

No network: the CSS is inline, plots are inline SVG, formulas are MathML (rendered by the browser
itself), and there are no scripts or web fonts. Jinja2 autoescaping is on for every template, so text
from results files (paths, error messages, machine names) cannot inject markup.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from linrnn.impls.errors import LinrnnError
from linrnn.reports import ledger
from linrnn.reports.results import Loaded


def environment() -> Environment:
    env = Environment(loader=PackageLoader("linrnn.reports", "templates"),
                      autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["sci"] = lambda x, digits=2: (f"{x:.{digits}e}" if isinstance(x, (int, float)) else str(x))
    env.filters["fixed"] = lambda x, digits=3: (f"{x:.{digits}f}" if isinstance(x, (int, float)) else str(x))
    return env


def render(loaded: Loaded, sections, out: str | os.PathLike, quick: bool | None = None) -> Path:
    """Write `<out>/report.html` from the loaded results; returns its path."""
    by_section = {s.NAME: [r for r in loaded.results if r["section"] == s.NAME] for s in sections}
    claims = ledger.build(by_section)
    quick_flags = {bool(r["meta"]["config"].get("quick")) for r in loaded.results}
    html = environment().get_template("report.html.j2").render(
        sections=sections, by_section=by_section, skipped=loaded.skipped, ledger=claims,
        results=loaded.results, quick=any(quick_flags) if quick is None else quick,
        rendered=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "report.html"
        path.write_text(html, encoding="utf-8")
        (out / "ledger.txt").write_text(ledger_text(claims), encoding="utf-8")
    except OSError as err:
        raise LinrnnError(f"cannot write the report to {out}: {err.strerror or err}") from None
    return path


def ledger_text(rows: list[dict]) -> str:
    """The claims ledger as plain text (written beside the page, printed by `linrnn report`)."""
    import textwrap

    lines = []
    for r in rows:
        lines.append(f"{r['id']:<3} {r['verdict'].upper()}: {r['claim']}")
        for label in ("evidence", "scale", "command"):
            if r[label]:
                lines.extend(textwrap.wrap(f"{label}: {r[label]}", 110, initial_indent="    ",
                                           subsequent_indent="      "))
    return "\n".join(lines) + "\n"

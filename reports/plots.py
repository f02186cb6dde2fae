"""Figures described as plain data, drawn to inline SVG at render time (matplotlib's SVG backend).

A section saves each of its figures as a *description* in its results JSON (`data["plots"][name]`),
never as a picture, so that `linrnn report --from A B` can draw the results of several machines in
one figure (`merge`), and so that nothing drawn from a results file is ever inserted as markup: the
renderer makes the SVG itself (`draw`), and every text in it (titles, labels, legend entries) is
written by matplotlib as escaped SVG text, with mathtext switched off.

    figure = {"title": str,                       the SVG's accessible <title>
              "width": float, "height": float,    inches
              "columns": int | None,              panels per row (default: all side by side)
              "panels": [panel, ...]}
    panel  = {"title", "xlabel", "ylabel": str,
              "xscale", "yscale": "linear" | "log",
              "ylim": [low, high] | None, "xticks": [numbers] | None, "legend": bool,
              "xlabels": [str] | None,            category names at x = 0, 1, ... (dot plots)
              "series": [series, ...],
              "hlines": [{"y": number, "label": str, "colour": str, "line": str}, ...]}
    series = {"label": str, "x": [numbers], "y": [numbers],
              "low": [numbers] | None, "high": [numbers] | None,   a band drawn behind the line; with
                                                                   line "none", an interval bar per point
              "colour": str, "line": "-" | "--" | ":" | "-." | "none", "marker": "" | "o" | "x" | "s" | "D" | "^"}

A second kind of figure is a heatmap (`heatmap`), drawn as hand-written SVG with one cell per value, a
colour on a log scale, the value written in the cell and a hover text (<title>) per cell:

    heatmap = {"kind": "heatmap", "title": str, "desc": str,       the SVG's <title> and <desc>
               "rows": [str], "columns": [str],                    labels
               "row_groups", "column_groups": [[label, count], ...] | None,   a label over each run of rows/columns
               "values": [[number | None]],                        rows x columns; None: no such cell
               "notes": [[str]] | None,                            hover text per cell
               "marks": [[row, column], ...],                      cells drawn with a heavy outline
               "low": number, "high": number,                      the colour scale's ends (log, both > 0)
               "threshold": number | None,                         a value at or above it fails (drawn red, bold)
               "label": str}                                       what the colour is

Numbers may be "nan"/"inf" strings (results files store non-finite floats so) or None (a gap).
`check` says what is wrong with a description; `draw` refuses one that `check` rejects.
"""

from __future__ import annotations

import html
import io
import math
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter  # noqa: E402

from linrnn.base.errors import LinrnnError  # noqa: E402

STYLE = {"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
         "axes.spines.top": False, "axes.spines.right": False, "text.parse_math": False}
SCALES = ("linear", "log")
LINES = ("-", "--", ":", "-.", "none")
MARKERS = ("", "o", "x", "s", "D", "^")
COLOUR = re.compile(r"^(#[0-9a-fA-F]{6}|tab:[a-z]+|C[0-9]|0\.[0-9]+)$")
MACHINE_LINES = ("-", ":", "-.", "--")     # series of the k-th machine of a merged figure


class PlotError(LinrnnError):
    """A figure description that cannot be drawn (the page shows the reason instead of the figure)."""


def series(label: str, x, y, colour: str, *, low=None, high=None, line: str = "-", marker: str = "") -> dict:
    """One series as plain data (lists of floats), ready for JSON."""
    def floats(v):
        return None if v is None else [math.nan if a is None else float(a) for a in v]
    return {"label": label, "x": floats(x), "y": floats(y), "low": floats(low), "high": floats(high),
            "colour": colour, "line": line, "marker": marker}


def panel(title: str, xlabel: str, ylabel: str, items: list[dict], *, xscale: str = "linear",
          yscale: str = "linear", ylim=None, xticks=None, legend: bool = True, hlines=(), xlabels=None) -> dict:
    out = {"title": title, "xlabel": xlabel, "ylabel": ylabel, "xscale": xscale, "yscale": yscale,
           "ylim": None if ylim is None else [float(a) for a in ylim],
           "xticks": None if xticks is None else [float(a) for a in xticks], "legend": legend,
           "series": items, "hlines": list(hlines)}
    if xlabels is not None:
        out["xlabels"] = [str(a) for a in xlabels]
    return out


def hline(y: float, label: str, colour: str = "0.5", line: str = "--") -> dict:
    return {"y": float(y), "label": label, "colour": colour, "line": line}


def figure(title: str, panels: list[dict], width: float = 9.0, height: float = 3.0, columns: int | None = None) -> dict:
    out = {"title": title, "width": float(width), "height": float(height), "panels": panels}
    if columns is not None:
        out["columns"] = int(columns)
    return out


def heatmap(title: str, rows: list[str], columns: list[str], values: list[list], *, notes=None, marks=(),
            row_groups=None, column_groups=None, low: float = 1e-4, high: float = 1.0, threshold: float | None = 1.0,
            label: str = "", desc: str = "") -> dict:
    """A heatmap as plain data (see the module docstring)."""
    return {"kind": "heatmap", "title": title, "desc": desc, "rows": list(rows), "columns": list(columns),
            "row_groups": row_groups, "column_groups": column_groups,
            "values": [[None if v is None else float(v) for v in row] for row in values],
            "notes": notes, "marks": [list(m) for m in marks], "low": float(low), "high": float(high),
            "threshold": None if threshold is None else float(threshold), "label": label}


# -- checking -----------------------------------------------------------------------------------

def _number(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PlotError(f"expected a number, found {type(v).__name__}")
    return float(v)


def _numbers(v: Any, what: str) -> list[float]:
    if not isinstance(v, list):
        raise PlotError(f"{what}: expected a list of numbers")
    return [_number(a) for a in v]


def _text(d: dict, key: str, where: str) -> str:
    v = d.get(key, "")
    if not isinstance(v, str):
        raise PlotError(f"{where}.{key}: expected text")
    return v


def _choice(d: dict, key: str, allowed, default, where: str):
    v = d.get(key, default)
    if v not in allowed:
        raise PlotError(f"{where}.{key}: expected one of {', '.join(map(repr, allowed))}")
    return v


def _colour(d: dict, where: str) -> str:
    v = d.get("colour", "C0")
    if not isinstance(v, str) or not COLOUR.match(v):
        raise PlotError(f"{where}.colour: expected #rrggbb, tab:name, C0-C9 or a grey level 0.x")
    return v


def check(fig: Any) -> None:
    """Raise PlotError naming the first thing in a figure description that `draw` cannot use."""
    if isinstance(fig, dict) and fig.get("kind") == "heatmap":
        return _check_heatmap(fig)
    if not isinstance(fig, dict) or not isinstance(fig.get("panels"), list) or not fig["panels"]:
        raise PlotError("figure: expected an object with a non-empty list of panels")
    _text(fig, "title", "figure")
    for key in ("width", "height"):
        if not 0 < _number(fig.get(key, 6.0)) <= 30:
            raise PlotError(f"figure.{key}: expected inches in (0, 30]")
    columns = fig.get("columns")
    if columns is not None and (isinstance(columns, bool) or not isinstance(columns, int) or columns < 1):
        raise PlotError("figure.columns: expected a positive whole number")
    for i, p in enumerate(fig["panels"]):
        where = f"panels[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("series"), list):
            raise PlotError(f"{where}: expected an object with a list of series")
        for key in ("title", "xlabel", "ylabel"):
            _text(p, key, where)
        for key in ("xscale", "yscale"):
            _choice(p, key, SCALES, "linear", where)
        for key in ("ylim", "xticks"):
            if p.get(key) is not None:
                _numbers(p[key], f"{where}.{key}")
        if p.get("xlabels") is not None and (not isinstance(p["xlabels"], list)
                                             or not all(isinstance(a, str) for a in p["xlabels"])):
            raise PlotError(f"{where}.xlabels: expected a list of texts")
        for j, s in enumerate(p["series"]):
            sw = f"{where}.series[{j}]"
            if not isinstance(s, dict):
                raise PlotError(f"{sw}: expected an object")
            _text(s, "label", sw)
            x, y = _numbers(s.get("x"), f"{sw}.x"), _numbers(s.get("y"), f"{sw}.y")
            if len(x) != len(y):
                raise PlotError(f"{sw}: x has {len(x)} points, y has {len(y)}")
            for key in ("low", "high"):
                if s.get(key) is not None and len(_numbers(s[key], f"{sw}.{key}")) != len(x):
                    raise PlotError(f"{sw}.{key}: expected {len(x)} points")
            _colour(s, sw)
            _choice(s, "line", LINES, "-", sw)
            _choice(s, "marker", MARKERS, "", sw)
        for j, h in enumerate(p.get("hlines") or []):
            hw = f"{where}.hlines[{j}]"
            if not isinstance(h, dict):
                raise PlotError(f"{hw}: expected an object")
            _number(h.get("y"))
            _text(h, "label", hw)
            _colour(h, hw)
            _choice(h, "line", LINES, "--", hw)


def _labels(fig: dict, key: str) -> list[str]:
    v = fig.get(key)
    if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
        raise PlotError(f"heatmap.{key}: expected a list of texts")
    return v


def _groups(fig: dict, key: str, total: int) -> None:
    groups = fig.get(key)
    if groups is None:
        return
    if (not isinstance(groups, list) or not all(isinstance(g, list) and len(g) == 2 and isinstance(g[0], str)
                                                and isinstance(g[1], int) and g[1] > 0 for g in groups)
            or sum(g[1] for g in groups) != total):
        raise PlotError(f"heatmap.{key}: expected [label, count] pairs whose counts add up to {total}")


def _check_heatmap(fig: dict) -> None:
    for key in ("title", "desc", "label"):
        _text(fig, key, "heatmap")
    rows, columns = _labels(fig, "rows"), _labels(fig, "columns")
    if not rows or not columns:
        raise PlotError("heatmap: expected at least one row and one column")
    _groups(fig, "row_groups", len(rows))
    _groups(fig, "column_groups", len(columns))
    values = fig.get("values")
    if not isinstance(values, list) or len(values) != len(rows):
        raise PlotError(f"heatmap.values: expected {len(rows)} rows")
    for i, row in enumerate(values):
        if len(_numbers(row, f"heatmap.values[{i}]")) != len(columns):
            raise PlotError(f"heatmap.values[{i}]: expected {len(columns)} values")
    notes = fig.get("notes")
    if notes is not None and (not isinstance(notes, list) or len(notes) != len(rows) or not all(
            isinstance(row, list) and len(row) == len(columns) and all(isinstance(a, str) for a in row)
            for row in notes)):
        raise PlotError("heatmap.notes: expected a text per cell")
    for m in fig.get("marks") or []:
        if (not isinstance(m, list) or len(m) != 2 or not all(isinstance(a, int) and not isinstance(a, bool)
                                                              for a in m)
                or not (0 <= m[0] < len(rows) and 0 <= m[1] < len(columns))):
            raise PlotError("heatmap.marks: expected [row, column] pairs inside the grid")
    low, high = _number(fig.get("low", 1e-4)), _number(fig.get("high", 1.0))
    if not (0 < low < high < math.inf):
        raise PlotError("heatmap.low, high: expected 0 < low < high")
    if fig.get("threshold") is not None and not _number(fig["threshold"]) > 0:
        raise PlotError("heatmap.threshold: expected a positive number or null")


# -- merging the figures of several machines ----------------------------------------------------

def merge(labelled: list[tuple[str, dict]]) -> dict:
    """One figure from the same figure of several results files: every series labelled by its machine.

    The panels are matched by position (the same section draws the same panels); a machine whose
    figure has a different number of panels is drawn as extra panels. Horizontal lines (thresholds)
    are kept once. One machine: the figure unchanged.
    """
    if len(labelled) == 1:
        return labelled[0][1]
    if any(fig.get("kind") == "heatmap" for _, fig in labelled):
        return _merge_heatmaps(labelled)
    first = labelled[0][1]
    panels = [dict(p, series=[], hlines=[]) for p in first["panels"]]
    for k, (machine, fig) in enumerate(labelled):
        extra = len(fig["panels"]) != len(first["panels"])
        for i, p in enumerate(fig["panels"]):
            target = dict(p, series=[], hlines=[], title=f"{machine}: {p.get('title', '')}") if extra else panels[i]
            for s in p["series"]:
                line = s.get("line", "-")
                target["series"].append(dict(s, label=f"{machine}: {s.get('label', '')}",
                                             line=line if line == "none" else MACHINE_LINES[k % len(MACHINE_LINES)]))
            seen = {(h["y"], h.get("label")) for h in target["hlines"]}
            target["hlines"].extend(h for h in p.get("hlines") or [] if (h.get("y"), h.get("label")) not in seen)
            if extra:
                panels.append(target)
    return dict(first, panels=panels, title=f"{first.get('title', '')} ({', '.join(m for m, _ in labelled)})")


def _merge_heatmaps(labelled: list[tuple[str, dict]]) -> dict:
    """The same heatmap of several machines: every row and column of any, each cell the worst (largest) value,
    its hover text naming the machine it came from; marks kept. A machine's figure of another kind is left out."""
    maps = [(m, f) for m, f in labelled if f.get("kind") == "heatmap"]
    rows = list(dict.fromkeys(r for _, f in maps for r in f["rows"]))
    columns = list(dict.fromkeys(c for _, f in maps for c in f["columns"]))
    values = [[None] * len(columns) for _ in rows]
    notes = [[""] * len(columns) for _ in rows]
    marks = set()
    for machine, f in maps:
        for i, r in enumerate(f["rows"]):
            for j, c in enumerate(f["columns"]):
                v = f["values"][i][j]
                if v is None:
                    continue
                a, b = rows.index(r), columns.index(c)
                old = values[a][b]
                if old is None or _number(v) > _number(old):
                    values[a][b] = v
                    note = (f.get("notes") or [[""] * len(f["columns"])] * len(f["rows"]))[i][j]
                    notes[a][b] = f"{machine}: {note}" if note else machine
        marks.update((rows.index(f["rows"][i]), columns.index(f["columns"][j])) for i, j in f.get("marks") or [])
    first = maps[0][1]
    same = all(f["rows"] == rows and f["columns"] == columns for _, f in maps)
    return dict(first, rows=rows, columns=columns, values=values, notes=notes, marks=sorted(map(list, marks)),
                row_groups=first.get("row_groups") if same else None,
                column_groups=first.get("column_groups") if same else None,
                title=f"{first.get('title', '')} (worst of {', '.join(m for m, _ in maps)})")


# -- drawing ------------------------------------------------------------------------------------

def draw(fig: dict) -> str:
    """The described figure as an <svg> element (no XML prologue) with an accessible, escaped <title>."""
    check(fig)
    if fig.get("kind") == "heatmap":
        return _draw_heatmap(fig)
    panels = fig["panels"]
    columns = min(fig.get("columns") or len(panels), len(panels))
    rows = -(-len(panels) // columns)
    with plt.rc_context(STYLE):
        mfig, axes = plt.subplots(rows, columns, figsize=(_number(fig.get("width", 6.0)),
                                                          _number(fig.get("height", 3.4))), squeeze=False)
        try:
            for ax, p in zip(axes.flat, panels):
                _draw_panel(ax, p)
            for ax in list(axes.flat)[len(panels):]:
                ax.set_visible(False)
            buf = io.StringIO()
            mfig.tight_layout()
            mfig.savefig(buf, format="svg", metadata={"Date": None})
        finally:
            plt.close(mfig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    head_end = svg.index(">") + 1
    title = fig.get("title", "")
    safe = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return svg[:head_end] + f"<title>{safe}</title>" + svg[head_end:]


def _plain_label(value: float, _position) -> str:
    return f"{value:g}"


def _draw_panel(ax, p: dict) -> None:
    for s in p["series"]:
        x, y = _numbers(s["x"], "x"), _numbers(s["y"], "y")
        colour, line, marker = s.get("colour", "C0"), s.get("line", "-"), s.get("marker", "")
        if s.get("low") is not None and s.get("high") is not None and line == "none":   # an interval per point
            low, high = _numbers(s["low"], "low"), _numbers(s["high"], "high")
            ax.vlines(x, low, high, color=colour, linewidth=1.2)
        elif s.get("low") is not None and s.get("high") is not None:
            ax.fill_between(x, _numbers(s["low"], "low"), _numbers(s["high"], "high"), color=colour,
                            alpha=0.22, linewidth=0)
        ax.plot(x, y, linestyle="None" if line == "none" else line, marker=marker or None, markersize=3,
                color=colour, linewidth=1.3, label=s.get("label") or None)
    for h in p.get("hlines") or []:
        ax.axhline(_number(h["y"]), color=h.get("colour", "0.5"), linestyle=h.get("line", "--"), linewidth=0.9,
                   label=h.get("label") or None)
    ax.set_xscale(p.get("xscale", "linear"))
    ax.set_yscale(p.get("yscale", "linear"))
    for axis, scale in ((ax.xaxis, p.get("xscale")), (ax.yaxis, p.get("yscale"))):
        if scale == "log":          # plain numbers: mathtext is off (text.parse_math), so the default
            axis.set_major_formatter(FuncFormatter(_plain_label))       # 10^k labels would print as raw TeX
            axis.set_minor_formatter(FuncFormatter(lambda value, position: ""))
    ax.set_title(p.get("title", ""))
    ax.set_xlabel(p.get("xlabel", ""))
    ax.set_ylabel(p.get("ylabel", ""))
    if p.get("ylim") is not None:
        ax.set_ylim(*_numbers(p["ylim"], "ylim")[:2])
    if p.get("xticks"):
        ticks = _numbers(p["xticks"], "xticks")
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
    if p.get("xlabels"):
        names = p["xlabels"]
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=35 if sum(map(len, names)) > 24 else 0, ha="right"
                           if sum(map(len, names)) > 24 else "center", fontsize=7)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.grid(False, axis="x")
    if p.get("legend", True) and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)


# -- heatmaps -----------------------------------------------------------------------------------

# the colour of a cell below the threshold, by where its value lies between `low` and `high` on a log scale
HEAT_STOPS = ((0.0, (0xd9, 0xf0, 0xd3)), (0.5, (0xa6, 0xdb, 0xa0)), (0.75, (0xfe, 0xe0, 0x8b)),
              (0.9, (0xfd, 0xae, 0x61)), (1.0, (0xf4, 0x6d, 0x43)))
HEAT_FAIL = "#b2182b"           # at or above the threshold (white text, heavy outline)
HEAT_CELL = (58, 19)            # px: a cell's width and height
HEAT_FONT = 11                  # px: labels; values are one smaller


def heat_colour(value: float, low: float, high: float) -> str:
    """The fill of a cell below the threshold: its value's place between low and high on a log scale."""
    t = 0.0 if value <= low else 1.0 if value >= high else math.log(value / low) / math.log(high / low)
    for (t0, c0), (t1, c1) in zip(HEAT_STOPS, HEAT_STOPS[1:]):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return "#" + "".join(f"{round(a + f * (b - a)):02x}" for a, b in zip(c0, c1))
    return "#" + "".join(f"{a:02x}" for a in HEAT_STOPS[-1][1])


def heat_value(value: float) -> str:
    """A value as the cell writes it: two digits at 0.01 and above, else its power of ten (3e-7); 0 as 0."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    if value >= 0.01:
        return f"{value:.2f}" if value < 10 else f"{value:.0f}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _draw_heatmap(fig: dict) -> str:
    rows, columns, values = fig["rows"], fig["columns"], fig["values"]
    notes = fig.get("notes") or [[""] * len(columns) for _ in rows]
    low, high = _number(fig.get("low", 1e-4)), _number(fig.get("high", 1.0))
    threshold = None if fig.get("threshold") is None else _number(fig["threshold"])
    marks = {tuple(m) for m in fig.get("marks") or []}
    cw, ch = HEAT_CELL
    char = 0.6 * HEAT_FONT                                            # an average character's width
    row_groups, column_groups = fig.get("row_groups"), fig.get("column_groups")
    group_w = (max(len(g) for g, _ in row_groups) * char + 8) if row_groups else 0
    left = group_w + max(len(r) for r in rows) * char + 10
    top = (ch if column_groups else 0) + ch + 4
    width = left + cw * len(columns) + 4
    legend_y = top + ch * len(rows) + 10
    height = legend_y + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" viewBox="0 0 {width:.0f} {height:.0f}" '
           f'width="{width:.0f}" height="{height:.0f}" font-family="system-ui, sans-serif" '
           f'font-size="{HEAT_FONT}" fill="currentColor">',
           f"<title>{_esc(fig.get('title', ''))}</title>", f"<desc>{_esc(fig.get('desc', ''))}</desc>"]
    if column_groups:
        x = left
        for label, count in column_groups:
            out.append(f'<text x="{x + cw * count / 2:.1f}" y="{ch - 5}" text-anchor="middle" font-weight="600">'
                       f"{_esc(label)}</text>")
            out.append(f'<line x1="{x + 3:.1f}" x2="{x + cw * count - 3:.1f}" y1="{ch - 1}" y2="{ch - 1}" '
                       'stroke="currentColor" stroke-opacity="0.4"/>')
            x += cw * count
    for j, c in enumerate(columns):
        out.append(f'<text x="{left + cw * (j + 0.5):.1f}" y="{top - 6}" text-anchor="middle">{_esc(c)}</text>')
    if row_groups:
        i = 0
        for label, count in row_groups:
            y = top + ch * i
            out.append(f'<text x="2" y="{y + ch * count / 2 + 4:.1f}" font-weight="600">{_esc(label)}</text>')
            if i:
                out.append(f'<line x1="0" x2="{width - 4:.0f}" y1="{y:.1f}" y2="{y:.1f}" stroke="currentColor" '
                           'stroke-opacity="0.35"/>')
            i += count
    for i, r in enumerate(rows):
        y = top + ch * i
        out.append(f'<text x="{left - 6:.1f}" y="{y + ch - 5}" text-anchor="end">{_esc(r)}</text>')
        for j in range(len(columns)):
            x, v = left + cw * j, values[i][j]
            if v is None:
                continue
            v = _number(v)
            fails = threshold is not None and not v < threshold           # NaN fails too
            fill = HEAT_FAIL if fails else heat_colour(v, low, high)
            ink = "#ffffff" if fails else "#1b1b1b"
            bold = ' font-weight="700"' if fails else ""
            outline = ' stroke="currentColor" stroke-width="2.5"' if (i, j) in marks else ""
            out.append(f'<g class="cell{" fails" if fails else ""}{" marked" if (i, j) in marks else ""}">'
                       f"<title>{_esc(notes[i][j])}</title>"
                       f'<rect x="{x + 1:.1f}" y="{y + 1:.1f}" width="{cw - 2}" height="{ch - 2}" rx="2" '
                       f'fill="{fill}"{outline}/>'
                       f'<text x="{x + cw / 2:.1f}" y="{y + ch - 5}" text-anchor="middle" fill="{ink}" '
                       f'font-size="{HEAT_FONT - 1}"{bold}>{_esc(heat_value(v))}'
                       "</text></g>")
    # the colour scale: five swatches from low to high, then the failing colour
    steps = [low * (high / low) ** (k / 4) for k in range(5)]
    x = left
    out.append(f'<text x="{left - 6:.1f}" y="{legend_y + 13}" text-anchor="end">{_esc(fig.get("label", ""))}</text>')
    for v in steps[:-1]:
        out.append(f'<rect x="{x:.1f}" y="{legend_y + 2}" width="{cw - 2}" height="14" fill="{heat_colour(v, low, high)}"/>'
                   f'<text x="{x + cw / 2 - 1:.1f}" y="{legend_y + 27}" text-anchor="middle" font-size="{HEAT_FONT - 2}">'
                   f"{_esc(heat_value(v))}</text>")
        x += cw
    out.append(f'<rect x="{x:.1f}" y="{legend_y + 2}" width="{cw - 2}" height="14" fill="{heat_colour(high, low, high)}"/>'
               f'<text x="{x + cw / 2 - 1:.1f}" y="{legend_y + 27}" text-anchor="middle" font-size="{HEAT_FONT - 2}">'
               f"{_esc(heat_value(high))}</text>")
    if threshold is not None:
        x += cw
        out.append(f'<rect x="{x:.1f}" y="{legend_y + 2}" width="{cw - 2}" height="14" fill="{HEAT_FAIL}"/>'
                   f'<text x="{x + cw / 2 - 1:.1f}" y="{legend_y + 27}" text-anchor="middle" font-size="{HEAT_FONT - 2}">'
                   f"fails (&#8805; {threshold:g})</text>")
    out.append("</svg>")
    return "".join(out)

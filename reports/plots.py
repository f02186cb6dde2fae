"""Figures described as plain data, drawn to inline SVG at render time (matplotlib's SVG backend).

A section saves each of its figures as a *description* in its results JSON (`data["plots"][name]`),
never as a picture, so that `linrnn report --from A B` can draw the results of several machines in
one figure (`merge`), and so that nothing drawn from a results file is ever inserted as markup: the
renderer makes the SVG itself (`draw`), and every text in it (titles, labels, legend entries) is
written by matplotlib as escaped SVG text, with mathtext switched off.

    figure = {"title": str,                       the SVG's accessible <title>
              "width": float, "height": float,    inches
              "panels": [panel, ...]}             side by side
    panel  = {"title", "xlabel", "ylabel": str,
              "xscale", "yscale": "linear" | "log",
              "ylim": [low, high] | None, "xticks": [numbers] | None, "legend": bool,
              "series": [series, ...],
              "hlines": [{"y": number, "label": str, "colour": str, "line": str}, ...]}
    series = {"label": str, "x": [numbers], "y": [numbers],
              "low": [numbers] | None, "high": [numbers] | None,   a band drawn behind the line
              "colour": str, "line": "-" | "--" | ":" | "-." | "none", "marker": "" | "o" | "x" | "s" | "D" | "^"}

Numbers may be "nan"/"inf" strings (results files store non-finite floats so) or None (a gap).
`check` says what is wrong with a description; `draw` refuses one that `check` rejects.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter  # noqa: E402

from linrnn.impls.errors import LinrnnError  # noqa: E402

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
          yscale: str = "linear", ylim=None, xticks=None, legend: bool = True, hlines=()) -> dict:
    return {"title": title, "xlabel": xlabel, "ylabel": ylabel, "xscale": xscale, "yscale": yscale,
            "ylim": None if ylim is None else [float(a) for a in ylim],
            "xticks": None if xticks is None else [float(a) for a in xticks], "legend": legend,
            "series": items, "hlines": list(hlines)}


def hline(y: float, label: str, colour: str = "0.5", line: str = "--") -> dict:
    return {"y": float(y), "label": label, "colour": colour, "line": line}


def figure(title: str, panels: list[dict], width: float = 9.0, height: float = 3.0) -> dict:
    return {"title": title, "width": float(width), "height": float(height), "panels": panels}


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
    if not isinstance(fig, dict) or not isinstance(fig.get("panels"), list) or not fig["panels"]:
        raise PlotError("figure: expected an object with a non-empty list of panels")
    _text(fig, "title", "figure")
    for key in ("width", "height"):
        if not 0 < _number(fig.get(key, 6.0)) <= 30:
            raise PlotError(f"figure.{key}: expected inches in (0, 30]")
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


# -- merging the figures of several machines ----------------------------------------------------

def merge(labelled: list[tuple[str, dict]]) -> dict:
    """One figure from the same figure of several results files: every series labelled by its machine.

    The panels are matched by position (the same section draws the same panels); a machine whose
    figure has a different number of panels is drawn as extra panels. Horizontal lines (thresholds)
    are kept once. One machine: the figure unchanged.
    """
    if len(labelled) == 1:
        return labelled[0][1]
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


# -- drawing ------------------------------------------------------------------------------------

def draw(fig: dict) -> str:
    """The described figure as an <svg> element (no XML prologue) with an accessible, escaped <title>."""
    check(fig)
    panels = fig["panels"]
    with plt.rc_context(STYLE):
        mfig, axes = plt.subplots(1, len(panels), figsize=(_number(fig.get("width", 6.0)),
                                                           _number(fig.get("height", 3.4))), squeeze=False)
        try:
            for ax, p in zip(axes[0], panels):
                _draw_panel(ax, p)
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
        if s.get("low") is not None and s.get("high") is not None:
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
    if p.get("legend", True) and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)

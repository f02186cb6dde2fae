"""Plots as inline SVG text (matplotlib's SVG backend), so the page needs no files and no network.

Text is kept as text (`svg.fonttype = 'none'`), so labels stay selectable and the file stays small;
the page's CSS gives the font.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

STYLE = {"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
         "axes.spines.top": False, "axes.spines.right": False}


def figure(width: float = 6.0, height: float = 3.4, ncols: int = 1):
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False)
    return fig, axes[0] if ncols > 1 else axes[0][0]


def to_svg(fig, title: str) -> str:
    """The figure as an <svg> element (no XML prologue) with an accessible title; closes the figure."""
    with plt.rc_context(STYLE):
        buf = io.StringIO()
        fig.tight_layout()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    head_end = svg.index(">") + 1
    safe = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return svg[:head_end] + f"<title>{safe}</title>" + svg[head_end:]

"""The precision map: every model x route against float64 over L and the eigenvalue radius, forward and gradient, in
float32, bfloat16 and float16 (`linrnn.experiments.precision_map`; docs/precision.md, "Low precision").

The default map takes minutes (L up to 2^16, every mode of both frameworks, the interpreted kernels), so the default
report renders its stored record, `reports/results/sections/precision_map.json`, written by

    linrnn precision-map --out reports/results/sections/precision_map.json

(`linrnn.reports.cli.STORED_SECTIONS`); `--quick` and `--recompute` compute it. Its figures are derived from the
saved cells when the page renders (`render_plots`): one heatmap per dtype and quantity (forward, gradient), a row
per model x route, a column per radius x L, the cells outside the tolerance table's row outlined.
"""

from __future__ import annotations

from linrnn.reports import plots

NAME = "precision_map"
TITLE = "Precision map: every route against float64 over L and the radius, in float32, bfloat16 and float16"
TEMPLATE = "precision_map.html.j2"
LEAD = ("forward_bfloat16",)
COMMAND = "linrnn precision-map --out reports/results/sections/precision_map.json"


def compute(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.experiments import precision_map

    data = precision_map.run("quick" if quick else "default", progress)
    return data, {"size": data["size"], **data["sizes"], "command": COMMAND}


def render_plots(data: dict) -> dict:
    """{'forward_<dtype>', 'gradient_<dtype>'}: heatmaps of the relative error, rows model x route, columns r x L."""
    cells = data.get("cells") or []
    if not cells:
        return {}
    rows = list(dict.fromkeys((c["kind"], c["route"]) for c in cells))
    columns = sorted({(c["r"], c["L"]) for c in cells})
    row_groups = [[kind, sum(1 for k, _ in rows if k == kind)] for kind in dict.fromkeys(k for k, _ in rows)]
    column_groups = [[f"r = {r:g}", sum(1 for rr, _ in columns if rr == r)] for r in dict.fromkeys(r for r, _ in columns)]
    out = {}
    for quantity in ("forward", "gradient"):
        for dtype in data.get("dtypes", []):
            at = {(c["kind"], c["route"], c["r"], c["L"]): c for c in cells if c["dtype"] == dtype}
            values, notes, marks = [], [], []
            for i, (kind, route) in enumerate(rows):
                values.append([]), notes.append([])
                for j, (r, L) in enumerate(columns):
                    c = at.get((kind, route, r, L))
                    values[-1].append(None if c is None else c[quantity])
                    notes[-1].append("not run" if c is None else
                                     f"{kind} {route} {dtype} L={L} r={r:g}: {quantity} {c[quantity]:.2e}, "
                                     f"row {c[quantity + '_rtol']:.2e}")
                    if c is not None and c[quantity] > c[quantity + "_rtol"]:
                        marks.append((i, j))
            out[f"{quantity}_{dtype}"] = plots.heatmap(
                f"{quantity} relative error, {dtype}", [route for _, route in rows], [f"L={L}" for _, L in columns],
                values, notes=notes, marks=marks, row_groups=row_groups, column_groups=column_groups, low=1e-8,
                high=1e-1, threshold=None, label="relative error against float64 (outlined: above its row)",
                desc=f"{quantity} relative error of every route in {dtype} against float64")
    return out


def summary(data: dict) -> str:
    cells = data.get("cells") or []
    if not cells:
        return "No cells."
    parts = []
    for dtype in data.get("dtypes", []):
        mine = [c for c in cells if c["dtype"] == dtype]
        out = [c for c in mine if not c["within"]]
        parts.append(f"{dtype}: {len(out)} of {len(mine)} cells outside the table, largest forward error "
                     f"{max(c['forward'] for c in mine):.1e}, gradient {max(c['gradient'] for c in mine):.1e}")
    return "; ".join(parts) + "."

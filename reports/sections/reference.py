"""The reference's self-check: for each mixer, the recurrent view equals the kernel view (float64).

Random bundles at each paper's initialisation, with decays reaching 0.9999, several lengths (L = 1
and odd lengths included), uni- and bidirectional; each case records the max-abs and the normwise
relative error of `conv` against `sequential` and the tolerance from the project's table.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import DLRConfig, LRUConfig, RotRNNConfig
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.tolerance import compare

NAME = "reference"
TITLE = "Reference: recurrent view vs kernel view"
TEMPLATE = "reference.html.j2"


def mixer_config(kind: str, bidirectional: bool, H: int = 8, N: int = 8):
    """Small configs whose initial decays reach 0.9999 (long memory stresses the comparison)."""
    if kind == "rotrnn":
        return RotRNNConfig(d_model=H, d_state=N // 2, heads=2, bidirectional=bidirectional, gamma_max=0.9999)
    if kind == "lru":
        return LRUConfig(d_model=H, d_state=N, bidirectional=bidirectional, r_max=0.9999)
    return DLRConfig(d_model=H, d_state=N, bidirectional=bidirectional, dt_min=1e-5, dt_max=1e-1)


def compute(quick: bool, progress) -> tuple[dict, dict]:
    config = {"kinds": ["rotrnn", "lru", "dlr"], "bidirectional": [False, True], "B": 2, "H": 8, "N": 8,
              "lengths": [1, 17] if quick else [1, 17, 64, 257], "seeds": [0] if quick else [0, 1, 2]}
    cases = [(k, bi, L, s) for k in config["kinds"] for bi in config["bidirectional"]
             for L in config["lengths"] for s in config["seeds"]]
    rows = []
    for i, (kind, bi, L, seed) in enumerate(cases):
        progress(i, len(cases), f"{kind}{' bidirectional' if bi else ''} L={L} seed={seed}")
        cfg = mixer_config(kind, bi, config["H"], config["N"])
        bundle = init(cfg, seed)
        u = np.random.default_rng([seed, L]).standard_normal((config["B"], L, config["H"]))
        y_seq, _ = apply_mixer(cfg, bundle.params, u, "sequential")
        y_conv, _ = apply_mixer(cfg, bundle.params, u, "conv")
        r = spectral_radius(cfg, bundle.params)
        c = compare("conv vs sequential", y_seq, y_conv, "forward", "float64", L, r)
        rows.append({"mixer": kind, "bidirectional": bi, "L": L, "seed": seed, "radius": r,
                     "max_abs": c.max_abs, "rel": c.rel, "rtol": c.rtol, "ok": c.ok})
    progress(len(cases), len(cases), "done")
    summary = []
    for kind in config["kinds"]:
        for bi in config["bidirectional"]:
            sel = [r for r in rows if r["mixer"] == kind and r["bidirectional"] == bi]
            worst = max(sel, key=lambda r: r["rel"] / r["rtol"])
            summary.append({"mixer": kind, "bidirectional": bi, "cases": len(sel),
                            "max_rel": max(r["rel"] for r in sel), "worst_ratio": worst["rel"] / worst["rtol"],
                            "ok": all(r["ok"] for r in sel)})
    return {"rows": rows, "summary": summary, "ok": all(r["ok"] for r in rows)}, config

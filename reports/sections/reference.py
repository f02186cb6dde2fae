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
    return {"rows": rows, "summary": summary, "ok": all(r["ok"] for r in rows),
            "param_counts": param_counts(), "converters": converters(config["seeds"])}, config


def param_counts() -> list[dict]:
    """Claim R4: heads with their own M, theta, gamma_log, B, and one C over the concatenated heads."""
    checks = []
    for H, N, heads in ((8, 4, 1), (8, 4, 3), (16, 6, 4)):
        cfg = RotRNNConfig(d_model=H, d_state=N, heads=heads)
        count = sum(a.size for a in init(cfg, 0).params.values())
        formula = heads * (N * N + N // 2 + 1 + N * H) + H * heads * N + H
        checks.append({"config": f"H={H} N={N} heads={heads}", "count": count,
                       "formula": f"heads(N^2 + N/2 + 1 + NH) + H heads N + H = {formula}", "ok": count == formula})
    return checks


def converters(seeds) -> list[dict]:
    """Claim R5 in code: RotRNN -> LRU and LRU -> RotRNN bundles give the same outputs (float64 reference)."""
    from linrnn.impls.convert import lru_to_rotrnn, rotrnn_to_lru

    out = []
    for seed in seeds:
        u = np.random.default_rng(seed).standard_normal((2, 33, 6))
        for source, convert in ((init(RotRNNConfig(d_model=6, d_state=4, heads=3), seed), rotrnn_to_lru),
                                (init(LRUConfig(d_model=6, d_state=5), seed), lru_to_rotrnn)):
            target = convert(source)
            y_src, _ = apply_mixer(source.config, source.params, u, "sequential")
            y_dst, _ = apply_mixer(target.config, target.params, u, "sequential")
            c = compare("converted", y_src, y_dst, "forward", "float64", 33, spectral_radius(source.config, source.params))
            out.append({"from": source.config.kind, "to": target.config.kind, "seed": seed, "rel": c.rel,
                        "rtol": c.rtol, "ok": c.ok})
    return out

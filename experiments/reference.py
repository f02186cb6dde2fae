"""The reference's self-checks: recurrent view vs kernel view, and the measurements behind R4 and R5.

    run(quick, progress) -> (data, config)     plain JSON-ready data; no verdicts beyond per-case `ok`

Recurrent vs kernel view: random bundles at each paper's initialisation, every decay's modulus then set to 0.9999
(phases kept) by the model's own `with_radius` (`ModelSpec.with_radius`), several lengths (L = 1 and odd lengths
included), uni- and bidirectional; each case records the max-abs and the normwise relative error of `conv` against
`sequential` and the tolerance from the project's table (float64).

R4 (multi-head RotRNN, `head_independence`, `param_counts`): each head has its own M, theta, gamma_log
and B, and the output is C applied to the concatenated heads. Measured, not asserted: in a RotRNN with
several heads, replace one head's M, theta, gamma_log and B by fresh random values; the contribution of
every other head, C[:, head slice] x^h_t, must not move (within the float64 forward tolerance), the
changed head's must, and the output must equal the sum of the heads' contributions plus D u. The
parameter count is compared with the formula heads (N^2 + N/2 + 1 + N H) + H heads N + H.

R5 (`converters`): RotRNN -> LRU and LRU -> RotRNN bundles give the same outputs (float64 reference).
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import mixer_config as config_mixer
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs import spec
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import compare


RADIUS = 0.9999     # every decay's modulus in the recurrent-vs-kernel cases: long memory stresses the comparison


def mixer_config(kind: str, bidirectional: bool, H: int = 8, N: int = 8):
    """A small config at the paper's initialisation (RotRNN: two heads sharing the total state N)."""
    heads = 2 if spec(kind).has_heads else 1
    return config_mixer(kind, H, N // heads, heads=heads, bidirectional=bidirectional)


def near_one(cfg, seed: int):
    """The paper's initialisation from `seed`, every decay's modulus then RADIUS (the model's `with_radius`)."""
    bundle = init(cfg, seed)
    return bundle.replace(**spec(cfg.kind).with_radius(cfg, bundle.params, RADIUS))


def settings(quick: bool) -> dict:
    return {"kinds": ["rotrnn", "lru", "dlr"], "bidirectional": [False, True], "B": 2, "H": 8, "N": 8,
            "lengths": [1, 17] if quick else [1, 17, 64, 257], "seeds": [0] if quick else [0, 1, 2]}


def run(quick: bool, progress) -> tuple[dict, dict]:
    config = settings(quick)
    cases = [(k, bi, L, s) for k in config["kinds"] for bi in config["bidirectional"]
             for L in config["lengths"] for s in config["seeds"]]
    rows = []
    for i, (kind, bi, L, seed) in enumerate(cases):
        progress(i, len(cases), f"{kind}{' bidirectional' if bi else ''} L={L} seed={seed}")
        cfg = mixer_config(kind, bi, config["H"], config["N"])
        bundle = near_one(cfg, seed)
        u = np.random.default_rng([seed, L]).standard_normal((config["B"], L, config["H"]))   # (B L H)
        y_seq, _ = apply_mixer(cfg, bundle.params, u, "sequential")
        y_conv, _ = apply_mixer(cfg, bundle.params, u, "conv")
        r = spectral_radius(cfg, bundle.params)
        c = compare("conv vs sequential", y_seq, y_conv, "forward", "float64", L, r)
        rows.append({"mixer": kind, "bidirectional": bi, "L": L, "seed": seed, "radius": r,
                     "max_abs": c.max_abs, "rel": c.rel, "rtol": c.rtol, "ok": c.ok})
    progress(len(cases), len(cases), "R4, R5")
    summary = []
    for kind in config["kinds"]:
        for bi in config["bidirectional"]:
            sel = [r for r in rows if r["mixer"] == kind and r["bidirectional"] == bi]
            worst = max(sel, key=lambda r: r["rel"] / r["rtol"])
            summary.append({"mixer": kind, "bidirectional": bi, "cases": len(sel),
                            "max_rel": max(r["rel"] for r in sel), "worst_ratio": worst["rel"] / worst["rtol"],
                            "ok": all(r["ok"] for r in sel)})
    data = {"rows": rows, "summary": summary, "ok": all(r["ok"] for r in rows),
            "param_counts": param_counts(), "head_independence": head_independence(config["seeds"]),
            "converters": converters(config["seeds"])}
    progress(len(cases), len(cases), "done")
    return data, config


def param_counts() -> list[dict]:
    """R4: heads with their own M, theta, gamma_log, B, and one C over the concatenated heads."""
    checks = []
    for H, N, heads in ((8, 4, 1), (8, 4, 3), (16, 6, 4)):
        cfg = RotRNNConfig(d_model=H, d_state=N, heads=heads)
        count = sum(a.size for a in init(cfg, 0).params.values())
        formula = heads * (N * N + N // 2 + 1 + N * H) + H * heads * N + H
        checks.append({"config": f"H={H} N={N} heads={heads}", "count": int(count), "formula_value": formula,
                       "formula": "heads(N^2 + N/2 + 1 + NH) + H heads N + H", "ok": int(count) == formula})
    return checks


HEAD_PARAMETERS = ("M", "theta", "gamma_log", "B")    # what belongs to one head (first axis: heads)


def head_contributions(cfg: RotRNNConfig, params: dict, u: np.ndarray) -> np.ndarray:
    """C[:, head slice] x^h_t for every head.     u (B L H) -> (heads B L H)"""
    from linrnn.impls.reference import rotrnn

    states = rotrnn.trajectory(params, cfg, u)                                   # (B L heads N)
    C = params["C"].reshape(cfg.d_model, cfg.heads, cfg.d_state)               # (H heads N)
    return np.einsum("blkn,hkn->kblh", states, C)


def head_independence(seeds, H: int = 8, N: int = 4, heads: int = 3, L: int = 33) -> list[dict]:
    """R4 measured: change one head's own parameters; which heads' contributions to the output move?

    One record per (seed, changed head): `other_max_ratio` = the largest error / tolerance over the
    other heads' contributions (below 1: they did not move), `changed_rel` and `changed_rtol` = the
    changed head's relative change and the tolerance (above it: it moved), `sum_ratio` = error /
    tolerance of the output against the sum of the contributions plus D u (the linear mix).
    """
    out = []
    cfg = RotRNNConfig(d_model=H, d_state=N, heads=heads)
    for seed in seeds:
        base = init(cfg, seed).params
        donor = init(cfg, 1000 + seed).params
        u = np.random.default_rng([seed, 4]).standard_normal((2, L, H))         # (B L H)
        before = head_contributions(cfg, base, u)                               # (heads B L H)
        y, _ = apply_mixer(cfg, base, u, "sequential")
        r = spectral_radius(cfg, base)
        mixed = compare("output vs sum of head contributions + D u", y, before.sum(axis=0) + base["D"] * u,
                        "forward", "float64", L, r)
        for k in range(heads):
            changed = {name: np.array(a, copy=True) for name, a in base.items()}
            for name in HEAD_PARAMETERS:
                changed[name][k] = donor[name][k]
            after = head_contributions(cfg, changed, u)
            r2 = max(r, spectral_radius(cfg, changed))
            others = [compare(f"head {j}", before[j], after[j], "forward", "float64", L, r2)
                      for j in range(heads) if j != k]
            moved = compare(f"head {k}", before[k], after[k], "forward", "float64", L, r2)
            out.append({"seed": seed, "head": k, "heads": heads, "H": H, "N": N, "L": L,
                        "changed": list(HEAD_PARAMETERS),
                        "other_max_ratio": max(c.rel / c.rtol for c in others),
                        "changed_rel": moved.rel, "changed_rtol": moved.rtol,
                        "sum_ratio": mixed.rel / mixed.rtol})
    return out


def converters(seeds) -> list[dict]:
    """R5 in code: RotRNN -> LRU and LRU -> RotRNN bundles give the same outputs (float64 reference)."""
    from linrnn.impls.convert import lru_to_rotrnn, rotrnn_to_lru

    out = []
    for seed in seeds:
        u = np.random.default_rng(seed).standard_normal((2, 33, 6))               # (B L H)
        for source, convert in ((init(RotRNNConfig(d_model=6, d_state=4, heads=3), seed), rotrnn_to_lru),
                                (init(LRUConfig(d_model=6, d_state=5), seed), lru_to_rotrnn)):
            target = convert(source)
            y_src, _ = apply_mixer(source.config, source.params, u, "sequential")
            y_dst, _ = apply_mixer(target.config, target.params, u, "sequential")
            c = compare("converted", y_src, y_dst, "forward", "float64", 33,
                        spectral_radius(source.config, source.params))
            out.append({"from": source.config.kind, "to": target.config.kind, "seed": seed, "rel": c.rel,
                        "rtol": c.rtol, "ok": c.ok})
    return out


# -- the rules (R4, R5) ---------------------------------------------------------------------------

def settle_param_counts(data: dict) -> list:
    """R4: the bundle's parameter count against the formula, for each configuration."""
    from linrnn.experiments.decide.evidence import Part

    checks = data["param_counts"]
    ok = all(c["count"] == c["formula_value"] for c in checks)
    text = ("parameter counts against heads(N^2 + N/2 + 1 + NH) + H heads N + H: "
            + "; ".join(f"{c['config']}: {c['count']} vs {c['formula_value']}" for c in checks))
    return [Part("parameter count (reference)", "verified" if ok else "contradicted", text, "bundle shapes",
                 test="numeric", scale=f"{len(checks)} configurations")]


def settle_head_independence(data: dict) -> list:
    """R4: changing one head moves only its own contribution, and the output is their sum plus D u."""
    from linrnn.experiments.decide.evidence import Part, num as _num

    cases = data["head_independence"]
    others = max(_num(c["other_max_ratio"]) for c in cases)
    moved = min(_num(c["changed_rel"]) / _num(c["changed_rtol"]) for c in cases)
    mixed = max(_num(c["sum_ratio"]) for c in cases)
    ok = others <= 1.0 and moved > 1.0 and mixed <= 1.0
    c0 = cases[0]
    text = (f"changing one head's {', '.join(c0['changed'])} moves that head's contribution C[:, head] x^h_t "
            f"(smallest change {moved:.3g} x the tolerance) and leaves every other head's within "
            f"{others:.3g} x the float64 tolerance; the output equals the sum of the heads' contributions "
            f"+ D u within {mixed:.3g} x the tolerance")
    return [Part("head independence (reference)", "verified" if ok else "contradicted", text,
                 f"{len(cases)} cases: heads = {c0['heads']}, H = {c0['H']}, N = {c0['N']}, L = {c0['L']}, "
                 f"float64 reference", test="numeric", scale=f"{len(cases)} random cases, float64")]


def settle_converters(data: dict) -> list:
    """R5: the RotRNN <-> LRU converters give the same outputs on the float64 reference."""
    from linrnn.experiments.decide.evidence import Part, num as _num

    conv = data["converters"]
    worst = max(_num(c["rel"]) / _num(c["rtol"]) for c in conv)
    return [Part("converters (reference)", "verified" if worst <= 1 else "contradicted",
                 f"RotRNN <-> LRU converters on {len(conv)} random bundles: outputs agree, worst error / "
                 f"tolerance {worst:.3g}", "float64 reference, H = 6, L = 33", test="numeric",
                 scale=f"{len(conv)} random bundles, float64")]

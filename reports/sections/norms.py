"""Hidden-state norms over training, RotRNN vs LRU (claim R8), with R9 and R1 measured on the same runs.

The paper's experiment (docs/papers.md) logs each layer's mean state norm during LRA ListOps training.
ListOps is not available here, so the runs train on a synthetic task of DLR's set (`SETUP["task"]`:
CumSum, a long-memory task both models learn at this scale, final R^2 about 0.92-0.99) at a reduced
scale, with the torch backend in float32, several seeds, 2-3 residual blocks.

Every `measure_every` steps (and at the end), on one fixed validation batch, a forward hook on
`model.layers[i].mixer` captures each block's mixer input u (B L H); the float64 reference
(`linrnn.impls.reference.{rotrnn,lru}.trajectory`) then computes every state x_1..x_L from the layer's
current parameters, and per layer we record

    norm      mean over t and batch of ||x_t||   (RotRNN: the per-head norm ||x^h_t||, averaged over
              heads, as the authors' `kai/norms` branch logs it; LRU: the norm of its one state in C^N)
    norm_t    at the end of training: mean over batch of ||x_t||, as a function of t
    alignment E||B u_t||^2 / (||B||_F^2 E||u_t||^2 / H): 1 for inputs isotropic across features, where
              RotRNN's xi = sqrt(1 - gamma^2) / ||B||_F normalises exactly (a diagnostic, no verdict)

and summarise each curve over training by its coefficient of variation (std / mean over the
measurements, step 0 included). The same runs give, after every optimiser step:

    R9  LRU:    drift_j = gamma_log_j - log sqrt(1 - |lambda_j|^2), the gap between the learned input
                scaling and the value that would normalise mode j (zero at initialisation, up to float32
                rounding); max and mean of |drift| over modes, per layer
    R1  RotRNN: P_h = expm(M_h - M_h^T) computed in float64 with the model's own route
                (`impls.torch.rotrnn.orthogonal`, torch's matrix_exp) from the trained M; max |P^T P - I|
                over heads and layers, against the tolerance table's float64 `expm_orthogonality`
                (scale n * max(1, ||S||_2)). The float32 P the model used is recorded beside it.

Verdicts (thresholds are ours; the papers give none):
    R8  reproduced if RotRNN's CV over training is at most half of LRU's in every layer (mean over
        seeds); contradicted if it is at least LRU's in some layer; inconclusive in between. The
        claim's "across layer depth and seeds" is reported beside it (`parts`): the CV of the
        end-of-training norms across all layers and seeds, RotRNN's against LRU's, same thresholds
    R9  verified if the final max |drift| exceeds 10x the rounding floor (the step-0 drift, at least
        eps32 * max |gamma_log|); inconclusive otherwise
    R1  verified if max |P^T P - I| <= its tolerance after every step; contradicted otherwise
"""

from __future__ import annotations

import math

import numpy as np

from linrnn.experiments.normstudy import run

NAME = "norms"
TITLE = "Hidden-state norms during training: RotRNN vs LRU (claims R8, R9, R1)"
TEMPLATE = "norms.html.j2"

MODELS = ("rotrnn", "lru")
# One setting for both models: the same deep model, task, optimiser and schedule, the same number of
# complex eigenvalues per layer (RotRNN: 8 heads x 8 real = 32 rotation planes; LRU: 32 modes), and
# the same ring for gamma / |lambda|: [0.5, 0.999], the RotRNN authors' ListOps initialisation ablation
# (docs/papers.md), the documented setting closest to the norm experiment.
SETUP = {
    "task": "cumsum", "length": 128, "steps": 400, "measure_every": 20, "seeds": [0, 1, 2],
    "n_layers": 3, "d_model": 32, "heads": 8, "rotrnn_d_state": 8, "lru_d_state": 32,
    "ring": [0.5, 0.999], "lr": 5e-3, "warmup_fraction": 0.1, "batch_size": 16, "eval_batch_size": 16,
}
QUICK_SETUP = {**SETUP, "length": 32, "steps": 80, "measure_every": 8, "seeds": [0, 1], "n_layers": 2}
CV_REPRODUCED = 0.5     # R8: RotRNN's CV at most this fraction of LRU's, in every layer
DRIFT_FACTOR = 10.0     # R9: final drift above this multiple of the rounding floor
SETTLE_BAND = 0.05      # a norm curve has settled from the measurement after which it stays within 5% of its end
EPS32 = float(np.finfo(np.float32).eps)


def coefficient_of_variation(curve: list[float]) -> float:
    a = np.asarray(curve)
    return float(a.std() / a.mean())


def settle_step(steps: list[int], curve: list[float]) -> int:
    """The first measured step from which the curve stays within SETTLE_BAND of its last value."""
    a = np.asarray(curve)
    inside = np.abs(a / a[-1] - 1.0) <= SETTLE_BAND
    first = len(a) - 1
    while first > 0 and inside[first - 1]:
        first -= 1
    return int(steps[first])


def summarise(records: list[dict], layers: int) -> list[dict]:
    """One row per model and layer: CV over training (per seed, mean, min, max), settle step, norms."""
    rows = []
    for model in MODELS:
        runs = [r for r in records if r["model"] == model]
        for i in range(layers):
            cvs = [coefficient_of_variation(r["norm"][i]) for r in runs]
            settles = [settle_step(r["measured_steps"], r["norm"][i]) for r in runs]
            input_cvs = [coefficient_of_variation(r["input_norm"][i]) for r in runs]
            rows.append({"model": model, "layer": i, "cv": cvs, "cv_mean": float(np.mean(cvs)),
                         "input_cv_mean": float(np.mean(input_cvs)),
                         "alignment_start": float(np.mean([r["alignment"][i][0] for r in runs])),
                         "alignment_end": float(np.mean([r["alignment"][i][-1] for r in runs])),
                         "cv_min": float(np.min(cvs)), "cv_max": float(np.max(cvs)),
                         "settle_step": settles, "settle_mean": float(np.mean(settles)),
                         "norm_start": [r["norm"][i][0] for r in runs], "norm_end": [r["norm"][i][-1] for r in runs],
                         "ratio_range": float(max(max(r["norm"][i]) / min(r["norm"][i]) for r in runs))})
    return rows


def _three_way(ratio: float) -> str:
    """RotRNN's spread / LRU's spread -> reproduced (clearly below), contradicted (not below), inconclusive."""
    if ratio <= CV_REPRODUCED:
        return "reproduced"
    return "contradicted" if ratio >= 1.0 else "inconclusive"


def spread_across(records: list[dict], model: str) -> float:
    """CV of the end-of-training mean norm across every layer and seed of `model`."""
    return coefficient_of_variation([n[-1] for r in records if r["model"] == model for n in r["norm"]])


def claim_r8(table: list[dict], records: list[dict], setup: dict, scale: str) -> dict:
    """Two parts: (a) constant over training, per layer; (b) alike across layers and seeds at the end.

    The verdict is part (a)'s, the claim's main statement: reproduced if RotRNN's CV over training is at
    most CV_REPRODUCED times LRU's in every layer, contradicted if it is at least LRU's in some layer.
    Part (b) is judged with the same thresholds and reported beside it.
    """
    layers = sorted({r["layer"] for r in table})
    cv = {(r["model"], r["layer"]): r["cv_mean"] for r in table}
    ratios = [cv[("rotrnn", i)] / cv[("lru", i)] if cv[("lru", i)] > 0 else math.inf for i in layers]
    settle = {(r["model"], r["layer"]): r["settle_mean"] for r in table}
    if all(q <= CV_REPRODUCED for q in ratios):
        over_training = "reproduced"
    elif any(q >= 1.0 for q in ratios):
        over_training = "contradicted"
    else:
        over_training = "inconclusive"
    across = {m: spread_across(records, m) for m in MODELS}
    across_ratio = across["rotrnn"] / across["lru"] if across["lru"] > 0 else math.inf
    evidence = ("(a) over training: coefficient of variation of each layer's mean state norm, mean over "
                f"{len(setup['seeds'])} seeds, RotRNN vs LRU: "
                + "; ".join(f"layer {i}: {cv[('rotrnn', i)]:.3g} vs {cv[('lru', i)]:.3g} (ratio {q:.2f}), "
                            f"settled (within {100 * SETTLE_BAND:.0f}% of the end value) from step "
                            f"{settle[('rotrnn', i)]:.0f} vs {settle[('lru', i)]:.0f}" for i, q in zip(layers, ratios))
                + f". (b) across layers and seeds, CV of the end-of-training norms: {across['rotrnn']:.3g} vs "
                f"{across['lru']:.3g} (ratio {across_ratio:.2f}: {_three_way(across_ratio)})")
    return {"verdict": over_training, "evidence": evidence, "scale": scale,
            "parts": {"over_training": over_training, "across_layers_and_seeds": _three_way(across_ratio)},
            "ratios": ratios, "across": across, "across_ratio": across_ratio,
            "thresholds": {"reproduced_if_ratio_at_most": CV_REPRODUCED, "contradicted_if_ratio_at_least": 1.0}}


def claim_r9(records: list[dict], scale: str) -> dict:
    runs = [r for r in records if r["model"] == "lru"]
    final_max = max(max(m[-1] for m in r["drift"]["max"]) for r in runs)
    final_mean = float(np.mean([m[-1] for r in runs for m in r["drift"]["mean"]]))
    floor = max(r["drift"]["rounding_floor"] for r in runs)
    per_layer = [max(r["drift"]["max"][i][-1] for r in runs) for i in range(len(runs[0]["drift"]["max"]))]
    verdict = "verified" if final_max > DRIFT_FACTOR * floor else "inconclusive"
    evidence = (f"after training, |gamma_log - log sqrt(1 - |lambda|^2)| reaches {final_max:.3g} (max over modes, "
                f"layers and seeds; per layer {', '.join(f'{d:.3g}' for d in per_layer)}), mean over modes "
                f"{final_mean:.3g}; at initialisation it is {floor:.2g} (float32 rounding), so the LRU's input "
                "scaling no longer normalises its modes: nothing in the LRU keeps it tied to |lambda|")
    return {"verdict": verdict, "evidence": evidence, "scale": scale, "final_max": final_max,
            "final_mean": final_mean, "rounding_floor": floor, "per_layer_final_max": per_layer,
            "thresholds": {"verified_if_above_floor_times": DRIFT_FACTOR}}


def claim_r1(records: list[dict], scale: str) -> dict:
    runs = [r for r in records if r["model"] == "rotrnn"]
    worst = {k: max(r["orthogonality"]["worst"][k] for r in runs)
             for k in ("max_error", "max_ratio", "max_error_float32")}
    worst["min_tolerance"] = min(r["orthogonality"]["worst"]["min_tolerance"] for r in runs)
    checked = sum(r["orthogonality"]["worst"]["steps_checked"] for r in runs)
    verdict = "verified" if worst["max_ratio"] <= 1.0 else "contradicted"
    evidence = (f"max |P^T P - I| = {worst['max_error']:.3g} over every head and layer after each of {checked} "
                f"parameter states ({len(runs)} seeds, initialisation included), P = expm(M - M^T) in float64 from "
                f"the trained M; at most {worst['max_ratio']:.3g} of its tolerance (float64 expm_orthogonality, "
                f"smallest {worst['min_tolerance']:.3g}). The float32 P used in training: "
                f"{worst['max_error_float32']:.3g} (float32 eps {EPS32:.2g})")
    return {"verdict": verdict, "evidence": evidence, "scale": scale, **worst, "states_checked": checked}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.tasks.grid import thin

    setup = QUICK_SETUP if quick else SETUP
    cases = [(m, s) for m in MODELS for s in setup["seeds"]]
    records = []
    for k, (model, seed) in enumerate(cases):
        progress(k, len(cases), f"{model} seed {seed}")
        records.append(run(model, seed, setup))
    progress(len(cases), len(cases), "done")
    layers = setup["n_layers"]
    table = summarise(records, layers)
    scale = (f"task {setup['task']} at L = {setup['length']} (the paper: LRA ListOps, not available here), "
             f"{layers} blocks, H = {setup['d_model']}, {setup['steps']} steps of batch {setup['batch_size']}, "
             f"{len(setup['seeds'])} seeds, torch float32")
    claims = {"R8": claim_r8(table, records, setup, scale), "R9": claim_r9(records, scale),
              "R1": claim_r1(records, scale)}
    for r in records:
        r["losses"] = thin(r["losses"], points=50)
    data = {"runs": records, "table": table, "claims": claims,
            "plots": {"steps": plot_over_steps(records, layers), "time": plot_over_t(records, layers),
                      "checks": plot_checks(records, layers)}}
    return data, {**setup, "models": list(MODELS), "cv_reproduced": CV_REPRODUCED, "drift_factor": DRIFT_FACTOR,
                  "settle_band": SETTLE_BAND}


# -- plots --------------------------------------------------------------------------------------

COLOURS = {"rotrnn": "tab:green", "lru": "tab:orange"}


def _band(ax, x, curves, colour, label, log=True):
    a = np.asarray(curves)                                           # (seeds points)
    ax.plot(x, a.mean(axis=0), color=colour, lw=1.4, label=label)
    ax.fill_between(x, a.min(axis=0), a.max(axis=0), color=colour, alpha=0.25, lw=0)
    if log:
        ax.set_yscale("log")


def plot_over_steps(records: list[dict], layers: int) -> str:
    from linrnn.reports.plots import figure, to_svg

    fig, axes = figure(width=9.0, height=2.8, ncols=layers)
    for i, ax in enumerate(axes):
        for model in MODELS:
            runs = [r for r in records if r["model"] == model]
            _band(ax, runs[0]["measured_steps"], [r["norm"][i] for r in runs], COLOURS[model], model)
        ax.set(title=f"layer {i}", xlabel="optimiser step")
    axes[0].set_ylabel("mean ||x_t|| (log)")
    axes[-1].legend(fontsize=7)
    return to_svg(fig, "per-layer mean hidden-state norm over training: mean over seeds, band min to max")


def plot_over_t(records: list[dict], layers: int) -> str:
    from linrnn.reports.plots import figure, to_svg

    fig, axes = figure(width=9.0, height=2.8, ncols=layers)
    for i, ax in enumerate(axes):
        for model in MODELS:
            runs = [r for r in records if r["model"] == model]
            t = np.arange(1, len(runs[0]["norm_t"][i]) + 1)
            _band(ax, t, [r["norm_t"][i] for r in runs], COLOURS[model], model)
        ax.set(title=f"layer {i}", xlabel="t")
    axes[0].set_ylabel("||x_t|| after training (log)")
    axes[-1].legend(fontsize=7)
    return to_svg(fig, "hidden-state norm against t at the end of training: mean over seeds, band min to max")


def plot_checks(records: list[dict], layers: int) -> str:
    from linrnn.reports.plots import figure, to_svg

    fig, (left, right) = figure(width=9.0, height=2.8, ncols=2)
    lru = [r for r in records if r["model"] == "lru"]
    for i in range(layers):
        _band(left, lru[0]["drift"]["step"], [r["drift"]["max"][i] for r in lru], f"C{i}", f"layer {i}")
    left.axhline(max(r["drift"]["rounding_floor"] for r in lru), color="0.4", ls=":", lw=0.9, label="rounding at init")
    left.set(title="R9: LRU max |gamma_log - log sqrt(1-|lambda|^2)|", xlabel="optimiser step")
    left.legend(fontsize=7)
    rot = [r for r in records if r["model"] == "rotrnn"]
    steps = rot[0]["orthogonality"]["step"]
    _band(right, steps, [np.maximum(r["orthogonality"]["max_error"], 1e-18) for r in rot], "tab:green",
          "float64 P from the trained M")
    _band(right, steps, [r["orthogonality"]["max_error_float32"] for r in rot], "tab:olive", "float32 P (training)")
    right.axhline(min(r["orthogonality"]["worst"]["min_tolerance"] for r in rot), color="tab:red", ls="--", lw=0.9,
                  label="float64 tolerance")
    right.set(title="R1: RotRNN max |P^T P - I|", xlabel="optimiser step")
    right.legend(fontsize=7)
    return to_svg(fig, "R9: the LRU's gamma_log drift per layer; R1: orthogonality of P after optimiser steps")

"""Hidden-state norms over training, RotRNN vs LRU (claim R8), with R9 and R1 measured on the same runs.

The paper's experiment (docs/papers.md) logs each layer's mean state norm during LRA ListOps training.
ListOps is not available here, so the runs train on a synthetic task of DLR's set (`SETUP["task"]` in
`linrnn.experiments.normstudy`: CumSum, a long-memory task both models learn at this scale) at a
reduced scale, with the torch backend in float32, several seeds, 2-3 residual blocks.

Every `measure_every` steps (and at the end), on one fixed validation batch, a forward hook on
`model.layers[i].mixer` captures each block's mixer input u (B L H); the float64 reference
(`linrnn.impls.reference.{rotrnn,lru}.trajectory`) then computes every state x_1..x_L from the layer's
current parameters, and per layer the study records

    norm      mean over t and batch of ||x_t||   (RotRNN: the per-head norm ||x^h_t||, averaged over
              heads, as the authors' `kai/norms` branch logs it; LRU: the norm of its one state in C^N)
    norm_t    at the end of training: mean over batch of ||x_t||, as a function of t
    alignment E||B u_t||^2 / (||B||_F^2 E||u_t||^2 / H): 1 for inputs isotropic across features, where
              RotRNN's xi = sqrt(1 - gamma^2) / ||B||_F normalises exactly (a diagnostic, no verdict)

and summarises each curve over training by its coefficient of variation (std / mean over the
measurements, step 0 included). The same runs give, after every optimiser step:

    R9  LRU:    drift_j = gamma_log_j - log sqrt(1 - |lambda_j|^2), the gap between the learned input
                scaling and the value that would normalise mode j (zero at initialisation, up to float32
                rounding); max and mean of |drift| over modes, per layer
    R1  RotRNN: P_h = expm(M_h - M_h^T) computed in float64 with the model's own route from the trained
                M; max |P^T P - I| over heads and layers, against the tolerance table's float64
                `expm_orthogonality`. The float32 P the model used is recorded beside it.

The verdicts (R8, R9, R1; thresholds in `linrnn.reports.ledger`) are computed from these measurements
when the page renders. This module runs the study and describes its figures (plain data).
"""

from __future__ import annotations

import numpy as np

from linrnn.experiments.normstudy import MODELS, study
from linrnn.reports import plots

NAME = "norms"
TITLE = "Hidden-state norms during training: RotRNN vs LRU (claims R8, R9, R1)"
TEMPLATE = "norms.html.j2"
LEAD = ("steps",)       # figures shown above the section's details (`render`)

COLOURS = {"rotrnn": "tab:green", "lru": "tab:orange"}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    data, config = study(quick, progress)
    data["plots"] = figures(data["runs"], config["n_layers"])
    return data, config


def summary(data: dict) -> str:
    worst = {}
    for r in data["table"]:
        worst[r["model"]] = max(worst.get(r["model"], 0.0), r["cv_mean"])
    return ("Coefficient of variation of the state norm over training, mean over seeds, in the most varying layer: "
            + ", ".join(f"{m} {v:.3f}" for m, v in worst.items()) + " (lower: a steadier norm).")


def _band(label: str, x, curves, colour: str) -> dict:
    """Mean over seeds, band from min to max.     curves (seeds points)"""
    a = np.asarray(curves, dtype=float)
    return plots.series(label, x, a.mean(axis=0), colour, low=a.min(axis=0), high=a.max(axis=0))


def figures(records: list[dict], layers: int) -> dict:
    steps, times = [], []
    for i in range(layers):
        over_steps, over_t = [], []
        for model in MODELS:
            runs = [r for r in records if r["model"] == model]
            over_steps.append(_band(model, runs[0]["measured_steps"], [r["norm"][i] for r in runs], COLOURS[model]))
            t = list(range(1, len(runs[0]["norm_t"][i]) + 1))
            over_t.append(_band(model, t, [r["norm_t"][i] for r in runs], COLOURS[model]))
        steps.append(plots.panel(f"layer {i}", "optimiser step", "mean ||x_t|| (log)", over_steps, yscale="log"))
        times.append(plots.panel(f"layer {i}", "t", "||x_t|| after training (log)", over_t, yscale="log"))
    lru = [r for r in records if r["model"] == "lru"]
    drift = [_band(f"layer {i}", lru[0]["drift"]["step"], [r["drift"]["max"][i] for r in lru], f"C{i}")
             for i in range(layers)]
    rot = [r for r in records if r["model"] == "rotrnn"]
    ortho_steps = rot[0]["orthogonality"]["step"]
    ortho = [_band("float64 P from the trained M", ortho_steps,
                   [np.maximum(r["orthogonality"]["max_error"], 1e-18) for r in rot], "tab:green"),
             _band("float32 P (training)", ortho_steps, [r["orthogonality"]["max_error_float32"] for r in rot],
                   "tab:olive")]
    checks = [
        plots.panel("R9: LRU max |gamma_log - log sqrt(1-|lambda|^2)|", "optimiser step", "", drift, yscale="log",
                    hlines=[plots.hline(max(r["drift"]["rounding_floor"] for r in lru), "rounding at init",
                                        "0.4", ":")]),
        plots.panel("R1: RotRNN max |P^T P - I|", "optimiser step", "", ortho, yscale="log",
                    hlines=[plots.hline(min(r["orthogonality"]["worst"]["min_tolerance"] for r in rot),
                                        "float64 tolerance", "tab:red")]),
    ]
    return {
        "steps": plots.figure("per-layer mean hidden-state norm over training: mean over seeds, band min to max",
                              steps, 9.0, 2.8),
        "time": plots.figure("hidden-state norm against t at the end of training: mean over seeds, band min to max",
                             times, 9.0, 2.8),
        "checks": plots.figure("R9: the LRU's gamma_log drift per layer; R1: orthogonality of P after optimiser "
                               "steps", checks, 9.0, 2.8),
    }

"""The measurements of the hidden-state-norm study (claims R8, R9, R1; the report section `sections/norms.py`).

    study(quick, progress, setup=None) -> (data, config)   every run of SETUP plus the per-layer summary

One training run of a RotRNN or an LRU deep model with the torch backend, measured every few steps on
one fixed validation batch: each block's mixer input (a forward hook), the state trajectory computed
from it by the float64 reference, and, after every optimiser step, the LRU's gamma_log drift (R9) and
the orthogonality of RotRNN's P (R1). The section's docstring states what is recorded and why.

The rules that settle R8, R9 and R1 from these measurements are at the end (`settle_r8`, `settle_r9_training`,
`settle_r1_training`); the ledger (`linrnn.reports.ledger`) calls them when the report renders.
"""

from __future__ import annotations

import math

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def train_config(model: str, seed: int, setup: dict):
    from linrnn.tasks.config import TrainConfig

    low, high = setup["ring"]
    per_model = {"rotrnn": {"d_state": setup["rotrnn_d_state"], "heads": setup["heads"], "gamma_min": low,
                            "gamma_max": high},
                 "lru": {"d_state": setup["lru_d_state"], "r_min": low, "r_max": high}}[model]   # the study's two
    return TrainConfig(task=setup["task"], length=setup.get("length"), model=model, d_model=setup["d_model"],
                       n_layers=setup["n_layers"], lr=setup["lr"], schedule="cosine", steps=setup["steps"],
                       warmup_steps=int(setup["warmup_fraction"] * setup["steps"]), batch_size=setup["batch_size"],
                       seed=seed, backend="torch", dtype="float32", eval_batches=2, mixer=per_model,
                       **setup.get("train", {}))


# -- measurements -------------------------------------------------------------------------------

def state_norms(mixer, u: np.ndarray, valid: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """||x_t|| of every state (float64 reference), and the input alignment of B over the `valid` positions (B L)
    (default: all; a padded data batch's positions past its lengths do not count).

    u (B L H) float64 -> (B L) norms (RotRNN: per-head norms averaged over heads; LRU: the norm of the
    complex state), and alignment = E||B u_t||^2 / (||B||_F^2 E||u_t||^2 / H), averaged over heads: 1 for
    inputs isotropic across features, the case in which RotRNN's xi = sqrt(1 - gamma^2) / ||B||_F
    normalises exactly (it also assumes inputs white in time).
    """
    bundle = mixer.to_bundle()
    p, H = bundle.params, u.shape[-1]
    valid = np.ones(u.shape[:2], dtype=bool) if valid is None else valid
    power = np.mean(np.sum(u[valid] ** 2, axis=-1)) / H                          # E||u_t||^2 / H
    return {"rotrnn": _rotrnn_norms, "lru": _lru_norms}[bundle.config.kind](p, bundle.config, u, valid, power)


def _rotrnn_norms(p, cfg, u: np.ndarray, valid: np.ndarray, power: float) -> tuple[np.ndarray, float]:
    from linrnn.impls.reference import rotrnn

    states = rotrnn.trajectory(p, cfg, u)                                        # (B L heads N)
    gain = np.mean(np.sum(np.einsum("hnd,vd->vhn", p["B"], u[valid]) ** 2, axis=-1), axis=0)  # (heads,)
    alignment = float(np.mean(gain / (np.sum(p["B"] ** 2, axis=(1, 2)) * power)))
    return np.linalg.norm(states, axis=-1).mean(axis=-1), alignment


def _lru_norms(p, cfg, u: np.ndarray, valid: np.ndarray, power: float) -> tuple[np.ndarray, float]:
    from linrnn.impls.reference import lru

    states = lru.trajectory(p, cfg, u)                                           # (B L N) complex
    Bc = p["B_re"] + 1j * p["B_im"]                                              # (N H)
    alignment = float(np.mean(np.sum(np.abs(u[valid] @ Bc.T) ** 2, axis=-1)) / (np.sum(np.abs(Bc) ** 2) * power))
    return np.linalg.norm(states, axis=-1), alignment


def mixer_inputs(model, inputs, lengths=None, mode: str = "scan") -> list[np.ndarray]:
    """Each block's mixer input on `inputs` (and `lengths`, for a padded data batch), captured by forward hooks in
    evaluation mode.     -> [(B L H)]"""
    import torch

    captured: dict[int, np.ndarray] = {}
    hooks = [block.mixer.register_forward_hook(
        lambda module, args, output, i=i: captured.__setitem__(i, args[0].detach().double().cpu().numpy()))
        for i, block in enumerate(model.layers)]
    model.eval()
    try:
        with torch.no_grad():
            model(inputs, lengths, mode=mode)
    finally:
        for h in hooks:
            h.remove()
    return [captured[i] for i in range(len(model.layers))]


def orthogonality(model) -> dict[str, float]:
    """|P^T P - I| after a step, over every head of every layer.

    P is computed in float64 from the trained M with the model's own route; its tolerance per head is
    the table's `expm_orthogonality` at scale n * max(1, ||M - M^T||_2). Returns the max error, the
    max ratio error / tolerance, the smallest tolerance, and the max error of the float32 P the model
    computes in training (for information: float32 has no entry in the table).
    """
    import torch

    from linrnn.base.tolerance import scaled_tolerance
    from linrnn.impls.torch.rotrnn import orthogonal

    out = {"max_error": 0.0, "max_ratio": 0.0, "min_tolerance": math.inf, "max_error_float32": 0.0}
    with torch.no_grad():
        for block in model.layers:
            M = block.mixer.M.detach().cpu()                                       # (heads N N)
            n = M.shape[-1]
            for dtype, key in ((torch.float64, "max_error"), (torch.float32, "max_error_float32")):
                P = orthogonal(M.to(dtype))
                err = (P.transpose(1, 2) @ P - torch.eye(n, dtype=dtype)).abs().amax(dim=(1, 2))  # (heads,)
                out[key] = max(out[key], float(err.max()))
                if dtype == torch.float64:
                    S = M.double() - M.double().transpose(1, 2)
                    norms = torch.linalg.matrix_norm(S, ord=2)                     # (heads,)
                    tols = [scaled_tolerance("expm_orthogonality", "float64", n * max(1.0, float(s))) for s in norms]
                    out["max_ratio"] = max(out["max_ratio"], max(float(e) / t for e, t in zip(err, tols)))
                    out["min_tolerance"] = min(out["min_tolerance"], min(tols))
    return out


def gamma_drift(model) -> list[tuple[float, float, float]]:
    """Per LRU layer: (max |drift|, mean |drift|, max |gamma_log|), drift = gamma_log - log sqrt(1 - |lambda|^2)."""
    out = []
    for block in model.layers:
        m = block.mixer
        nu_log = m.nu_log.detach().double().cpu().numpy()
        gamma_log = m.gamma_log.detach().double().cpu().numpy()
        normaliser = 0.5 * np.log(-np.expm1(-2.0 * np.exp(nu_log)))       # log sqrt(1 - |lambda|^2), no cancellation
        drift = np.abs(gamma_log - normaliser)
        out.append((float(drift.max()), float(drift.mean()), float(np.abs(gamma_log).max())))
    return out


# -- one training run ---------------------------------------------------------------------------

class DriftTrack:
    """R9 on an LRU run: the per-layer drift after every step; curves kept at the measurement steps."""

    def __init__(self, layers: int):
        self.curves = {"step": [], "max": [[] for _ in range(layers)], "mean": [[] for _ in range(layers)]}
        self.worst = [0.0] * layers
        self.floor = 0.0            # the drift of the float32-rounded initialisation, at least eps32 * |gamma_log|

    def after(self, model, step: int, keep: bool) -> None:
        drifts = gamma_drift(model)
        for i, (dmax, dmean, gmax) in enumerate(drifts):
            self.worst[i] = max(self.worst[i], dmax)
            if step == 0:
                self.floor = max(self.floor, dmax, EPS32 * gmax)
            if keep:
                self.curves["max"][i].append(dmax)
                self.curves["mean"][i].append(dmean)
        if keep:
            self.curves["step"].append(step)

    def result(self, steps: int) -> tuple[str, dict]:
        return "drift", {**self.curves, "worst_max": self.worst, "rounding_floor": self.floor}


class OrthogonalityTrack:
    """R1 on a RotRNN run: |P^T P - I| after every step; curves kept at the measurement steps."""

    KEYS = ("max_error", "max_ratio", "max_error_float32")

    def __init__(self, layers: int):
        self.curves = {"step": [], **{k: [] for k in self.KEYS}}
        self.worst = {**{k: 0.0 for k in self.KEYS}, "min_tolerance": math.inf}

    def after(self, model, step: int, keep: bool) -> None:
        o = orthogonality(model)
        for k in self.KEYS:
            self.worst[k] = max(self.worst[k], o[k])
            if keep:
                self.curves[k].append(o[k])
        self.worst["min_tolerance"] = min(self.worst["min_tolerance"], o["min_tolerance"])
        if keep:
            self.curves["step"].append(step)

    def result(self, steps: int) -> tuple[str, dict]:
        return "orthogonality", {**self.curves, "worst": {**self.worst, "steps_checked": steps + 1}}


def run(model_name: str, seed: int, setup: dict, folder=None) -> dict:
    """Train one model with the torch adapter (tasks/train.py's step, schedule and clipping) and measure; a data
    task (setup["task"] = "listops") reads its splits from `folder`."""
    import torch

    from linrnn.base.errors import LinrnnError
    from linrnn.impls.init import init
    from linrnn.tasks.schedule import lr_factor
    from linrnn.tasks.torch_adapter import Adapter
    from linrnn.tasks import datatasks
    from linrnn.tasks.train import DataSource, SyntheticSource

    cfg = train_config(model_name, seed, setup)
    source = DataSource(cfg, folder) if cfg.is_data_task else SyntheticSource(cfg)
    adapter = Adapter(init(source.model_config(), seed), cfg)
    model, layers = adapter.model, cfg.n_layers
    if cfg.is_data_task:      # the validation split's first examples, padded; states past a length are not counted
        batch = datatasks.model_batch(cfg.data_task, source.evaluation["val"].batch(0, 0), cfg.dtype)
        inputs, lengths = batch.inputs[: setup["eval_batch_size"]], batch.lengths[: setup["eval_batch_size"]]
    else:
        inputs = cfg.validation_task().batch(0).inputs[: setup["eval_batch_size"]]            # (B L_in d_in)
        lengths = np.full(len(inputs), inputs.shape[1], dtype=np.int64)
    fixed = torch.from_numpy(np.ascontiguousarray(inputs))
    fixed = fixed.to(torch.int64 if inputs.dtype.kind in "iu" else model.dtype)    # token ids or features
    valid = np.arange(inputs.shape[1])[None, :] < lengths[:, None]                             # (B L)
    fixed_lengths = torch.from_numpy(np.ascontiguousarray(lengths))
    track = DriftTrack(layers) if model_name == "lru" else OrthogonalityTrack(layers)
    record: dict = {"model": model_name, "seed": seed, "measured_steps": [], "norm": [[] for _ in range(layers)],
                    "input_norm": [[] for _ in range(layers)], "alignment": [[] for _ in range(layers)], "losses": []}

    def measure(step: int) -> None:
        record["measured_steps"].append(step)
        record["norm_t"] = []                                  # kept from the last measurement only
        for i, u in enumerate(mixer_inputs(model, fixed, fixed_lengths, cfg.compute_mode)):
            norms, alignment = state_norms(model.layers[i].mixer, u, valid)      # (B L), float
            record["norm"][i].append(float(norms[valid].mean()))
            record["alignment"][i].append(alignment)
            record["input_norm"][i].append(float(np.linalg.norm(u, axis=-1)[valid].mean()))
            counted = np.maximum(valid.sum(axis=0), 1)                 # per t: the examples still running
            record["norm_t"].append((np.where(valid, norms, 0.0).sum(axis=0) / counted).tolist())

    measure(0)
    track.after(model, 0, keep=True)
    for step in range(cfg.steps):
        factor = lr_factor(step, cfg.steps, cfg.warmup_steps, cfg.schedule)
        rec_lr = cfg.lr if cfg.recurrence_lr is None else cfg.recurrence_lr
        loss = float(adapter.train_step(source.train_batch(step), step, cfg.lr * factor, rec_lr * factor))
        if not math.isfinite(loss):
            raise LinrnnError(f"norms: {model_name} seed {seed} diverged at step {step} (loss {loss})")
        record["losses"].append(loss)
        done = step + 1
        keep = done % setup["measure_every"] == 0 or done == cfg.steps
        track.after(model, done, keep)                         # after every optimiser step
        if keep:
            measure(done)
    key, value = track.result(cfg.steps)
    record[key] = value
    record["final"] = source.evaluate(adapter)
    return record


# -- the study and its summaries ----------------------------------------------------------------

MODELS = ("rotrnn", "lru")   # fixed: the two models R8 compares, not every registered model
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
SETTLE_BAND = 0.05      # a norm curve has settled from the measurement after which it stays within 5% of its end


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


def spread_across(records: list[dict], model: str) -> float:
    """CV of the end-of-training mean norm across every layer and seed of `model`."""
    return coefficient_of_variation([n[-1] for r in records if r["model"] == model for n in r["norm"]])


def study(quick: bool, progress, setup: dict | None = None) -> tuple[dict, dict]:
    """Every (model, seed) run of the setup, the per-layer summary, and the spread across layers and seeds."""
    from linrnn.tasks.grid import thin

    setup = setup or (QUICK_SETUP if quick else SETUP)
    cases = [(m, s) for m in MODELS for s in setup["seeds"]]
    records = []
    for k, (model, seed) in enumerate(cases):
        progress(k, len(cases), f"{model} seed {seed}")
        records.append(run(model, seed, setup))
    progress(len(cases), len(cases), "done")
    table = summarise(records, setup["n_layers"])
    across = {m: spread_across(records, m) for m in MODELS}
    for r in records:
        r["losses"] = thin(r["losses"], points=50)
    return ({"runs": records, "table": table, "across": across},
            {**setup, "models": list(MODELS), "settle_band": SETTLE_BAND})


# -- the rules (R8, R9, R1 on the section's measurements) ---------------------------------------------------

def norms_scale(config: dict) -> str:
    from linrnn.experiments.decide.evidence import count

    return (f"task {config['task']} at L = {config['length']} (the paper: LRA ListOps, not available here), "
            f"{config['n_layers']} blocks, H = {config['d_model']}, {config['steps']} steps of batch "
            f"{config['batch_size']}, {count(len(config['seeds']), 'seed')}, torch float32")


def few_words(scope: str) -> str:
    """A section's scale in a few words, from its scope (`norms_scale`, `tasks_scale`): the length, steps, seeds."""
    picked = [w.split(" (")[0] for w in scope.split(", ") if any(k in w for k in ("L = ", "steps", "seed"))]
    return ", ".join(picked)


def settle_r8(data: dict, scale: str = "") -> list:
    """R8 on the norms section (CumSum): `rules.norms_by_layer` on the per-seed CVs, as side findings (the claim is
    about ListOps, which the experiment norms-listops decides); the spread across layers and seeds at the end of
    training is reported beside it."""
    from dataclasses import replace

    from linrnn.experiments.decide.evidence import num, side
    from linrnn.experiments.decide.rules import norms_by_layer

    table = data["table"]
    layers = sorted({r["layer"] for r in table})
    cvs = {(r["model"], r["layer"]): [num(v) for v in r["cv"]] for r in table}
    parts = [replace(p, scale=few_words(scale)) for p in norms_by_layer(cvs, layers, "training (norms)", scale)]
    across = {m: num(v) for m, v in data["across"].items()}
    beside = (f". Beside it (deciding nothing), the CV across layers and seeds of the end-of-training norms: "
              f"RotRNN {across['rotrnn']:.3g} vs LRU {across['lru']:.3g}")
    parts = [replace(parts[0], evidence=parts[0].evidence + beside)] + parts[1:]
    return side(parts, "the claim is about ListOps (the experiment norms-listops); CumSum is another task")


def settle_r9_training(data: dict, scale: str = "") -> list:
    """R9 measured: the LRU's gamma_log drifts away from log sqrt(1 - |lambda|^2) by more than DRIFT_FACTOR times
    its float32 rounding floor at initialisation."""
    from linrnn.experiments.decide.evidence import DRIFT_FACTOR, Part, num

    runs = [r for r in data["runs"] if r["model"] == "lru"]
    final_max = max(num(m[-1]) for r in runs for m in r["drift"]["max"])
    floor = max(num(r["drift"]["rounding_floor"]) for r in runs)
    verdict = "verified" if final_max > DRIFT_FACTOR * floor else "inconclusive"
    text = (f"after training, |gamma_log - log sqrt(1 - |lambda|^2)| reaches {final_max:.3g} (max over modes, layers "
            f"and seeds); at initialisation {floor:.2g} (float32 rounding): nothing in the LRU keeps its input scaling "
            f"tied to |lambda| (threshold: {DRIFT_FACTOR:g} x the rounding floor)")
    power = None if verdict != "inconclusive" else {
        "seeds_per_arm": None, "cpu_hours": None,
        "assumption": "a longer training run, in which gamma_log can drift past ten times its rounding floor"}
    return [Part("training (norms)", verdict, text, scale, test="numeric", scale=few_words(scale), n=(len(runs),),
                 effect=final_max, power=power)]


def settle_r1_training(data: dict, scale: str = "") -> list:
    """R1 measured: P = expm(M - M^T) from the trained M stays orthogonal within the float64 tolerance."""
    from linrnn.experiments.decide.evidence import Part, num

    runs = [r for r in data["runs"] if r["model"] == "rotrnn"]
    worst = [r["orthogonality"]["worst"] for r in runs]
    ratio = max(num(w["max_ratio"]) for w in worst)
    error = max(num(w["max_error"]) for w in worst)
    f32 = max(num(w["max_error_float32"]) for w in worst)
    checked = sum(w["steps_checked"] for w in worst)
    verdict = "inconclusive" if math.isnan(ratio) else ("verified" if ratio <= 1.0 else "contradicted")
    text = (f"max |P^T P - I| = {error:.3g} over every head and layer after each of {checked} parameter states "
            f"({len(runs)} seeds), P = expm(M - M^T) in float64 from the trained M: {ratio:.3g} of its tolerance "
            f"(float64 expm_orthogonality); the float32 P used in training: {f32:.3g}")
    power = None if verdict != "inconclusive" else {
        "seeds_per_arm": None, "cpu_hours": None, "assumption": "a finite orthogonality measurement (the record's is NaN)"}
    return [Part("training (norms)", verdict, text, scale, test="numeric", scale=f"{few_words(scale)}", n=(checked,),
                 effect=ratio, power=power)]

"""The experiments that settle the papers' empirical claims at the scale this machine allows.

    linrnn experiment --list
    linrnn experiment NAME [--quick] [--data DIR] [--runs DIR] [--out FILE] [--quiet]

Each experiment is a fixed list of training runs (`Job`s) of the one training loop
(`linrnn.tasks.train.train`): synthetic streams, or data sets the project's generators write in the real
on-disk formats (generated under --data when missing, seeded, so the same data every time). It writes
one JSON record (default `reports/results/experiment-NAME.json`, `--quick`: `...-quick.json`) with every
run's labels (task, model, the factor the experiment varies, seed), resolved config, parameter count,
steps, time per step, final metric, baseline (data tasks) and curve, plus the command, date, machine,
library versions and total time. The record is rewritten after every run, so an interrupted experiment
loses nothing; run it again and the finished runs are reused (a run directory whose results.json has
the same config is not retrained).

Measurements only: what a record means for a claim is decided by the ledger (`linrnn.reports.ledger`)
when the report renders, so `linrnn report --from` re-settles it. The report's "Experiments" section
renders the stored records; the default `linrnn report` does not train.

`--quick` runs each experiment at toy sizes (seconds to a minute): it checks that the pipeline works,
and its record says `"quick": true`; the ledger never settles a claim from a quick record.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from linrnn.experiments import STORED_DIR   # reports/results/ in a checkout
# the data sets of the reduced-scale training runs: one definition, so one folder under --data holds one data set
from linrnn.experiments.reduced_training import (LISTOPS, PATHFINDER, SEGMENTATION, SPEECH, SUBTREES, DataSet,
                                                 baseline, ensure_data)
from linrnn.impls.errors import LinrnnError

SCHEMA = 1
CURVE_POINTS = 100


@dataclass(frozen=True)
class Job:
    labels: dict                   # what the tables group by: task, model, the varied factor, seed
    config: dict                   # TrainConfig fields
    data: DataSet | None = None    # None: a synthetic task
    options: dict = field(default_factory=dict)   # what a custom `run_job` needs besides the config (not a label)

    @property
    def name(self) -> str:
        return "-".join(str(v) for v in self.labels.values())


@dataclass(frozen=True)
class Experiment:
    name: str
    claims: tuple[str, ...]
    title: str
    question: str                              # what it measures, in a sentence
    jobs: Callable[[bool], list[Job]]          # quick -> the runs
    scale: Callable[[bool], str]               # quick -> the scale in words
    factor: str = "model"                      # the label the experiment varies besides task and seed
    note: str = ""                             # what the reader must know (e.g. synthetic speech)
    extra: dict = field(default_factory=dict)
    # (job, data_root, runs_root, progress) -> the job's rows; None: one training run of `linrnn.tasks.train`
    run_job: Callable[[Job, Path, Path, bool], list[dict]] | None = None


# -- D8: pre- vs post-norm, DLR against a Transformer of matched size ---------------------------------

D8_TASKS = ("cumsum", "cummax", "masked_select_fixed", "reverse")
D8_MODELS = ("dlr", "attention")


def d8_jobs(quick: bool) -> list[Job]:
    from linrnn.tasks.grid import grid_config

    tasks, seeds, length, steps = ((D8_TASKS[:1], (0, 1), 16, 40) if quick else (D8_TASKS, (0, 1, 2), 64, 1000))
    jobs = []
    for task in tasks:
        for model in D8_MODELS:
            for prenorm in (True, False):
                for seed in seeds:
                    config = grid_config(task, model, "torch", length, steps, seed, n_layers=2, prenorm=prenorm)
                    jobs.append(Job({"task": task, "model": model, "norm": "pre" if prenorm else "post",
                                     "seed": seed}, config.to_dict()))
    return jobs


def d8_scale(quick: bool) -> str:
    if quick:
        return "toy: cumsum at L = 16, 40 steps, 2 seeds"
    return ("4 synthetic tasks (cumsum, cummax, masked_select_fixed, reverse) at L = 64, 1,000 steps of batch 16, "
            "3 seeds; 2 residual blocks of H = 32; DLR (N = 64, its synthetic initialisation) and causal softmax "
            "attention (4 heads) in the same blocks, LayerNorm before the mixer (pre) or after the residual (post)")


# -- D4: the DLR paper's 13 tasks, DLR against LRU and RotRNN, the tasks grouped by what they need --------

# This project's reading of the generators (docs/experiments.md), not the paper's tables: "few" tasks are
# translation-invariant linear maps (a handful of convolution kernels solves them), "many" tasks are fixed
# linear maps that are not translation-invariant (one kernel per output position), "context" tasks need the
# input to choose the map. Tasks 12 and 13 (ListOpsSubTrees, PathfinderSegmentation) are data sets: the
# subtrees-segmentation experiment trains them.
D4_GROUPS = {"shift": "few", "cumsum": "few",
             "reverse": "many", "masked_select_fixed": "many", "solve_fixed": "many",
             "context_shift": "context", "masked_select": "context", "solve": "context", "sort": "context",
             "cummax": "context", "mips": "context"}
D4_GROUP_ORDER = ("few", "many", "context")
D4_MODELS = ("dlr", "lru", "rotrnn")
D4_BOTH_FRAMEWORKS = ("shift", "context_shift")
D4_LAYERS = 6                  # the DLR paper's deep setting for the atomic tasks (6 layers at L = 512 and 4096)


def d4_jobs(quick: bool) -> list[Job]:
    from linrnn.tasks.grid import grid_config

    tasks = ("shift", "context_shift") if quick else tuple(D4_GROUPS)
    length, steps, layers = (16, 30, 2) if quick else (64, 500, D4_LAYERS)
    # Shift and ContextShift first, in both frameworks: the claim's own pair comes before the rest of the table
    order = sorted(tasks, key=lambda t: t not in D4_BOTH_FRAMEWORKS)
    jobs = []
    for task in order:
        for backend in (("torch", "jax") if task in D4_BOTH_FRAMEWORKS else ("torch",)):
            for model in D4_MODELS:
                config = grid_config(task, model, backend, length, steps, 0, n_layers=layers, lr=5e-3)
                jobs.append(Job({"task": task, "model": model, "backend": backend, "group": D4_GROUPS[task]},
                                config.to_dict()))
    return jobs


def d4_scale(quick: bool) -> str:
    if quick:
        return "toy: Shift and ContextShift at L = 16, 30 steps, 2 layers"
    return (f"the 11 synthetic tasks at L = 64 (paper: 512 and 4096), {D4_LAYERS} pre-norm residual blocks of H = 32 "
            "(the paper's deep setting), 500 steps of batch 16 at peak learning rate 5e-3 with warm-up and cosine "
            "decay, one seed; DLR with its synthetic initialisation (N = 64), LRU (64 modes) and RotRNN (8 heads "
            "of 16); PyTorch for every task, JAX as well for Shift and ContextShift; tasks 12 and 13 "
            "(ListOpsSubTrees, PathfinderSegmentation) are the subtrees-segmentation experiment's")


# -- D2: Shift at growing L, where each model stops solving ---------------------------------------------

# The DLR paper's long-Shift protocol: one layer of H = 32, batch 4, the state size N fixed while L grows
# (N = 4096 there, up to L = 2^20); here N = 1,024, so L = N, 2N, 4N. Above L = N the periodic
# initialisation's phases repeat within the sequence (lags l and l + N look alike at initialisation), so a
# model that solves Shift there has learnt phases off that grid, as the paper's runs must have.
D2_LENGTHS = (1024, 2048, 4096)
D2_STATE = 1024
D2_STEPS = 800
# (model, the `init` label, its fields): DLR with its synthetic-task initialisation (Delta = 1e-5,
# |lambda|^L ~ 1 over every length here) and with its default one (Delta log-uniform in [1e-4, 1e-1]: most
# modes forget within a few thousand steps); LRU and RotRNN with the grid's long-memory ring (0.999-0.9999)
D2_VARIANTS = (("dlr", "synthetic", {}), ("dlr", "default", {"dt_min": 1e-4, "dt_max": 1e-1}),
               ("lru", "ring", {}), ("rotrnn", "ring", {}))


def d2_jobs(quick: bool) -> list[Job]:
    from linrnn.tasks.grid import grid_config

    lengths, steps, n = ((32, 64), 30, 16) if quick else (D2_LENGTHS, D2_STEPS, D2_STATE)
    jobs = []
    for length in lengths:                      # length-major: the costliest runs last
        for model, init, fields in D2_VARIANTS:
            # N complex modes for every model (RotRNN: 8 heads of 2N/8 real dimensions, N pairs in all)
            state = {"d_state": 2 * n // 8} if model == "rotrnn" else {"d_state": n}
            config = grid_config("shift", model, "torch", length, steps, 0, n_layers=1, batch_size=4, lr=5e-3,
                                 **state, **fields)
            jobs.append(Job({"task": "shift", "model": model, "init": init, "length": length}, config.to_dict()))
    return jobs


def d2_scale(quick: bool) -> str:
    if quick:
        return "toy: Shift at L = 32 and 64, N = 16, 30 steps"
    return (f"Shift (8 delays, 0 to 7L/8) at L = {', '.join(f'{v:,}' for v in D2_LENGTHS)}, one layer of H = 32 with "
            f"N = {D2_STATE:,} complex modes whatever L (the paper's long-Shift runs: N = 4,096, L up to 2^20), "
            f"{D2_STEPS} steps of batch 4 at peak learning rate 5e-3 (paper: 1e-5 over many epochs), one seed; DLR "
            "with its synthetic initialisation (Delta = 1e-5) and its default one (Delta in [1e-4, 1e-1]), LRU "
            "(|lambda| in [0.999, 0.9999]), RotRNN (8 heads); L = 16,384 and beyond cost several seconds a step "
            "here and were not run")


# -- R8 on ListOps: the hidden-state norm study where the paper measured it ------------------------------

def r8_setup(quick: bool) -> dict:
    """The norm study's setting (`linrnn.experiments.normstudy.SETUP`: model sizes, ring, optimiser) on ListOps."""
    from linrnn.experiments.normstudy import SETUP

    setup = {**SETUP, "task": "listops", "steps": 300, "measure_every": 20, "n_layers": 3,
             "train": {"eval_every": None, "checkpoint_every": None}}
    setup.pop("length")
    return {**setup, "steps": 10, "measure_every": 5, "n_layers": 2, "seeds": [0], "batch_size": 4,
            "eval_batch_size": 4} if quick else setup


def r8_jobs(quick: bool) -> list[Job]:
    from linrnn.experiments.normstudy import MODELS, train_config

    setup = r8_setup(quick)
    data = LISTOPS_QUICK if quick else LISTOPS
    return [Job({"task": "listops", "model": model, "seed": seed}, train_config(model, seed, setup).to_dict(), data,
                {"setup": setup}) for seed in setup["seeds"] for model in MODELS]


def r8_run(job: Job, data_root: Path, runs_root: Path, progress: bool) -> list[dict]:
    """One norm-study run (`normstudy.run`), kept as runs_root/NAME/norms.json for reuse; one row per layer, its
    value the coefficient of variation of the layer's mean state norm over training."""
    from linrnn.experiments.normstudy import coefficient_of_variation, run as norm_run, settle_step
    from linrnn.tasks.config import TrainConfig

    config = TrainConfig(**job.config)
    setup = job.options["setup"]
    folder = ensure_data(data_root, job.data)
    kept = runs_root / job.name / "norms.json"
    record = json.loads(kept.read_text()) if kept.exists() else None
    tic = time.perf_counter()
    if record is None or TrainConfig.from_dict(record["config"]) != config:
        record = norm_run(job.labels["model"], job.labels["seed"], setup, folder)
        record["config"] = config.to_dict()
        record["losses"] = _thin(record["losses"])
        write(kept, record)
    wall = round(time.perf_counter() - tic, 1)
    rows = []
    for layer, curve in enumerate(record["norm"]):
        rows.append({"name": f"{job.name}-layer{layer}", **job.labels, "layer": layer, "config": record["config"],
                     "data": {"generator": job.data.generator, "options": job.data.options}, "status": "ok",
                     "error": None, "metric": "norm_cv", "value": coefficient_of_variation(curve),
                     "steps": config.steps, "seconds_per_step": None, "wall_seconds": wall if layer == 0 else None,
                     "measured_steps": record["measured_steps"], "norm": curve,
                     "input_norm": record["input_norm"][layer], "alignment": record["alignment"][layer],
                     "settle_step": settle_step(record["measured_steps"], curve),
                     "final": record["final"], "train_loss": record["losses"]})
    return rows


def r8_scale(quick: bool) -> str:
    if quick:
        return "toy: 32 ListOps expressions, 10 steps, 2 blocks, one seed"
    s = r8_setup(False)
    return (f"5,000 generated ListOps expressions at the real lengths, {s['steps']} steps of batch {s['batch_size']} "
            f"(about one epoch), {s['n_layers']} pre-norm blocks of H = {s['d_model']}; RotRNN {s['heads']} heads of "
            f"{s['rotrnn_d_state']} and LRU {s['lru_d_state']} modes, ring [{s['ring'][0]}, {s['ring'][1]}], "
            f"peak learning rate {s['lr']}; the state norm measured every {s['measure_every']} steps on "
            f"{s['eval_batch_size']} fixed validation expressions (true lengths only), float64 reference; seeds "
            + ", ".join(map(str, s["seeds"])))


# -- D5: ListOpsSubTrees and PathfinderSegmentation, DLR against local attention, LRU and RotRNN ------

SUBTREES_QUICK = DataSet("subtrees-quick", "listops-subtrees", dict(n_train=8, n_val=4, n_test=4))
SEGMENTATION_QUICK = DataSet("segmentation32-quick", "pathfinder-segmentation",
                             dict(resolution=32, n_train=16, n_val=8, n_test=8))
D5_MODELS = ("dlr", "attention", "lru", "rotrnn")
# local attention's window: the DLR code's chunk of 1,024 on ListOpsSubTrees (L about 8,000); an eighth
# of the 1,024 pixels of PathfinderSegmentation-32, the same fraction of the input
D5_WINDOWS = {"listops-subtrees": 1024, "pathfinder-segmentation": 128}


def _mixer_fields(model: str, task: str) -> dict:
    if model == "dlr":                 # the DLR code's ListOpsSubTrees / PF-seg range
        return {"dt_min": 1e-4, "dt_max": 1e-1}
    if model == "attention":
        return {"heads": 4, "window": D5_WINDOWS[task]}
    if model == "lru":
        return {"r_min": 0.9, "r_max": 0.999}
    return {"heads": 4, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999}   # 4 x 16 real: 32 rotations


def d5_jobs(quick: bool) -> list[Job]:
    seeds = (0,) if quick else (0, 1)
    subtrees, segmentation = (SUBTREES_QUICK, SEGMENTATION_QUICK) if quick else (SUBTREES, SEGMENTATION)
    common = dict(d_model=32, d_state=32, n_layers=2, norm="layer", weight_decay=0.01, eval_every=None,
                  eval_batches=None, checkpoint_every=100, workers=1, backend="torch")
    tasks = {
        "listops-subtrees": (subtrees, dict(task="listops-subtrees", batch_size=8, epochs=1 if quick else 4,
                                            lr=3e-3, recurrence_lr=1.5e-3, warmup_steps=20)),
        "pathfinder-segmentation": (segmentation, dict(task="pathfinder-segmentation",
                                                       data_options={"resolution": 32}, bidirectional=True,
                                                       batch_size=16, epochs=1 if quick else 3, lr=1e-3,
                                                       warmup_steps=20)),
    }
    jobs = []
    for task, (data, fields) in tasks.items():
        for model in D5_MODELS:
            mixer = _mixer_fields(model, task)
            if model == "attention" and quick:
                mixer = {**mixer, "window": 64 if task == "listops-subtrees" else 32}
            for seed in seeds:
                config = {**common, **fields, **mixer, "model": model, "seed": seed}
                jobs.append(Job({"task": task, "model": model, "seed": seed}, config, data))
    # the costliest runs last (an interrupted record then holds every other cell): local attention over
    # ListOpsSubTrees' 8,000 tokens with windows of 1,024 keeps (B heads L 2w) scores per layer, some GB
    return sorted(jobs, key=lambda j: (j.labels["task"], j.labels["model"]) == ("listops-subtrees", "attention"))


def d5_scale(quick: bool) -> str:
    if quick:
        return "toy: 8 ListOpsSubTrees trees and 16 PathfinderSegmentation-32 images, one epoch"
    return ("400 / 50 / 50 generated ListOpsSubTrees trees (7,000-8,180 tokens, causal, 4 epochs of batch 8) and "
            "2,400 generated PathfinderSegmentation-32 images (L = 1,024, bidirectional, 3 epochs of batch 16); "
            "2 blocks of H = 32, N = 32; local attention with windows of 1,024 / 128 positions (4 heads); 2 seeds")


# -- R7 / D6: the Speech Commands pipeline on the espeak-ng corpus --------------------------------------

SPEECH_QUICK = DataSet("speech-quick", "speech", dict(n_train=2, n_val=1, n_test=1))
SPEECH_MODELS = ("rotrnn", "lru", "dlr")


def speech_jobs(quick: bool) -> list[Job]:
    data = SPEECH_QUICK if quick else SPEECH
    common = dict(data_options={"mfcc": True}, d_model=64, d_state=64, n_layers=2, norm="batch", bidirectional=True,
                  batch_size=16, steps=None, lr=4e-3, recurrence_lr=1e-3, weight_decay=0.05, warmup_steps=20,
                  eval_every=None, eval_batches=None, checkpoint_every=100, workers=1, backend="torch", seed=0)
    mixer = {"rotrnn": {"heads": 8, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999},
             "lru": {"r_min": 0.9, "r_max": 0.999}, "dlr": {"dt_min": 1e-3, "dt_max": 1e-1}}
    epochs = {"sc10": 1 if quick else 10, "sc35": 1 if quick else 4}
    return [Job({"task": task, "model": model}, {**common, **mixer[model], "task": task, "model": model,
                                                  "epochs": epochs[task]}, data)
            for task in ("sc10", "sc35") for model in SPEECH_MODELS]


def speech_scale(quick: bool) -> str:
    if quick:
        return "toy: 2 / 1 / 1 clips per word, one epoch"
    return ("the espeak-ng corpus in the Speech Commands layout (synthetic speech; 60 / 10 / 10 clips per word "
            "and split, S4's stratified split of the SC10 and SC35 words), 20 MFCCs x 161 frames; bidirectional, "
            "2 blocks of H = 64 (N = 64; RotRNN 8 heads of 16), BatchNorm; SC10 10 epochs, SC35 4 epochs of "
            "batch 16; one seed")


# -- R6 / D1: ListOps and Pathfinder-32, the papers' models and the baselines on one budget --------------

LISTOPS_QUICK = DataSet("listops-quick", "listops", dict(n_train=32, n_val=8, n_test=8))
PATHFINDER_QUICK = DataSet("pathfinder32-quick", "pathfinder", dict(resolution=32, n_train=32, n_val=8, n_test=8))
LRA_MODELS = ("rotrnn", "lru", "dlr", "s4d", "s5")


def lra_mixer(model: str) -> dict:
    """One state budget for every model: 64 complex modes per layer (RotRNN: 8 heads of 16 real coordinates)."""
    return {"rotrnn": {"heads": 8, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999},
            "lru": {"d_state": 64, "r_min": 0.9, "r_max": 0.999},
            "dlr": {"d_state": 64, "dt_min": 1e-4, "dt_max": 1e-1},
            "s4d": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1},
            "s5": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1}}[model]


def lra_jobs(quick: bool) -> list[Job]:
    seeds = (0,) if quick else (0, 1)
    listops, pathfinder = (LISTOPS_QUICK, PATHFINDER_QUICK) if quick else (LISTOPS, PATHFINDER)
    common = dict(d_model=64, n_layers=2, weight_decay=0.05, eval_every=None, eval_batches=None,
                  checkpoint_every=100, workers=1, backend="torch", lr=3e-3, recurrence_lr=1e-3, warmup_steps=50)
    # the budget fits one CPU core for about 90 minutes: one pass over the ListOps training split, and 250 steps
    # (8,000 of the 16,000 training images) of Pathfinder-32; S4D's convolution costs 4-5 times the others' step
    tasks = {"listops": (listops, dict(task="listops", norm="layer", batch_size=16, epochs=1, steps=None)),
             "pathfinder": (pathfinder, dict(task="pathfinder", norm="batch", bidirectional=True, batch_size=32,
                                             epochs=1 if quick else None, steps=None if quick else 250))}
    # seed-major: an interrupted record holds whole seeds of every model
    return [Job({"task": task, "model": model, "seed": seed}, {**common, **fields, **lra_mixer(model), "model": model,
                                                                "seed": seed}, data)
            for seed in seeds for task, (data, fields) in tasks.items() for model in LRA_MODELS]


def lra_scale(quick: bool) -> str:
    if quick:
        return "toy: 32 ListOps expressions and 32 Pathfinder-32 images, one epoch"
    return ("5,000 / 500 / 500 generated ListOps expressions at the real lengths (one epoch of batch 16: 313 steps) "
            "and 20,000 generated Pathfinder-32 images at LRA's difficulty (250 steps of batch 32: half an epoch of the "
            "16,000 training images; bidirectional, BatchNorm); every model 2 blocks of H = 64 with 64 complex modes "
            "per layer, AdamW 3e-3 (recurrence 1e-3), 2 seeds: a small fraction of LRA's training budget")


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("norm-position", ("D8",), "Pre- vs post-norm: DLR and a Transformer of matched size",
               "how much the final R^2 moves when LayerNorm moves from before the mixer to after the residual",
               d8_jobs, d8_scale, factor="norm"),
    Experiment("long-shift", ("D2",), "Shift at growing L: DLR (two initialisations), LRU, RotRNN at a fixed "
               "state size", "final validation R^2 on Shift, per model and length: the longest L each solves",
               d2_jobs, d2_scale, factor="length",
               note="solved: R^2 >= 0.99 (as D4); the state size stays fixed as L grows, as in the DLR paper"),
    Experiment("synthetic-tasks", ("D4",), "The 13 tasks: DLR, LRU and RotRNN, tasks grouped by the kernels "
               "they need", "validation R^2 at the end of training, per task, and its mean per group of tasks",
               d4_jobs, d4_scale, factor="backend",
               note="groups: few kernels (Shift, CumSum), many kernels (Reverse, MaskedSelectFixed, SolveFixed), "
                    "context-dependent (ContextShift, MaskedSelect, Solve, Sort, CumMax, MIPS); this project's "
                    "reading of the generators"),
    Experiment("norms-listops", ("R8",), "Hidden-state norms on ListOps: RotRNN vs LRU, per layer, over training",
               "the coefficient of variation over training of each layer's mean state norm (lower: flatter)",
               r8_jobs, r8_scale, factor="layer", run_job=r8_run,
               note="the norm study of the report's norms section (CumSum) on the task of the paper's figure"),
    Experiment("subtrees-segmentation", ("D5",), "ListOpsSubTrees and PathfinderSegmentation: DLR, local "
               "attention, LRU, RotRNN", "per-token accuracy and per-pixel macro F1 on test at the best validation",
               d5_jobs, d5_scale),
    Experiment("lra-reduced", ("R6", "D1"), "ListOps and Pathfinder-32: RotRNN, LRU, DLR, S4D, S5 on one budget",
               "test accuracy at the best validation", lra_jobs, lra_scale,
               note="generated data in LRA's formats at a fraction of LRA's size and training budget"),
    Experiment("speech", ("R7", "D6"), "Speech Commands layouts (SC10, SC35) on synthetic speech: RotRNN, LRU, DLR",
               "test accuracy at the best validation", speech_jobs, speech_scale,
               note="synthetic speech (espeak-ng words), not the claims' Speech Commands recordings"),
)}


# -- running ------------------------------------------------------------------------------------------

def _thin(values: list[float]) -> dict[str, list]:
    from linrnn.tasks.grid import thin

    return thin(values, CURVE_POINTS)


def parameter_count(run_dir: Path) -> int:
    from linrnn.tasks import checkpoint as ckpt_io

    bundle = ckpt_io.load(run_dir / "checkpoint.npz").bundle
    return int(sum(int(v.size) for v in bundle.params.values()))


def _one_run(job: Job, data_root: Path, runs_root: Path, progress: bool) -> list[dict]:
    return [run_job(job, data_root, runs_root, progress)]


def run_job(job: Job, data_root: Path, runs_root: Path, progress: bool) -> dict:
    """Train `job` (or reuse its finished run directory) and return its row."""
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.train import TrainingDiverged, train

    config = TrainConfig(**job.config)
    folder = ensure_data(data_root, job.data) if job.data is not None else None
    out = runs_root / job.name
    results = out / "results.json"
    reused = results.exists() and TrainConfig.from_dict(json.loads(results.read_text())["config"]) == config
    row = {"name": job.name, **job.labels, "config": config.to_dict(),
           "data": None if job.data is None else {"generator": job.data.generator, "options": job.data.options}}
    tic = time.perf_counter()
    if not reused:
        try:
            train(config, out, data=folder, progress=progress, resume=(out / "checkpoint.npz").exists())
        except TrainingDiverged as err:
            return {**row, "status": "diverged", "error": str(err), "metric": None, "value": None,
                    "wall_seconds": round(time.perf_counter() - tic, 1)}
    record = json.loads(results.read_text())
    row.update(status="ok", error=None, steps=record["steps"], seconds_per_step=record["seconds_per_step"],
               wall_seconds=None if reused else round(time.perf_counter() - tic, 1),
               parameters=parameter_count(out), train_loss=_thin(record["train_loss"]),
               evaluations=record["evaluations"], code_version=record["code_version"])
    if config.is_data_task:
        metric = config.data_task.monitor
        best = record["best"]
        base = baseline(config, folder)
        row.update(metric=metric, value=best["test"][metric] if best else None,
                   val=best["val"][metric] if best else None, examples=base.pop("examples"), baseline=base)
    else:
        final = record["final"]
        row.update(metric="r2", value=final["r2"], mse=final["mse"])
    if row["value"] is not None and not math.isfinite(row["value"]):
        row.update(status="diverged", error=f"final {row['metric']} is {row['value']}", value=None)
    return row


def run(experiment: Experiment, quick: bool, data_root: Path, runs_root: Path, out: Path, argv: list[str],
        progress: bool = True) -> dict:
    """Run every job (reusing finished ones), rewriting `out` after each; returns the record."""
    from linrnn.impls.provenance import library_versions, machine

    jobs = experiment.jobs(quick)
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise LinrnnError(f"experiment {experiment.name}: two runs share a name")
    rows: dict[str, list[dict]] = {}
    start = time.perf_counter()
    record = {}
    for i, job in enumerate(jobs, 1):
        rows[job.name] = (experiment.run_job or _one_run)(job, data_root, runs_root / experiment.name, progress)
        value = ", ".join("diverged" if row["value"] is None else f"{row['metric']} {row['value']:.4f}"
                          for row in rows[job.name])
        print(f"[{i}/{len(jobs)}] {job.name}: {value}", flush=True)
        record = {"schema_version": SCHEMA, "experiment": experiment.name, "claims": list(experiment.claims),
                  "title": experiment.title, "question": experiment.question, "scale": experiment.scale(quick),
                  "factor": experiment.factor, "note": experiment.note, "quick": quick,
                  "command": "linrnn experiment " + " ".join(argv),
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "machine": machine(), "libraries": library_versions(),
                  "seconds": round(time.perf_counter() - start, 1),
                  # the training time of every run in the record, reused ones included (steps x s per step)
                  "training_seconds": round(sum(r["steps"] * r["seconds_per_step"] for rs in rows.values()
                                                for r in rs if r.get("steps") and r.get("seconds_per_step")), 1),
                  "complete": i == len(jobs),
                  "runs": [row for n in names if n in rows for row in rows[n]]}
        write(out, record)
    return record


def write(path: Path, record: dict) -> None:
    """Atomically: a reader sees the previous record or this one, never half of one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=1, allow_nan=False))
        tmp.replace(path)
    except OSError as err:
        raise LinrnnError(f"--out: cannot write {path}: {err.strerror or err}") from None


def default_out(name: str, quick: bool) -> Path:
    return STORED_DIR / f"experiment-{name}{'-quick' if quick else ''}.json"


def register(subparsers) -> None:
    p = subparsers.add_parser("experiment", help="run one of the experiments that settle the papers' empirical claims")
    p.add_argument("name", nargs="?", help="the experiment (--list names them)")
    p.add_argument("--list", action="store_true", help="list the experiments, their claims and scale")
    p.add_argument("--quick", action="store_true", help="toy sizes: checks the pipeline; never settles a claim")
    p.add_argument("--data", default="data", help="folder of the generated data sets, made when missing (default ./data)")
    p.add_argument("--runs", default=None, help="folder of the run directories (default DATA/runs)")
    p.add_argument("--out", default=None, help="the JSON record (default reports/results/experiment-NAME.json)")
    p.add_argument("--quiet", action="store_true", help="no per-step progress bars")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    if args.list:
        for e in EXPERIMENTS.values():
            print(f"{e.name:24s} {', '.join(e.claims):8s} {e.title}\n{'':33s}{e.scale(False)}")
        return 0
    if args.name is None:
        raise LinrnnError(f"NAME: expected one of {', '.join(EXPERIMENTS)} (--list describes them)")
    if args.name not in EXPERIMENTS:
        raise LinrnnError(f"experiment: expected one of {', '.join(EXPERIMENTS)}, found {args.name!r}")
    experiment = EXPERIMENTS[args.name]
    data_root = Path(args.data)
    runs_root = Path(args.runs) if args.runs else data_root / "runs"
    out = Path(args.out) if args.out else default_out(experiment.name, args.quick)
    argv = [experiment.name] + (["--quick"] if args.quick else []) + ["--data", str(args.data)] + \
        (["--runs", str(args.runs)] if args.runs else []) + (["--out", str(args.out)] if args.out else [])
    record = run(experiment, args.quick, data_root, runs_root, out, argv, progress=not args.quiet)
    print(f"wrote {out} ({len(record['runs'])} runs in {record['seconds']:.0f} s)")
    return 0


# -- summaries (the report section and the ledger read the runs through these) ----------------------

def cells(runs: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """The runs grouped by the labels `keys`, in first-seen order, one cell per group:

    {**labels, "n", "values" (finished runs), "diverged", "mean", "sd" (ddof 1; None below 2 values),
     "se" (sd / sqrt(n); None below 2), "metric", "baseline" (data tasks: the majority value), "chance" (data
     tasks: the best constant answer on test, at least the baseline), "parameters",
     "test_examples" (data tasks), "seconds_per_step" (mean)}
    """
    groups: dict[tuple, list[dict]] = {}
    for run_ in runs:
        groups.setdefault(tuple(run_.get(k) for k in keys), []).append(run_)
    out = []
    for labels, members in groups.items():
        values = [float(m["value"]) for m in members if m.get("status") == "ok" and m.get("value") is not None]
        n = len(values)
        mean = sum(values) / n if n else None
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n >= 2 else None
        bases = [m["baseline"]["value"] for m in members if isinstance(m.get("baseline"), dict)]
        # chance: the best constant answer on test where the record has it (older records: the baseline)
        chances = [max(m["baseline"]["value"], (m["baseline"].get("best_constant") or {}).get("value", -math.inf))
                   for m in members if isinstance(m.get("baseline"), dict)]
        params = [m["parameters"] for m in members if isinstance(m.get("parameters"), int)]
        tests = [m["examples"]["test"] for m in members if isinstance(m.get("examples"), dict)
                 and isinstance(m["examples"].get("test"), int)]
        speeds = [m["seconds_per_step"] for m in members if isinstance(m.get("seconds_per_step"), (int, float))]
        out.append({**dict(zip(keys, labels)), "n": n, "values": values,
                    "diverged": sum(1 for m in members if m.get("status") != "ok"),
                    "mean": mean, "sd": sd, "se": sd / math.sqrt(n) if sd is not None else None,
                    "metric": next((m["metric"] for m in members if m.get("metric")), None),
                    "baseline": bases[0] if bases else None, "chance": chances[0] if chances else None,
                    "parameters": params[0] if params else None,
                    "test_examples": tests[0] if tests else None,
                    "seconds_per_step": sum(speeds) / len(speeds) if speeds else None})
    return out


def table_keys(record: dict) -> tuple[str, ...]:
    """The labels a record's table groups by: task, model (and its `init` when every run has one, long-shift) and
    the experiment's varied factor, after the task's group when every run has one (synthetic-tasks: few / many /
    context)."""
    factor = record.get("factor", "model")
    keys = ("task", "model") if factor == "model" else ("task", "model", factor)
    runs = record.get("runs") or []

    def everywhere(label: str) -> bool:
        return bool(runs) and all(isinstance(r, dict) and label in r for r in runs)

    if everywhere("init"):                      # long-shift: one model in two initialisations
        keys = keys[:2] + ("init",) + keys[2:]
    return (("group",) + keys) if everywhere("group") else keys


def table_cells(record: dict) -> list[dict]:
    """`cells` of the record's runs by `table_keys`, the groups of tasks in D4_GROUP_ORDER (unknown ones last)."""
    keys = table_keys(record)
    found = cells(record["runs"], keys)
    if "group" in keys:
        rank = {g: i for i, g in enumerate(D4_GROUP_ORDER)}
        found.sort(key=lambda c: rank.get(c["group"], len(rank)))
    return found

"""The experiment `subtrees-segmentation` (claim D5): ListOpsSubTrees and PathfinderSegmentation, DLR against local
attention, with the LRU and RotRNN beside them.

D5: "strong on ListOpsSubTrees (8K) and PathfinderSegmentation-256 (65K), better than local attention; encouraging
on PathfinderSegmentation-512 (262K)". One part per task (`settle_d5`): "DLR better than local attention" by Welch's
t over seeds, at alpha (both tasks must hold). It decides only when both arms learned, that is scored above the
task's best trivial predictor (`linrnn.tasks.trivial`: on PathfinderSegmentation a per-pixel lookup of intensity and
position, on ListOpsSubTrees a lookup of the last tokens), and the control (the LRU arm) learned. At this machine's
scale (PathfinderSegmentation-32, 2 blocks, 3-4 epochs) the stored runs did not: the parts say so, with what would
settle them.
"""

from __future__ import annotations

from dataclasses import replace

from linrnn.experiments.decide.evidence import Part, chance_of, mean_sd
from linrnn.experiments.decide.rules import arm_runs, better_parts
from linrnn.tasks.datasets import SEGMENTATION, SUBTREES, DataSet
from linrnn.experiments.claims.runner import Control, Experiment, Job, Settles

NAMES = {"dlr": "DLR", "attention": "local attention", "lru": "LRU", "rotrnn": "RotRNN"}
SUBTREES_QUICK = DataSet("subtrees-quick", "listops-subtrees", dict(n_train=8, n_val=4, n_test=4))
SEGMENTATION_QUICK = DataSet("segmentation32-quick", "pathfinder-segmentation",
                             dict(resolution=32, n_train=16, n_val=8, n_test=8))
D5_MODELS = ("dlr", "attention", "lru", "rotrnn")
# local attention's window: the DLR code's chunk of 1,024 on ListOpsSubTrees (L about 8,000); an eighth
# of the 1,024 pixels of PathfinderSegmentation-32, the same fraction of the input
D5_WINDOWS = {"listops-subtrees": 1024, "pathfinder-segmentation": 128}


def _mixer_fields(model: str, task: str) -> dict:
    """The model's mixer table: N = 32 complex modes for the recurrent ones, local attention's 4 heads and window."""
    return {"dlr": {"d_state": 32, "dt_min": 1e-4, "dt_max": 1e-1},   # the DLR code's ListOpsSubTrees / PF-seg range
            "attention": {"heads": 4, "window": D5_WINDOWS[task]},
            "lru": {"d_state": 32, "r_min": 0.9, "r_max": 0.999},
            "rotrnn": {"heads": 4, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999},   # 4 x 16 real: 32 rotations
            }[model]


D5_SEEDS = (0, 1, 2)


def d5_jobs(quick: bool) -> list[Job]:
    seeds = (0,) if quick else D5_SEEDS
    subtrees, segmentation = (SUBTREES_QUICK, SEGMENTATION_QUICK) if quick else (SUBTREES, SEGMENTATION)
    common = dict(d_model=32, n_layers=2, norm="layer", weight_decay=0.01, eval_every=None,
                  eval_batches=None, checkpoint_every=100, workers=1, backend="torch")
    tasks = {
        "listops-subtrees": (subtrees, dict(task="listops-subtrees", batch_size=8, epochs=1 if quick else 4,
                                            lr=3e-3, recurrence_lr=1.5e-3, warmup_steps=20)),
        "pathfinder-segmentation": (segmentation, dict(task="pathfinder-segmentation",
                                                       data_options={"resolution": 32}, batch_size=16, epochs=1 if quick else 3, lr=1e-3,
                                                       warmup_steps=20)),
    }
    bidirectional = {"listops-subtrees": False, "pathfinder-segmentation": True}
    jobs = []
    for task, (data, fields) in tasks.items():
        for model in D5_MODELS:
            mixer = {**_mixer_fields(model, task), "bidirectional": bidirectional[task]}
            if "window" in mixer and quick:    # local attention's window at the quick sizes
                mixer = {**mixer, "window": 64 if task == "listops-subtrees" else 32}
            for seed in seeds:
                config = {**common, **fields, "mixer": mixer, "model": model, "seed": seed}
                jobs.append(Job({"task": task, "model": model, "seed": seed}, config, data))
    # the costliest runs last (an interrupted record then holds every other cell): local attention over
    # ListOpsSubTrees' 8,000 tokens with windows of 1,024 keeps (B heads L 2w) scores per layer, some GB
    return sorted(jobs, key=lambda j: (j.labels["task"], j.labels["model"]) == ("listops-subtrees", "attention"))


def d5_controls(quick: bool) -> list[Control]:
    """The arms already leave chance here: the LRU arm (a model of the papers that learns both tasks at this scale
    in the stored records) is the control of each task."""
    return [Control(f"{task}-lru-arm", task, f"the experiment's own LRU arm on {task}: learned when its test metric "
                    "is above the best trivial predictor and the no-information level (one-sample t over its seeds)",
                    arm={"task": task, "model": "lru"})
            for task in ("listops-subtrees", "pathfinder-segmentation")]


def d5_scale(quick: bool) -> str:
    if quick:
        return "toy: 8 ListOpsSubTrees trees and 16 PathfinderSegmentation-32 images, one epoch"
    return ("400 / 50 / 50 generated ListOpsSubTrees trees (7,000-8,180 tokens, causal, 4 epochs of batch 8) and "
            "2,400 generated PathfinderSegmentation-32 images (L = 1,024, bidirectional, 3 epochs of batch 16); "
            f"2 blocks of H = 32, N = 32; local attention with windows of 1,024 / 128 positions (4 heads); "
            f"{len(D5_SEEDS)} seeds")



def settle_d5(stored: dict) -> list[Part]:
    """D5: DLR better than local attention on each task (`better_parts`); the LRU and RotRNN and the chance level
    reported beside (the claim's "strong" has no bar)."""
    tasks = list(dict.fromkeys(r["task"] for r in stored["runs"] if not r.get("control")))
    parts = better_parts(stored, [(t, "dlr", "attention") for t in tasks], "better than local attention on {task}",
                         NAMES)
    out = []
    for task, p in zip(tasks, parts):
        beside = "; ".join(f"{NAMES[m]} {mean_sd([float(r['value']) for r in arm_runs(stored, task=task, model=m)])}"
                           for m in ("lru", "rotrnn") if arm_runs(stored, task=task, model=m))
        chance = [c for c in (chance_of(r) for r in arm_runs(stored, task=task)) if c is not None]
        out.append(replace(p, evidence=p.evidence + (f". Beside it: {beside}" if beside else "")
                           + (f"; chance (no information) {max(chance):.3f}" if chance else "")))
    return out


EXPERIMENT = Experiment(
    "subtrees-segmentation", (Settles("D5", settle_d5),), "ListOpsSubTrees and PathfinderSegmentation: DLR, local attention, LRU, RotRNN",
    "per-token accuracy and per-pixel macro F1 on test at the best validation", d5_jobs, d5_scale,
    controls=d5_controls,
    brief=f"{len(D5_SEEDS)} seeds, generated ListOpsSubTrees (8K) and PathfinderSegmentation-32, 3-4 epochs")

"""The experiment `lra-reduced` (claims R6 and D1): generated ListOps and Pathfinder-32, RotRNN, the LRU, DLR, S4D
and S5 on one budget.

R6 (the paper's whole sentence): "competitive with S4, S5 and the LRU; best on the discrete-input tasks ListOps,
Text and Retrieval; a little lower on the pixel tasks (Path-X, CIFAR)". `settle_r6`: *competitive*, one part per
task and baseline, RotRNN equivalent within MARGIN_ACCURACY (TOST) or better (a lower mean within the margin is
what the paper itself says of the pixel tasks); *best on ListOps*, one part per baseline, RotRNN better by Welch's
t; how far RotRNN sits below the best baseline on Pathfinder is a side finding. Text, Retrieval, Image and Path-X
are not generated here; S4D stands in for S4.

D1: "without discretisation DLR matches S4 and S4D on LRA (including Path-X and ListOps)". `settle_d1`: DLR
matches or beats S4D on each task (TOST within the margin or better, with a mean not lower).

Every comparison needs both arms above the task's best trivial predictor (`linrnn.tasks.trivial`) and a control
that learned at the arms' own task, length and data. The stored record's controls (short ListOps expressions,
Pathfinder without distractors) ran at other settings, so they vouch for nothing here, and at this budget no arm
left the trivial bar: every part is inconclusive, with what would settle it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from linrnn.experiments.decide.evidence import Part, mean_sd, side
from linrnn.experiments.decide.rules import arm_runs, better_parts, matches_parts
from linrnn.experiments.claims.norms_listops import LISTOPS_QUICK, listops_control
from linrnn.tasks.datasets import LISTOPS, PATHFINDER, DataSet
from linrnn.experiments.claims.runner import Control, Experiment, Job, Settles

NAMES = {"dlr": "DLR", "lru": "LRU", "rotrnn": "RotRNN", "s4d": "S4D", "s5": "S5"}
BASELINES = ("lru", "s4d", "s5")
PIXEL_TASKS = ("pathfinder",)
PATHFINDER_QUICK = DataSet("pathfinder32-quick", "pathfinder", dict(resolution=32, n_train=32, n_val=8, n_test=8))
LRA_MODELS = ("rotrnn", "lru", "dlr", "s4d", "s5")   # fixed: the models R6 and D1 compare, not every registered one


def lra_mixer(model: str) -> dict:
    """One state budget for every model: 64 complex modes per layer (RotRNN: 8 heads of 16 real coordinates)."""
    return {"rotrnn": {"heads": 8, "d_state": 16, "gamma_min": 0.9, "gamma_max": 0.999},
            "lru": {"d_state": 64, "r_min": 0.9, "r_max": 0.999},
            "dlr": {"d_state": 64, "dt_min": 1e-4, "dt_max": 1e-1},
            "s4d": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1},
            "s5": {"d_state": 64, "dt_min": 1e-3, "dt_max": 1e-1}}[model]


LRA_SEEDS = (0, 1, 2)


def lra_jobs(quick: bool) -> list[Job]:
    seeds = (0,) if quick else LRA_SEEDS
    listops, pathfinder = (LISTOPS_QUICK, PATHFINDER_QUICK) if quick else (LISTOPS, PATHFINDER)
    common = dict(d_model=64, n_layers=2, weight_decay=0.05, eval_every=None, eval_batches=None,
                  checkpoint_every=100, workers=1, backend="torch", lr=3e-3, recurrence_lr=1e-3, warmup_steps=50)
    # the budget fits one CPU core for about 90 minutes: one pass over the ListOps training split, and 250 steps
    # (8,000 of the 16,000 training images) of Pathfinder-32; S4D's convolution costs 4-5 times the others' step
    tasks = {"listops": (listops, dict(task="listops", norm="layer", batch_size=16, epochs=1, steps=None)),
             "pathfinder": (pathfinder, dict(task="pathfinder", norm="batch", batch_size=32,
                                             epochs=1 if quick else None, steps=None if quick else 250))}
    bidirectional = {"listops": False, "pathfinder": True}
    # seed-major: an interrupted record holds whole seeds of every model
    return [Job({"task": task, "model": model, "seed": seed},
                {**common, **fields, "mixer": {**lra_mixer(model), "bidirectional": bidirectional[task]},
                 "model": model, "seed": seed}, data)
            for seed in seeds for task, (data, fields) in tasks.items() for model in LRA_MODELS]


# A positive control for Pathfinder: LRA's easiest contours (curv_baseline, 6 paddles) with no distractor contours at
# all, the two marked contours alone (the same generator, format and loader), DLR as in the arms, 8 epochs of 4,000
# images. When this control was designed, 4 epochs of it stayed at chance (test 0.516 against 0.5): Pathfinder is
# not learnt by this pipeline at this machine's budget even in its easiest form, and the control says so
PATHFINDER_BARE = DataSet("pathfinder32-bare", "pathfinder", dict(resolution=32, difficulty="curv_baseline",
                                                                 distractors=0, n_train=4000, n_val=500, n_test=500))
PATHFINDER_BARE_QUICK = DataSet("pathfinder32-bare-quick", "pathfinder", dict(
    resolution=32, difficulty="curv_baseline", distractors=0, n_train=32, n_val=8, n_test=8))


def pathfinder_control(quick: bool) -> Control:
    config = dict(task="pathfinder", model="dlr", data_options={"difficulty": "curv_baseline"}, d_model=64,
                  n_layers=2, norm="batch", batch_size=32, epochs=1 if quick else 8,
                  lr=2e-3, weight_decay=0.05, warmup_steps=50,
                  mixer={"d_state": 64, "bidirectional": True, "dt_min": 1e-4, "dt_max": 1e-1}, eval_every=None,
                  eval_batches=None, checkpoint_every=100, workers=1, backend="torch", seed=0)
    job = Job({"task": "pathfinder", "model": "dlr", "seed": 0, "control": "pathfinder-bare"}, config,
              PATHFINDER_BARE_QUICK if quick else PATHFINDER_BARE)
    return Control("pathfinder-bare", "pathfinder",
                   "Pathfinder-32 at LRA's easiest contour length (curv_baseline) with no distractor contours, the "
                   "same generator, format and loader; DLR, 2 bidirectional blocks, 8 epochs of 4,000 images; learned "
                   "when its test accuracy is above the best constant answer (exact binomial test)", (job,))


def lra_controls(quick: bool) -> list[Control]:
    return [listops_control(quick), pathfinder_control(quick)]


def lra_scale(quick: bool) -> str:
    if quick:
        return "toy: 32 ListOps expressions and 32 Pathfinder-32 images, one epoch"
    return ("5,000 / 500 / 500 generated ListOps expressions at the real lengths (one epoch of batch 16: 313 steps) "
            "and 20,000 generated Pathfinder-32 images at LRA's difficulty (250 steps of batch 32: half an epoch of the "
            "16,000 training images; bidirectional, BatchNorm); every model 2 blocks of H = 64 with 64 complex modes "
            f"per layer, AdamW 3e-3 (recurrence 1e-3), {len(LRA_SEEDS)} seeds: a small fraction of LRA's training "
            "budget; positive controls: short ListOps expressions (LRU), Pathfinder-32 without distractors (DLR)")



def _tasks(stored: dict) -> list[str]:
    return list(dict.fromkeys(r["task"] for r in stored["runs"] if not r.get("control")))


def _ran(stored: dict, task: str, model: str) -> bool:
    return bool([r for r in stored["runs"] if r.get("task") == task and r.get("model") == model and not r.get("control")])


def settle_r6(stored: dict) -> list[Part]:
    """R6 at this scale: competitive with each of the LRU, S4D, S5 on every task (`matches_parts`, a lower mean within
    the margin allowed), best on ListOps (better than each, `better_parts`); RotRNN's gap to the best baseline on the
    pixel tasks is a side finding."""
    tasks = _tasks(stored)
    pairs = [(t, "rotrnn", m) for t in tasks for m in BASELINES if _ran(stored, t, m)]
    parts = [replace(p, part=f"competitive with {NAMES[m]} on {t}") for p, (t, _, m) in
             zip(matches_parts(stored, pairs, "competitive on {task}", NAMES), pairs)]
    if "listops" in tasks:
        best = [("listops", "rotrnn", m) for m in BASELINES if _ran(stored, "listops", m)]
        parts += [replace(p, part=f"best on ListOps: better than {NAMES[m]}") for p, (_, _, m) in
                  zip(better_parts(stored, best, "best on ListOps", NAMES), best)]
    for task in (t for t in tasks if t in PIXEL_TASKS):
        rot = [float(r["value"]) for r in arm_runs(stored, task=task, model="rotrnn")]
        others = {m: [float(r["value"]) for r in arm_runs(stored, task=task, model=m)] for m in BASELINES}
        others = {m: v for m, v in others.items() if v}
        if rot and others:
            top = max(others, key=lambda m: np.mean(others[m]))
            parts += side([Part("", "inconclusive", f"{task}: RotRNN {mean_sd(rot)} against the best baseline, "
                                f"{NAMES[top]} {mean_sd(others[top])}: {np.mean(rot) - np.mean(others[top]):+.3f}",
                                part=f"a little lower on the pixel tasks ({task})")],
                          "the paper's own concession, described, not a claim of strength")
    return parts


def settle_d1(stored: dict) -> list[Part]:
    """D1 at this scale: DLR matches or beats S4D on every task (`matches_parts`)."""
    return matches_parts(stored, [(t, "dlr", "s4d") for t in _tasks(stored) if _ran(stored, t, "s4d")],
                         "matches S4D on {task}", NAMES)


EXPERIMENT = Experiment(
    "lra-reduced", (Settles("R6", settle_r6), Settles("D1", settle_d1)), "ListOps and Pathfinder-32: RotRNN, LRU, DLR, S4D, S5 on one budget",
    "test accuracy at the best validation", lra_jobs, lra_scale, controls=lra_controls,
    brief=f"{len(LRA_SEEDS)} seeds, generated ListOps (5,000) and Pathfinder-32, 250-313 steps",
    note="generated data in LRA's formats at a fraction of LRA's size and training budget")

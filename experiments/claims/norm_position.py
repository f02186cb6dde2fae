"""The experiment `norm-position` (claim D8): DLR and a Transformer of matched width and depth, LayerNorm before the
mixer (pre-norm) or after the residual (post-norm), in a setting where Transformers are known to be sensitive to it.

D8: "more robust to the position of layer norm than Transformers". A post-norm Transformer trained without a
learning-rate warm-up, deep and at a large rate, is known to train badly where the pre-norm one trains well (Xiong
et al. 2020, "On Layer Normalization in the Transformer Architecture"; Liu et al. 2020). The first record of this
experiment (2 blocks, a warm-up over a tenth of the run) was not that setting: attention moved by about as little as
DLR. So the runs here are D8_LAYERS blocks deep, with no warm-up, at the grid's peak rate.

`settle_d8`:
- the positive control is attention's own sensitivity: over the seeds, the mean over tasks of attention's R^2
  pre-norm minus post-norm, above 0 by a one-sided one-sample t (seed s pre-norm against seed s post-norm). Without
  it, the setting does not show the Transformer's known sensitivity, and nothing is decided;
- a task counts only where both models' pre-norm arms learned (their R^2 above the task's best trivial predictor);
- per model and seed, the sensitivity is the mean over the counted tasks of |R^2 pre - R^2 post|; attention's
  larger than DLR's by Welch's t is reproduced, DLR's larger is contradicted, otherwise inconclusive with the seeds
  that would settle it.
"""

from __future__ import annotations

import numpy as np

from linrnn.experiments.decide import stats
from linrnn.experiments.decide.evidence import (Part, baseline_of, mean_sd, needs, power_two_arms, regression_learned,
                                         run_seconds, trivial_for, tested)
from linrnn.experiments.decide.rules import arm_runs
from linrnn.experiments.claims.runner import Experiment, Job, Settles

D8_TASKS = ("reverse", "masked_select_fixed")   # tasks a trivial predictor does not solve (R^2 0.02 at L = 64)
D8_MODELS = ("dlr", "attention")
D8_SEEDS = (0, 1, 2, 3, 4)     # the per-seed sensitivities are what Welch's t compares: 5 per model
D8_LAYERS = 6                  # deep: the DLR paper's deep setting, where a post-norm Transformer without warm-up
                               # trains worse (a 6-block pilot on Reverse, one seed: attention pre-norm R^2 0.20,
                               # post-norm 0.08 after 175 steps; CumSum, which a bag of tokens nearly solves, showed
                               # no gap)
D8_LENGTH, D8_STEPS = 64, 600
# no warm-up at the grid's peak rate (1e-2): the setting in which post-norm Transformers are sensitive; the grid's
# gradient clipping (global norm 1) is kept, so that a run trains badly rather than diverging
D8_TRAINING = {"warmup_steps": 0}


def d8_jobs(quick: bool) -> list[Job]:
    from linrnn.tasks.grid import grid_config

    tasks, seeds, length, steps, layers = ((D8_TASKS[:1], (0, 1), 16, 40, 2) if quick else
                                           (D8_TASKS, D8_SEEDS, D8_LENGTH, D8_STEPS, D8_LAYERS))
    jobs = []
    for task in tasks:
        for model in D8_MODELS:
            for prenorm in (True, False):
                for seed in seeds:
                    config = grid_config(task, model, "torch", length, steps, seed, n_layers=layers, prenorm=prenorm,
                                         **D8_TRAINING)
                    jobs.append(Job({"task": task, "model": model, "norm": "pre" if prenorm else "post",
                                     "seed": seed}, config.to_dict()))
    return jobs


def d8_scale(quick: bool) -> str:
    if quick:
        return "toy: reverse at L = 16, 40 steps, 2 blocks, 2 seeds"
    return (f"{len(D8_TASKS)} synthetic tasks ({', '.join(D8_TASKS)}) at L = {D8_LENGTH}, {D8_STEPS:,} steps of batch "
            f"16 at peak learning rate 1e-2 with no warm-up (gradients clipped at norm 1), {len(D8_SEEDS)} seeds; "
            f"{D8_LAYERS} residual blocks of H = 32; DLR (N = 64, its synthetic initialisation) and causal softmax "
            "attention (4 heads) in the same blocks, LayerNorm before the mixer (pre) or after the residual (post)")


def _values(stored: dict, task: str, model: str, norm: str) -> dict[int, float]:
    return {r.get("seed"): float(r["value"]) for r in arm_runs(stored, task=task, model=model, norm=norm)}


def settle_d8(stored: dict) -> list[Part]:
    """D8 on the norm-position record (module docstring): the control (attention's own sensitivity), the counted
    tasks (both pre-norm arms learned), then Welch's t of the per-seed sensitivities, attention against DLR."""
    part = "more robust to the norm position"
    tasks = list(dict.fromkeys(r["task"] for r in stored["runs"] if not r.get("control")))
    lost = [r for r in stored["runs"] if r.get("status") != "ok"]
    counted, dropped, baseline = [], [], None
    for task in tasks:
        ok = True
        for model in D8_MODELS:
            pre = arm_runs(stored, task=task, model=model, norm="pre")
            entry = baseline_of(trivial_for(stored, pre[0])) if pre else None
            baseline = baseline or entry
            learned, words = regression_learned([float(r["value"]) for r in pre], None, entry)
            if learned is not True:
                ok = False
                dropped.append(f"{task}: {model} pre-norm not shown to learn ({words})")
        if ok:
            counted.append(task)
    # the control: attention's signed change pre - post, per seed, over the counted tasks (all tasks if none counts)
    basis = counted or tasks
    signed = []
    for seed in sorted({r.get("seed") for r in stored["runs"]}):
        diffs = []
        for task in basis:
            pre, post = _values(stored, task, "attention", "pre"), _values(stored, task, "attention", "post")
            if seed in pre and seed in post:
                diffs.append(pre[seed] - post[seed])
        if len(diffs) == len(basis):
            signed.append(float(np.mean(diffs)))
    control_test = stats.one_sample(signed, 0.0, "greater") if len(signed) >= 2 else None
    shows = bool(control_test and control_test.significant and min(control_test.n) >= stats.MIN_SEEDS)
    control = {"name": "attention-norm-sensitivity", "learned": shows}
    control_words = ("control: attention's R^2 pre-norm minus post-norm, mean over tasks per seed, "
                     + (control_test.words("mean") if control_test else f"{len(signed)} seed(s): not decidable")
                     + (": the setting shows the Transformer's sensitivity" if shows else
                        ": the setting is not shown to make the Transformer sensitive"))
    if lost:
        return [Part("", "inconclusive", f"{len(lost)} run(s) diverged ({', '.join(sorted({r['name'] for r in lost})[:4])}"
                     "...), so the sensitivities are not all measured; " + control_words, part=part, control=control,
                     baseline=baseline, power=needs("the diverged runs again, finished"))]
    if not counted:
        return [Part("", "inconclusive", "no task where both models' pre-norm arms learned above the trivial bar: "
                     + "; ".join(dropped) + "; " + control_words, part=part, control=control, baseline=baseline,
                     power=needs("a setting where both models' pre-norm arms learn the tasks (more steps, or at least "
                                 f"{stats.MIN_SEEDS} seeds each)", stats.MIN_SEEDS))]
    per_seed: dict[str, list[float]] = {}
    for model in D8_MODELS:
        gaps: dict[int, list[float]] = {}
        for task in counted:
            pre, post = _values(stored, task, model, "pre"), _values(stored, task, model, "post")
            for seed in sorted(set(pre) & set(post)):
                gaps.setdefault(seed, []).append(abs(pre[seed] - post[seed]))
        per_seed[model] = [float(np.mean(g)) for g in gaps.values() if len(g) == len(counted)]
    dlr, att = per_seed["dlr"], per_seed["attention"]
    per_task = "; ".join(
        f"{t}: DLR pre {mean_sd(list(_values(stored, t, 'dlr', 'pre').values()))}, post "
        f"{mean_sd(list(_values(stored, t, 'dlr', 'post').values()))}; attention pre "
        f"{mean_sd(list(_values(stored, t, 'attention', 'pre').values()))}, post "
        f"{mean_sd(list(_values(stored, t, 'attention', 'post').values()))}" for t in tasks)
    head = (f"sensitivity = mean over {len(counted)} task(s) ({', '.join(counted)}) of |R^2 pre-norm - R^2 post-norm|, "
            f"per seed: DLR {mean_sd(dlr)}, attention {mean_sd(att)}")
    if min(len(dlr), len(att)) < 2:
        return [Part("", "inconclusive", f"{head}: a decision needs {stats.MIN_SEEDS} seeds per model; "
                     + control_words, part=part, control=control, baseline=baseline,
                     power=needs(f"at least {stats.MIN_SEEDS} seeds per model", stats.MIN_SEEDS))]
    test = stats.welch(att, dlr)
    if min(test.n) < stats.MIN_SEEDS:
        verdict, why = "inconclusive", f"{min(test.n)} seeds per model: a decision needs {stats.MIN_SEEDS}"
    elif test.significant:
        verdict = "reproduced" if test.effect > 0 else "contradicted"
        why = f"{'attention' if test.effect > 0 else 'DLR'} more sensitive at alpha {test.alpha:g}"
    else:
        verdict, why = "inconclusive", "no difference shown"
    if verdict != "inconclusive" and not shows:
        verdict, why = "inconclusive", why + "; but the control does not show the Transformer's sensitivity here"
    seconds = run_seconds([r for r in stored["runs"] if r.get("model") == "attention"])
    seconds_dlr = run_seconds([r for r in stored["runs"] if r.get("model") == "dlr"])
    runs_per_seed = 2 * len(counted)
    power = None
    if verdict == "inconclusive" and not shows:
        power = needs("a setting where the Transformer's own sensitivity shows (the control: attention's post-norm R^2 "
                      "below its pre-norm R^2), e.g. deeper blocks, a larger peak rate or no gradient clipping; here it "
                      "did not, so no comparison in this setting speaks to the claim")
    elif verdict == "inconclusive":
        power = power_two_arms(att, dlr, effect=test.effect, what="attention not more sensitive than DLR",
                               seconds=(None if seconds is None else seconds * runs_per_seed,
                                        None if seconds_dlr is None else seconds_dlr * runs_per_seed))
    dropped_words = f"; tasks not counted: {'; '.join(dropped)}" if dropped else ""
    return [Part("", verdict, f"{head}; " + test.words("attention - DLR") + f": {why}. {control_words}"
                 f"{dropped_words}. Per task: {per_task}", part=part, control=control, baseline=baseline, power=power,
                 against=test if test.effect < 0 else None, **tested(test, control_test))]


EXPERIMENT = Experiment(
    "norm-position", (Settles("D8", settle_d8),), "Pre- vs post-norm: DLR and a Transformer of matched size, where Transformers are "
    "sensitive", "how much the final R^2 moves when LayerNorm moves from before the mixer to after the residual",
    d8_jobs, d8_scale, factor="norm",
    brief=f"{len(D8_SEEDS)} seeds, {len(D8_TASKS)} synthetic tasks at L = {D8_LENGTH}, {D8_LAYERS} blocks, no warm-up, "
          f"{D8_STEPS:,} steps")

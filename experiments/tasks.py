"""Synthetic tasks for claim D4: Shift and ContextShift for DLR, LRU and RotRNN at a reduced length.

Every run is one `linrnn.tasks.grid.run_grid` run with the grid's defaults (one residual block, H = 32,
max(64, L) complex modes per model, each model's long-memory initialisation, AdamW at one shared peak
rate; see tasks/grid.py), torch backend, float32, trained in a temporary directory that is deleted
afterwards. The paper trains at L = 4096 (and Shift up to 2^20) for 12 epochs of 14 400 samples; here
L and the number of steps are far smaller (the config says how much).

    run(quick, progress) -> (data, config)     data["rows"]: one per run (task, model, seed, status,
                                               final mse and r2, seconds_per_step, evaluations, train_loss);
                                               the positive control's runs carry "control": its name

The data also holds the best trivial predictor of each task and length (`linrnn.tasks.trivial`), the bar an arm
must clear to have learned. `settle_d4` decides D4 from these rows with the synthetic-tasks experiment's rule
(`linrnn.experiments.synthetic_tasks.d4_parts`); the ledger calls it when the report renders, so `linrnn report
--from` re-settles them.
"""

from __future__ import annotations

import tempfile

TASKS = ("shift", "context_shift")
MODELS = ("dlr", "lru", "rotrnn")   # fixed: the three models D4 compares, not every registered model
BACKEND = "torch"
SIZES = {"length": 128, "steps": 600, "seeds": [0, 1, 2]}  # about 4 minutes on 2 CPU cores (more if shared)
QUICK_SIZES = {"length": 32, "steps": 250, "seeds": [0]}   # about 15 seconds
# The positive control of ContextShift (a verdict that DLR fails it needs one): causal softmax attention learns
# ContextShift at L = 16 in 1,000 steps of 2 blocks (`linrnn.experiments.claims.CONTEXT_CONTROL`), one run per seed
CONTROL = "context-shift-attention"


def run(quick: bool, progress, sizes: dict | None = None) -> tuple[dict, dict]:
    from linrnn.experiments.synthetic_tasks import CONTEXT_CONTROL
    from linrnn.tasks.config import model_defaults
    from linrnn.tasks.grid import COMMON, WARMUP_FRACTION, run_grid

    sizes = sizes or (QUICK_SIZES if quick else SIZES)
    control = {"length": 16, "steps": 60, "layers": 1, "lr": 2e-3} if quick else CONTEXT_CONTROL
    with tempfile.TemporaryDirectory(prefix="linrnn-tasks-") as out:
        rows = run_grid(TASKS, MODELS, BACKEND, sizes["length"], sizes["steps"], out, seeds=sizes["seeds"],
                        progress=progress)
        controls = run_grid(("context_shift",), ("attention",), BACKEND, control["length"], control["steps"], out,
                            seeds=sizes["seeds"], n_layers=control["layers"], lr=control["lr"])
    for row in controls:
        row["control"] = CONTROL
    rows += controls
    for row in rows:
        row.pop("run_dir")           # a deleted temporary directory
    data = {"rows": rows, "trivial": trivial_baselines(rows)}
    config = {**sizes, "tasks": list(TASKS), "models": list(MODELS), "backend": BACKEND, "dtype": "float32",
              "common": COMMON, "warmup_fraction": WARMUP_FRACTION, "control": {"name": CONTROL, **control},
              "model_defaults": {m: model_defaults(m, sizes["length"]) for m in MODELS}}
    return data, config


def trivial_baselines(rows: list[dict]) -> list[dict]:
    """The best trivial predictor of each task and length of the rows (`linrnn.tasks.trivial.synthetic_baseline`,
    on the validation batches the grid's runs are scored on)."""
    from linrnn.tasks.trivial import synthetic_baseline

    out = []
    for key in dict.fromkeys((r["task"], r["config"]["length"], r["config"]["eval_batches"] or 1,
                              r["config"]["batch_size"]) for r in rows):
        task, length, batches, batch = key
        out.append({"task": task, "length": length, "eval_batches": batches, "batch_size": batch,
                    **synthetic_baseline(task, length, 0, batches, batch)})
    return out


def tasks_scale(config: dict) -> str:
    from linrnn.experiments.evidence import count

    return (f"L = {config['length']} (paper: 4096, Shift up to 2^20), {config['steps']} steps "
            f"(paper: 12 epochs of 14 400 samples), 1 layer, torch float32, {count(len(config['seeds']), 'seed')} "
            f"({', '.join(map(str, config['seeds']))})")


def settle_d4(data: dict, scale: str = "") -> list:
    """D4 on the tasks section's rows: `d4_parts`, with the section's ContextShift control (its runs at L = 16 vouch
    only for a DLR run at L = 16) and the section's trivial baselines. Where the section ran ContextShift at no length
    of its control, its "struggles" part is a side finding: it decides nothing either way, and the claim's other
    source, the synthetic-tasks experiment, always gives a deciding "struggles" part (decided at the control's own
    length, or undecided and saying why), so the claim never holds on Shift alone."""
    from dataclasses import replace

    from linrnn.experiments.evidence import FAILS_R2, side
    from linrnn.experiments.normstudy import few_words
    from linrnn.experiments.synthetic_tasks import STRUGGLES, d4_parts

    rows = [{**r, "value": r.get("r2"), "metric": "r2"} for r in data["rows"]]
    controls = [r for r in rows if r.get("control")]
    stored = {"runs": rows, "trivial": data.get("trivial") or [],
              "controls": [{"name": controls[0]["control"], "task": "context_shift", "bar": FAILS_R2,
                            "setting": "ContextShift with attention", "select": {"control": controls[0]["control"]}}]
              if controls else []}
    arms = [r for r in rows if not r.get("control")]
    parts = [replace(p, scope=scale, scale=p.scale or few_words(scale))
             for p in d4_parts(stored, arms, "training (tasks)", "")]
    return [side([p], "this section ran no control at its ContextShift length; the synthetic-tasks experiment decides "
                 "it at the control's own length")[0] if p.part == STRUGGLES and p.control is None else p
            for p in parts]

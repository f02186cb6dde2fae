"""Synthetic tasks for claim D4: Shift and ContextShift for DLR, LRU and RotRNN at a reduced length.

Every run is one `linrnn.tasks.grid.run_grid` run with the grid's defaults (one residual block, H = 32,
max(64, L) complex modes per model, each model's long-memory initialisation, AdamW at one shared peak
rate; see tasks/grid.py), torch backend, float32, trained in a temporary directory that is deleted
afterwards. The paper trains at L = 4096 (and Shift up to 2^20) for 12 epochs of 14 400 samples; here
L and the number of steps are far smaller (the config says how much).

    run(quick, progress) -> (data, config)     data["rows"]: one per run (task, model, seed, status,
                                               final mse and r2, seconds_per_step, evaluations, train_loss);
                                               the positive control's runs carry "control": its name

Only measurements: the thresholds and the verdict on D4 are the report's (`linrnn.reports.ledger`), so
that `linrnn report --from` re-settles them from these rows.
"""

from __future__ import annotations

import tempfile

TASKS = ("shift", "context_shift")
MODELS = ("dlr", "lru", "rotrnn")
BACKEND = "torch"
SIZES = {"length": 128, "steps": 600, "seeds": [0, 1, 2]}  # about 4 minutes on 2 CPU cores (more if shared)
QUICK_SIZES = {"length": 32, "steps": 250, "seeds": [0]}   # about 15 seconds
# The positive control of ContextShift (a verdict that DLR fails it needs one): causal softmax attention learns
# ContextShift at L = 16 in 1,000 steps of 2 blocks (`linrnn.experiments.claims.CONTEXT_CONTROL`), one run per seed
CONTROL = "context-shift-attention"


def run(quick: bool, progress, sizes: dict | None = None) -> tuple[dict, dict]:
    from linrnn.experiments.claims import CONTEXT_CONTROL
    from linrnn.tasks.grid import COMMON, WARMUP_FRACTION, model_defaults, run_grid

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
    config = {**sizes, "tasks": list(TASKS), "models": list(MODELS), "backend": BACKEND, "dtype": "float32",
              "common": COMMON, "warmup_fraction": WARMUP_FRACTION, "control": {"name": CONTROL, **control},
              "model_defaults": {m: model_defaults(m, sizes["length"]) for m in MODELS}}
    return {"rows": rows}, config

"""A task x model x seed grid of training runs on the synthetic tasks, one summary row per run.

    rows = run_grid(["shift", "context_shift"], ["dlr", "lru", "rotrnn"], "torch", length=64, steps=600,
                    out_dir="runs/grid", seeds=(0, 1), lr=3e-3)

Every run is `linrnn.tasks.train.train` with a `TrainConfig` built as

    TrainConfig defaults  <-  COMMON  <-  **train_overrides

(the model's mixer table starts from its training defaults, `linrnn.tasks.config.model_defaults`, the same table
`linrnn train` starts from; a `mixer` field given to the whole grid applies to each of its models that has it)

in its own directory `out_dir/<task>-<model>-<backend>-L<length>-s<seed>/` (config.json, metrics.jsonl,
checkpoint.npz, results.json). A run that diverges (`TrainingDiverged`) gives a row with status
"diverged", its message and no metrics; the grid goes on.

The defaults are one setting for every model, chosen to be fair to each (docs/tasks.md,
"Training settings"; docs/papers.md for the papers' own settings):

* the same deep model: one residual block (as DLR's 1-layer atomic-task runs), H = 32, LayerNorm
  before the mixer (DLR's runs put it after the residual; at these short budgets pre-norm reached
  higher R^2 on Shift for all three models), no dropout;
* the same state (the training defaults of every model, `ModelSpec.task_defaults`, which `linrnn train`
  shares): `modes` = max(64, L) (L rounded up to a multiple of 8) complex eigenvalues per layer for every
  model (DLR: N = modes; LRU: N = modes; RotRNN: 8 heads of d_state = modes / 4 real coordinates, i.e.
  modes 2x2 rotation blocks; S4D: N = modes per channel; S5: N = modes kept eigenvalues). N >= L lets DLR's periodic
  initialisation express every lag 0..L-1 (claim D3). Attention has no state: full causal attention
  with the DLR code's 4 heads (d_head = H / 4), its mode `chunked`;
* each model's initialisation set for long memory, as its paper does for its longest tasks: DLR
  dt_min = dt_max = 1e-5 (the atomic tasks' setting, |lambda| = exp(-5e-6)); LRU |lambda| on the ring
  [0.999, 0.9999] (the LRU paper's Path-X ring) with phases on the whole circle; RotRNN
  gamma in [0.999, 0.9999] (its Path-X sweep), theta on the whole circle; S4D and S5 dt (Delta)
  log-uniform on [1e-4, 1e-1] (their Path-X dt_min, |lambda| = exp(-dt/2) from 0.95 to 0.99995),
  S4D-Lin, S5 with one HiPPO-N block;
* the same optimiser and schedule: AdamW, peak lr 1e-2 for every parameter (recurrence included, as
  DLR's Lambda and W rates equal the global one; the papers' 1e-4..1e-3 are for 10^4-10^5 steps, these
  runs have 10^2-10^3), no weight decay, global-norm clipping at 1, linear warm-up over the first
  10% of the steps then cosine decay to 0, batch 16.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import kinds
from linrnn.tasks.config import BACKENDS, TrainConfig, mixer_fields, mixer_subset
from linrnn.tasks.metrics import thin
from linrnn.tasks.synthetic import TASKS
from linrnn.tasks.train import TrainingDiverged, train

# Fields every model shares (see the module docstring). Warm-up and evaluation cadence follow `steps`.
COMMON: dict[str, Any] = {
    "d_model": 32,          # H
    "n_layers": 1,          # DLR's atomic-task depth
    "norm": "layer",
    "prenorm": True,        # LayerNorm before the mixer (see the module docstring)
    "dropout": 0.0,
    "lr": 1e-2,             # one peak rate for every parameter
    "recurrence_lr": None,  # = lr
    "weight_decay": 0.0,
    "grad_clip": 1.0,
    "schedule": "cosine",
    "batch_size": 16,
    "eval_batches": 4,
}
WARMUP_FRACTION = 0.1       # warm-up steps = 10% of the run
EVALUATIONS = 20            # evaluations per run (and one at the end)


def grid_config(task: str, model: str, backend: str, length: int, steps: int, seed: int = 0,
                mixer: dict[str, Any] | None = None, **train_overrides) -> TrainConfig:
    """The resolved TrainConfig of one grid run (TrainConfig checks every field). `mixer`: fields of the model's
    mixer over its training defaults (`linrnn.tasks.config.model_defaults`; a field the model does not have is an
    error)."""
    values: dict[str, Any] = {**COMMON, "mixer": dict(mixer or {}),
                              "warmup_steps": int(WARMUP_FRACTION * steps),
                              "eval_every": max(1, steps // EVALUATIONS), "checkpoint_every": steps}
    values.update(train_overrides)
    values.update(task=task, model=model, backend=backend, length=length, steps=steps, seed=seed)
    return TrainConfig(**values)


def run_name(config: TrainConfig) -> str:
    return f"{config.task}-{config.model}-{config.backend}-L{config.length}-s{config.seed}"


def _check_names(flag: str, names: Iterable[str], valid: Iterable[str]) -> list[str]:
    names, valid = list(names), list(valid)
    if not names:
        raise LinrnnError(f"{flag}: expected at least one of {', '.join(valid)}")
    bad = [n for n in names if n not in valid]
    if bad:
        raise LinrnnError(f"{flag}: expected names from {', '.join(valid)}, found {', '.join(map(repr, bad))}")
    return names


def run_grid(tasks: Iterable[str], models: Iterable[str], backend: str, length: int, steps: int,
             out_dir: str | Path, seeds: Iterable[int] = (0,),
             progress: Callable[[int, int, str], None] | None = None, mixer: dict[str, Any] | None = None,
             executor=None, **train_overrides) -> list[dict]:
    """Train every task x model x seed (in that order) and return one summary row per run.

    tasks, models     names from TASKS and the registered models (`linrnn.impls.specs.kinds()`)
    backend           "torch" or "jax"
    length, steps     the task's L and the optimiser steps of every run
    out_dir           one run directory per run is made under it
    seeds             the runs' seeds (task stream, initialisation, dropout)
    progress          progress(done, total, what): once before the first run, after each finished run (what: its
                      name) and once at the end (what: "done")
    mixer             mixer fields over the training defaults, each applied to the models that have it (e.g.
                      {"d_state": 128}: every model but attention); one that no model of the grid has is an error
    executor          where the runs go (`linrnn.tasks.sweep.Executor`; default serial, in this process, an error
                      raised as it is); a run whose directory holds its job record (`job.json`, the same config) is
                      not trained again
    train_overrides   TrainConfig fields that replace the defaults (e.g. lr=1e-3, n_layers=2)

    Row: task, model, backend, length, seed, steps, status ("ok" | "diverged"), error, seconds,
    seconds_per_step, mse, r2 (final evaluation; None if diverged), evaluations [{step, mse, r2}],
    train_loss {step, loss} (thinned), config (the resolved TrainConfig), run_dir.
    """
    from linrnn.tasks.sweep import Executor, SweepJob, run_jobs

    tasks = _check_names("tasks", tasks, TASKS)
    models = _check_names("models", models, kinds())
    if backend not in BACKENDS:
        raise LinrnnError(f"backend: expected one of {', '.join(BACKENDS)}, found {backend!r}")
    seeds = list(seeds)
    if not seeds:
        raise LinrnnError("seeds: expected at least one seed")
    mixer = dict(mixer or {})
    unused = [name for name in mixer if not any(name in mixer_fields(m) for m in models)]
    if unused:
        raise LinrnnError(f"mixer: no model of the grid ({', '.join(models)}) has the field {', '.join(unused)}")
    # Every config is built (and checked) before the first run starts: a bad override fails at once.
    configs = [grid_config(t, m, backend, length, steps, s, mixer=mixer_subset(m, mixer), **train_overrides)
               for t in tasks for m in models for s in seeds]
    out_dir = Path(out_dir)
    jobs = [SweepJob(run_name(c), out_dir / run_name(c), grid_row, (c.to_dict(), str(out_dir / run_name(c))),
                     {"grid": c.to_dict()}) for c in configs]
    rows: dict[str, dict] = {}

    def gathered(job, row: dict, reused: bool) -> None:
        rows[job.name] = row
        if progress:
            progress(len(rows), len(configs), job.name)

    if progress:
        progress(0, len(configs), jobs[0].name)
    run_jobs(jobs, executor or Executor("serial", retries=0, progress=False), gathered, folder=out_dir)
    if progress:
        progress(len(configs), len(configs), "done")
    return [rows[j.name] for j in jobs]


def grid_row(values: dict, run_dir: str) -> dict:
    """One grid run (a job of the sweep): trained in `run_dir`, resuming its checkpoint where it has one of the same
    config; its summary row."""
    config = TrainConfig(**values)
    out = Path(run_dir)
    resume = False
    if (out / "checkpoint.npz").exists() and (out / "config.json").exists():
        import json

        try:
            resume = TrainConfig.from_stored(json.loads((out / "config.json").read_text())) == config
        except (ValueError, LinrnnError):       # unreadable, or another code's config: trained afresh
            resume = False
    tic = time.perf_counter()
    row: dict[str, Any] = {"task": config.task, "model": config.model, "backend": config.backend,
                           "length": config.length, "seed": config.seed, "steps": config.steps}
    try:
        result = train(config, out, progress=False, resume=resume)
    except TrainingDiverged as err:
        row.update(status="diverged", error=str(err), seconds=time.perf_counter() - tic,
                   seconds_per_step=None, mse=None, r2=None, evaluations=[], train_loss=thin([]))
    else:
        from linrnn.base.results import RUN_RESULTS, RunRecord, read

        record = read(out / RUN_RESULTS, RunRecord)      # the whole run's, also where it resumed
        final = record.evaluations[-1]
        row.update(status="ok", error=None, seconds=time.perf_counter() - tic,
                   seconds_per_step=record.seconds_per_step if result.seconds_per_step is None
                   else result.seconds_per_step, mse=final["mse"], r2=final["r2"],
                   evaluations=record.evaluations, train_loss=thin(record.train_loss))
    row.update(config=config.to_dict(), run_dir=str(out))
    return row


def write_rows(path: str | Path, rows: list[dict], command: str | None = None) -> Path:
    """The rows as a grid record (`linrnn.base.results`), with the code version, the machine and the command that
    made them."""
    from linrnn.base.results import Envelope, GridRecord, ResultsError, write

    record = GridRecord(defaults={"common": COMMON, "warmup_fraction": WARMUP_FRACTION, "evaluations": EVALUATIONS},
                        rows=rows, envelope=Envelope.here(command))
    try:
        return write(path, record)
    except ResultsError as err:
        raise LinrnnError(f"--json: {err}") from None


def table(rows: list[dict]) -> str:
    """A plain-text table: task, model, seed, final R^2, MSE, ms/step."""
    lines = [f"{'task':<20} {'model':<7} {'seed':>4} {'R^2':>9} {'MSE':>10} {'ms/step':>8}"]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['task']:<20} {r['model']:<7} {r['seed']:>4} {'diverged':>9}")
            continue
        lines.append(f"{r['task']:<20} {r['model']:<7} {r['seed']:>4} {r['r2']:>9.4f} {r['mse']:>10.3e} "
                     f"{1e3 * r['seconds_per_step']:>8.1f}")
    return "\n".join(lines)

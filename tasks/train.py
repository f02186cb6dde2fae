"""The one training loop: the same batches, in the same order, for the PyTorch or the JAX side.

    run directory/
        config.json      the resolved TrainConfig
        metrics.jsonl    one JSON object per logged step ({"step", "loss", "lr", ...}) or evaluation
        checkpoint.npz   the last good checkpoint (framework-neutral; see checkpoint.py)
        results.json     the final results (for the report)

A framework plugs in through an *adapter* (tasks/torch_adapter.py, tasks/jax_adapter.py):

    adapter = Adapter(bundle, config)            load the model bundle
    adapter.train_step(batch, step, lr, rec_lr)  one AdamW update on the scored MSE; returns the loss
                                                 before the update, and applies nothing if the loss or
                                                 a gradient is not finite
    adapter.predict(inputs) -> (B L_in d_out)    evaluation mode, float64 NumPy
    adapter.to_bundle() / optimizer_state() / load_optimizer_state(state)

Batch k of the run is batch k of the task's seeded stream, so resuming at step k replays nothing and
an interrupted-then-resumed run ends with the same bundle as an uninterrupted one.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.provenance import code_version, library_versions, machine
from linrnn.tasks import checkpoint as ckpt_io
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.metrics import regression_metrics
from linrnn.tasks.schedule import lr_factor
from linrnn.tasks.synthetic import last_outputs

ADAPTERS = {"torch": "linrnn.tasks.torch_adapter", "jax": "linrnn.tasks.jax_adapter"}
RESULTS_SCHEMA = 1


class TrainingDiverged(LinrnnError):
    """The loss or a gradient became NaN/Inf; the last good checkpoint is kept."""


def adapter_class(backend: str):
    try:
        return importlib.import_module(ADAPTERS[backend]).Adapter
    except ImportError as err:
        raise LinrnnError(f"backend {backend!r} is not available: {err}") from None


@dataclass
class RunResult:
    config: TrainConfig
    steps_done: int
    losses: list[float]           # the training loss of every step run in this call
    evaluations: list[dict]       # {"step", "mse", "r2"} in order
    seconds_per_step: float
    bundle: object                # the final Bundle


def evaluate(adapter, config: TrainConfig) -> dict[str, float]:
    """Metrics over `eval_batches` batches of the validation stream (the same batches at every evaluation)."""
    task = config.validation_task()
    preds, targets, masks = [], [], []
    for k in range(config.eval_batches):
        batch = task.batch(k)
        out = adapter.predict(batch.inputs)
        preds.append(last_outputs(out, batch.targets.shape[1]))
        targets.append(batch.targets)
        masks.append(batch.mask)
    return regression_metrics(np.concatenate(preds), np.concatenate(targets).astype(np.float64),
                              np.concatenate(masks))


def _truncate_log(path: Path, last_step: int) -> None:
    """Drop log lines past the checkpoint being resumed from (they will be written again)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= last_step]
    path.write_text("".join(line + "\n" for line in kept))


def train(config: TrainConfig, out: str | Path, resume: bool = False, stop_after: int | None = None,
          progress: bool = True, poison_step: int | None = None) -> RunResult:
    """Train (or resume) a run in `out`.

    stop_after   stop after this many steps of this call (to test exact resume; the run stays resumable)
    poison_step  replace that step's inputs with NaN (to test the divergence guard)
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LinrnnError(f"--out: cannot create {out}: {err.strerror or err}") from None
    ckpt_path, log_path = out / "checkpoint.npz", out / "metrics.jsonl"
    Adapter = adapter_class(config.backend)
    start = 0
    if resume and ckpt_path.exists():
        state = ckpt_io.load(ckpt_path)
        if state.train_config != config.to_dict():
            diff = sorted(k for k in config.to_dict() if state.train_config.get(k) != getattr(config, k))
            raise LinrnnError(f"--resume: the checkpoint in {out} was made with another config "
                              f"(differs in {', '.join(diff)})")
        adapter = Adapter(state.bundle, config)
        adapter.load_optimizer_state(state.optimizer)
        start = state.step
        _truncate_log(log_path, start)
    else:
        adapter = Adapter(init(config.model_config(), config.seed), config)
        log_path.write_text("")
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=1))

    task = config.train_task()
    end = config.steps if stop_after is None else min(config.steps, start + stop_after)
    losses, evaluations = [], []
    bar = tqdm(range(start, end), desc=f"{config.task} {config.model} {config.backend}", unit="step",
               disable=not progress, file=sys.stderr, dynamic_ncols=True, initial=start, total=config.steps)
    tic = time.perf_counter()
    with open(log_path, "a") as log:
        for step in bar:
            batch = task.batch(step)
            if step == poison_step:
                batch = type(batch)(np.full_like(batch.inputs, np.nan), batch.targets, batch.mask)
            factor = lr_factor(step, config.steps, config.warmup_steps, config.schedule)
            lr = config.lr * factor
            rec_lr = (config.recurrence_lr if config.recurrence_lr is not None else config.lr) * factor
            loss = float(adapter.train_step(batch, step, lr, rec_lr))
            if not math.isfinite(loss):
                bar.close()
                raise TrainingDiverged(f"step {step}: the training loss is {loss}; stopped before updating. "
                                       f"The last good checkpoint is kept in {ckpt_path} "
                                       f"({'none yet' if not ckpt_path.exists() else 'resume with --resume'})")
            losses.append(loss)
            log.write(json.dumps({"step": step + 1, "loss": loss, "lr": lr}) + "\n")
            bar.set_postfix(loss=f"{loss:.4g}")
            done = step + 1
            if done % config.eval_every == 0 or done == config.steps:
                metrics = evaluate(adapter, config)
                evaluations.append({"step": done, **metrics})
                log.write(json.dumps({"step": done, "eval": metrics}) + "\n")
            if done % config.checkpoint_every == 0 or done == end:
                log.flush()
                ckpt_io.save(ckpt_path, ckpt_io.Checkpoint(done, adapter.to_bundle(), adapter.optimizer_state(),
                                                           config.to_dict()))
    bar.close()
    seconds = (time.perf_counter() - tic) / max(end - start, 1)
    bundle = adapter.to_bundle()
    result = RunResult(config, end, losses, evaluations, seconds, bundle)
    if end == config.steps:
        write_results(out, result)
    return result


def write_results(out: Path, result: RunResult) -> Path:
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line]
    record = {
        "schema_version": RESULTS_SCHEMA,
        "config": result.config.to_dict(),
        "bundle_sha256": result.bundle.digest(),
        "steps": result.steps_done,
        "seconds_per_step": result.seconds_per_step,
        "final": result.evaluations[-1] if result.evaluations else None,
        "train_loss": [h["loss"] for h in history if "loss" in h],
        "evaluations": [{"step": h["step"], **h["eval"]} for h in history if "eval" in h],
        "code_version": code_version(),
        "machine": machine(),
        "libraries": library_versions(),
    }
    path = out / "results.json"
    path.write_text(json.dumps(record, indent=1))
    return path

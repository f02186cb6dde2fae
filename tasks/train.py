"""The one training loop: the same batches, in the same order, for the PyTorch or the JAX side.

    run directory/
        config.json      the resolved TrainConfig
        metrics.jsonl    one JSON object per step ({"step", "loss", "lr"}) or evaluation ({"step", "eval"})
        checkpoint.npz   the last good checkpoint (framework-neutral; see checkpoint.py)
        checkpoint.previous.npz   the one before it (a resume falls back to it where the newest is damaged)
        best.npz         data tasks: the checkpoint with the best validation metric so far
        results.json     the final results (for the report)
        .lock            while a process trains it: one writer at a time (`linrnn.tasks.lock`); a second
                         `train` into it is a one-line error naming the first

A resume starts from the checkpoint and keeps the log up to it; a damaged file is set aside or dropped, said
in one line, and never blocks the resume (`linrnn.tasks.resume`). A signal handler may ask the loop to save its
checkpoint at the end of the current step and then act (`request_checkpoint`: SLURM's warning before a job's time
limit).

What is trained on (a `Source`):

* a synthetic task: batch k of the run is batch k of the task's seeded stream; evaluation on the
  first `eval_batches` batches of a second stream (seed + 2^31); regression metrics (MSE, R^2);
* a data task: the train split in the order `Batches` draws for (seed, epoch), global step s being
  batch s mod S of epoch s // S (S steps per epoch); evaluation of val and test (the first
  `eval_batches` batches in file order, or all) every `eval_every` steps, at every epoch end and at
  the end; the metrics of `datatasks.summarize`, accumulated over batches as confusion matrices.

A batch is a pure function of the config and the step, so resuming at step k replays nothing and an
interrupted-then-resumed run ends with the same bundle as an uninterrupted one, across epoch
boundaries and with any number of `workers` (threads that assemble the next batches ahead).

A framework plugs in through an *adapter* (tasks/torch_adapter.py, tasks/jax_adapter.py):

    adapter = Adapter(bundle, config)            load the model bundle (and join the data-parallel group)
    adapter.rank, adapter.world_size             this process in data parallel (torchrun); 0 and 1 otherwise
    adapter.train_step(batch, step, lr, rec_lr)  one AdamW update on the objective's loss; returns the loss
                                                 of the global batch before the update, and applies
                                                 nothing if the loss or a gradient is not finite
    adapter.predict(batch) -> outputs            evaluation mode, float64 NumPy: (B d_out) or (B L d_out)
    adapter.reduce(array) -> array               the sum over the ranks
    adapter.to_bundle() / optimizer_state() / load_optimizer_state(state)

With W ranks (torchrun) each rank trains on its part of the global batch (`Batches(rank, world_size)`; a
synthetic batch is split the same way), evaluates every W-th evaluation batch of a data task (a synthetic
task's few evaluation batches run whole on every rank), and only rank 0 writes files or prints.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from tqdm import tqdm

from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.base.results import RUN_RESULTS, RunRecord, write
from linrnn.tasks import checkpoint as ckpt_io
from linrnn.tasks import datatasks
from linrnn.tasks import resume as resumed
from linrnn.tasks.config import RESUMABLE_CHANGES, TrainConfig, nest_legacy
from linrnn.tasks.datatasks import ModelBatch
from linrnn.tasks.lock import Locked, hold, run_lock
from linrnn.tasks.metrics import regression_metrics
from linrnn.tasks.schedule import lr_factor
from linrnn.tasks.synthetic import last_outputs

ADAPTERS = {"torch": "linrnn.tasks.torch_adapter", "jax": "linrnn.tasks.jax_adapter"}
EVAL_SPLITS = ("val", "test")
# A run also saves its checkpoint when this many seconds have passed since the last one (None: only by the config's
# `checkpoint_every` and epoch ends). A sweep's jobs set it (`linrnn.tasks.sweep`), so that a preempted or killed
# job resumes from at most that long ago; the results do not depend on it (saving reads the state, and a resumed
# run ends as an uninterrupted one).
CHECKPOINT_SECONDS: float | None = None
# `request_checkpoint`'s requests (their actions) while a loop runs in this process (`_ACTIVE`)
_REQUESTS: list[Callable[[], None]] = []
_ACTIVE = False


class TrainingDiverged(LinrnnError):
    """The loss or a gradient became NaN/Inf; the last good checkpoint is kept."""


def adapter_class(backend: str):
    try:
        return importlib.import_module(ADAPTERS[backend]).Adapter
    except ImportError as err:
        from linrnn.base.extras import missing
        raise (missing(err, f"training with backend {backend!r}", "train")     # [train] has torch, not jax
               or LinrnnError(f"backend {backend!r} is not available: {err}")) from None


def synthetic_batch(batch) -> ModelBatch:
    """A synthetic task's batch (inputs (B L_in d_in), targets (B L_out d_out), mask) as a ModelBatch."""
    B, L = batch.inputs.shape[:2]
    return ModelBatch(batch.inputs, np.full(B, L, dtype=np.int64), batch.targets, batch.mask)


# ---------------------------------------------------------------------------------------------------
# What a run trains on


class SyntheticSource:
    """A synthetic task's seeded stream (training; rank r of W takes the r-th of W equal contiguous parts of
    each batch, as `Batches` does) and a second stream (evaluation, whole on every rank)."""

    steps_per_epoch = None
    predictions = None            # a stream has no per-example labels to keep

    def __init__(self, config: TrainConfig, rank: int = 0, world_size: int = 1):
        self.config = config
        self.task = config.train_task()
        self.total_steps = config.steps
        self.rank, self.world_size = rank, world_size

    def model_config(self):
        return self.config.model_config()

    def train_batch(self, step: int) -> ModelBatch:
        batch = synthetic_batch(self.task.batch(step))
        b = batch.examples // self.world_size    # TrainConfig: batch_size is a multiple of devices
        part = slice(self.rank * b, (self.rank + 1) * b)
        return ModelBatch(batch.inputs[part], batch.lengths[part], batch.targets[part], batch.mask[part])

    def evaluate(self, adapter) -> dict:
        return evaluate(adapter, self.config)


class DataSource:
    """A data task: the train split in the seeded epoch order, val and test in file order."""

    def __init__(self, config: TrainConfig, root, cache=None, rank: int = 0, world_size: int = 1,
                 train_examples: int | None = None):
        from linrnn.tasks import data
        from linrnn.tasks.data.batches import Batches

        self.config, self.task = config, config.data_task
        options = config.loader_options()
        self.splits = {s: data.load(self.task.loader, root, s, cache=cache, **options) for s in ("train",) + EVAL_SPLITS}
        train = self.splits["train"]
        if train_examples is not None and train_examples < len(train):   # --smoke: a few batches of the data
            train = _head(train, train_examples)
        self.train = Batches(train, config.batch_size, seed=config.seed, rank=rank, world_size=world_size)
        if self.train.steps_per_epoch() < 1:
            raise LinrnnError(f"batch_size: expected at most the {len(train)} train examples of {root}, "
                              f"found {config.batch_size}")
        self.steps_per_epoch = self.train.steps_per_epoch()
        self.total_steps = config.steps if config.epochs is None else config.epochs * self.steps_per_epoch
        self.evaluation = {s: Batches(self.splits[s], config.batch_size, shuffle=False, drop_last=False)
                           for s in EVAL_SPLITS}
        self.rank, self.world_size = rank, world_size
        self.predictions: dict | None = None   # the last evaluation's test predictions (see `evaluate`)

    def model_config(self):
        train = self.splits["train"]
        if self.task.inputs == "tokens":
            return self.config.model_config(vocab_size=datatasks.vocabulary_size(train))
        return self.config.model_config(d_input=datatasks.input_features(train))

    def train_batch(self, step: int) -> ModelBatch:
        epoch, within = divmod(step, self.steps_per_epoch)
        return datatasks.model_batch(self.task, self.train.batch(epoch, within), self.config.dtype)

    def evaluate(self, adapter) -> dict:
        """{"val": metrics, "test": metrics}: this rank's share of the batches, tallies summed over ranks.

        For a task with one label per example (classification, retrieval) it also keeps the test split's
        per-example predictions in `self.predictions` ({"split", "predicted", "label"}, file order, the
        evaluated examples only), which the loop stores with the best evaluation: a paired test of two models
        on the same test examples (exact McNemar) needs them."""
        out = {}
        per_example = self.task.objective in ("classification", "retrieval")
        for name, batches in self.evaluation.items():
            count = batches.steps_per_epoch()
            if self.config.eval_batches is not None:
                count = min(count, self.config.eval_batches)
            tally = datatasks.Tally(self.task.objective, self.task.classes)
            keep = per_example and name == "test"
            # predicted and true class + 1 at each evaluated example's index, 0 elsewhere: summed over the ranks
            codes = np.zeros((2, len(self.splits[name])))
            for k in range(adapter.rank, count, adapter.world_size):
                batch = datatasks.model_batch(self.task, batches.batch(0, k), self.config.dtype)
                logits = adapter.predict(batch)
                tally.add(logits, batch.targets)
                if keep:
                    index = batches.indices(0, k)
                    codes[0, index] = np.argmax(logits, axis=-1) + 1
                    codes[1, index] = batch.targets + 1
            out[name] = datatasks.Tally.from_array(self.task.objective, self.task.classes,
                                                   adapter.reduce(tally.to_array())).summary()
            if keep:
                codes = np.rint(adapter.reduce(codes)).astype(np.int64)[:, :batches.batch_size * count]
                self.predictions = {"split": name, "predicted": (codes[0] - 1).tolist(),
                                    "label": (codes[1] - 1).tolist()}
        return out


def _head(split, n: int):
    """The first n examples of a split (a view: the same arrays, a smaller recorded size)."""
    import dataclasses

    manifest = {**split.manifest, "extra": {**split.manifest["extra"], "n": n}}
    return dataclasses.replace(split, manifest=manifest)


def prefetched(make: Callable[[int], ModelBatch], steps: range, workers: int) -> Iterator[ModelBatch]:
    """make(step) for each step in order; with workers > 0, up to 2 x workers batches built ahead in threads."""
    if workers == 0:
        yield from (make(s) for s in steps)
        return
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        ahead: list[concurrent.futures.Future] = []
        queue = iter(steps)
        for step in queue:
            ahead.append(pool.submit(make, step))
            if len(ahead) > 2 * workers:
                yield ahead.pop(0).result()
        while ahead:
            yield ahead.pop(0).result()


# ---------------------------------------------------------------------------------------------------
# The loop


@dataclass
class RunResult:
    config: TrainConfig
    steps_done: int
    losses: list[float]           # the training loss of every step run in this call
    evaluations: list[dict]       # synthetic: {"step", "mse", "r2"}; data: {"step", "epoch", "val", "test"}
    seconds_per_step: float | None   # over the steps of this call (None if it took none)
    bundle: object                # the final Bundle
    best: dict | None = None      # data tasks: the evaluation with the best validation metric (with the test
                                  # split's per-example predictions where the task has one label per example)
    rank: int = 0                 # this process in data parallel (only rank 0 writes and prints)
    stopped_early: bool = False   # `patience` evaluations without improvement ended the run before its last step
    final_predictions: dict | None = None   # data tasks: the last evaluation's per-example test predictions (a run
                                            # scored at a fixed budget is scored at its last evaluation)


def evaluate(adapter, config: TrainConfig) -> dict[str, float]:
    """Synthetic tasks: metrics over `eval_batches` batches of the validation stream (the same batches at every evaluation)."""
    task = config.validation_task()
    preds, targets, masks = [], [], []
    for k in range(config.eval_batches or 1):
        batch = task.batch(k)
        out = adapter.predict(synthetic_batch(batch))
        preds.append(last_outputs(out, batch.targets.shape[1]))
        targets.append(batch.targets)
        masks.append(batch.mask)
    return regression_metrics(np.concatenate(preds), np.concatenate(targets).astype(np.float64),
                              np.concatenate(masks))


def _same_run(saved: dict, config: TrainConfig) -> list[str]:
    saved = nest_legacy(saved)      # a checkpoint written before mixer tables: the fields its model used
    now = config.to_dict()
    return sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k) != now[k])


def resume_point(out: Path, config: TrainConfig) -> ckpt_io.Checkpoint | None:
    """The checkpoint a resume of `out` starts from (`linrnn.tasks.resume`: a damaged one is set aside); None:
    there is none, the run starts at step 0. One made with another config is a one-line error."""
    state = resumed.checkpoint(out / "checkpoint.npz")
    if state is not None:
        differs = _same_run(state.train_config, config)
        if differs:
            raise LinrnnError(f"--resume: the checkpoint in {out} was made with another config "
                              f"(differs in {', '.join(differs)})")
    return state


def request_checkpoint(then: Callable[[], None]) -> bool:
    """Ask the training loop running in this process to save its checkpoint at the end of the step it is in and then
    call `then()` (safe from a signal handler: SLURM's signal before a time limit, `linrnn.tasks.sweep_slurm`).
    False where no loop runs: the caller acts at once."""
    if not _ACTIVE:
        return False
    _REQUESTS.append(then)
    return True


def train(config: TrainConfig, out: str | Path, resume: bool = False, stop_after: int | None = None,
          progress: bool = True, poison_step: int | None = None, data=None, cache=None,
          train_examples: int | None = None, log_to: tuple[str, ...] = ()) -> RunResult:
    """Train (or resume) a run in `out`.

    data            the data folder of a data task (`--data`)
    cache           where the data's cache lives (None: beside the data, else the user cache)
    stop_after      stop after this many steps of this call (to test exact resume; the run stays resumable)
    poison_step     replace that step's inputs with NaN (to test the divergence guard)
    train_examples  use only the first so many train examples (--smoke)
    log_to          training-log sinks beside metrics.jsonl (`linrnn.tasks.logsinks`: "tensorboard", "wandb"), fed
                    the same records on rank 0
    """
    out = Path(out)
    if config.is_data_task and data is None:
        raise LinrnnError(f"--data: the data task {config.task} needs its data folder (linrnn data --help)")
    if not config.is_data_task and data is not None:
        raise LinrnnError(f"--data: the synthetic task {config.task} reads no data folder")
    rank, world = _ranks(config)
    if rank != 0:                 # only rank 0 writes: it holds the run directory's lock
        return _train(config, out, resume, stop_after, progress, poison_step, data, cache, train_examples, log_to)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LinrnnError(f"--out: cannot create {out}: {err.strerror or err}") from None
    try:
        command = Path(sys.argv[0]).name in ("linrnn", "__main__.py") and sys.argv[1:2] == ["train"]
        with hold(run_lock(out), "linrnn " + " ".join(sys.argv[1:]) if command else f"training {out}"):
            return _train(config, out, resume, stop_after, progress, poison_step, data, cache, train_examples,
                          log_to)
    except Locked as err:
        raise LinrnnError(f"--out: {out} is being trained by {err}; wait for it to end, or stop it") from None
    finally:
        if created:               # a run that failed before writing anything leaves no empty directory behind
            with contextlib.suppress(OSError):
                out.rmdir()


def _train(config: TrainConfig, out: Path, resume: bool, stop_after: int | None, progress: bool,
           poison_step: int | None, data, cache, train_examples: int | None, log_to: tuple[str, ...]) -> RunResult:
    """`train`, its run directory held."""
    global _ACTIVE
    Adapter = adapter_class(config.backend)
    ckpt_path, best_path, log_path = out / "checkpoint.npz", out / "best.npz", out / "metrics.jsonl"
    rank, world = _ranks(config)
    lead = rank == 0
    state = resume_point(out, config) if resume else None
    kept = None
    if state and lead:
        kept = resumed.kept_log(log_path, state.step)
        if kept is None and world > 1:
            raise LinrnnError(f"{log_path} is damaged: with {world} ranks a run cannot restart by itself; move the "
                              f"run directory away to train it afresh")
        if kept is None:
            resumed.say(f"{out}: {log_path.name} moved to {resumed.set_aside(log_path).name}; training from step 0")
            state = None
    # the model config needs the data (vocabulary, channels); the adapter needs the bundle
    source = (DataSource(config, data, cache, rank, world, train_examples) if config.is_data_task
              else SyntheticSource(config, rank, world))
    adapter = Adapter(state.bundle if state else init(source.model_config(), config.seed), config)
    start, best, stale = 0, None, 0
    if state:
        adapter.load_optimizer_state(state.optimizer)
        start, best, stale = state.step, state.extra.get("best"), state.extra.get("stale", 0)
        if lead:
            log_path.write_text("".join(line + "\n" for line in kept))
            if start < source.total_steps:
                print(f"{out}: resuming from the checkpoint at step {start}", file=sys.stderr, flush=True)
    elif lead:
        log_path.write_text("")
    if lead:
        (out / "config.json").write_text(json.dumps(config.to_dict(), indent=1))

    total = source.total_steps
    stopped = config.patience is not None and stale >= config.patience   # a run that stopped early stays stopped
    end = start if stopped else total if stop_after is None else min(total, start + stop_after)
    spe = source.steps_per_epoch
    monitor = config.data_task.monitor if config.is_data_task else None
    losses, evaluations = [], []
    final_predictions = None      # the last evaluation's per-example test predictions (a fixed budget scores it)
    bar = tqdm(total=total, initial=start, desc=f"{config.task} {config.model} {config.backend}", unit="step",
               disable=not (progress and lead), file=sys.stderr, dynamic_ncols=True)
    tic = time.perf_counter()
    # line-buffered: a long run's progress is on disk step by step (a resume truncates the log to its checkpoint)
    log = open(log_path, "a", buffering=1) if lead else None
    sinks = []
    last_save = time.monotonic()

    def emit(line: dict) -> None:          # one line of the training log, to metrics.jsonl and every sink
        log.write(json.dumps(line) + "\n")
        for sink in sinks:
            sink.write(line)

    _ACTIVE = True
    try:
        if lead and log_to:
            from linrnn.tasks.logsinks import open_sinks

            sinks = open_sinks(log_to, out, config.to_dict(), start)
        batches = prefetched(source.train_batch, range(start, end), config.workers if config.is_data_task else 0)
        for step, batch in zip(range(start, end), batches):
            if step == poison_step:
                batch = ModelBatch(np.full_like(batch.inputs, np.nan), batch.lengths, batch.targets, batch.mask)
            factor = lr_factor(step, total, config.warmup_steps, config.schedule)
            lr = config.lr * factor
            rec_lr = (config.recurrence_lr if config.recurrence_lr is not None else config.lr) * factor
            t0 = time.perf_counter()
            loss = float(adapter.train_step(batch, step, lr, rec_lr))
            if not math.isfinite(loss):
                raise TrainingDiverged(f"step {step}: the training loss is {loss}; stopped before updating. "
                                       f"The last good checkpoint is kept in {ckpt_path} "
                                       f"({'none yet' if not ckpt_path.exists() else 'resume with --resume'})")
            seconds = time.perf_counter() - t0
            losses.append(loss)
            done = step + 1
            epoch_end = spe is not None and done % spe == 0
            if lead:
                emit({"step": done, "loss": loss, "lr": lr})
                bar.update(1)
                examples = batch.examples * adapter.world_size
                bar.set_postfix_str(f"loss {loss:.4g}, {examples / seconds:.3g} ex/s, "
                                    f"{batch.tokens * adapter.world_size / seconds:.3g} tok/s"
                                    + (f", epoch {done / spe:.2f}" if spe else ""))
            if done == total or (config.eval_every and done % config.eval_every == 0) or epoch_end:
                metrics = source.evaluate(adapter)
                record = {"step": done, **({"epoch": round(done / spe, 6)} if spe else {}), **metrics}
                evaluations.append(record)
                final_predictions = source.predictions
                if monitor and (best is None or metrics["val"][monitor] > best["val"][monitor]):
                    best = record if source.predictions is None else {**record, "predictions": source.predictions}
                    stale = 0
                    if lead:
                        _save(best_path, done, adapter, config, best)
                elif monitor:
                    stale += 1
                    stopped = config.patience is not None and stale >= config.patience
                if lead:
                    emit({"step": done, "eval": {k: v for k, v in record.items() if k != "step"}}
                         if spe else {"step": done, "eval": metrics})
                    if progress and spe:
                        bar.write(_describe(record), file=sys.stderr)
            due = CHECKPOINT_SECONDS is not None and time.monotonic() - last_save >= CHECKPOINT_SECONDS
            if (stopped or done == end or epoch_end or due
                    or (config.checkpoint_every and done % config.checkpoint_every == 0)):
                if lead:
                    log.flush()
                    _save(ckpt_path, done, adapter, config, best, stale, keep_previous=True)
                last_save = time.monotonic()
            elif _REQUESTS and lead:
                log.flush()
                _save(ckpt_path, done, adapter, config, best, stale, keep_previous=True)
            if _REQUESTS:            # a signal asked for the checkpoint: saved at this step; now its action
                then = _REQUESTS.pop()
                _REQUESTS.clear()
                print(f"{out}: saved the checkpoint at step {done} on a signal", file=sys.stderr, flush=True)
                then()
            if stopped:             # patience: the validation metric has not improved for that many evaluations
                end = done
                break
    finally:
        _ACTIVE = False
        _REQUESTS.clear()
        bar.close()
        for sink in sinks:
            sink.close()
        if log:
            log.close()
    seconds = (time.perf_counter() - tic) / (end - start) if end > start else None
    bundle = adapter.to_bundle()
    result = RunResult(config, end, losses, evaluations, seconds, bundle, best, adapter.rank,
                       stopped_early=stopped, final_predictions=final_predictions)
    # a finished run resumed again takes no step: its results (and their time per step) stay as they were, unless
    # they are missing or unreadable: then they are written again, its final evaluation made again on the final
    # checkpoint (the same numbers: evaluation is a pure function of the model)
    if (end == total or stopped) and lead and (end > start or not _readable(out / RUN_RESULTS)):
        if not evaluations and world == 1:
            result.evaluations = [{"step": end, **({"epoch": round(end / spe, 6)} if spe else {}),
                                   **source.evaluate(adapter)}]
            result.final_predictions = source.predictions
        write_results(out, result)
    return result


def _readable(path: Path) -> bool:
    """Whether the run's results.json reads back (absent: False; unreadable: False, said)."""
    from linrnn.base.results import ResultsError, read

    if not path.exists():
        return False
    try:
        read(path, RunRecord)
    except ResultsError as err:
        resumed.say(f"{err}; written again")
        return False
    return True


def _ranks(config: TrainConfig) -> tuple[int, int]:
    """(rank, world size) of this process: torchrun's for the torch side; JAX's devices are one process."""
    import os

    world = int(os.environ.get("WORLD_SIZE", "1")) if config.backend == "torch" else 1
    rank = int(os.environ.get("RANK", "0")) if config.backend == "torch" else 0
    if config.backend == "torch" and world != config.devices:
        hint = f"run with torchrun --nproc-per-node {config.devices}" if world == 1 else f"--set devices={world}"
        raise LinrnnError(f"devices: expected torchrun's WORLD_SIZE ({world}) for the torch side, "
                          f"found {config.devices} ({hint})")
    return rank, world


def _save(path: Path, step: int, adapter, config: TrainConfig, best: dict | None, stale: int = 0,
          keep_previous: bool = False) -> None:
    extra = ({"best": best} if best else {}) | ({"stale": stale} if stale else {})
    ckpt_io.save(path, ckpt_io.Checkpoint(step, adapter.to_bundle(), adapter.optimizer_state(), config.to_dict(),
                                          extra), keep_previous=keep_previous)


def _describe(record: dict) -> str:
    parts = [f"step {record['step']}"] + ([f"epoch {record['epoch']:g}"] if "epoch" in record else [])
    for split in EVAL_SPLITS:
        if split in record:
            parts.append(f"{split} " + " ".join(f"{k} {v:.4g}" for k, v in record[split].items()))
    return ", ".join(parts)


def write_results(out: Path, result: RunResult) -> Path:
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line]
    record = RunRecord(
        config=result.config.to_dict(),
        bundle_sha256=result.bundle.digest(),
        steps=result.steps_done,
        stopped_early=result.stopped_early,
        seconds_per_step=result.seconds_per_step,
        final=(None if not result.evaluations else result.evaluations[-1] if result.final_predictions is None
               else {**result.evaluations[-1], "predictions": result.final_predictions}),
        best=result.best,
        train_loss=[h["loss"] for h in history if "loss" in h],
        evaluations=[{"step": h["step"], **h["eval"]} for h in history if "eval" in h],
    )
    return write(out / RUN_RESULTS, record)

"""What a run will be, before it runs: `linrnn train --dry-run` and the tiny `--smoke` version of a config.

The dry run reads no data: the sequence length and the train-split size are the task's published
ones (`datatasks.DataTask.nominal_*`, or a `max_length` / `resolution` in data_options), the vocabulary
its nominal size. The memory estimate is a rough upper bound per device, written out so that it can
be checked against a measurement:

    parameters, gradients, AdamW's two moments:  4 x P x bytes
    activations kept for the backward:           n_layers x A x b x L x H x bytes
        (b = the device's batch, doubled for retrieval's two documents; A = 12 tensors of B L H per block:
         norm, the mixer's input, output and its scan's saved state (measured 3-5 x B L H for one layer,
         docs/speed.md), GELU, two GLU projections, dropout masks, the residual)
    with gradient checkpointing:                 (n_layers + A) x b x L x H x bytes (block inputs + one block)
"""

from __future__ import annotations

import dataclasses
import math
import os

from linrnn.impls.bundle import is_recurrence_key, model_shapes
from linrnn.tasks.config import TrainConfig, mixer_subset
from linrnn.tasks.datatasks import nominal_length
from linrnn.tasks.synthetic import TASKS

ACTIVATIONS_PER_BLOCK = 12    # B L H tensors kept per block for the backward (see the module docstring)
SMOKE = dict(d_model=16, n_layers=2, steps=4, epochs=None, batch_size=4, eval_every=None,
             eval_batches=2, checkpoint_every=None, warmup_steps=1)
SMOKE_MIXER = {"d_state": 8, "heads": 2}   # applied to the mixer fields the model has
SMOKE_TRAIN_EXAMPLES = 64     # --smoke reads this many train examples (the first, in file order)


def smoke(config: TrainConfig) -> TrainConfig:
    """The same config, tiny: width 16, state 8 (RotRNN: 2 heads of 8), at most 2 layers, 4 steps of
    batch 4 (a multiple of `devices`), 2 evaluation batches per split, on the data's real lengths."""
    values = {**config.to_dict(), **SMOKE}
    values["mixer"] = {**config.mixer, **mixer_subset(config.model, SMOKE_MIXER)}
    values["n_layers"] = min(config.n_layers, SMOKE["n_layers"])
    values["batch_size"] = max(SMOKE["batch_size"] // config.devices, 1) * config.devices
    if not config.is_data_task:
        values["epochs"] = None
    return TrainConfig.from_dict(values, where="--smoke")


@dataclasses.dataclass(frozen=True)
class Plan:
    parameters: int
    length: int
    steps_per_epoch: int | None
    total_steps: int
    memory_bytes: int
    device: str
    device_bytes: int | None
    # what a step's work scales with (`linrnn experiment --scale full`'s estimates): the weights applied at every
    # position (the recurrence's own parameters, e.g. RotRNN's M, are not), and the positions of a step
    token_parameters: int = 0
    tokens_per_step: int = 0

    def lines(self) -> list[str]:
        fits = "" if self.device_bytes is None else (
            f" of {self.device_bytes / 2**30:.1f} GiB ({'fits' if self.memory_bytes < self.device_bytes else 'does NOT fit'})")
        return [f"parameters      {self.parameters:,}",
                f"sequence length {self.length:,}" + (" (nominal: the data is not read)" if self.steps_per_epoch else ""),
                f"steps per epoch {self.steps_per_epoch:,} (nominal train size)" if self.steps_per_epoch
                else "steps per epoch - (a synthetic stream)",
                f"total steps     {self.total_steps:,}",
                f"memory estimate {self.memory_bytes / 2**30:.2f} GiB per device on {self.device}{fits} "
                f"(rough upper bound, tasks/plan.py)"]


def plan(config: TrainConfig) -> Plan:
    bytes_ = 8 if config.dtype == "float64" else 4
    if config.is_data_task:
        task = config.data_task
        length = nominal_length(task, config.data_options)
        vocab = task.nominal_vocab if task.inputs == "tokens" else None
        model = config.model_config(d_input=3 if config.data_options.get("grayscale") is False else 1,
                                    vocab_size=vocab)
        spe = task.nominal_train // config.batch_size
        total = config.steps if config.epochs is None else config.epochs * spe
        rows = 2 * config.batch_size if task.objective == "retrieval" else config.batch_size
    else:
        spec = TASKS[config.task]
        model = config.model_config()
        length, spe, total, rows = spec.input_length(config.length), None, config.steps, config.batch_size
    shapes = model_shapes(model)
    P = sum(math.prod(shape) for shape in shapes.values())
    per_token = sum(math.prod(shape) for key, shape in shapes.items() if not is_recurrence_key(key, model))
    b, H = rows // config.devices, config.d_model
    per_block = b * length * H * bytes_
    if config.grad_checkpointing:
        activations = (config.n_layers + ACTIVATIONS_PER_BLOCK) * per_block
    else:
        activations = config.n_layers * ACTIVATIONS_PER_BLOCK * per_block
    device, device_bytes = _device(config)
    return Plan(P, length, spe, total, 4 * P * bytes_ + activations, device, device_bytes, per_token, rows * length)


def _device(config: TrainConfig) -> tuple[str, int | None]:
    """The device a run would use and its memory, asked of the framework without allocating anything."""
    if config.backend == "torch":
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            return f"cuda ({props.name})", int(props.total_memory)
    else:
        import jax

        device = jax.devices()[0]
        if device.platform != "cpu":
            stats = device.memory_stats() or {}
            return f"{device.platform} ({device.device_kind})", stats.get("bytes_limit")
    try:
        return "cpu", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):   # pragma: no cover - not POSIX
        return "cpu", None

"""One training run, described by one frozen config (task, model, sizes, optimiser, schedule, steps, seed).

The same config trains with the PyTorch or the JAX implementation on exactly the same batches in the
same order. Every field is checked before any work starts; an error names the field, what was
expected and what was found. A config is read from and written to JSON (`linrnn train --config`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linrnn.impls.config import MixerConfig, ModelConfig, mixer_config
from linrnn.impls.errors import LinrnnError
from linrnn.tasks.synthetic import TASKS, make_task

MODELS = ("rotrnn", "lru", "dlr")
BACKENDS = ("torch", "jax")


@dataclass(frozen=True)
class TrainConfig:
    # what is learned
    task: str = "shift"            # a synthetic task (linrnn.tasks.synthetic.TASKS)
    length: int = 256              # the task's L (docs/tasks.md)
    # the model (docs/models.md's deep model; pooling 'none', the last L_out outputs are scored)
    model: str = "dlr"             # rotrnn, lru or dlr
    d_model: int = 32              # H
    d_state: int = 64              # N (RotRNN: per head)
    heads: int = 8                 # RotRNN only
    n_layers: int = 1              # residual blocks
    norm: str = "layer"            # layer or batch
    prenorm: bool = True           # pre- or post-norm
    dropout: float = 0.0           # time-shared dropout rate
    dt_min: float = 1e-5           # DLR: the synthetic tasks' setting (docs/tasks.md)
    dt_max: float = 1e-5
    r_min: float = 0.9             # LRU ring
    r_max: float = 0.999
    gamma_min: float = 0.9         # RotRNN decays
    gamma_max: float = 0.999
    # the optimiser (AdamW; recurrence parameters in their own group without weight decay)
    lr: float = 1e-3               # peak learning rate of every other parameter
    recurrence_lr: float | None = None  # peak learning rate of M, theta, gamma_log, nu_log, theta_log, a (None: lr)
    weight_decay: float = 0.0      # AdamW decay of the non-recurrence parameters
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    grad_clip: float | None = 1.0  # clip the global gradient norm to this (None: no clipping)
    warmup_steps: int = 0          # linear warm-up from 0 to the peak learning rate
    schedule: str = "cosine"       # after warm-up: cosine decay to 0 at `steps`, or constant
    # the run
    steps: int = 500               # optimiser steps; batch k is the task's batch k
    batch_size: int = 16
    eval_every: int = 100          # evaluate every so many steps (and at the end)
    eval_batches: int = 4          # validation batches (from a separate seeded stream)
    checkpoint_every: int = 100    # save a resumable checkpoint every so many steps (and at the end)
    seed: int = 0                  # the task's stream, the initialisation and the dropout masks
    backend: str = "torch"         # torch or jax
    mode: str | None = None        # the mixers' computation mode (None: conv for DLR, scan otherwise)
    dtype: str = "float32"         # float32 or float64

    def __post_init__(self) -> None:
        def fail(name: str, expected: str) -> None:
            raise LinrnnError(f"{name}: expected {expected}, found {getattr(self, name)!r}")

        def integer(name: str, minimum: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                fail(name, f"an integer >= {minimum}")

        def number(name: str, low: float, high: float, optional: bool = False) -> None:
            v = getattr(self, name)
            if v is None and optional:
                return
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
                fail(name, f"a number in [{low:g}, {high:g}]")

        if self.task not in TASKS:
            fail("task", f"one of {', '.join(TASKS)}")
        if self.model not in MODELS:
            fail("model", f"one of {', '.join(MODELS)}")
        if self.backend not in BACKENDS:
            fail("backend", f"one of {', '.join(BACKENDS)}")
        if self.dtype not in ("float32", "float64"):
            fail("dtype", "float32 or float64")
        if self.mode is not None and self.mode not in ("scan", "sequential", "conv"):
            fail("mode", "scan, sequential, conv or null")
        if self.norm not in ("layer", "batch"):
            fail("norm", "layer or batch")
        if self.schedule not in ("cosine", "constant"):
            fail("schedule", "cosine or constant")
        for name in ("d_model", "d_state", "heads", "n_layers", "steps", "batch_size", "eval_every",
                     "eval_batches", "checkpoint_every"):
            integer(name, 1)
        integer("warmup_steps", 0)
        integer("seed", 0)
        if not isinstance(self.prenorm, bool):
            fail("prenorm", "true or false")
        number("dropout", 0.0, 0.99)
        number("lr", 0.0, 10.0)
        number("recurrence_lr", 0.0, 10.0, optional=True)
        number("weight_decay", 0.0, 10.0)
        number("beta1", 0.0, 0.999999)
        number("beta2", 0.0, 0.999999999)
        number("eps", 0.0, 1.0)
        number("grad_clip", 1e-12, 1e12, optional=True)
        spec = TASKS[self.task]
        integer("length", spec.min_length)
        self.model_config()  # the mixer's own checks (even RotRNN state, ranges of the init)

    @property
    def compute_mode(self) -> str:
        return self.mode or ("conv" if self.model == "dlr" else "scan")

    def mixer_config(self) -> MixerConfig:
        ranges = {"rotrnn": {"gamma_min": self.gamma_min, "gamma_max": self.gamma_max},
                "lru": {"r_min": self.r_min, "r_max": self.r_max},
                "dlr": {"dt_min": self.dt_min, "dt_max": self.dt_max}}[self.model]
        return mixer_config(self.model, self.d_model, self.d_state, heads=self.heads, **ranges)

    def model_config(self) -> ModelConfig:
        spec = TASKS[self.task]
        return ModelConfig(mixer=self.mixer_config(), n_layers=self.n_layers, d_input=spec.d_in,
                           d_output=spec.d_out, norm=self.norm, prenorm=self.prenorm, pooling="none",
                           dropout=self.dropout)

    def train_task(self):
        return make_task(self.task, self.length, seed=self.seed, batch_size=self.batch_size, dtype=self.dtype)

    def validation_task(self):
        """A stream disjoint from training: the same task under another seed (seed + 2^31)."""
        return make_task(self.task, self.length, seed=self.seed + 2**31, batch_size=self.batch_size,
                         dtype=self.dtype)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "config") -> "TrainConfig":
        if not isinstance(data, dict):
            raise LinrnnError(f"{where}: expected a JSON object, found {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise LinrnnError(f"{where}: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "TrainConfig":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise LinrnnError(f"--config: cannot read {path}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise LinrnnError(f"--config: cannot read {path}: {err}") from None
        return cls.from_dict(data, where=str(path))

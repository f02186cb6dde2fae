"""One training run, described by one frozen config (task, model, sizes, optimiser, schedule, length, seed).

A task is a synthetic stream (`linrnn.tasks.synthetic.TASKS`, trained for `steps` steps; batch k of
the run is batch k of the seeded stream) or a data task (`linrnn.tasks.datatasks.DATA_TASKS`: a data
set read by its loader from `--data`, trained for `epochs` epochs, or `steps` steps that run on
through the epochs). The same config trains with the PyTorch or the JAX implementation on exactly the
same batches in the same order. Every field is checked before any work starts (and before any data is
read); an error names the field, what was expected and what was found. A config is read from TOML
(`tasks/configs/*.toml`, whose comments carry the sources) or JSON and written as JSON.

The model's mixer is the config's `mixer` table (TOML: `[mixer]`), built from that model's own config class
(`linrnn.impls.config.MIXER_CONFIGS`) with the class's checks; a field the model does not have is an error
that names the field and the model. `--set mixer.FIELD=VALUE` (or a bare `--set FIELD=VALUE` where FIELD is
no training field) sets one. Configs that linrnn wrote before mixer tables (flat: every model's fields at the
top level) are read by `TrainConfig.from_stored` / `nest_legacy` as the runs they were.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linrnn.impls.config import MIXER_CONFIGS, MixerConfig, ModelConfig, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import kinds, spec
from linrnn.tasks.datatasks import DATA_TASKS, DataTask, loader_options
from linrnn.tasks.synthetic import TASKS, make_task

PAPER_MODELS = ("rotrnn", "lru", "dlr")     # the three papers' models: one full-scale config per data task
# Every model the registry holds trains (`linrnn.impls.specs.kinds()`: these three, the baselines S4D, S5 and attention,
# and any registered later), each starting from its spec's training defaults (`model_defaults`).
BACKENDS = ("torch", "jax")
SYNTHETIC_LENGTH, SYNTHETIC_STEPS = 256, 500   # what a synthetic run gets when length / steps are not given
# fields that may differ between a checkpoint and the run that resumes it (they change how, not what)
RESUMABLE_CHANGES = ("workers", "devices", "eval_batches")

@dataclass(frozen=True)
class TrainConfig:
    # what is learned
    task: str = "shift"            # a synthetic task (linrnn.tasks.synthetic.TASKS) or a data task (DATA_TASKS)
    length: int | None = None      # synthetic: the task's L (docs/tasks.md; None: 256); data tasks: None
    data_options: dict = field(default_factory=dict)  # data tasks: options of the loader (docs/data.md)
    # the model (docs/models.md's deep model; synthetic tasks: pooling 'none', the last L_out outputs are scored)
    model: str = "dlr"             # a registered model (linrnn.impls.specs.kinds())
    d_model: int = 32              # H (the width of every block and of its mixer)
    n_layers: int = 1              # residual blocks
    norm: str = "layer"            # layer or batch
    prenorm: bool = True           # pre- or post-norm
    dropout: float = 0.0           # time-shared dropout rate
    pooling: str = "mean"          # data classification / retrieval: mean over the true length, or last
    # the model's own mixer: the fields of its config class (linrnn.impls.config.MIXER_CONFIGS[model]) but
    # d_model, e.g. {"d_state": 256, "r_min": 0.0} for the LRU (the [mixer] table of a TOML file). A field the
    # model does not have is an error; one not given takes the model's training default (`model_defaults`: its
    # spec's, at the task's length), else the class's default.
    # Resolved on construction: every field of the model's mixer, in the class's order (docs/training.md).
    mixer: dict = field(default_factory=dict)
    # the optimiser (AdamW; recurrence parameters in their own group without weight decay)
    lr: float = 1e-3               # peak learning rate of every other parameter
    recurrence_lr: float | None = None  # peak learning rate of the recurrence parameters (RECURRENCE_KEYS; None: lr)
    weight_decay: float = 0.0      # AdamW decay of the non-recurrence parameters
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    grad_clip: float | None = 1.0  # clip the global gradient norm to this (None: no clipping)
    warmup_steps: int = 0          # linear warm-up from 0 to the peak learning rate
    schedule: str = "cosine"       # after warm-up: cosine decay to 0 at `steps`, or constant
    # the run
    steps: int | None = None       # optimiser steps (synthetic: batch k is the stream's batch k; None: 500)
    epochs: int | None = None      # data tasks: passes over the train split (set this or steps, not both)
    batch_size: int = 16           # the global batch, over all devices
    eval_every: int | None = 100   # evaluate every so many steps (None: only at epoch ends); always at the end
    eval_batches: int | None = 4   # batches per evaluated split (synthetic: of a separate seeded stream;
                                   # data: the first ones of val and test in file order; None: whole splits)
    patience: int | None = None    # data tasks: stop once the monitored validation metric has not improved for
                                   # this many evaluations in a row (None: run every step); the schedule
                                   # still spans `steps` / `epochs`, the most the run may take
    checkpoint_every: int | None = 100  # save a resumable checkpoint every so many steps (None: epoch ends)
    seed: int = 0                  # the stream or the epoch order, the initialisation and the dropout masks
    backend: str = "torch"         # torch or jax
    mode: str | None = None        # the mixers' computation mode (None: the model's first training mode,
                                   # `ModelSpec.training_modes`: conv for DLR and S4D, chunked for attention, scan
                                   # otherwise)
    dtype: str = "float32"         # float32 or float64 (parameters, and the recurrence under autocast)
    autocast: bool | None = None   # torch: bf16 autocast of the projections, the recurrence in float32
                                   # (docs/precision.md); None: on when the run is on a GPU
    grad_checkpointing: bool = False  # recompute each block's activations in the backward (Path-X)
    workers: int = 0               # data tasks: threads assembling the next batches ahead of the step
    devices: int = 1               # data-parallel ways (torch: torchrun's WORLD_SIZE; jax: local devices)

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

        if self.task not in TASKS and self.task not in DATA_TASKS:
            fail("task", f"a synthetic task ({', '.join(TASKS)}) or a data task ({', '.join(DATA_TASKS)})")
        if self.model not in kinds():
            fail("model", f"one of {', '.join(kinds())}")
        if not isinstance(self.mixer, dict):
            fail("mixer", f"a table of the {self.model} mixer's fields")
        if self.backend not in BACKENDS:
            fail("backend", f"one of {', '.join(BACKENDS)}")
        if self.dtype not in ("float32", "float64"):
            fail("dtype", "float32 or float64")
        trainable = tuple(m for m in modes(self.backend, self.model) if m != "step")   # a whole sequence at once
        if self.mode is not None and self.mode not in trainable:
            fail("mode", f"{', '.join(trainable)} or null")
        if self.norm not in ("layer", "batch"):
            fail("norm", "layer or batch")
        if self.schedule not in ("cosine", "constant"):
            fail("schedule", "cosine or constant")
        if self.pooling not in ("mean", "last"):
            fail("pooling", "mean or last")
        for name in ("d_model", "n_layers", "batch_size", "devices"):
            integer(name, 1)
        for name in ("steps", "epochs", "eval_every", "eval_batches", "patience", "checkpoint_every"):
            if getattr(self, name) is not None:
                integer(name, 1)
        integer("warmup_steps", 0)
        integer("seed", 0)
        integer("workers", 0)
        for name in ("prenorm", "autocast", "grad_checkpointing"):
            if not isinstance(getattr(self, name), bool) and not (name == "autocast" and self.autocast is None):
                fail(name, "true or false" + (" or null" if name == "autocast" else ""))
        if not isinstance(self.data_options, dict):
            fail("data_options", "a table of loader options")
        if self.batch_size % self.devices:
            fail("batch_size", f"a multiple of devices = {self.devices}")
        if self.autocast and self.dtype != "float32":
            fail("autocast", "false or null with dtype float64 (autocast runs float32 parameters with bf16 projections)")
        if self.autocast and self.backend != "torch":
            fail("autocast", "false or null with backend jax (the JAX side has no autocast; use dtype float32)")
        number("dropout", 0.0, 0.99)
        number("lr", 0.0, 10.0)
        number("recurrence_lr", 0.0, 10.0, optional=True)
        number("weight_decay", 0.0, 10.0)
        number("beta1", 0.0, 0.999999)
        number("beta2", 0.0, 0.999999999)
        number("eps", 0.0, 1.0)
        number("grad_clip", 1e-12, 1e12, optional=True)
        self._check_length()
        object.__setattr__(self, "mixer", mixer_table(self.model, self.mixer, model_defaults(self.model, self.length)))
        if "max_phase" in self.mixer:   # LRU and RotRNN: phases on at most the whole circle
            v = self.mixer["max_phase"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 2 * math.pi:
                raise LinrnnError(f"mixer.max_phase: expected a number in [0, {2 * math.pi:g}], found {v!r}")
        self.mixer_config()  # the mixer's own checks (even RotRNN state, ranges of the init)

    def _check_length(self) -> None:
        """A data task: no length, steps or epochs. A synthetic task: its length (default 256) and steps (500)."""
        if self.is_data_task:
            if self.length is not None:
                raise LinrnnError(f"length: expected null for the data task {self.task} (its L is the loader's: "
                                  f"data_options), found {self.length!r}")
            if (self.steps is None) == (self.epochs is None):
                raise LinrnnError(f"steps, epochs: expected exactly one of them set for the data task {self.task}, "
                                  f"found steps={self.steps!r}, epochs={self.epochs!r}")
            self.loader_options()   # the options the task name fixes
            return
        synthetic = f"for the synthetic task {self.task}"
        for name, given, expected in (
                ("data_options", bool(self.data_options), f"an empty table {synthetic}"),
                ("epochs", self.epochs is not None, f"null {synthetic} (a stream has no epochs; set steps)"),
                ("patience", self.patience is not None, f"null {synthetic} (it has no validation metric to monitor)")):
            if given:
                raise LinrnnError(f"{name}: expected {expected}, found {getattr(self, name)!r}")
        object.__setattr__(self, "length", SYNTHETIC_LENGTH if self.length is None else self.length)
        object.__setattr__(self, "steps", SYNTHETIC_STEPS if self.steps is None else self.steps)
        v = self.length
        if isinstance(v, bool) or not isinstance(v, int) or v < TASKS[self.task].min_length:
            raise LinrnnError(f"length: expected an integer >= {TASKS[self.task].min_length}, found {v!r}")

    @property
    def is_data_task(self) -> bool:
        return self.task in DATA_TASKS

    @property
    def data_task(self) -> DataTask:
        return DATA_TASKS[self.task]

    @property
    def objective(self) -> str:
        return self.data_task.objective if self.is_data_task else "regression"

    def loader_options(self) -> dict[str, Any]:
        """The options the loader gets (the config's and the task's own), checked by the loader."""
        from linrnn.tasks.data import check_options

        options = loader_options(self.data_task, self.data_options)
        check_options(self.data_task.loader, **options)
        return options

    @property
    def compute_mode(self) -> str:
        """`mode`, else the model's first training mode (`ModelSpec.training_modes`), else its backend's default."""
        model = spec(self.model)
        return self.mode or (model.training_modes or model.modes_of(self.backend))[0]

    def mixer_config(self) -> MixerConfig:
        """The model's mixer: its own config class, of width d_model, with the fields of `mixer` (and its checks)."""
        return MIXER_CONFIGS[self.model](d_model=self.d_model, **self.mixer)

    def model_config(self, d_input: int | None = None, vocab_size: int | None = None) -> ModelConfig:
        """The deep model of this run. Synthetic tasks: from the task's spec. Data tasks: `d_input`
        (real inputs) or `vocab_size` (token inputs) come from the loaded data (or the dry run's nominal values)."""
        common = dict(mixer=self.mixer_config(), n_layers=self.n_layers, norm=self.norm, prenorm=self.prenorm,
                      dropout=self.dropout)
        if not self.is_data_task:
            spec = TASKS[self.task]
            return ModelConfig(d_input=spec.d_in, d_output=spec.d_out, pooling="none", **common)
        task = self.data_task
        dense = task.objective in ("tokens", "segmentation")
        extra = {"head": "retrieval"} if task.objective == "retrieval" else {}
        return ModelConfig(d_input=d_input or 1, vocab_size=vocab_size if task.inputs == "tokens" else None,
                           d_output=task.classes, pooling="none" if dense else self.pooling, **extra, **common)

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
            raise LinrnnError(f"{where}: expected a table of fields, found {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        misplaced = [name for name in unknown if name in MIXER_FIELD_TYPES]
        if misplaced:
            model = data.get("model", cls.model)
            has = mixer_fields(model) if model in MIXER_CONFIGS else {}
            why = ("; as linrnn wrote configs before mixer tables: move the model's own fields into \"mixer\" and "
                   "drop the other models'" if "mixer" not in data and set(LEGACY_MIXER_FIELDS) <= set(data) else "")
            lacks = [name for name in misplaced if name not in has]
            raise LinrnnError(f"{where}: {', '.join(misplaced)}: mixer fields go in the mixer table ([mixer] in TOML, "
                              f"\"mixer\" in JSON, --set mixer.FIELD=VALUE)"
                              + (f"; model {model} has no field {', '.join(lacks)} (its fields: "
                                 f"{', '.join(has)})" if lacks and has else "") + why)
        if unknown:
            raise LinrnnError(f"{where}: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_stored(cls, data: Any, where: str = "config") -> TrainConfig:
        """A config that linrnn itself wrote (a checkpoint, a run's config.json or results.json, a stored record),
        in either form: nested, or flat as written before mixer tables (`nest_legacy`)."""
        return cls.from_dict(nest_legacy(data), where)

    @classmethod
    def read(cls, path: str | os.PathLike) -> dict[str, Any]:
        """The fields written in a TOML (`.toml`) or JSON file, unchecked (`--set` applies on top of them).
        TOML has no null: a field written as the string "none" is None."""
        path = Path(path)
        try:
            text = path.read_text()
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except FileNotFoundError:
            raise LinrnnError(f"--config: cannot read {path}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
            raise LinrnnError(f"--config: cannot read {path}: {err}") from None
        if not isinstance(data, dict):
            raise LinrnnError(f"--config: {path}: expected a table of fields, found {type(data).__name__}")
        values = {k: None if v == "none" and k in OPTIONAL else v for k, v in data.items()}
        if isinstance(values.get("mixer"), dict):
            values["mixer"] = {k: None if v == "none" and k in MIXER_OPTIONAL else v for k, v in values["mixer"].items()}
        return values

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "TrainConfig":
        try:
            return cls.from_dict(cls.read(path), where=str(path))
        except LinrnnError as err:
            message = str(err)
            raise LinrnnError(message if message.startswith(f"{path}: ") else f"{path}: {message}") from None


FIELD_TYPES: dict[str, Any] = typing.get_type_hints(TrainConfig)
OPTIONAL = {name for name, hint in FIELD_TYPES.items() if type(None) in typing.get_args(hint)}

MIN_MODES = 64     # the fewest complex eigenvalues per layer that a run's training defaults give


def state_modes(length: int | None) -> int:
    """Complex eigenvalues per layer that the training defaults give at task length L: at least L, so that DLR's
    periodic initialisation covers every lag 0..L-1 (claim D3), rounded up to a multiple of 8 (RotRNN's 8 heads of an
    even state: every model the same count), and at least 64 (a data task, None here: 64)."""
    return max(MIN_MODES, -(-(length or 0) // 8) * 8)


def model_defaults(model: str, length: int | None) -> dict[str, Any]:
    """The one table of training defaults: the mixer fields `model` starts with at task length L (None: a data task),
    its spec's (`ModelSpec.task_defaults` at `state_modes(L)`). `linrnn train`, `linrnn tasks grid` and the
    experiments built on the grid all start a model from it; a field it leaves out takes the class's default."""
    if model not in kinds():
        raise LinrnnError(f"model: expected one of {', '.join(kinds())}, found {model!r}")
    return dict(spec(model).task_defaults(state_modes(length)))


# What the flat config of earlier versions gave a mixer field it did not write (a state of 64, 8 heads, DLR's
# Delta = 1e-5 for DLR, S4D and S5): a stored config of that form reads as the run it was (`nest_legacy`)
LEGACY_MIXER_DEFAULTS: dict[str, Any] = {"d_state": 64, "heads": 8, "dt_min": 1e-5, "dt_max": 1e-5}
# The mixer fields of the flat config of earlier versions, each applied to the models that have it (`nest_legacy`)
LEGACY_MIXER_FIELDS = ("d_state", "heads", "bidirectional", "dt_min", "dt_max", "max_kernel_length", "window",
                       "r_min", "r_max", "gamma_min", "gamma_max", "max_phase")


def mixer_fields(model: str) -> dict[str, dataclasses.Field]:
    """The fields of `model`'s mixer config class that a training config sets: all but d_model (the config's)."""
    return {f.name: f for f in dataclasses.fields(MIXER_CONFIGS[model]) if f.name != "d_model"}


class RegistryTable(Mapping):
    """A read-only table built from the model registry on every read, so that it follows a model registered later
    (a flag, a `--set` or a TOML field of that model's mixer)."""

    def __init__(self, build: Callable[[], dict[str, Any]]):
        self._build = build

    def __getitem__(self, name: str) -> Any:
        return self._build()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())


def _mixer_field_types() -> dict[str, Any]:
    return {name: typing.get_type_hints(cls)[name] for cls in MIXER_CONFIGS.values() for name in mixer_fields(cls.kind)}


# every registered model's mixer fields with their annotations (a name means the same in every class that has it),
# and those of them that may be None
MIXER_FIELD_TYPES = RegistryTable(_mixer_field_types)
MIXER_OPTIONAL = RegistryTable(lambda: {name: hint for name, hint in _mixer_field_types().items()
                                        if type(None) in typing.get_args(hint)})


def mixer_table(model: str, given: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Every mixer field of `model` (in its class's order): the `given` ones, the others from `defaults` (the training
    defaults, `model_defaults`) or the class's default. A given field the model does not have is a `LinrnnError`
    naming it and the model; the values are checked by the class (`TrainConfig.mixer_config`)."""
    fields = mixer_fields(model)
    unknown = [name for name in given if name not in fields]
    if unknown:
        hint = "; d_model is the training config's, not the mixer table's" if "d_model" in unknown else ""
        raise LinrnnError(f"mixer: model {model} has no field {', '.join(unknown)} "
                          f"(its fields: {', '.join(fields)}){hint}")
    return {name: given[name] if name in given else defaults.get(name, f.default) for name, f in fields.items()}


def mixer_subset(model: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The `fields` that `model`'s mixer has: for settings given once for several models (a grid's `--set`, the
    sizes of `--smoke`), each applied where it exists."""
    own = mixer_fields(model)
    return {name: value for name, value in fields.items() if name in own}


def nest_legacy(data: Any) -> Any:
    """A config dict as linrnn wrote it before mixer tables (flat: every model's mixer fields at the top level,
    the unused ones ignored) in the nested form, with the fields its model used; a nested one (or anything
    that is not a dict with a known model) is returned as it is."""
    if not isinstance(data, dict) or "mixer" in data:
        return data
    model = data.get("model", TrainConfig.model)
    if model not in MIXER_CONFIGS:
        return data
    given = {k: data[k] for k in LEGACY_MIXER_FIELDS if k in data}
    rest = {k: v for k, v in data.items() if k not in LEGACY_MIXER_FIELDS}
    return {**rest, "mixer": mixer_table(model, mixer_subset(model, given), LEGACY_MIXER_DEFAULTS)}

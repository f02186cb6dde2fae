"""What every configuration shares: the deep model's config, serialisation, the registry's tables (docs/models.md).

Each mixer's frozen config class lives in its contract file, `linrnn.impls.specs.<kind>` (`LRUConfig` in
`specs/lru.py`, ...), with its initialiser, shapes and spec; this module sits above that registry and reads it:
`MixerConfig` (any registered mixer's config), `MIXER_CONFIGS`, `KIND_MODES`, `KINDS` (every registered kind) and
`RECURRENT_KINDS` (those with a state) are views of it that follow later registrations, and `mixer_config`,
`ModelConfig` and `config_from_dict` accept every registered kind.

A configuration decides every shape of a bundle; the numbers live in the bundle itself. Each field has
a typed default and a comment. Values are checked on construction (`linrnn.impls.specs.base`'s checks), so a bad
size or range fails at once with a message that names the field (`LinrnnError`), never later inside a computation.

Shape letters everywhere: B batch, L length, H model width (`d_model`), N state size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import KINDS, RECURRENT_KINDS, SPECS, SpecView, spec  # noqa: F401  (KINDS: a view)
from linrnn.impls.specs.base import MODES, check_bool, check_choice, check_float, check_int
from linrnn.impls.specs.lru import LRUConfig

SCHEMA_VERSION = 1  # bumped whenever a bundle's keys, shapes or meaning change

# -- the contract's tables, shared by every backend (checked in `linrnn.impls.checks`) --------------

# The computation modes of each backend are `linrnn.impls.specs.base.MODES` (a recurrent mixer's, the first the
# default); a kind without the recurrent and convolution views declares its own per backend in its spec.
# The dtypes each backend computes in; the reference is the float64 oracle. The low dtypes follow the
# mixed-precision policy (docs/precision.md, "Low precision"): inputs, projection weights, activations and
# outputs in the low dtype, every recurrence (its state, the scan, the kernel and its FFT) in float32.
LOW_DTYPES: tuple[str, ...] = ("bfloat16", "float16")
STATE_DTYPE = "float32"            # the recurrence's dtype under a low dtype
DTYPES: dict[str, tuple[str, ...]] = {
    "reference": ("float64",),
    "torch": ("float32", "float64") + LOW_DTYPES,
    "jax": ("float32", "float64") + LOW_DTYPES,
}
# BatchNorm's update of its stored statistics in training mode: stat <- (1 - m) stat + m batch_stat
# (PyTorch's default, which the authors' training code keeps). Evaluation uses the stored statistics.
BATCHNORM_MOMENTUM = 0.1


def modes(backend: str, kind: str | None = None) -> tuple[str, ...]:
    """The modes of `backend` for the mixer `kind` (its spec's; without a kind: MODES), the first the default."""
    if kind is None:
        return MODES[backend]
    return spec(kind).modes_of(backend)


# -- the registry's views: they follow every registration -------------------------------------------------

MIXER_CONFIGS = SpecView(lambda s: s.config)          # kind -> config class, every mixer (attention included)
KIND_MODES = SpecView(lambda s: s.modes, only=lambda s: s.modes is not None)   # kind -> {backend: modes}, the kinds
                                                      # with modes of their own (no recurrence: attention)


class _Registered(type):
    """`isinstance(cfg, MixerConfig)` asks the registry: a config of any kind registered so far."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, tuple(s.config for s in SPECS.values()))

    def __subclasscheck__(cls, sub: type) -> bool:
        return isinstance(sub, type) and issubclass(sub, tuple(s.config for s in SPECS.values()))


class MixerConfig(metaclass=_Registered):
    """Any registered mixer's config class (`MIXER_CONFIGS`), for annotations and `isinstance`; never instantiated."""

    kind: ClassVar[str]
    d_model: int
    bidirectional: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("MixerConfig is the registry's view of the mixer config classes: build one with "
                        "mixer_config(kind, ...) or its class")


def mixer_config(kind: str, H: int, N: int, heads: int = 1, bidirectional: bool = False, **init: Any) -> MixerConfig:
    """The mixer `kind` of width H, state N per head (RotRNN: `heads` heads; the others have one head).

    Attention takes `heads` too and has no state: N does not apply and is dropped (its config has no
    `d_state` field), so callers that size every kind alike pass their N unchanged.
    `init` sets fields of that mixer's config (RotRNN gamma_min/gamma_max/..., LRU r_min/r_max/...,
    DLR dt_min/dt_max/..., S4D init/dt_min/dt_max, S5 blocks/discretization/..., attention window); a field
    that the kind does not have is a `LinrnnError`.
    """
    cls = spec(kind).config
    own = {f.name for f in dataclasses.fields(cls)}
    names = own - {"d_model", "d_state", "heads", "bidirectional"}
    unknown = sorted(set(init) - names)
    if unknown:
        raise LinrnnError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)} "
                          f"(expected a subset of {', '.join(sorted(names))})")
    sizes: dict[str, Any] = {"d_model": H, "bidirectional": bidirectional}
    if "d_state" in own:           # attention has no state: N does not apply
        sizes["d_state"] = N
    if "heads" in own:             # RotRNN's and attention's heads; the others have one
        sizes["heads"] = heads
    return cls(**sizes, **init)


@dataclass(frozen=True)
class ModelConfig:
    """The deep model of docs/models.md: encoder, `n_layers` residual blocks around a mixer, pooling, head, decoder."""

    kind: ClassVar[str] = "model"
    mixer: MixerConfig = field(default_factory=LRUConfig)  # the mixer of every block; its d_model is H
    n_layers: int = 2              # number of residual blocks
    d_input: int = 1               # features per input position (linear encoder); ignored with vocab_size
    vocab_size: int | None = None  # if set: token inputs and an Embedding(vocab_size -> H) encoder
    d_output: int = 10             # features of the decoder's output (classes, regression targets)
    norm: str = "layer"            # "layer" (LayerNorm) or "batch" (BatchNorm with stored statistics)
    prenorm: bool = True           # norm before the mixer (default) or after the residual (postnorm)
    pooling: str = "mean"          # "mean" (masked for padding), "last", or "none" (per-position outputs)
    head: str = "linear"           # "linear": Linear(H -> d_output) on the pooled features; "retrieval": two
                                   # documents per example, rows b and B + b of a (2B, L) batch (LRA Retrieval)
    dropout: float = 0.0           # time-shared dropout rate (training only; evaluation is deterministic)
    norm_eps: float = 1e-5         # epsilon of LayerNorm / BatchNorm (PyTorch's default)
    padding: str = "masked"        # "masked": a padded row gives the output of the row alone (every mixer sees
                                   # its valid positions only; BatchNorm's batch statistics count them only);
                                   # "unmasked": the S5 and minimal-LRU code's behaviour, the mixers and BatchNorm
                                   # run over the padding as given and only the pooling is masked

    def __post_init__(self) -> None:
        if not isinstance(self.mixer, MixerConfig):
            raise LinrnnError(f"ModelConfig.mixer: expected a mixer config ({', '.join(SPECS)}), "
                              f"found {self.mixer!r}")
        check_int(self, "n_layers")
        check_int(self, "d_input")
        if self.vocab_size is not None:
            check_int(self, "vocab_size")
        check_int(self, "d_output")
        check_choice(self, "norm", ("layer", "batch"))
        check_bool(self, "prenorm")
        check_choice(self, "pooling", ("mean", "last", "none"))
        check_choice(self, "head", ("linear", "retrieval"))
        if self.head == "retrieval" and self.pooling == "none":
            raise LinrnnError("ModelConfig.pooling: the retrieval head compares pooled documents, expected mean or "
                              "last, found 'none'")
        check_float(self, "dropout", 0.0, 1.0, high_open=True)
        check_float(self, "norm_eps", 0.0, 1.0, low_open=True)
        check_choice(self, "padding", ("masked", "unmasked"))

    @property
    def d_model(self) -> int:
        return self.mixer.d_model

    def check_rows(self, rows: int) -> None:
        """The retrieval head pairs row b with row B + b of a batch of 2B rows: an odd count is a `LinrnnError`."""
        if self.head == "retrieval" and rows % 2:
            raise LinrnnError(f"input: the retrieval head expects an even number of rows (B first documents, then "
                              f"their B second documents), found {rows}")


Config = Union[MixerConfig, ModelConfig]   # a layer bundle's config or a model bundle's


def config_to_dict(config: Config) -> dict[str, Any]:
    """JSON-ready dict with the config's `kind` first (nested mixer included)."""
    out: dict[str, Any] = {"kind": config.kind}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = config_to_dict(value) if dataclasses.is_dataclass(value) else value
    return out


def config_from_dict(data: Any, where: str = "config") -> Config:
    """Inverse of `config_to_dict`; every unknown or mistyped field is a `LinrnnError`.

    A missing field takes its default, so a bundle written before the field existed loads with the
    behaviour it was written with (e.g. a model without `head` has the linear head).
    """
    if not isinstance(data, dict):
        raise LinrnnError(f"{where}: expected a JSON object, found {type(data).__name__}")
    kinds = {**{k: s.config for k, s in SPECS.items()}, "model": ModelConfig}
    kind = data.get("kind")
    if kind not in kinds:
        raise LinrnnError(f"{where}.kind: expected one of {', '.join(kinds)}, found {kind!r}")
    cls = kinds[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names - {"kind"})
    if unknown:
        raise LinrnnError(f"{where}: unknown field(s) {', '.join(unknown)} for {kind} "
                          f"(expected a subset of {', '.join(sorted(names))})")
    values = {k: v for k, v in data.items() if k != "kind"}
    if kind == "model" and "mixer" in values:
        values["mixer"] = config_from_dict(values["mixer"], f"{where}.mixer")
        if values["mixer"].kind == "model":
            raise LinrnnError(f"{where}.mixer: expected a mixer, found a model")
    try:
        return cls(**values)
    except TypeError as err:  # e.g. a field given as a list
        raise LinrnnError(f"{where}: {err}") from None

"""Frozen configurations of the six mixers (`MIXER_CONFIGS`) and of the deep model (docs/models.md).

A configuration decides every shape of a bundle; the numbers live in the bundle itself. Each field has
a typed default and a comment. Values are checked on construction, so a bad size or range fails at
once with a message that names the field (`LinrnnError`), never later inside a computation.

Shape letters everywhere: B batch, L length, H model width (`d_model`), N state size.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from linrnn.impls.errors import LinrnnError

SCHEMA_VERSION = 1  # bumped whenever a bundle's keys, shapes or meaning change

# -- the contract's tables, shared by every backend (checked in `linrnn.impls.checks`) --------------

# The computation modes of each backend, the first being its default. The reference computes the two
# definitions; the frameworks add the chunked `scan` and the streaming `step` (docs/models.md).
MODES: dict[str, tuple[str, ...]] = {
    "reference": ("sequential", "conv"),
    "torch": ("scan", "sequential", "conv", "step"),
    "jax": ("scan", "sequential", "conv", "step"),
}
# A kind without the recurrent and convolution views declares its own modes per backend in its spec
# (`linrnn.impls.specs`); `KIND_MODES` (kind -> those modes) is a view of the registry, as are `MIXER_CONFIGS`
# and `KINDS` (module `__getattr__` at the end of this file).
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
# The smallest step Delta of a discretised SSM (S4D, S5). Their input gain is about Delta (zero-order hold:
# expm1(Delta A)/A; bilinear: Delta/(1 - Delta A/2)), so each output carries a factor Delta: below about 1e-37 it
# leaves float32's normal range, XLA flushes it to zero and PyTorch keeps only a few subnormal digits (measured:
# S4D and S5 with D = 0 give zeros in JAX float32 at Delta = 1.2e-38, relative error 1). 1e-30 keeps 8 decades
# for the weights' own factors and is far below any step the papers use (1e-3 to 1e-1). DLR has no input gain and
# is not bounded (docs/precision.md, "Numeric edges").
DT_FLOOR = 1e-30


def modes(backend: str, kind: str | None = None) -> tuple[str, ...]:
    """The modes of `backend` for the mixer `kind` (its spec's; without a kind: MODES), the first the default."""
    if kind is None:
        return MODES[backend]
    from linrnn.impls.specs import spec
    return spec(kind).modes_of(backend)


def _check_int(obj: Any, name: str, minimum: int = 1) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected an integer, found {value!r}")
    if value < minimum:
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected an integer >= {minimum}, found {value}")


def _check_float(obj: Any, name: str, low: float, high: float, low_open: bool = False,
                 high_open: bool = False) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected a finite number, found {value!r}")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected a value in {interval}, found {value}")


def _check_bool(obj: Any, name: str) -> None:
    value = getattr(obj, name)
    if not isinstance(value, bool):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected true or false, found {value!r}")


def _check_choice(obj: Any, name: str, choices: tuple[str, ...]) -> None:
    value = getattr(obj, name)
    if value not in choices:
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected one of {', '.join(choices)}, found {value!r}")


@dataclass(frozen=True)
class RotRNNConfig:
    """One RotRNN layer: `heads` heads of state size `d_state`, mixed by one real `C` (Biegun et al. 2024)."""

    kind: ClassVar[str] = "rotrnn"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 8               # N: state size of ONE head; even (2x2 rotation blocks)
    heads: int = 8                 # number of heads; the layer's total state is heads * d_state
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    gamma_min: float = 0.9         # smallest initial decay gamma_h (code default)
    gamma_max: float = 0.999       # largest initial decay gamma_h (code default)
    max_phase: float = 2 * math.pi  # theta ~ U[0, max_phase] at initialisation
    m_init: str = "normal"         # "normal": M ~ N(0, 1) (newest code); "near_identity": N(0,1)/sqrt(N + heads*N)

    def __post_init__(self) -> None:
        for name in ("d_model", "d_state", "heads"):
            _check_int(self, name)
        if self.d_state % 2:
            raise LinrnnError(f"RotRNNConfig.d_state: expected an even state size per head (2x2 blocks), "
                              f"found {self.d_state}")
        _check_bool(self, "bidirectional")
        _check_float(self, "gamma_min", 0.0, 1.0, low_open=True, high_open=True)
        _check_float(self, "gamma_max", self.gamma_min, 1.0, high_open=True)
        _check_float(self, "max_phase", 0.0, 1e6)
        _check_choice(self, "m_init", ("normal", "near_identity"))


@dataclass(frozen=True)
class LRUConfig:
    """One LRU layer: a complex diagonal recurrence of size `d_state` (Orvieto et al. 2023)."""

    kind: ClassVar[str] = "lru"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 64              # N: number of complex modes
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    r_min: float = 0.9             # ring initialisation: |lambda| in [r_min, r_max] (LRA setting of the paper)
    r_max: float = 0.999           # kept < 1 so that gamma_log = log sqrt(1 - |lambda|^2) stays finite
    max_phase: float = 2 * math.pi  # arg(lambda) ~ U[0, max_phase]

    def __post_init__(self) -> None:
        _check_int(self, "d_model")
        _check_int(self, "d_state")
        _check_bool(self, "bidirectional")
        _check_float(self, "r_min", 0.0, 1.0, high_open=True)
        _check_float(self, "r_max", self.r_min, 1.0, high_open=True)
        if self.r_max <= 0.0:
            raise LinrnnError(f"LRUConfig.r_max: expected a value in (0, 1), found {self.r_max}")
        _check_float(self, "max_phase", 0.0, 1e6, low_open=True)


@dataclass(frozen=True)
class DLRConfig:
    """One DLR layer: N eigenvalues shared by the H channels, complex output weights per channel (Gupta et al. 2022)."""

    kind: ClassVar[str] = "dlr"
    d_model: int = 64              # H: channels (the layer is depthwise in H)
    d_state: int = 64              # N: eigenvalues lambda_n shared by all channels
    bidirectional: bool = False    # add a strictly anti-causal kernel W_rev (docs/models.md)
    dt_min: float = 1e-4           # Delta_n log-uniform in [dt_min, dt_max]; |lambda_n| = exp(-Delta_n / 2)
    dt_max: float = 1e-1           # the synthetic tasks use dt_min = dt_max = 1e-5
    max_kernel_length: int | None = None  # L_k = min(max_kernel_length, L); None: the whole input length

    def __post_init__(self) -> None:
        _check_int(self, "d_model")
        _check_int(self, "d_state")
        _check_bool(self, "bidirectional")
        _check_float(self, "dt_min", 0.0, 1e3, low_open=True)
        _check_float(self, "dt_max", self.dt_min, 1e3)
        if self.max_kernel_length is not None:
            _check_int(self, "max_kernel_length")

    def kernel_length(self, length: int) -> int:
        """L_k = min(max_kernel_length, L): the taps of the kernel on an input of `length` positions."""
        return length if self.max_kernel_length is None else min(self.max_kernel_length, length)


@dataclass(frozen=True)
class S4DConfig:
    """One S4D layer: per channel, `d_state` complex modes discretised by ZOH (Gu et al. 2022, the s4 repo's S4D)."""

    kind: ClassVar[str] = "s4d"
    d_model: int = 64              # H: channels (the layer is depthwise in H)
    d_state: int = 32              # N: complex modes per channel (the s4 code's N/2; the conjugate half is implicit)
    bidirectional: bool = False    # add a strictly anti-causal kernel read out by C_rev (docs/models.md)
    init: str = "lin"              # A_imag: "lin" (S4D-Lin, pi n) or "inv" (S4D-Inv, (2N/pi)(2N/(2n+1) - 1))
    dt_min: float = 1e-3           # dt_h log-uniform in [dt_min, dt_max] (the s4 code's defaults)
    dt_max: float = 1e-1

    def __post_init__(self) -> None:
        _check_int(self, "d_model")
        _check_int(self, "d_state")
        _check_bool(self, "bidirectional")
        _check_choice(self, "init", ("lin", "inv"))
        _check_float(self, "dt_min", DT_FLOOR, 1e3)
        _check_float(self, "dt_max", self.dt_min, 1e3)


@dataclass(frozen=True)
class S5Config:
    """One S5 layer: one MIMO diagonal SSM over all H channels, `d_state` kept complex modes (Smith et al. 2023)."""

    kind: ClassVar[str] = "s5"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 64              # N: kept complex modes, one of each conjugate pair (the paper's P/2)
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    blocks: int = 1                # J: HiPPO-N blocks of 2N/J modes each (J divides N, so each block is even)
    discretization: str = "zoh"    # "zoh" (the code's default) or "bilinear"
    dt_min: float = 1e-3           # Delta_n log-uniform in [dt_min, dt_max], one step per mode (code defaults)
    dt_max: float = 1e-1
    clip_eigs: bool = False        # use min(Re Lambda, CLIP_RE) in the forward pass (left half-plane)
    CLIP_RE: ClassVar[float] = -1e-4  # the S5 code's bound on Re Lambda under clip_eigs

    def __post_init__(self) -> None:
        _check_int(self, "d_model")
        _check_int(self, "d_state")
        _check_bool(self, "bidirectional")
        _check_int(self, "blocks")
        if self.d_state % self.blocks:
            raise LinrnnError(f"S5Config.blocks: expected a divisor of d_state = {self.d_state} (each block keeps "
                              f"one of each conjugate pair of its 2N/J HiPPO-N modes), found {self.blocks}")
        _check_choice(self, "discretization", ("zoh", "bilinear"))
        _check_float(self, "dt_min", DT_FLOOR, 1e3)
        _check_float(self, "dt_max", self.dt_min, 1e3)
        _check_bool(self, "clip_eigs")


@dataclass(frozen=True)
class AttentionConfig:
    """One softmax-attention layer: `heads` heads with rotary positions and a learnable temperature (the DLR code's
    baseline). It has no recurrence and so no state: no `d_state` field."""

    kind: ClassVar[str] = "attention"
    d_model: int = 64              # H: features in and out of the layer
    heads: int = 4                 # heads of d_head = H / heads features each (even: rotary pairs)
    bidirectional: bool = False    # every position sees the past and the future; else causal (j <= i)
    window: int | None = None      # None: full attention; w: local, position i sees the windows of w positions
                                   # floor(i/w) - 1 and floor(i/w) (bidirectional: also floor(i/w) + 1)

    def __post_init__(self) -> None:
        _check_int(self, "d_model")
        _check_int(self, "heads")
        if self.d_model % self.heads or (self.d_model // self.heads) % 2:
            raise LinrnnError(f"AttentionConfig.heads: expected heads dividing d_model = {self.d_model} into an "
                              f"even d_head (rotary pairs), found {self.heads}")
        _check_bool(self, "bidirectional")
        if self.window is not None:
            _check_int(self, "window")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


MixerConfig = Union[RotRNNConfig, LRUConfig, DLRConfig, S4DConfig, S5Config, AttentionConfig]


def __getattr__(name: str) -> Any:
    """The registry's tables, read when imported (`linrnn.impls.specs` imports this module, so they cannot be
    built here at import time):

    MIXER_CONFIGS  kind -> config class, every mixer (attention and any registered later included)
    KIND_MODES     kind -> {backend: modes} for the kinds with modes of their own (no recurrence: attention)
    KINDS          the recurrent mixers (a state, the scan/step views, the conformance contracts), registered so far
    """
    if name not in ("MIXER_CONFIGS", "KIND_MODES", "KINDS"):      # e.g. the import system's probe of __path__
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from linrnn.impls import specs
    if name == "MIXER_CONFIGS":
        return specs.SpecView(lambda s: s.config)
    if name == "KIND_MODES":
        return specs.SpecView(lambda s: s.modes, only=lambda s: s.modes is not None)
    if name == "KINDS":
        return specs.recurrent_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mixer_config(kind: str, H: int, N: int, heads: int = 1, bidirectional: bool = False, **init: Any) -> MixerConfig:
    """The mixer `kind` of width H, state N per head (RotRNN: `heads` heads; the others have one head).

    Attention takes `heads` too and has no state: N does not apply and is dropped (its config has no
    `d_state` field), so callers that size every kind alike pass their N unchanged.
    `init` sets fields of that mixer's config (RotRNN gamma_min/gamma_max/..., LRU r_min/r_max/...,
    DLR dt_min/dt_max/..., S4D init/dt_min/dt_max, S5 blocks/discretization/..., attention window); a field
    that the kind does not have is a `LinrnnError`.
    """
    from linrnn.impls.specs import spec
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
        from linrnn.impls.specs import SPECS
        if not isinstance(self.mixer, tuple(s.config for s in SPECS.values())):
            raise LinrnnError(f"ModelConfig.mixer: expected a mixer config ({', '.join(SPECS)}), "
                              f"found {self.mixer!r}")
        _check_int(self, "n_layers")
        _check_int(self, "d_input")
        if self.vocab_size is not None:
            _check_int(self, "vocab_size")
        _check_int(self, "d_output")
        _check_choice(self, "norm", ("layer", "batch"))
        _check_bool(self, "prenorm")
        _check_choice(self, "pooling", ("mean", "last", "none"))
        _check_choice(self, "head", ("linear", "retrieval"))
        if self.head == "retrieval" and self.pooling == "none":
            raise LinrnnError("ModelConfig.pooling: the retrieval head compares pooled documents, expected mean or "
                              "last, found 'none'")
        _check_float(self, "dropout", 0.0, 1.0, high_open=True)
        _check_float(self, "norm_eps", 0.0, 1.0, low_open=True)
        _check_choice(self, "padding", ("masked", "unmasked"))

    @property
    def d_model(self) -> int:
        return self.mixer.d_model

    def check_rows(self, rows: int) -> None:
        """The retrieval head pairs row b with row B + b of a batch of 2B rows: an odd count is a `LinrnnError`."""
        if self.head == "retrieval" and rows % 2:
            raise LinrnnError(f"input: the retrieval head expects an even number of rows (B first documents, then "
                              f"their B second documents), found {rows}")


Config = Union[MixerConfig, ModelConfig]


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
    from linrnn.impls.specs import SPECS
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

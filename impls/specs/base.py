"""What every model's contract file (`linrnn.impls.specs.<kind>`) builds on, below the registry and every table.

A model's file holds its config class, its initialiser, its bundle's shapes and its `ModelSpec`
(tests/models/toy_source.py is the smallest); this module gives it the record (`ModelSpec`), the field checks its
config's `__post_init__` calls (each a one-line `LinrnnError` naming the class and the field), the draws the
initialisers share, and the contract's per-backend modes (`MODES`). It imports no other module of the package but
`linrnn.base.errors`, so the contract files sit below the registry (`linrnn.impls.specs`), which registers the
built-in seven, and everything that reads it (`linrnn.impls.config`, `bundle`, `init`) sits above: no import cycle
(tests/test_import_graph.py).

Shape letters everywhere: B batch, L length, H model width (`d_model`), N state size.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.base.errors import LinrnnError

# -- the contract's modes -------------------------------------------------------------------------------

# The computation modes of each backend, the first being its default. The reference computes the two
# definitions; the frameworks add the chunked `scan` and the streaming `step` (docs/models.md).
MODES: dict[str, tuple[str, ...]] = {
    "reference": ("sequential", "conv"),
    "torch": ("scan", "sequential", "conv", "step"),
    "jax": ("scan", "sequential", "conv", "step"),
}
# The smallest step Delta of a discretised SSM (S4D, S5). Their input gain is about Delta (zero-order hold:
# expm1(Delta A)/A; bilinear: Delta/(1 - Delta A/2)), so each output carries a factor Delta: below about 1e-37 it
# leaves float32's normal range, XLA flushes it to zero and PyTorch keeps only a few subnormal digits (measured:
# S4D and S5 with D = 0 give zeros in JAX float32 at Delta = 1.2e-38, relative error 1). 1e-30 keeps 8 decades
# for the weights' own factors and is far below any step the papers use (1e-3 to 1e-1). DLR has no input gain and
# is not bounded (docs/precision.md, "Numeric edges").
DT_FLOOR = 1e-30


# -- the checks of a config's fields ----------------------------------------------------------------------

def check_int(obj: Any, name: str, minimum: int = 1) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected an integer, found {value!r}")
    if value < minimum:
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected an integer >= {minimum}, found {value}")


def check_float(obj: Any, name: str, low: float, high: float, low_open: bool = False,
                high_open: bool = False) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected a finite number, found {value!r}")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected a value in {interval}, found {value}")


def check_bool(obj: Any, name: str) -> None:
    value = getattr(obj, name)
    if not isinstance(value, bool):
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected true or false, found {value!r}")


def check_choice(obj: Any, name: str, choices: tuple[str, ...]) -> None:
    value = getattr(obj, name)
    if value not in choices:
        raise LinrnnError(f"{type(obj).__name__}.{name}: expected one of {', '.join(choices)}, found {value!r}")


# -- the initialisers' shared draws ----------------------------------------------------------------------

def log_uniform(rng: np.random.Generator, low: float, high: float, size) -> np.ndarray:
    """exp(U[log low, log high]): RotRNN's -log gamma, DLR's steps."""
    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def linear(rng: np.random.Generator, d_out: int, d_in: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's Linear(d_in -> d_out): weight (d_out d_in) and bias (d_out,), each U(-1/sqrt(d_in), 1/sqrt(d_in))."""
    bound = 1.0 / np.sqrt(d_in)
    return rng.uniform(-bound, bound, (d_out, d_in)), rng.uniform(-bound, bound, d_out)


# -- the record of one model ---------------------------------------------------------------------------

Shape = tuple[int, ...]
BACKENDS = ("reference", "torch", "jax")
# The sizes every spec has unless it says otherwise: "test" the unit tests' layer, "crosscheck" the cross-check
# matrix's state size, "bench" the benchmarks' (B = 8, H = N = 128 of docs/speed.md; heads for those with heads).
DEFAULT_SIZES: Mapping[str, Mapping[str, int]] = MappingProxyType({
    "test": MappingProxyType({"H": 3, "N": 4, "heads": 2}),
    "bench": MappingProxyType({"H": 128, "N": 128, "heads": 16}),
})


def _no_fields(near_one: bool, bidirectional: bool) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class ModelSpec:
    """The contract of one mixer kind (`linrnn.impls.specs`, whose registry holds one per kind)."""

    kind: str                                          # the name in configs, bundles and the command line
    config: type                                       # its frozen config dataclass (`kind` class attribute)
    shapes: Callable[[Any], dict[str, Shape]]          # config -> the bundle's keys and shapes (docs/models.md)
    recurrence_keys: tuple[str, ...]                   # the recurrence's raw parameters (their optimiser group)
    init: Callable[[Any, Any], dict]                   # (config, numpy Generator) -> raw parameters, float64
    implementations: Mapping[str, str]                 # backend -> "module[:attribute]" of its implementation
    modes: Mapping[str, tuple[str, ...]] | None = None  # backend -> modes (first the default); None: MODES
    state: Callable[[Any], tuple[Shape, str]] | None = None  # config -> one row's state shape and dtype; None: no state
    bidirectional: bool = True                         # whether the config has the bidirectional form
    # config fields the spec's sizes fill (besides d_model): "d_state" from N, "heads" from heads
    sizes: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: DEFAULT_SIZES)
    # (near_one, bidirectional) -> init fields of the cross-check's case: decays reaching 0.9999 when near_one
    crosscheck: Callable[[bool, bool], dict[str, Any]] = _no_fields
    crosscheck_width: Callable[[int], int] = lambda H: H   # the cross-check's width from the matrix's H
    training_modes: tuple[str, ...] = ("scan",)         # the parallel-in-L modes a training run would use
    variants: Mapping[str, tuple] = field(default_factory=dict)   # `linrnn conform`'s discrete choices
    # `linrnn conform`'s complex read-out: (its output matrix, (real, imaginary) key pairs, factor before Re);
    # None: a real read-out
    readout: tuple[str, tuple[tuple[str, str], ...], int] | None = None
    # `linrnn conform`'s discretisation probes (`linrnn.verify.conform_spectrum`) for a model with a continuous-time
    # system: an object with `rule`, `clips`, `continuous`, `step_key`, `probe_steps`, `estimate`, `predicted`,
    # `conjugate_ambiguous` and `input_name` (S4D's and S5's in their spec files); None: no discretisation
    discretisation: Any = None
    # values for which the equations are undefined: (config, float64 params) -> None, or a one-line LinrnnError
    validate: Callable[[Any, Mapping], None] | None = None
    # the float32 guard (`linrnn.impls.bundle.check_compute_range`): raw key -> (what it derives, the map); and a
    # product of two derived quantities that can overflow: (the keys, what it is, (params, real dtype) -> array)
    derived: Mapping[str, tuple[str, Callable]] = field(default_factory=dict)
    product: tuple[str, str, Callable] | None = None
    # (config, params, r) -> the raw recurrence parameters that set every eigenvalue's modulus to exactly r, phases
    # kept (the precision map's radius ladder); None: no eigenvalues (attention), or not every config (a LinrnnError)
    with_radius: Callable[[Any, Mapping, float], dict] | None = None
    # the training grid's state size and initialisation ranges at n complex modes (tasks.grid)
    task_defaults: Callable[[int], dict[str, Any]] = lambda n: {"d_state": n}

    @property
    def stateful(self) -> bool:
        return self.state is not None

    @property
    def has_heads(self) -> bool:
        return "heads" in self.config.__dataclass_fields__

    @property
    def has_state_size(self) -> bool:
        return "d_state" in self.config.__dataclass_fields__

    def modes_of(self, backend: str) -> tuple[str, ...]:
        table = MODES if self.modes is None else self.modes
        if backend not in table:
            raise LinrnnError(f"backend: expected one of {', '.join(table)}, found {backend!r}")
        return table[backend]

    def implementation(self, backend: str) -> Any:
        """The side `backend`'s implementation of this kind (a module or a class), imported on first use."""
        if backend not in self.implementations:
            raise LinrnnError(f"{self.kind}: no {backend} implementation (it has {', '.join(self.implementations)})")
        module, _, attribute = self.implementations[backend].partition(":")
        found = importlib.import_module(module)
        return getattr(found, attribute) if attribute else found

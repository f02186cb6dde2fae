"""One spec per model: everything the contract says about a mixer kind, in one place (docs/architecture.md).

A `ModelSpec` is the contract layer's record of one mixer: its config class (with the config's checks), the
bundle's keys and shapes, which keys are the recurrence's (their own optimiser group), its initialisation, its
modes, whether it has heads, a state and a bidirectional form, the default sizes of the tests, the cross-check
and the benchmarks, and where each side's implementation lives. The six built-in specs are the files beside this
one (`rotrnn.py`, `lru.py`, `dlr.py`, `s4d.py`, `s5.py`, `attention.py`); each is that model's home in the
contract layer, next to its reference (`linrnn.impls.reference.<kind>`), PyTorch (`linrnn.impls.torch.<kind>`)
and JAX (`linrnn.impls.jax.<kind>`) files.

The sides register their implementation against the spec by name (`implementations`: backend ->
"module" or "module:attribute", imported on first use), so this layer imports neither framework. Everything
that loops over models (the config tables, bundles, the cross-check, `linrnn conform`, the backends' dispatch)
reads this registry: adding a model is `register(ModelSpec(...))` and its three implementation files
(tests/models/test_seventh_model.py does exactly that in a temporary package).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from linrnn.impls.config import MODES
from linrnn.impls.errors import LinrnnError

Shape = tuple[int, ...]
BACKENDS = ("reference", "torch", "jax")
# The modes of a recurrent mixer per backend, the first the default (a spec without `modes` has these). The
# reference computes the two definitions; the frameworks add the chunked `scan` and the streaming `step`.
RECURRENT_MODES = MODES
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
    """The contract of one mixer kind (see the module docstring)."""

    kind: str                                          # the name in configs, bundles and the command line
    config: type                                       # its frozen config dataclass (`kind` class attribute)
    shapes: Callable[[Any], dict[str, Shape]]          # config -> the bundle's keys and shapes (docs/models.md)
    recurrence_keys: tuple[str, ...]                   # the recurrence's raw parameters (their optimiser group)
    init: Callable[[Any, Any], dict]                   # (config, numpy Generator) -> raw parameters, float64
    implementations: Mapping[str, str]                 # backend -> "module[:attribute]" of its implementation
    modes: Mapping[str, tuple[str, ...]] | None = None  # backend -> modes (first the default); None: RECURRENT_MODES
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
        table = RECURRENT_MODES if self.modes is None else self.modes
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


SPECS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model; its kind must be new and match its config class's `kind`."""
    if getattr(spec.config, "kind", None) != spec.kind:
        raise LinrnnError(f"spec {spec.kind!r}: its config class {spec.config.__name__} has kind "
                          f"{getattr(spec.config, 'kind', None)!r}")
    if spec.kind in SPECS or spec.kind in ("model", "scan"):
        raise LinrnnError(f"spec {spec.kind!r}: the kind is taken")
    unknown = set(spec.implementations) - set(BACKENDS)
    if unknown:
        raise LinrnnError(f"spec {spec.kind!r}: unknown backend(s) {', '.join(sorted(unknown))}")
    SPECS[spec.kind] = spec
    return spec


def unregister(kind: str) -> None:
    """Remove a model added by `register` (the tests' toy model); the built-in six stay."""
    if kind in BUILTIN:
        raise LinrnnError(f"spec {kind!r}: a built-in model cannot be removed")
    SPECS.pop(kind, None)


def spec(kind: str) -> ModelSpec:
    """The spec of `kind`; an unknown kind is a one-line error listing the known ones."""
    try:
        return SPECS[kind]
    except (KeyError, TypeError):
        raise LinrnnError(f"mixer: expected one of {', '.join(SPECS)}, found {kind!r}") from None


def kinds() -> tuple[str, ...]:
    """Every registered mixer kind, the built-in six first."""
    return tuple(SPECS)


def recurrent_kinds() -> tuple[str, ...]:
    """The kinds with a recurrent state (the scan/step views and the conformance contracts)."""
    return tuple(kind for kind, s in SPECS.items() if s.stateful)


class SpecView(Mapping):
    """A read-only dict over the registry, kind -> `pick(spec)`, that follows later registrations (the tables
    `MIXER_CONFIGS`, `RECURRENCE_KEYS` and the backends' `MIXERS` are such views)."""

    def __init__(self, pick: Callable[[ModelSpec], Any], only: Callable[[ModelSpec], bool] = lambda s: True):
        self._pick, self._only = pick, only

    def __getitem__(self, kind: str) -> Any:
        s = SPECS.get(kind) if isinstance(kind, str) else None
        if s is None or not self._only(s):
            raise KeyError(kind)
        return self._pick(s)

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, s in SPECS.items() if self._only(s)])

    def __len__(self) -> int:
        return sum(1 for s in SPECS.values() if self._only(s))

    def __repr__(self) -> str:
        return f"SpecView({dict(self)!r})"


def implementations(backend: str, only: Callable[[ModelSpec], bool] = lambda s: True) -> SpecView:
    """kind -> the side `backend`'s implementation, for every kind that has one (imported on first use)."""
    return SpecView(lambda s: s.implementation(backend), lambda s: backend in s.implementations and only(s))


from linrnn.impls.specs import attention, dlr, lru, rotrnn, s4d, s5  # noqa: E402  (each registers its spec)

BUILTIN = ("rotrnn", "lru", "dlr", "s4d", "s5", "attention")
for _module in (rotrnn, lru, dlr, s4d, s5, attention):
    register(_module.SPEC)

"""Hypothesis strategies for a user's property tests: configs, bundles, inputs, padded lengths and packed segments.

    configs(kind, **fixed)              a layer config of `kind` at a small size, each discrete choice of the
                                        contract drawn (S5 discretization and blocks, RotRNN heads, ...)
    bundles(kind, *, radius=None, config=None)    a validated `Bundle` from the paper's initialisation;
                                        radius=(low, high): every |lambda| set to one r drawn in that range;
                                        it prints as the `make_bundle(...)` call that makes it again
    inputs(shape, dtype="float64", *, scale=1.0, large=False)    a finite array of `shape` (ints or strategies):
                                        scale * v, v in [-1, 1]; large magnitudes; float16 and bfloat16 too
    lengths(batch, length)              (B,) valid lengths in [1, L] for padded rows
    segments(length, batch=1)           (B, L) segment ids of packed sequences (a new id where one starts; an
                                        id may return after others, starting a new sequence)

The config classes are registered with Hypothesis through its `hypothesis` entry point
(`linrnn.testing._hypothesis`), so `st.from_type(LRUConfig)` draws `configs("lru")`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.base.extras import require

require("hypothesis", "linrnn.testing.strategies")
from hypothesis import reject  # noqa: E402  (after the one-line error naming the extra)
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

def _register_types() -> None:
    """`st.from_type` of every registered config class, those registered since Hypothesis' entry point ran too
    (`linrnn.testing._hypothesis`; not where HYPOTHESIS_NO_PLUGINS turns the entry points off)."""
    import os
    if not os.environ.get("HYPOTHESIS_NO_PLUGINS"):
        from linrnn.impls.specs import SPECS
        for spec in list(SPECS.values()):
            st.register_type_strategy(spec.config, lambda _type, kind=spec.kind: configs(kind))


MAX_D_MODEL = 6      # sizes drawn: small, so that a property runs many examples quickly
MAX_HALF_STATE = 3   # d_state = 2 * k (even: RotRNN's 2x2 blocks, S5's blocks divide it)

def _kinds() -> dict[str, type]:
    from linrnn.impls.config import MIXER_CONFIGS
    return dict(MIXER_CONFIGS)


def _as_strategy(value) -> st.SearchStrategy:
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def _variants(kind: str) -> dict[str, tuple]:
    from linrnn.verify.conform import VARIANTS
    return dict(VARIANTS.get(kind, {}))


def _accepts(cls: type, fields: dict[str, Any]) -> bool:
    """Whether the config class takes these fields (the others at their defaults)."""
    try:
        cls(**fields)
    except LinrnnError:
        return False
    return True


@st.composite
def _config(draw, kind: str, fixed: dict[str, Any]):
    cls = _kinds()[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    fields: dict[str, Any] = {}
    if "heads" in names and kind == "attention":
        heads = draw(_as_strategy(fixed.get("heads", st.integers(1, 2))))
        fields["heads"] = heads
        fields["d_model"] = draw(_as_strategy(fixed.get("d_model", st.integers(1, 2).map(lambda k: 2 * heads * k))))
    else:
        fields["d_model"] = draw(_as_strategy(fixed.get("d_model", st.integers(1, MAX_D_MODEL))))
    if "d_state" in names:
        fields["d_state"] = draw(_as_strategy(fixed.get("d_state", st.integers(1, MAX_HALF_STATE).map(lambda k: 2 * k))))
    if "heads" in names and kind != "attention":
        fields["heads"] = draw(_as_strategy(fixed.get("heads", st.integers(1, 3))))
    if "bidirectional" in names:
        fields["bidirectional"] = draw(_as_strategy(fixed.get("bidirectional", st.booleans())))
    for name, values in _variants(kind).items():
        if name in names and name not in fields:
            # the choices the config accepts at the sizes drawn (S5's blocks divide d_state, the RG-LRU's d_model)
            choices = [v for v in values if _accepts(cls, {**fields, name: v})]
            if name in fixed or choices:
                fields[name] = draw(_as_strategy(fixed.get(name, st.sampled_from(choices))))
    for name, value in fixed.items():
        if name not in fields:
            fields[name] = draw(_as_strategy(value))
    return cls(**fields)


def configs(kind: str, **fixed) -> st.SearchStrategy:
    """A config of the layer `kind` at a small size (d_model <= 6, d_state even <= 6, RotRNN 1-3 heads), each
    discrete choice of the contract and `bidirectional` drawn; `fixed` sets fields (a value or a strategy)."""
    kinds = _kinds()
    if kind not in kinds:
        raise LinrnnError(f"kind: expected one of {', '.join(kinds)}, found {kind!r}")
    unknown = sorted(set(fixed) - {f.name for f in dataclasses.fields(kinds[kind])})
    if unknown:
        raise LinrnnError(f"configs({kind!r}): a {kind} config has no field(s) {', '.join(unknown)}")
    return _config(kind, dict(fixed))


def _check_range(radius) -> tuple[float, float]:
    try:
        low, high = (float(r) for r in radius)
    except (TypeError, ValueError):
        low = high = math.nan
    if not (0.0 < low <= high < 1.0):
        raise LinrnnError(f"radius: expected (low, high) with 0 < low <= high < 1, found {radius!r}")
    return low, high


class DrawnBundle:
    """Mixed into a drawn `Bundle`: it prints as the `make_bundle(...)` call that makes it again (Hypothesis shows a
    failing example's draws by their repr)."""

    def __repr__(self) -> str:
        return self.call

    def _repr_pretty_(self, printer, cycle) -> None:     # Hypothesis' printer prints a dataclass by its fields else
        printer.text(self.call)


@functools.lru_cache(maxsize=None)
def _drawn_class(bundle_class: type) -> type:
    return type("DrawnBundle", (DrawnBundle, bundle_class), {"__module__": __name__, "__qualname__": "DrawnBundle"})


def _drawn(bundle, seed: int, radius: float | None):
    """The bundle as a `DrawnBundle` whose repr is `make_bundle(kind, d_model=..., ..., seed=..., radius=...)`."""
    from linrnn.impls.bundle import Bundle
    from linrnn.impls.config import config_to_dict
    fields = {k: v for k, v in config_to_dict(bundle.config).items() if k != "kind"}
    args = ", ".join([repr(bundle.config.kind), *(f"{k}={v!r}" for k, v in fields.items()), f"seed={seed}",
                      *([f"radius={radius!r}"] if radius is not None else [])])
    made = _drawn_class(Bundle)(bundle.config, bundle.params)
    object.__setattr__(made, "call", f"make_bundle({args})")
    return made


@st.composite
def _bundle(draw, kind, radius, config):
    from linrnn.impls.init import init
    from linrnn.testing.oracle import with_radius
    cfg = draw(configs(kind) if config is None else _as_strategy(config))
    seed = draw(st.integers(0, 2**32 - 1))
    bundle = init(cfg, seed)
    if radius is None:
        return _drawn(bundle, seed, None)
    low, high = _check_range(draw(_as_strategy(radius)))
    r = draw(st.floats(low, high))
    try:
        return _drawn(with_radius(bundle, r), seed, r)
    except LinrnnError:
        if config is not None:                # the caller's config (a value or a strategy): its error, not a filter
            raise
        reject()                              # a drawn variant the model cannot place (S5's bilinear rule)


def bundles(kind: str, *, radius=None, config=None) -> st.SearchStrategy:
    """A layer `Bundle` of `kind` (`linrnn.impls.bundle.Bundle`: `.config`, `.params`) from the paper's
    initialisation with a drawn seed. config: a config or a strategy of them (default `configs(kind)`); radius:
    (low, high) or a strategy of pairs: every eigenvalue's |lambda| set to one r drawn in that range, phases kept,
    by the model's `ModelSpec.with_radius` (drawn configs it cannot place, S5's bilinear ones, are not drawn)."""
    if kind not in _kinds():
        raise LinrnnError(f"kind: expected one of {', '.join(_kinds())}, found {kind!r}")
    if radius is not None and not isinstance(radius, st.SearchStrategy):
        _check_range(radius)                                 # a bad range is an error here, not mid-test
        from linrnn.impls.specs import spec
        if spec(kind).with_radius is None:
            raise LinrnnError(f"radius: {kind} has no eigenvalues to place (its spec has no with_radius)")
    return _bundle(kind, radius, config)


INPUT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32: exactly representable in
    bfloat16, so that `torch.from_numpy(u).bfloat16()` or `jnp.asarray(u, jnp.bfloat16)` loses nothing."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return rounded.view(np.float32)


def _largest_scale(dtype: str) -> float:
    """The largest scale `large=True` draws: sqrt of the dtype's largest value, so that a product of two inputs, or
    a sum of L of them, stays finite for the lengths of a test."""
    top = float(np.finfo(np.float32 if dtype == "bfloat16" else dtype).max)
    return math.sqrt(top)


def inputs(shape, dtype: str = "float64", *, scale=1.0, large: bool = False) -> st.SearchStrategy:
    """A finite array of `shape` (a tuple of ints or strategies of ints): scale * v with v in [-1, 1] (with
    Hypothesis' choices of edge values: zeros, equal runs, the bounds), never NaN or Inf.

    dtype   'float64', 'float32', 'float16' (NumPy's), or 'bfloat16': NumPy has none, so float32 values that
            bfloat16 holds exactly
    scale   a number > 0, or a strategy of them: the bound of |u|
    large   True: the scale drawn log-uniformly from 1 to sqrt(the dtype's largest value) (float16: 256,
            float32 and bfloat16: 1.8e19, float64: 1.3e154): large magnitudes, still finite
    """
    if dtype not in INPUT_DTYPES:
        raise LinrnnError(f"dtype: expected one of {', '.join(INPUT_DTYPES)}, found {dtype!r}")
    if not isinstance(large, bool):
        raise LinrnnError(f"large: expected True or False, found {large!r}")
    top = _largest_scale(dtype) ** 2
    if large:
        if not (isinstance(scale, (int, float)) and scale == 1.0):
            raise LinrnnError("large: draws the scale itself; pass scale= or large=True, not both")
        hi = math.log10(_largest_scale(dtype))
        scales = st.floats(0.0, hi).map(lambda e: 10.0 ** e)
    elif isinstance(scale, st.SearchStrategy):
        scales = scale.map(lambda v: _check_scale(v, top, dtype))
    else:
        scales = st.just(_check_scale(scale, top, dtype))
    store = "float32" if dtype == "bfloat16" else dtype
    width = {"float64": 64, "float32": 32, "float16": 16}[store]
    shape_st = st.tuples(*(_as_strategy(n) for n in shape))

    def scaled(pair):
        s, v = pair
        out = (np.float64(s) * v.astype(np.float64)).astype(store)
        return _bfloat16(out) if dtype == "bfloat16" else out
    return st.tuples(scales, shape_st.flatmap(
        lambda s: hnp.arrays(np.dtype(store), s, elements=st.floats(-1.0, 1.0, width=width)))).map(scaled)


def _check_scale(value, top: float, dtype: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0 < value <= top:
        raise LinrnnError(f"scale: expected a number in (0, {top:.3g}] (finite in {dtype}), found {value!r}")
    return float(value)


def lengths(batch, length) -> st.SearchStrategy:
    """(B,) int64 valid lengths in [1, L] of padded rows (ints or strategies of ints for B and L)."""
    return st.tuples(_as_strategy(batch), _as_strategy(length)).flatmap(
        lambda bl: hnp.arrays(np.int64, (bl[0],), elements=st.integers(1, bl[1])))


def segments(length, batch=1) -> st.SearchStrategy:
    """(B, L) int64 segment ids of packed sequences: a new id at each drawn start, drawn from 0, 1, 2 so that it
    differs from the id before it and an id can return after others (a new sequence all the same: a sequence is a
    maximal run of one id, docs/models.md)."""
    def rows(bl):
        b, n = bl
        if n <= 1:
            return st.just(np.zeros((b, n), np.int64))
        starts = hnp.arrays(np.bool_, (b, n - 1))
        steps = hnp.arrays(np.int64, (b, n - 1), elements=st.integers(1, SEGMENT_IDS - 1))   # never 0 mod the ids
        return st.tuples(starts, steps).map(lambda pair: np.concatenate(
            [np.zeros((b, 1), np.int64), np.cumsum(pair[0] * pair[1], axis=1) % SEGMENT_IDS], axis=1))
    return st.tuples(_as_strategy(batch), _as_strategy(length)).flatmap(rows)


SEGMENT_IDS = 3      # segments' ids are 0, 1, 2: a row of four segments or more repeats one

_register_types()

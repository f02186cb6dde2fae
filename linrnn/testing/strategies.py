"""Hypothesis strategies for a user's property tests: configs, bundles, inputs, padded lengths and packed segments.

    configs(kind, **fixed)              a layer config of `kind` at a small size, each discrete choice of the
                                        contract drawn (S5 discretization and blocks, RotRNN heads, ...)
    bundles(kind, *, radius=None, config=None)    a validated `Bundle` from the paper's initialisation;
                                        radius=(low, high): every |lambda| set to one r drawn in that range
    inputs(shape, dtype="float64")      a finite array of `shape` (ints or strategies), entries in [-1, 1]
    lengths(batch, length)              (B,) valid lengths in [1, L] for padded rows
    segments(length, batch=1)           (B, L) segment ids of packed sequences (a new id where one starts)

The config classes are registered with Hypothesis through its `hypothesis` entry point
(`linrnn.testing._hypothesis`), so `st.from_type(LRUConfig)` draws `configs("lru")`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from linrnn.impls.errors import LinrnnError

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
            choices = [v for v in values if name != "blocks" or fields["d_state"] % v == 0]
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


def _with_radius(bundle, r: float):
    """`bundle` with every eigenvalue's modulus r, phases kept, through its model's own `ModelSpec.with_radius`
    (the registry's: no field names here); a model without eigenvalues is a one-line error."""
    from linrnn.impls.specs import spec
    place = spec(bundle.config.kind).with_radius
    if place is None:
        raise LinrnnError(f"radius: {bundle.config.kind} has no eigenvalues to place (its spec has no "
                          f"with_radius)")
    return bundle.replace(**place(bundle.config, bundle.params, r))


@st.composite
def _bundle(draw, kind, radius, config):
    from linrnn.impls.init import init
    cfg = draw(configs(kind) if config is None else _as_strategy(config))
    bundle = init(cfg, draw(st.integers(0, 2**32 - 1)))
    if radius is None:
        return bundle
    low, high = _check_range(draw(_as_strategy(radius)))
    r = draw(st.floats(low, high))
    try:
        return _with_radius(bundle, r)
    except LinrnnError:
        if isinstance(config, type(cfg)):     # the caller's own config: its error, not a silent skip
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


def inputs(shape, dtype: str = "float64") -> st.SearchStrategy:
    """A finite array of `shape` (a tuple of ints or strategies of ints) and `dtype` ('float64' or 'float32'), its
    entries in [-1, 1] (with Hypothesis' choices of edge values: zeros, equal runs, the bounds)."""
    if dtype not in ("float64", "float32"):
        raise LinrnnError(f"dtype: expected float64 or float32, found {dtype!r}")
    width = 64 if dtype == "float64" else 32
    shape_st = st.tuples(*(_as_strategy(n) for n in shape))
    return shape_st.flatmap(lambda s: hnp.arrays(np.dtype(dtype), s, elements=st.floats(-1.0, 1.0, width=width)))


def lengths(batch, length) -> st.SearchStrategy:
    """(B,) int64 valid lengths in [1, L] of padded rows (ints or strategies of ints for B and L)."""
    return st.tuples(_as_strategy(batch), _as_strategy(length)).flatmap(
        lambda bl: hnp.arrays(np.int64, (bl[0],), elements=st.integers(1, bl[1])))


def segments(length, batch=1) -> st.SearchStrategy:
    """(B, L) int64 segment ids of packed sequences: a new id at each drawn start, ids increasing along a row."""
    def rows(bl):
        b, n = bl
        starts = hnp.arrays(np.bool_, (b, max(n - 1, 0)))
        return starts.map(lambda s: np.concatenate([np.zeros((b, 1), np.int64), np.cumsum(s, axis=1)], axis=1)
                          if n > 1 else np.zeros((b, n), np.int64))
    return st.tuples(_as_strategy(batch), _as_strategy(length)).flatmap(rows)

"""`linrnn conform`'s battery: every check of one target claiming one contract in one dtype (`Battery`), built and run
one check at a time (`battery`, `Battery.one`), planned without running (`plan`), or run whole over the dtypes (`run`).

A check is a method of one of the battery's parts: the outputs (`conform_outputs.py`), the decays' edges
(`conform_radii.py`), the bidirectional form (`conform_bidirectional.py`), what a call carries besides u
(`conform_state.py`), the gradients (`conform_gradients.py`) and the optional `step` (`conform_step.py`); the scan
contract has its own battery (`conform_scan.py`). A failed check is explained by
probes (`conform_diagnoses.py`, `conform_spectrum.py`), never by the target's name. Each check draws its random
inputs from the seed and its own name (`rng_for`), so a check run alone sees what it sees in the whole battery.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.impls.config import MixerConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.reference import spectral_radius
from linrnn.base.tolerance import tolerance
from linrnn.verify import conform_bundles as bundles
from linrnn.verify import conform_scan as scan
from linrnn.verify import conform_spectrum as spectrum
from linrnn.verify.conform_bidirectional import BidirectionalChecks
from linrnn.verify.conform_bundles import (DEFAULT_LENGTHS, DTYPES, LONG_LENGTH, LOW, LOW_LONG_LENGTH, SHORT_NAME,
                                           STEPS_NAME, VERY_LONG_LENGTH, bundle_for, check_lengths, dtypes_for,
                                           make_config, models, parse_sets, rng_for, run_one, variant_name, variants)
from linrnn.verify.conform_diagnoses import float32_level
from linrnn.verify.conform_gradients import GradientChecks
from linrnn.verify.conform_layer import Layer
from linrnn.verify.conform_outputs import OutputChecks
from linrnn.verify.conform_radii import RadiusChecks
from linrnn.verify.conform_results import Check, Diagnosis, Result
from linrnn.verify.conform_state import StateChecks
from linrnn.verify.conform_step import StepChecks
from linrnn.verify.conform_targets import resolve


@dataclass(frozen=True)
class Planned:
    name: str                   # the check's name, as its `Check.name`
    dtype: str
    variant: dict               # the config fields its variant sets ({}: the base configuration)


def battery(target: str | Callable, kind: str, dtype: str, lengths=DEFAULT_LENGTHS, seed: int = 0, sets=(),
            long_length: int = LONG_LENGTH, very_long_length: int | None = None):
    """One dtype's battery of `target` claiming the contract of `kind`, with its arguments checked as `run` checks
    them; nothing is built or run until a check is (`Battery.one`, `.run`). `target` may be None to `plan` only.
    very_long_length None: `conform_bundles.VERY_LONG_LENGTH` as that module holds it when called."""
    very_long_length = bundles.VERY_LONG_LENGTH if very_long_length is None else very_long_length
    if kind not in models():
        raise LinrnnError(f"--model: expected one of {', '.join(models())}, found {kind!r}")
    if dtype not in dtypes_for(kind):
        raise LinrnnError(f"--dtype: expected one of {', '.join(dtypes_for(kind))} for --model {kind}, found {dtype!r}")
    lengths = check_lengths(lengths)
    for option, value in (("--long", long_length), ("--very-long", very_long_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LinrnnError(f"{option}: expected a length >= 0 (0 leaves the check out), found {value}")
    if isinstance(sets, Mapping):
        sets = [f"{k}={json.dumps(v)}" for k, v in sets.items()]
    pins = scan.parse_sets(sets) if kind == "scan" else parse_sets(kind, sets)
    if target is None:
        name, build = "", None
    elif callable(target):
        name, build = f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', repr(target))}", target
    else:
        name, build = target, resolve(target)
    if kind == "scan":
        return scan.Battery(name, build, dtype, lengths, seed, pins, long_length, very_long_length)
    return Battery(name, build, kind, dtype, lengths, seed, pins, long_length, very_long_length)


def plan(kind: str, dtypes: tuple[str, ...] | None = None, lengths=DEFAULT_LENGTHS, seed: int = 0, sets=(),
         long_length: int = LONG_LENGTH, very_long_length: int | None = None) -> list[Planned]:
    """The checks `run` makes for a target of `kind`, in its order, without building a target or running one
    (dtypes None: `dtypes_for(kind)`)."""
    return [Planned(name, dtype, dict(fields)) for dtype in (dtypes_for(kind) if dtypes is None else dtypes)
            for name, fields, _ in battery(None, kind, dtype, lengths, seed, sets, long_length,
                                           very_long_length).schedule()]


class Battery(OutputChecks, RadiusChecks, BidirectionalChecks, StateChecks, StepChecks, GradientChecks):
    """Every check of one target at one model kind and dtype; `pins` are the config fields `--set` fixes."""

    def __init__(self, name: str, build: Callable, kind: str, dtype: str, lengths: tuple[int, ...], seed: int,
                 pins: Mapping[str, Any] | None = None, long_length: int = LONG_LENGTH,
                 very_long_length: int = VERY_LONG_LENGTH):
        self.name, self.build, self.kind, self.dtype = name, build, kind, dtype
        self.lengths, self.seed, self.pins, self.long_length = lengths, seed, dict(pins or {}), long_length
        self.very_long_length = very_long_length
        self.cfg = make_config(kind, **self.pins)
        self.params = bundle_for(self.cfg, seed)
        self.radius = spectral_radius(self.cfg, self.params)
        self.done: dict[str, Check] = {}         # the checks run so far, by name
        self.probed: dict[MixerConfig, list[Diagnosis]] = {}    # the discretisation probes, once per config

    @functools.cached_property
    def layer(self) -> Layer:
        """The target built on the base bundle, on first use (`schedule` and `plan` build no target)."""
        return Layer(self.name, self.build, self.cfg, self.params, self.dtype)

    def rng(self, check: str) -> np.random.Generator:
        """The random inputs of one check, from the seed and the check's name: a check run alone (`one`, as
        `linrnn.testing` runs it) sees the inputs it sees in the whole battery."""
        return rng_for(self.seed, check)

    def tol(self, length: int, radius: float | None = None, row: str = "forward") -> float:
        return tolerance(row, self.dtype, length, self.radius if radius is None else radius).rtol

    def fit_tol(self, length: int, radius: float) -> float:
        """How closely a probe's hypothesis must fit: the tolerance, or in a float64 run the float32 one (the
        finding is then named beside "computes in float32 only")."""
        return tolerance("forward", "float32" if self.dtype == "float64" else self.dtype, length, radius).rtol

    def check(self, name: str, rel: float, rtol: float, detail: str) -> Check:
        return Check(name, self.dtype, "pass" if rel <= rtol else "fail", rel, rtol, detail)

    def schedule(self) -> list[tuple[str, dict[str, Any], Callable[[], Check]]]:
        """The battery in order: (the check's name, the config fields its variant sets ({}: the base
        configuration), the check itself). Building it runs nothing. A low dtype runs the output checks only."""
        L = max(self.lengths)
        out = [("impulse", {}, functools.partial(self.impulse, L))]
        out += [(f"random L={n}", {}, functools.partial(self.random, n)) for n in self.lengths]
        out += [(f"radius {label}", {}, functools.partial(self.radii, label, L)) for label in ("near 1", "small")]
        if self.kind in spectrum.DISCRETISED and self.dtype not in LOW:
            out.append((STEPS_NAME, {}, self.small_steps))
        if self.long_length:               # a low dtype's too: a recurrence that rounds in it drifts over a long input
            long = min(self.long_length, LOW_LONG_LENGTH) if self.dtype in LOW else self.long_length
            name = f"long L={long}"
            out.append((name, {}, functools.partial(self.radii, "near 1", long, name)))
        if self.dtype in LOW:
            return out
        out += [("bidirectional", {}, functools.partial(self.bidirectional, L)),
                ("state", {}, functools.partial(self.state, L)), ("gradient", {}, functools.partial(self.gradient, L)),
                ("state gradient", {}, functools.partial(self.state_gradient, L)),
                ("parameter gradient", {}, functools.partial(self.parameter_gradient, L))]
        out += [("state hand-over", {}, functools.partial(self.handover, L)),
                ("step", {}, functools.partial(self.step_mode, L)), (SHORT_NAME, {}, self.short)]
        if self.very_long_length:
            out.append((f"very long L={self.very_long_length}", {}, self.very_long))
        out += [("packing", {}, functools.partial(self.packing, L)), ("padding", {}, functools.partial(self.padding, L))]
        out += [(variant_name(fields), fields, functools.partial(self.variant, fields, L))
                for fields in variants(self.kind, self.pins)[1:]
                if fields != {"bidirectional": True}]          # that one is the bidirectional check
        return out

    def run(self) -> list[Check]:
        return [self.one(name) for name, _, _ in self.schedule()]

    def one(self, name: str) -> Check:
        """The check `name` (as `schedule` names it) alone, run once."""
        return run_one(self, name)

    # -- the discretisation ---------------------------------------------------------------------

    def respond(self, cfg: MixerConfig, params: Mapping[str, np.ndarray], u: np.ndarray,
                what: str = "discretisation probe") -> np.ndarray:
        """The target built on another bundle of `cfg`, on u: the probes' question."""
        return Layer(self.name, self.build, cfg, params, self.dtype)(u, what)[0]

    def discretisation(self, cfg: MixerConfig) -> list[Diagnosis]:
        """What the discretisation probes find for `cfg` (forward-only), once per config; [] for kinds without a
        discretisation, and for a config the target does not build."""
        cfg = dataclasses.replace(cfg, bidirectional=False) if hasattr(cfg, "bidirectional") else cfg
        if cfg.kind not in spectrum.DISCRETISED or self.dtype in LOW:     # a low dtype's rounding blurs the fits
            return []
        if cfg not in self.probed:
            params = bundle_for(cfg, self.seed)
            tol = self.tol(spectrum.PROBE_LENGTH, 1.0)
            try:
                found = spectrum.discretisation(cfg, params, self.respond, self.fit_tol(spectrum.PROBE_LENGTH, 1.0),
                                                tol)
                found += spectrum.cancellation(cfg, params, self.respond, self.dtype)
            except NotImplementedError:
                found = []
            self.probed[cfg] = [Diagnosis(f.key, f.words) for f in found]
        return self.probed[cfg]

    def level(self, cfg: MixerConfig, rel: float, length: int, radius: float, row: str = "forward",
              output_dtype=None) -> list[Diagnosis]:
        """The cause of an error at rounding level: the zero-order hold's cancellation where the probes find its
        signature (not "float32 only", whose error level it can reach in a float64 run), else the float32 level."""
        small = self.tol(length, radius) < rel <= self.fit_tol(length, radius)
        cancel = [d for d in self.discretisation(cfg) if d.key == "expm1"] if small else []
        if cancel:
            return cancel
        found = float32_level(self.dtype, rel, length, radius, row, output_dtype)
        return [found] if found else []


def run(target: str | Callable, kind: str, dtypes: tuple[str, ...] | None = None, lengths=DEFAULT_LENGTHS, seed: int = 0,
        progress: Callable[[str], None] | None = None, sets=(), long_length: int = LONG_LENGTH,
        very_long_length: int | None = None) -> Result:
    """Every check of `target` claiming the contract of `kind` (a mixer kind, or "scan").

    target: a built-in name, `module:function`, or the build function itself (as Python code calls it)
    sets: `FIELD=VALUE` strings (`--set`) or a {field: value} dict, pinning fields of every config checked
    long_length: the long check's length (0 leaves it out)
    very_long_length: the very long check's length, past 2^16 (0 leaves it out; None: VERY_LONG_LENGTH)
    dtypes: None: `dtypes_for(kind)` (a layer: float64, float32, bfloat16, float16; the scan: float64, float32)
    """
    dtypes = dtypes_for(kind) if dtypes is None else tuple(dtypes)
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise LinrnnError(f"--dtype: expected {' or '.join(DTYPES)}, found {', '.join(bad) or 'none'}")
    checks = []
    for dtype in dtypes:
        one = battery(target, kind, dtype, lengths, seed, sets, long_length, very_long_length)
        if progress:
            progress(f"{one.name} {kind} {dtype}")
        try:
            checks += one.run()
        except NotImplementedError as err:
            checks.append(Check("build", dtype, "n/a", detail=f"not supported by the target: {err}"))
    return Result(one.name, kind, tuple(dtypes), one.lengths, seed, checks, one.pins, long_length,
                  one.very_long_length)

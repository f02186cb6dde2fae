"""`linrnn conform TARGET --model scan`: the scan-level contract, x_t = a_t x_{t-1} + b_t (docs/conform.md).

The first-order linear recurrence under every layer of this project, and the primitive that scan libraries
publish. A target follows the layer protocol with an empty bundle:

    function({}, config[, dtype=...]) -> call       config {"kind": "scan", "complex": bool, "reverse": bool,
                                                            "varying": bool}; NotImplementedError: "n/a"
    call(a, b) -> x                                 a, b (B L D) NumPy float64 (complex128 when "complex");
                                                    x (B L D), anything numpy.asarray reads

    forward   x_t = a_t x_{t-1} + b_t,  x_{-1} = 0          reverse   x_t = a_t x_{t+1} + b_t,  x_L = 0
    varying   a_t changes with t (and the batch row); otherwise a is one number per channel, the same at every
              position and row (a diagonal linear time-invariant recurrence, what this project's scans take)

The battery, per dtype: random inputs at each length, |a| in [0.9, 0.999] (real a of either sign, complex a of
any phase), decay radii near 1 and small, one long check (L = 4096 near 1), and every other combination of
`complex`, `reverse` and `varying` at the longest length; each error against the float64 reference scan and the
tolerance table (`forward`, memory from max |a|). A failure is explained by the float32 level of a float64 run,
a scan that runs the other way, or complex inputs reduced to their real parts.
"""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import compare, tolerance
from linrnn.verify.conform_bundles import SHORT_LENGTHS, SHORT_NAME, rng_for, run_one, variant_name
from linrnn.verify.conform_diagnoses import float32_level
from linrnn.verify.conform_layer import _accepts, _why, as_array, check_output
from linrnn.verify.conform_results import Check, Diagnosis

D = 3                                  # channels; the batch has 3 rows
BATCH = 3
FIELDS: dict[str, tuple[bool, bool]] = {"complex": (False, True), "reverse": (False, True), "varying": (True, False)}
RADII = {"default": (0.9, 0.999), "near 1": (0.999, 0.9999), "small": (0.05, 0.1)}


def make_config(**fields) -> dict[str, Any]:
    cfg = {"kind": "scan", **{f: values[0] for f, values in FIELDS.items()}, **fields}
    return cfg


def reference(cfg: Mapping[str, Any], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The recurrence in float64 / complex128, one step at a time.     a, b (B L D) -> x (B L D)"""
    x = np.zeros((b.shape[0], b.shape[2]), complex if cfg["complex"] else float)
    out = np.empty_like(b, dtype=x.dtype)
    steps = range(b.shape[1] - 1, -1, -1) if cfg["reverse"] else range(b.shape[1])
    for t in steps:
        x = a[:, t] * x + b[:, t]
        out[:, t] = x
    return out


def inputs(cfg: Mapping[str, Any], rng: np.random.Generator, L: int, radii: tuple[float, float]) -> tuple:
    """(a, b) (B L D): |a| uniform in `radii` (a real a of random sign; a complex a of random phase), b normal."""
    shape = (BATCH, L, D) if cfg["varying"] else (1, 1, D)
    r = rng.uniform(*radii, size=shape)
    if cfg["complex"]:
        a = r * np.exp(2j * np.pi * rng.uniform(size=shape))
        b = (rng.standard_normal((BATCH, L, D)) + 1j * rng.standard_normal((BATCH, L, D))) / np.sqrt(2)
    else:
        a = r * rng.choice((-1.0, 1.0), size=shape)
        b = rng.standard_normal((BATCH, L, D))
    return np.broadcast_to(a, (BATCH, L, D)).copy(), b


def variants(pins: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the fields `pins` leaves free; the first is the base ({})."""
    free = {f: v for f, v in FIELDS.items() if f not in pins}
    return [{f: v for (f, options), v in zip(free.items(), values) if v != options[0]}
            for values in itertools.product(*free.values())]


def parse_sets(items) -> dict[str, Any]:
    out = {}
    for item in items or ():
        field, sep, text = item.partition("=")
        if not sep or field not in FIELDS:
            raise LinrnnError(f"--set: a scan config has the fields {', '.join(FIELDS)} (FIELD=true|false), "
                              f"found {item!r}")
        value = {"true": True, "false": False}.get(text.lower())
        if value is None:
            raise LinrnnError(f"--set {field}: expected true or false, found {text!r}")
        out[field] = value
    return out


class Battery:
    """Every check of one scan target in one dtype."""

    def __init__(self, name: str, build: Callable, dtype: str, lengths: tuple[int, ...], seed: int,
                 pins: Mapping[str, Any], long_length: int, very_long_length: int = 0):
        self.name, self.build, self.dtype, self.lengths = name, build, dtype, lengths
        self.pins, self.long_length = dict(pins), long_length
        self.very_long_length = very_long_length
        self.seed = seed
        self.built: dict[str, Any] = {}
        self.done: dict[str, Any] = {}            # the checks run so far, by name

    def target(self, cfg: dict) -> Callable:
        """The target's call for `cfg` (built once); NotImplementedError passes through."""
        key = json.dumps(cfg, sort_keys=True)
        if key not in self.built:
            kwargs = {"dtype": self.dtype} if _accepts(self.build, "dtype") else {}
            try:
                self.built[key] = self.build({}, dict(cfg), **kwargs)
            except (NotImplementedError, LinrnnError):
                raise
            except Exception as err:
                raise LinrnnError(f"target {self.name}: building it for {describe(cfg)} raised "
                                  f"{_why(err)}") from None
            if not callable(self.built[key]):
                raise LinrnnError(f"target {self.name}: function(bundle, config) returned "
                                  f"{type(self.built[key]).__name__}, expected a callable (a, b) -> x")
        return self.built[key]

    def call(self, cfg: dict, a: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
        call = self.target(cfg)
        try:
            x = call(a.copy(), b.copy())
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            raise LinrnnError(f"target {self.name}: {what}: calling it on a, b of shape {a.shape} raised "
                              f"{_why(err)}") from None
        arr = as_array(self.name, what, x)
        self.output_dtype = arr.dtype
        if np.iscomplexobj(arr) and not cfg["complex"]:
            raise LinrnnError(f"target {self.name}: {what}: expected a real output for real a and b, found "
                              f"dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            if arr.shape != b.shape or not np.all(np.isfinite(arr)):
                check_output(self.name, what, arr.real, b.shape)
            return arr.astype(np.complex128)
        return check_output(self.name, what, arr, b.shape)

    def schedule(self) -> list[tuple[str, dict[str, Any], Callable]]:
        """The battery in order: (name, the fields its variant sets, the check); building it runs nothing."""
        base = make_config(**self.pins)
        L = max(self.lengths)
        case = self.case
        out = [(f"random L={n}", {}, functools.partial(case, f"random L={n}", base, n, "default"))
               for n in self.lengths]
        out += [(f"radius {label}", {}, functools.partial(case, f"radius {label}", base, L, label))
                for label in ("near 1", "small")]
        if self.long_length:
            name = f"long L={self.long_length}"
            out.append((name, {}, functools.partial(case, name, base, self.long_length, "near 1")))
        out.append((SHORT_NAME, {}, functools.partial(self.short, base)))
        if self.very_long_length:
            name = f"very long L={self.very_long_length}"
            out.append((name, {}, functools.partial(case, name, base, self.very_long_length, "near 1", 1)))
        for fields in variants(self.pins)[1:]:
            name = variant_name(fields)
            out.append((name, fields, functools.partial(case, name, make_config(**{**self.pins, **fields}), L,
                                                        "default")))
        return out

    def run(self) -> list:
        return [self.one(name) for name, _, _ in self.schedule()]

    def one(self, name: str):
        """The check `name` alone, run once."""
        return run_one(self, name)

    def short(self, cfg: dict):
        """Every length 1..8 (where chunked scans have failed): the worst against its tolerance, the failing named."""
        found = [self.case(f"{SHORT_NAME}: L={n}", cfg, n, "default") for n in SHORT_LENGTHS]
        if any(c.status == "n/a" for c in found):
            na = next(c for c in found if c.status == "n/a")
            na.name = SHORT_NAME
            return na
        worst = max(found, key=lambda c: c.rel / c.rtol)
        bad = [n for n, c in zip(SHORT_LENGTHS, found) if c.status == "fail"]
        worst.name = SHORT_NAME
        worst.detail += f"; the worst against its tolerance of lengths 1-8; failing lengths: {' '.join(map(str, bad)) or 'none'}"
        if bad and len(bad) < len(found) and not worst.diagnoses:
            worst.diagnoses = [Diagnosis("short_lengths", f"the output is wrong at L = "
                                                      f"{', '.join(map(str, bad))} and conforms at the other lengths "
                                                      f"of 1-8 (error {worst.rel:.2e}, tolerance {worst.rtol:.2e})")]
        return worst

    def case(self, name: str, cfg: dict, L: int, radii: str, batch: int | None = None):
        a, b = inputs(cfg, rng_for(self.seed, name), L, RADII[radii])
        if batch:                                           # the very long check: one row
            a, b = a[:batch], b[:batch]
        r = float(np.max(np.abs(a)))
        detail = f"{describe(cfg)}, |a| in [{RADII[radii][0]:g}, {RADII[radii][1]:g}], L = {L}, B = {len(b)}"
        try:
            x = self.call(cfg, a, b, name)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        ref = reference(cfg, a, b)
        tol = tolerance("forward", self.dtype, L, r).rtol
        rel = compare(name, ref, x, "forward", "float64").rel
        c = Check(name, self.dtype, "pass" if rel <= tol else "fail", rel, tol, detail)
        if c.status == "fail":
            c.diagnoses = self.explain(cfg, a, b, x, rel, L, r)
        return c

    def explain(self, cfg: dict, a, b, x, rel: float, L: int, r: float) -> list:
        """The other direction, the real parts only, or the float32 level."""
        fit_tol = tolerance("forward", "float32" if self.dtype == "float64" else self.dtype, L, r).rtol
        other = reference({**cfg, "reverse": not cfg["reverse"]}, a, b)
        if L > 1 and compare("direction", other, x, "forward", "float64").rel <= fit_tol:
            way = "forward" if cfg["reverse"] else "backward"
            return [Diagnosis("scan_direction", f"the scan runs {way} when asked for the other direction: its "
                                                f"output is the {way} scan's (error against the contract {rel:.2e})")]
        if cfg["complex"]:
            real = reference({**cfg, "complex": False}, a.real, b.real)
            if compare("real parts", real.astype(complex), x, "forward", "float64").rel <= fit_tol:
                return [Diagnosis("scan_real_only", f"complex inputs lose their imaginary parts: the output is the "
                                                    f"scan of Re a and Re b (error against the contract {rel:.2e})")]
        level = float32_level(self.dtype, rel, L, r, output_dtype=self.output_dtype)
        return [level] if level else []


def describe(cfg: Mapping[str, Any]) -> str:
    return (f"{'complex' if cfg['complex'] else 'real'}, {'backward' if cfg['reverse'] else 'forward'}, "
            f"{'a_t varying' if cfg['varying'] else 'a constant'}")

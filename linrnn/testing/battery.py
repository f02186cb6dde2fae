"""`check_layer` and `parametrize_with_checks`: the conform battery (`linrnn.verify.conform`) from a user's tests.

A target is the factory `linrnn conform module:function` calls (docs/conform.md, "The target"):

    make(bundle, config[, dtype=...]) -> call        call(u) -> y, or call(u, state=s) -> (y, state)

so one adapter serves the command line and the tests. `check_layer` runs the whole battery and returns its report;
`parametrize_with_checks` makes one pytest case of each check, variant and dtype, which runs that check alone (on
the inputs it sees in the whole battery: each check draws them from the seed and its own name).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from linrnn.base.errors import LinrnnError
from linrnn.verify import conform

Report = conform.Result       # `str(report)` is `linrnn conform`'s text; `report.ok`; `report.diagnoses()`


def _dtypes(dtypes, kind: str) -> tuple[str, ...]:
    """The dtypes asked for, checked; None: the battery's own for `kind` (a layer's four, the scan's two)."""
    if dtypes is None:
        return conform.dtypes_for(kind) if kind in conform.models() else conform.FULL
    dtypes = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
    bad = [d for d in dtypes if d not in conform.DTYPES]
    if bad or not dtypes:
        raise LinrnnError(f"dtypes: expected some of {', '.join(conform.DTYPES)}, found "
                          f"{', '.join(map(str, bad)) or 'none'}")
    return dtypes


def check_layer(target, kind: str, *, dtypes=None, lengths=conform.DEFAULT_LENGTHS, seed: int = 0,
                long_length: int = conform.LONG_LENGTH, very_long_length: int = conform.VERY_LONG_LENGTH,
                **config) -> Report:
    """Every check of the conform battery on `target` (a factory `make(bundle, config) -> call`, a built-in name or
    'module:function'), claiming the contract of `kind` ('lru', 's5', ..., or 'scan').

    config  fields pinned in every configuration checked (`linrnn conform --set FIELD=VALUE`), e.g.
            discretization="zoh" for a target that implements only the zero-order hold
    Returns the report (`conform.Result`): `report.ok`, `report.checks`, `report.diagnoses()`, `str(report)`.
    """
    return conform.run(target, kind, _dtypes(dtypes, kind), lengths, seed, None, config, long_length, very_long_length)


# -- one pytest case per check ------------------------------------------------------------------

LONG = "long"            # the long check's slug: its length from `long_length` or `--linrnn-long`
VERY_LONG = "very-long"  # the very long check's: from `very_long_length` or `--linrnn-very-long`


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().replace("_", "-")).strip("-")


def variant_slug(fields: Mapping[str, Any]) -> str:
    """'base' for the base configuration; else each field that differs: a string value by itself ('bilinear'),
    True by the field's name ('clip-eigs'), False as 'no-FIELD', a number as 'FIELD-N'."""
    if not fields:
        return "base"
    parts = []
    for name, value in fields.items():
        if value is True:
            parts.append(_slug(name))
        elif value is False:
            parts.append(f"no-{_slug(name)}")
        elif isinstance(value, str):
            parts.append(_slug(value))
        else:
            parts.append(f"{_slug(name)}-{_slug(json.dumps(value))}")
    return "-".join(parts)


def check_slug(name: str, fields: Mapping[str, Any]) -> str:
    """'random L=7' -> 'random-l7', 'long L=4096' -> 'long', 'radius near 1' -> 'radius-near-1'; a variant's check
    by what it compares: 'impulse' (its impulse responses and a random input), 'bidirectional'."""
    if fields:
        return "bidirectional" if fields.get("bidirectional") else "impulse"
    if name.startswith("long L="):
        return LONG
    if name.startswith("very long L="):
        return VERY_LONG
    return _slug(re.sub(r"\bL=", "l", name))


@dataclass(frozen=True, eq=False)
class Case:
    """One check of the battery, for one target, variant and dtype: calling it runs the check and raises
    AssertionError naming the deviation (pytest skips a check that does not apply)."""

    target: str                              # the name the user gave the factory
    factory: Callable = field(repr=False)
    kind: str
    dtype: str
    check: str                               # the battery's name of the check ('random L=7'; 'long', 'very-long')
    variant: tuple[tuple[str, Any], ...]     # the config fields the check's variant sets
    lengths: tuple[int, ...] = conform.DEFAULT_LENGTHS
    seed: int = 0
    config: tuple[tuple[str, Any], ...] = ()  # the pinned fields
    long_length: int | None = None           # None: `--linrnn-long`, or the battery's default
    very_long_length: int | None = None      # None: `--linrnn-very-long`, or the battery's default
    linrnn_case = True                       # how the pytest plugin knows a case (without importing this module)

    @property
    def id(self) -> str:
        return (f"{self.target}-{self.kind}-{variant_slug(dict(self.variant))}-{self.dtype}-"
                f"{check_slug(self.check, dict(self.variant))}")

    def long(self) -> int:
        return _setting(self.long_length, "long", conform.LONG_LENGTH)

    def very_long(self) -> int:
        return _setting(self.very_long_length, "very_long", conform.VERY_LONG_LENGTH)

    def command(self) -> str:
        """The command line that runs the whole battery on this factory (where its module is importable)."""
        factory = f"{getattr(self.factory, '__module__', '?')}:{getattr(self.factory, '__qualname__', '?')}"
        pins = "".join(f" --set {k}={json.dumps(v)}" for k, v in self.config)
        return (f"linrnn conform {factory} --model {self.kind} --dtype {self.dtype} --lengths "
                f"{' '.join(map(str, self.lengths))} --long {self.long()} --very-long {self.very_long()} "
                f"--seed {self.seed}{pins}")

    def run(self) -> conform.Check:
        """The check's result (status 'pass', 'fail' or 'n/a'), run once per battery."""
        name, long, very_long = self.check, self.long(), self.very_long()
        battery = _battery(self.factory, self.kind, self.dtype, self.lengths, self.seed, self.config, long, very_long)
        for slug, length, label in ((LONG, long, "long"), (VERY_LONG, very_long, "very long")):
            if name == slug:
                if not length:
                    return conform.Check(name, self.dtype, "n/a", detail=f"the {label} check is left out (length 0)")
                # the battery's name of it (a low dtype's long check runs at most conform.LOW_LONG_LENGTH)
                name = next(n for n, _, _ in battery.schedule() if n.startswith(f"{label} L="))
        try:
            return battery.one(name)
        except NotImplementedError as err:
            return conform.Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")

    def __call__(self) -> conform.Check:
        __tracebackhide__ = True
        try:
            check = self.run()
        except LinrnnError as err:         # the target's output is unusable (shape, NaN, raised): the user's bug
            raise AssertionError(f"linrnn check {self.id}: {err}") from None
        if check.status == "n/a":
            import pytest
            pytest.skip(f"{check.name} ({check.dtype}): {check.detail}")
        if check.status == "fail":
            lines = [f"linrnn check {self.id}: {check.line()}"]
            lines += [f"  - {d.words}" for d in check.diagnoses]
            lines.append(f"the whole battery: {self.command()}")
            raise AssertionError("\n".join(lines))
        return check


def _setting(value: int | None, option: str, default: int) -> int:
    """A length given to the case, else the plugin's option (`--linrnn-long`, `--linrnn-very-long`), else the default."""
    if value is not None:
        return value
    from linrnn.testing import plugin
    return default if plugin.SETTINGS[option] is None else plugin.SETTINGS[option]


_BATTERIES: dict[tuple, tuple[Callable, Any]] = {}


def _battery(factory, kind, dtype, lengths, seed, config, long_length, very_long_length):
    """One battery per factory, kind, dtype and settings, kept for the session: each check runs once, the target is
    built once."""
    key = (id(factory), kind, dtype, tuple(lengths), seed, config, long_length, very_long_length)
    if key not in _BATTERIES:
        _BATTERIES[key] = (factory, conform.battery(factory, kind, dtype, lengths, seed, dict(config), long_length,
                                                    very_long_length))
    return _BATTERIES[key][1]


def cases(targets, kind: str, *, dtypes=None, lengths=conform.DEFAULT_LENGTHS, seed: int = 0,
          long_length: int | None = None, very_long_length: int | None = None, **config) -> list[Case]:
    """Every check of the battery as a `Case`, for each target ({name: factory}, or one factory named by its
    `__name__`), in the battery's order; nothing is built or run."""
    if callable(targets):
        targets = {getattr(targets, "__name__", "target"): targets}
    if not isinstance(targets, Mapping) or not targets:
        raise LinrnnError(f"targets: expected {{name: make(bundle, config)}} or one factory, found "
                          f"{type(targets).__name__}")
    out = []
    for name, factory in targets.items():
        if not isinstance(name, str) or not name or not callable(factory):
            raise LinrnnError(f"targets: expected a non-empty name and a callable factory, found {name!r}: "
                              f"{type(factory).__name__}")
        planned = conform.plan(kind, _dtypes(dtypes, kind), lengths, seed, config,
                               conform.LONG_LENGTH if long_length is None else long_length,
                               conform.VERY_LONG_LENGTH if very_long_length is None else very_long_length)
        for p in planned:
            check = LONG if p.name.startswith("long L=") else VERY_LONG if p.name.startswith("very long L=") else p.name
            out.append(Case(name, factory, kind, p.dtype, check, tuple(p.variant.items()), tuple(lengths), seed,
                            tuple(config.items()), long_length, very_long_length))
    ids = [c.id for c in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:                              # a bug here, not the user's: two checks would share a pytest id
        raise RuntimeError(f"parametrize_with_checks: duplicate case ids {', '.join(twice)}")
    return out


def parametrize_with_checks(targets, kind: str, *, argname: str = "check", dtypes=None,
                            lengths=conform.DEFAULT_LENGTHS, seed: int = 0, long_length: int | None = None,
                            very_long_length: int | None = None, **config):
    """A pytest decorator: one case per check of the battery, variant and dtype, for each target.

        @parametrize_with_checks({"mine": make_lru}, kind="lru")
        def test_conforms(check):
            check()

    ids read `NAME-KIND-VARIANT-DTYPE-CHECK` (e.g. `mine-s5-bilinear-float32-impulse`, `mine-lru-base-float64-state`),
    so `-k` selects. With the plugin, `--linrnn-dtypes` keeps the cases of some dtypes, and `--linrnn-long L` and
    `--linrnn-very-long L` set the long and very long checks' lengths (`long_length`, `very_long_length` override them).
    """
    import pytest
    found = cases(targets, kind, dtypes=dtypes, lengths=lengths, seed=seed, long_length=long_length,
                  very_long_length=very_long_length, **config)
    return pytest.mark.parametrize(argname, [pytest.param(c, id=c.id) for c in found])

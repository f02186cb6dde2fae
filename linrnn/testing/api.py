"""The conform battery's cases in a user's pytest run: `parametrize_with_checks`, its known failures, and `replay`.

    @parametrize_with_checks({"mine": make_s5}, kind="s5",
                             expected_failed_checks={"s5-bilinear-*-impulse": "the bilinear rule is not done yet"})
    def test_conforms(check):
        check()

A case of `expected_failed_checks` is a strict xfail (scikit-learn's convention, made strict): it must fail with an
AssertionError, and once it passes the run fails, so that the list stays true. A failing case's message ends with
the command that runs the whole battery from the directory pytest was started in, and with two lines that rerun that
one check alone against the user's factory: `replay(path, factory)` on a self-contained `.npz` the case wrote
(`--linrnn-replay`: a folder, `print` to show the case as a literal instead, or `off`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import sys
from pathlib import Path
from typing import Mapping

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.testing import battery

CASE_KEY = "__case__"       # the replay file's entry holding the case as JSON
FORMAT = 1                  # the replay file's format


def _settings() -> dict:
    from linrnn.testing import plugin
    return plugin.SETTINGS


def _module_root(module) -> Path | None:
    """The folder that makes `module` importable by its name (its file, up one level per dot of the name)."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve().parent
    depth = module.__name__.count(".") + (Path(file).name == "__init__.py")
    for _ in range(depth):
        path = path.parent
    return path


def _shown(path: str | Path, start: str) -> str:
    """`path` relative to `start` where it lies below it, else absolute."""
    path = Path(path).resolve()
    try:
        return path.relative_to(Path(start).resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _pythonpath(factory) -> str:
    """The PYTHONPATH that makes the factory's module and the run's `pythonpath` folders importable, as the directory
    pytest was started in sees them ('' where the module is importable as it is)."""
    start = _settings()["invocation"] or os.getcwd()
    module = sys.modules.get(getattr(factory, "__module__", "") or "")
    roots = [_module_root(module)] if module is not None else []
    roots += [Path(p) for p in _settings()["pythonpath"]]
    shown = []
    for root in roots:
        if root is not None and _shown(root, start) not in shown and _shown(root, start) != ".":
            shown.append(_shown(root, start))
    return os.pathsep.join(shown)


@dataclasses.dataclass(frozen=True, eq=False)
class PytestCase(battery.Case):
    """A `battery.Case` whose failure names the command and the replay that rerun it from where pytest started."""

    @classmethod
    def from_case(cls, case: battery.Case) -> "PytestCase":
        return cls(**{f.name: getattr(case, f.name) for f in dataclasses.fields(battery.Case)})

    def command(self) -> str:
        path = _pythonpath(self.factory)
        return (f"PYTHONPATH={path} " if path else "") + super().command()

    def description(self) -> dict:
        """Everything `replay` needs but the factory: JSON."""
        return {"format": FORMAT, "target": self.target, "kind": self.kind, "dtype": self.dtype, "check": self.check,
                "variant": [list(p) for p in self.variant], "lengths": list(self.lengths), "seed": self.seed,
                "config": [list(p) for p in self.config], "long_length": self.long(),
                "very_long_length": self.very_long(), "id": self.id,
                "factory": f"{getattr(self.factory, '__module__', '?')}:{getattr(self.factory, '__qualname__', '?')}",
                "linrnn": _version()}

    def __call__(self):
        __tracebackhide__ = True
        try:
            return super().__call__()
        except AssertionError as err:
            raise AssertionError(f"{err}\n{self.replay_lines()}") from None

    def replay_lines(self) -> str:
        """The two lines that rerun this check alone, after writing its replay file (or with the case inline)."""
        where = _settings()["replay"]
        if where == "off":
            return "(no replay: --linrnn-replay=off)"
        module, _, name = self.description()["factory"].partition(":")
        head = f"from {module} import {name.split('.')[0]}; from linrnn.testing import replay"
        if "<locals>" in name:
            head = f"from linrnn.testing import replay   # and the factory {name}, defined inside a function"
        if where == "print":
            case = json.dumps(self.description(), sort_keys=True)
            return f"replay this check alone:\n    {head}\n    replay({case}, {name})"
        start = _settings()["invocation"] or os.getcwd()
        path = Path(start) / where / f"{self.id}.npz"
        write_replay(path, self)
        return f"replay this check alone:\n    {head}\n    replay({_shown(path, start)!r}, {name})"


def _version() -> str:
    from linrnn import __version__
    return __version__


def write_replay(path: Path, case: PytestCase) -> Path:
    """The replay file of `case`: its description (`__case__`, JSON) and the battery's base bundle (`bundle.<key>`,
    `bundle.__meta__`: the config as JSON), so that a user can load what the check ran on."""
    from linrnn.impls.config import config_to_dict
    description = case.description()
    made = battery._battery(case.factory, case.kind, case.dtype, case.lengths, case.seed, case.config, case.long(),
                            case.very_long())
    arrays = {CASE_KEY: np.array(json.dumps(description))}
    cfg, params = getattr(made, "cfg", None), getattr(made, "params", None)
    if cfg is not None and params is not None:
        arrays["bundle.__meta__"] = np.array(json.dumps(config_to_dict(cfg)))
        arrays.update({f"bundle.{k}": np.asarray(v) for k, v in params.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npz")
    np.savez(partial, **arrays)
    os.replace(partial, path)
    return path


def _read_case(source) -> dict:
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, (str, os.PathLike)):
        raise LinrnnError(f"replay: expected the path of a replay file or its case (a dict), found "
                          f"{type(source).__name__}")
    try:
        with np.load(source) as data:
            return json.loads(str(data[CASE_KEY]))
    except (OSError, KeyError, ValueError) as err:
        raise LinrnnError(f"replay: {os.fspath(source)} is not a linrnn replay file ({type(err).__name__}: {err})") \
            from None


def replay(source, factory, *, raise_on_failure: bool = True):
    """Rerun one check of the battery against `factory` (the user's `make(bundle, config)`) as a failing case wrote
    it: `source` is its replay file (`.npz`) or the case (a dict, as `--linrnn-replay=print` shows it). Raises the
    case's AssertionError where it fails (`raise_on_failure=False`: returns the `conform.Check` instead)."""
    case = _read_case(source)
    if case.get("format") != FORMAT:
        raise LinrnnError(f"replay: expected a replay file of format {FORMAT}, found {case.get('format')!r}")
    if not callable(factory):
        raise LinrnnError(f"replay: expected the factory make(bundle, config) -> call, found {type(factory).__name__}")
    if case.get("linrnn") != _version():
        import warnings
        warnings.warn(f"replay: the case was written by linrnn {case.get('linrnn')}, this is {_version()}: the "
                      f"battery's inputs may differ", stacklevel=2)
    made = battery.Case(case["target"], factory, case["kind"], case["dtype"], case["check"],
                        tuple((k, v) for k, v in case["variant"]), tuple(case["lengths"]), case["seed"],
                        tuple((k, v) for k, v in case["config"]), case["long_length"], case["very_long_length"])
    if not raise_on_failure:
        return made.run()
    return made()


# -- parametrize_with_checks -------------------------------------------------------------------------------

def _lengths(lengths):
    if lengths is not None:
        return tuple(lengths)
    from linrnn.verify import conform
    return tuple(_settings()["lengths"] or conform.DEFAULT_LENGTHS)


def _matches(key: str, case: battery.Case) -> bool:
    """A key names a case by its id, its id without the target (`s5-bilinear-float32-impulse`), a pattern of either
    (`s5-*-float32-long`, fnmatch), or the check alone (`impulse`: every variant and dtype)."""
    short = case.id[len(case.target) + 1:]
    slug = battery.check_slug(case.check, dict(case.variant))
    return key == slug or fnmatch.fnmatchcase(case.id, key) or fnmatch.fnmatchcase(short, key)


def expected(table, found: list[battery.Case]) -> dict[str, str]:
    """{case id: reason} of `expected_failed_checks`; a key that names no case is a one-line error."""
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise LinrnnError(f"expected_failed_checks: expected a dict {{check: reason}}, found {type(table).__name__}")
    out: dict[str, str] = {}
    for key, reason in table.items():
        if not isinstance(key, str) or not isinstance(reason, str) or not reason.strip():
            raise LinrnnError(f"expected_failed_checks: expected check names with a reason each (strings), found "
                              f"{key!r}: {reason!r}")
        hits = [c for c in found if _matches(key, c)]
        if not hits:
            example = found[0].id[len(found[0].target) + 1:] if found else "s5-base-float64-impulse"
            raise LinrnnError(f"expected_failed_checks: {key!r} names no case (expected a case id such as "
                              f"{example!r}, a pattern of ids, or a check such as 'impulse')")
        for c in hits:
            out.setdefault(c.id, reason)
    return out


def parametrize_with_checks(targets, kind: str, *, argname: str = "check", dtypes=None, lengths=None, seed: int = 0,
                            long_length: int | None = None, very_long_length: int | None = None,
                            expected_failed_checks: Mapping[str, str] | None = None, **config):
    """A pytest decorator: one case per check of the battery, variant and dtype, for each target.

        @parametrize_with_checks({"mine": make_lru}, kind="lru")
        def test_conforms(check):
            check()

    ids read `NAME-KIND-VARIANT-DTYPE-CHECK` (e.g. `mine-s5-bilinear-float32-impulse`, `mine-lru-base-float64-state`),
    so `-k` selects. With the plugin, `--linrnn-profile`, `--linrnn-dtypes`, `--linrnn-long L` and `--linrnn-very-long
    L` choose the cases and lengths (`lengths`, `long_length`, `very_long_length` given here override them).
    expected_failed_checks  {case id, id without the target, a pattern of them, or a check: the reason}: each such
            case is a strict xfail (an AssertionError expected; a pass fails the run)
    """
    import pytest
    if not isinstance(argname, str) or not argname.isidentifier():
        raise LinrnnError(f"argname: expected a Python name, found {argname!r}")
    found = [PytestCase.from_case(c) for c in battery.cases(
        targets, kind, dtypes=dtypes, lengths=_lengths(lengths), seed=seed, long_length=long_length,
        very_long_length=very_long_length, **config)]
    xfails = expected(expected_failed_checks, found)
    params = []
    for c in found:
        marks = ([pytest.mark.xfail(reason=xfails[c.id], raises=AssertionError, strict=True)]
                 if c.id in xfails else [])
        params.append(pytest.param(c, id=c.id, marks=marks))
    return pytest.mark.parametrize(argname, params)

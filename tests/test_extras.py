"""The extras: pyproject.toml's optional dependencies and `linrnn.base.extras`' table say the same, and a command
that needs a module of a missing extra says which extra, in one line, exit 2 (the modules are hidden from a
subprocess by an import hook: every extra missing at once, as after `pip install linrnn`)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from linrnn.base import extras

ROOT = Path(__file__).resolve().parents[1]

# A process without any extra's module: importing one raises ModuleNotFoundError as if it were not installed.
HIDDEN = r'''
import importlib.abc, sys
HIDE = set(sys.argv[1].split(","))
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in HIDE:
            raise ModuleNotFoundError(f"No module named {name.partition('.')[0]!r}", name=name.partition(".")[0])
sys.meta_path.insert(0, Hide())
from linrnn.cli import main
sys.exit(main(sys.argv[2:]))
'''


def extras_of_pyproject() -> dict[str, set[str]]:
    """extra -> the top-level modules its requirements install, self-references (linrnn[torch]) resolved."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    modules = {dist: module for module, (_, dist, _) in extras.MODULES.items() if dist}
    implied = {module: [m for m, (_, dist, own) in extras.MODULES.items() if dist is None and own == extra]
               for module, (_, _, extra) in extras.MODULES.items()}

    def resolve(extra: str) -> set[str]:
        found = set()
        for req in table[extra]:
            name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
            inner = re.match(r"linrnn\[(.*)\]", req)
            if inner:
                for other in inner.group(1).split(","):
                    found |= resolve(other)
            elif name.lower() in modules:
                found.add(modules[name.lower()])
        return found
    out = {}
    for extra in table:
        found = resolve(extra)
        for module in list(found):                 # jaxlib with jax, markupsafe with jinja2
            found |= {m for m in implied[module] if extras.MODULES[m][2] == extras.MODULES[module][2]}
        out[extra] = found
    return out


def test_the_table_of_extras_is_pyprojects():
    table = extras_of_pyproject()
    for extra, modules in extras.INSTALLS.items():
        assert table[extra] == set(modules), (extra, sorted(table[extra]), sorted(modules))
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [re.match(r"[a-z]+", d).group(0) for d in core] == ["numpy", "scipy"]
    assert table["all"] >= set().union(*extras.INSTALLS.values())
    assert table["test"] >= table["report"] | {"hypothesis"}


def test_a_missing_module_names_its_extra_and_nothing_else_does():
    found = extras.missing(ModuleNotFoundError("No module named 'sympy'", name="sympy"), "linrnn theory")
    assert isinstance(found, extras.MissingExtra) and isinstance(found, ImportError)
    assert str(found) == "linrnn theory needs SymPy (sympy), which is not installed: pip install 'linrnn[theory]'"
    assert "linrnn[report]" in str(extras.missing(ModuleNotFoundError(name="torch"), "x", "report"))
    assert "linrnn[jax]" in str(extras.missing(ModuleNotFoundError(name="jax"), "x", "train"))   # [train] has no jax
    assert extras.missing(ModuleNotFoundError(name="torch.nonexistent"), "x") is None    # torch is there: a bug
    assert extras.missing(ModuleNotFoundError(name="lrnnx"), "x") is None                # not an extra's module
    assert extras.missing(ImportError("cannot import name"), "x") is None
    with pytest.raises(extras.MissingExtra, match=r"^f needs Hypothesis \(hypothesis\), which is not installed: "):
        try:
            raise ModuleNotFoundError(name="hypothesis")
        except ModuleNotFoundError as err:
            raise extras.missing(err, "f") from None


def hidden_cli(*args, cwd) -> subprocess.CompletedProcess:
    """`linrnn ARGS` in a process where no extra's module can be imported."""
    return subprocess.run([sys.executable, "-c", HIDDEN, ",".join(extras.MODULES), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A layer bundle made by `linrnn params init` without any extra, and an input."""
    import numpy as np
    tmp = tmp_path_factory.mktemp("extras")
    made = hidden_cli("params", "init", "--model", "lru", "--layer-only", "--d-model", "3", "--state", "4",
                      "--seed", "0", "--out", "b.npz", cwd=tmp)
    assert made.returncode == 0, made.stderr                      # the core makes bundles
    np.save(tmp / "u.npy", np.zeros((1, 5, 3)))
    return tmp


def test_every_command_registers_without_an_extra(folder):
    done = hidden_cli("--help", cwd=folder)
    assert done.returncode == 0 and "report" in done.stdout, done.stderr


@pytest.mark.parametrize("argv, extra", [
    (["apply", "--params", "b.npz", "--input", "u.npy", "--out", "y.npy", "--backend", "torch"], "torch"),
    (["apply", "--params", "b.npz", "--input", "u.npy", "--out", "y.npy", "--backend", "jax"], "jax"),
    (["theory", "--quick"], "theory"),
    (["report", "--quick", "--out", "r"], "report"),
    (["train", "--dry-run"], "train"),
    (["bench", "torch"], "report"),
])
def test_a_command_that_needs_a_missing_extra_says_which_in_one_line(folder, argv, extra):
    done = hidden_cli(*argv, cwd=folder)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert re.fullmatch(rf"linrnn {argv[0]}: error: .* needs .*, which is not installed: pip install "
                        rf"'linrnn\[{extra}\]'\n", done.stderr), done.stderr


IMPORT_HIDDEN = HIDDEN.split("from linrnn.cli import main")[0] + r'''
import importlib
try:
    module = importlib.import_module(sys.argv[2])
    getattr(module, sys.argv[3]) if len(sys.argv) > 3 else None
except ImportError as err:
    print(type(err).__name__, err)
'''


@pytest.mark.parametrize("module, name, extra", [("linrnn.impls.torch", None, "torch"),
                                                 ("linrnn.impls.jax", None, "jax"),
                                                 ("linrnn.theory", "run_all", "theory"),
                                                 ("linrnn.testing.strategies", None, "hypothesis")])
def test_an_import_that_needs_a_missing_extra_says_which(module, name, extra):
    done = subprocess.run([sys.executable, "-c", IMPORT_HIDDEN, ",".join(extras.MODULES), module,
                           *([name] if name else [])], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and re.fullmatch(rf"MissingExtra {re.escape(module)} needs .*, which is not "
                                                 rf"installed: pip install 'linrnn\[{extra}\]'\n", done.stdout), \
        done.stdout + done.stderr[-2000:]

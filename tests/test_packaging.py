"""Packaging and layering: one package with a root, and imports that only point down the layers.

The layers, from the bottom up (docs/architecture.md):

    impls        the contract, the reference, the PyTorch side, the JAX side
    verify       the cross-check, `linrnn conform` and its adapters, the benchmarks: may use impls
    theory       derivations: may use impls' framework-neutral modules, never torch or JAX
    tasks        generators and training: may use impls
    experiments  measurements that run the implementations: may use impls, theory, tasks
    reports      loads results, settles the ledger, renders: may use everything below it
    linrnn       the root (version, command line); linrnn.testing, the public testing API: may use impls, verify

Inside impls the PyTorch and JAX sides never import each other or the reference, and the
framework-neutral modules import neither framework.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

import linrnn

ROOT = pathlib.Path(__file__).resolve().parents[1]
AREAS = ("impls", "verify", "theory", "tasks", "experiments", "reports")
FRAMEWORKS = ("torch", "jax", "jaxlib", "flax", "triton")

# area (or sub-folder of impls) -> module prefixes it must never import
RULES: dict[str, tuple[str, ...]] = {
    "impls": ("linrnn.verify", "linrnn.theory", "linrnn.tasks", "linrnn.experiments", "linrnn.reports", "linrnn.cli"),
    "verify": ("linrnn.theory", "linrnn.tasks", "linrnn.experiments", "linrnn.reports", "linrnn.cli"),
    "theory": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax", "linrnn.verify",
                            "linrnn.tasks", "linrnn.experiments", "linrnn.reports", "linrnn.cli"),
    "tasks": ("linrnn.verify", "linrnn.experiments", "linrnn.reports", "linrnn.cli"),
    "experiments": ("linrnn.reports", "linrnn.cli"),
    "reports": ("linrnn.cli",),
    "impls/torch": ("jax", "jaxlib", "flax", "linrnn.impls.jax", "linrnn.impls.reference"),
    "impls/jax": ("torch", "triton", "linrnn.impls.torch", "linrnn.impls.reference"),
    "impls/reference": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax"),
    # the specs name each side's implementation as a string, imported on first use: never at import time
    "impls/specs": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax", "linrnn.impls.reference"),
    # the public testing API sits on verify (the conform battery) and impls; a framework only inside a function, when
    # a user's array of it is handed in (tests/testing/test_plugin.py: loading the plugin imports none)
    "linrnn/testing": ("linrnn.theory", "linrnn.tasks", "linrnn.experiments", "linrnn.reports", "linrnn.cli"),
}
# The framework-neutral modules directly in impls/ import neither framework, except the cross-check
# engine, whose job is to run every backend (it reaches them through the backends registry).
NEUTRAL_EXCEPTIONS = {"crosscheck.py"}


def imported_names(path: pathlib.Path, package: str) -> set[str]:
    """Every module a file imports: `import`, `from ... import` (relative ones resolved), and string
    literals passed to `importlib.import_module`, at any depth (imports inside functions count)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                names.add(node.module)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return names


def _matches(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(root: pathlib.Path) -> list[str]:
    """'file imports module (rule)' for every import that points up or across the layers."""
    found = []
    for rule, forbidden in RULES.items():
        folder = root / rule
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(root)
            package = "linrnn." + ".".join(rel.parent.parts)
            for name in sorted(imported_names(path, package)):
                if _matches(name, forbidden):
                    found.append(f"{rel} imports {name} (forbidden in {rule}/)")
    for path in sorted((root / "impls").glob("*.py")):
        if path.name in NEUTRAL_EXCEPTIONS:
            continue
        for name in sorted(imported_names(path, "linrnn.impls")):
            if _matches(name, FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax")):
                found.append(f"{path.relative_to(root)} imports {name} (framework-neutral impls/ module)")
    # verify/: `*_torch.py` is the PyTorch side's (no JAX), `*_jax.py` the JAX side's (no PyTorch); the others are
    # framework-neutral, except the cross-check, whose job is to run every backend
    torch_side, jax_side = ("jax", "jaxlib", "flax", "linrnn.impls.jax"), ("torch", "triton", "linrnn.impls.torch")
    for path in sorted((root / "verify").glob("*.py")) if (root / "verify").is_dir() else []:
        if path.name in NEUTRAL_EXCEPTIONS:
            continue
        forbidden = (torch_side if path.stem.endswith("_torch") else jax_side if path.stem.endswith("_jax")
                     else FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax"))
        for name in sorted(imported_names(path, "linrnn.verify")):
            if _matches(name, forbidden):
                found.append(f"{path.relative_to(root)} imports {name} (verify/ keeps the frameworks apart)")
    return found


def test_the_layers_are_respected():
    assert violations(ROOT) == []


@pytest.mark.parametrize("area, line", [
    ("impls", "from linrnn.reports import ledger"),
    ("impls/torch", "import jax.numpy as jnp"),
    ("impls/jax", "from linrnn.impls.reference import apply_mixer"),
    ("impls/torch", "from ..reference import rotrnn"),
    ("theory", "    import torch"),
    ("tasks", "importlib.import_module('linrnn.reports.ledger')"),
    ("experiments", "from linrnn.reports.plots import figure"),
    ("impls", "from linrnn.impls.jax import layer"),
    ("impls", "from linrnn.verify import crosscheck"),
    ("verify", "from linrnn.tasks import grid"),
    ("verify", "import torch"),
])
def test_an_upward_import_is_caught(tmp_path, area, line):
    """Plant one forbidden import in a copy-shaped tree: the check names it."""
    folder = tmp_path / area
    folder.mkdir(parents=True)
    body = "import importlib\n\ndef f():\n" + "\n".join("    " + ln.strip() for ln in line.splitlines()) + "\n"
    (folder / "planted.py").write_text(body)
    found = violations(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{area}/planted.py imports"), found


def test_every_package_folder_is_installed():
    """Every folder with an `__init__.py` imports as its `linrnn.` sub-package, from this checkout."""
    for area in AREAS:
        for init in (ROOT / area).rglob("__init__.py"):
            name = ".".join(("linrnn", area, *init.parent.relative_to(ROOT / area).parts))
            module = importlib.import_module(name)
            assert pathlib.Path(module.__file__).resolve() == init.resolve(), name


def test_the_package_has_a_root():
    assert isinstance(linrnn.__version__, str) and linrnn.__version__[0].isdigit()
    out = subprocess.run([sys.executable, "-m", "linrnn", "--version"], capture_output=True, text=True,
                         cwd=ROOT.parent, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"linrnn {linrnn.__version__}", out

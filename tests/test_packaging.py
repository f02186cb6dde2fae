"""Packaging: every sub-package is installed, and the framework sides do not import each other."""

import ast
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOP = {"impls": "linrnn.impls", "theory": "linrnn.theory", "tasks": "linrnn.tasks", "reports": "linrnn.reports"}


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for folder, package in TOP.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *rel)))
    assert found == listed, f"pyproject.toml packages differ: missing {found - listed}, stale {listed - found}"


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _side(folder: str) -> list[pathlib.Path]:
    return sorted((ROOT / "impls" / folder).glob("*.py"))


def test_reference_imports_neither_framework():
    for path in _side("reference") + sorted((ROOT / "impls").glob("*.py")):
        bad = {n for n in _imports(path) if n.split(".")[0] in ("torch", "jax", "jaxlib", "flax")
               or n.startswith(("linrnn.impls.torch", "linrnn.impls.jax"))}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_torch_and_jax_sides_do_not_cross():
    rules = {"torch": ("jax", "jaxlib", "flax", "linrnn.impls.jax", "linrnn.impls.reference"),
             "jax": ("torch", "linrnn.impls.torch", "linrnn.impls.reference")}
    for side, forbidden in rules.items():
        for path in _side(side):
            bad = {n for n in _imports(path) if n == forbidden or n.startswith(forbidden)
                   and any(n == f or n.startswith(f + ".") for f in forbidden)}
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"

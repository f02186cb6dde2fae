"""Packaging and layering: one package with a root, and imports that only point down the layers.

The layers are docs/architecture.md's table ("The layers"), written once more here as `LAYERS`: each area and the
areas it may import; every other area, and the root's command line and public testing API, are forbidden to it
(`test_the_docs_state_these_layers` checks that the page and this table say the same). Inside impls the PyTorch and
JAX sides never import each other or the reference, and the framework-neutral modules import neither framework.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
import subprocess
import sys

import pytest

import linrnn

ROOT = pathlib.Path(__file__).resolve().parents[1]
AREAS = ("base", "impls", "verify", "theory", "tasks", "experiments", "reports")
FRAMEWORKS = ("torch", "jax", "jaxlib", "flax", "triton")
ROOT_LAYER = ("linrnn.cli", "linrnn.testing")   # the top: the command line and the public testing API

# area -> the areas it may import, from the bottom up (docs/architecture.md, "The layers"); `linrnn` is the root's
# public testing API, linrnn/testing (the root's command line dispatches to every area); it imports a framework only
# inside a function, when a user's array of it is handed in (tests/testing/test_plugin.py)
LAYERS: dict[str, tuple[str, ...]] = {
    "base": (),
    "impls": ("base",),
    "verify": ("base", "impls"),
    "theory": ("base", "impls"),
    "tasks": ("base", "impls"),
    "experiments": ("base", "impls", "verify", "theory", "tasks"),
    "reports": ("base", "experiments"),
    "linrnn": ("base", "impls", "verify"),
}
LAYER_FOLDERS = {"linrnn": "linrnn/testing"}


def _layer_rule(area: str) -> tuple[str, ...]:
    """The module prefixes an area must never import: every area it may not use, and the root layer but itself."""
    own = "linrnn." + LAYER_FOLDERS.get(area, area).replace("/", ".").removeprefix("linrnn.")
    others = tuple(f"linrnn.{a}" for a in AREAS if a != area and a not in LAYERS[area])
    return others + tuple(name for name in ROOT_LAYER if name != own)


# folder -> module prefixes it must never import
RULES: dict[str, tuple[str, ...]] = {
    **{LAYER_FOLDERS.get(area, area): _layer_rule(area) for area in LAYERS},
    # theory uses impls' framework-neutral modules only
    "theory": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax") + _layer_rule("theory"),
    "impls/torch": ("jax", "jaxlib", "flax", "linrnn.impls.jax", "linrnn.impls.reference"),
    "impls/jax": ("torch", "triton", "linrnn.impls.torch", "linrnn.impls.reference"),
    "impls/reference": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax"),
    # the specs name each side's implementation as a string, imported on first use: never at import time
    "impls/specs": FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax", "linrnn.impls.reference"),
}
# How a measurement decides stands on base alone: the claim experiments, the sections' measurements and the ledger all
# decide through it (docs/architecture.md, "What each folder holds"); of the package it may import only these
STANDS_ON_BASE = {"experiments/decide": ("linrnn.base", "linrnn.experiments.decide")}
# The framework-neutral modules of impls/ and verify/ import neither framework, except verify's cross-check engine,
# whose job is to run every backend (it reaches them through the backends registry).
RUNS_EVERY_BACKEND = {"verify/crosscheck.py"}


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
    for rule, allowed in STANDS_ON_BASE.items():
        for path in sorted((root / rule).rglob("*.py")) if (root / rule).is_dir() else []:
            package = "linrnn." + ".".join(path.relative_to(root).parent.parts)
            for name in sorted(imported_names(path, package)):
                if _matches(name, ("linrnn",)) and not _matches(name, allowed):
                    found.append(f"{path.relative_to(root)} imports {name} ({rule}/ stands on "
                                 f"{' and '.join(allowed)} only)")
    for area in ("base", "impls"):
        for path in sorted((root / area).glob("*.py")):
            for name in sorted(imported_names(path, f"linrnn.{area}")):
                if _matches(name, FRAMEWORKS + ("linrnn.impls.torch", "linrnn.impls.jax")):
                    found.append(f"{path.relative_to(root)} imports {name} (framework-neutral {area}/ module)")
    # verify/: `*_torch.py` is the PyTorch side's (no JAX), `*_jax.py` the JAX side's (no PyTorch); the others are
    # framework-neutral, except the cross-check, whose job is to run every backend
    torch_side, jax_side = ("jax", "jaxlib", "flax", "linrnn.impls.jax"), ("torch", "triton", "linrnn.impls.torch")
    for path in sorted((root / "verify").glob("*.py")) if (root / "verify").is_dir() else []:
        if path.relative_to(root).as_posix() in RUNS_EVERY_BACKEND:
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
    ("base", "from linrnn.impls import specs"),
    ("base", "import torch"),
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
    ("tasks", "from linrnn.theory import rotation"),
    ("tasks", "from linrnn.testing import assert_close"),
    ("theory", "from linrnn.tasks import grid"),
    ("experiments", "from linrnn.cli import main"),
    ("linrnn/testing", "from linrnn.tasks import grid"),
    ("impls", "import linrnn.testing"),
    ("experiments/decide", "from linrnn.experiments.claims import runner"),
    ("experiments/decide", "from linrnn.experiments import normstudy"),
    ("experiments/decide", "from linrnn.impls.specs import spec"),
    ("reports", "from linrnn.verify.conform import run"),
    ("reports/sections", "from linrnn.tasks.grid import thin"),
])
def test_an_upward_import_is_caught(tmp_path, area, line):
    """Plant one forbidden import in a copy-shaped tree: the check names it."""
    folder = tmp_path / area
    folder.mkdir(parents=True)
    body = "import importlib\n\ndef f():\n" + "\n".join("    " + ln.strip() for ln in line.splitlines()) + "\n"
    (folder / "planted.py").write_text(body)
    found = violations(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{area}/planted.py imports"), found


def documented_layers(text: str) -> dict[str, tuple[str, ...]]:
    """The layer table of docs/architecture.md as area -> the areas it may use ("everything below it": all above it
    in the table); the areas named in a line's "may use ..." clause, in the table's order."""
    block = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, tuple[str, ...]] = {}
    for line in block.splitlines():
        match = re.match(r"    (\w+)\s+(.*)$", line)
        if not match:
            continue
        area, text_ = match.groups()
        uses = text_.split("may use", 1)[1] if "may use" in text_ else ""
        below = tuple(layers)
        named = tuple(a for a in AREAS if re.search(rf"\b{a}\b", uses))
        layers[area] = below if "everything below" in uses else named
    return layers


def test_the_docs_state_these_layers():
    """docs/architecture.md's layer table and `LAYERS` name the same areas in the same order, each allowed the same."""
    documented = documented_layers((ROOT / "docs" / "architecture.md").read_text())
    assert list(documented) == list(LAYERS)
    assert {area: set(uses) for area, uses in documented.items()} == {a: set(u) for a, u in LAYERS.items()}


def test_a_layer_the_docs_state_differently_is_caught():
    text = (ROOT / "docs" / "architecture.md").read_text()
    planted = re.sub(r"(\n    tasks .*may use base, impls)", r"\1, theory", text, count=1)
    assert planted != text and documented_layers(planted)["tasks"] == ("base", "impls", "theory")


def test_the_exception_names_a_file_that_exists():
    for rel in RUNS_EVERY_BACKEND:
        assert (ROOT / rel).is_file(), f"RUNS_EVERY_BACKEND names {rel}, which is not in the checkout"


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


def model_modules() -> dict[str, dict[str, str]]:
    """backend -> {module name: kind} of the built-in models' own files on each side (their specs' `implementations`,
    the class's module for "module:Class"), and the specs' own files as "specs"."""
    from linrnn.impls import specs

    found: dict[str, dict[str, str]] = {"specs": {}}
    for kind in specs.BUILTIN:
        spec = specs.spec(kind)
        found["specs"][spec.config.__module__] = kind
        for backend, where in spec.implementations.items():
            found.setdefault(backend, {})[where.partition(":")[0]] = kind
    return found


def imported_submodules(path: pathlib.Path) -> set[str]:
    """`from package import name` as package.name too (a submodule imported by name)."""
    return {f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module and not node.level for alias in node.names}


def sibling_imports(root: pathlib.Path) -> list[str]:
    """'file imports module' for every model file that imports another model's file on its side (a shared helper
    belongs in the side's shared modules: docs/architecture.md, "How to add a model")."""
    found = []
    for backend, modules in model_modules().items():
        for module, kind in modules.items():
            path = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
            names = imported_names(path, module.rsplit(".", 1)[0]) | imported_submodules(path)
            others = {m for m in modules for name in names if _matches(name, (m,)) and modules[m] != kind}
            found.extend(f"{path.relative_to(root)} imports {m} ({modules[m]}'s own file)" for m in sorted(others))
    return found


def test_no_model_imports_another_models_file():
    assert len(model_modules()["torch"]) == len(model_modules()["specs"]) >= 7
    assert sibling_imports(ROOT) == []


def test_a_sibling_import_is_caught(tmp_path):
    """A copy of the project's S5 reference that imports the LRU's file again: the check names it."""
    for module in {m for modules in model_modules().values() for m in modules}:
        target = tmp_path.joinpath(*module.split(".")[1:]).with_suffix(".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py")).read_text())
    s5 = tmp_path / "impls" / "reference" / "s5.py"
    s5.write_text(s5.read_text() + "\nfrom linrnn.impls.reference.lru import eigenvalues\n")
    s4d = tmp_path / "impls" / "jax" / "s4d.py"
    s4d.write_text(s4d.read_text() + "\nfrom linrnn.impls.jax import dlr\n")
    assert sibling_imports(tmp_path) == ["impls/reference/s5.py imports linrnn.impls.reference.lru (lru's own file)",
                                         "impls/jax/s4d.py imports linrnn.impls.jax.dlr (dlr's own file)"]


OLD_HOMES = ("linrnn.impls.errors", "linrnn.impls.results", "linrnn.impls.tolerance")   # kept for users (base/)
OLD_HOME_FILES = {"/".join(name.split(".")[1:]) + ".py" for name in OLD_HOMES}


def test_the_old_homes_of_the_base_modules_are_the_same_modules_and_unused_inside():
    """`linrnn.impls.errors`, `.results` and `.tolerance` import as `linrnn.base`'s modules themselves; no module of
    the package imports them by those names (docs/architecture.md, "What moved where")."""
    for old in OLD_HOMES:
        assert importlib.import_module(old) is importlib.import_module(old.replace(".impls.", ".base."))
    users = [f"{path.relative_to(ROOT)} imports {name}" for area in ("linrnn",) + AREAS
             for path in sorted((ROOT / area).rglob("*.py"))
             if path.relative_to(ROOT).as_posix() not in OLD_HOME_FILES
             for name in imported_names(path, "linrnn." + ".".join(path.relative_to(ROOT).parent.parts))
             if _matches(name, OLD_HOMES)]
    assert users == []

"""A pytest plugin that registers the toy model of `toy_source.py` for a whole run, as a model added by the recipe
(docs/architecture.md, "How to add a model") would be: `pytest -p toy_plugin` with this folder on PYTHONPATH.

The toy's package is written into a temporary folder (`build`) and its spec registered before any test is
collected, so that every table of kinds the tests read (parametrize lists, messages) holds it. With `--toy-only`,
an item runs when the toy is one of its parameters, or when no built-in kind is and its function reads the registry
(`READS_KINDS`); the others are deselected: with the toy registered they run as they do without it.
`tests/models/test_seventh_model.py` runs the files that name kinds (`kind_files`) so, in a subprocess.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("toy_source.py")
PACKAGE = "toy_seventh_model"


def build(root: Path, package: str = PACKAGE):
    """Write the toy's package under `root` (spec, reference, PyTorch and JAX sides), put `root` on sys.path and
    return its spec module (not yet registered)."""
    folder = root / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    shutil.copy(SOURCE, folder / "spec.py")
    namespace: dict = {}
    exec(compile(SOURCE.read_text(), str(SOURCE), "exec"), namespace)
    (folder / "reference.py").write_text(namespace["REFERENCE"])
    (folder / "torch_side.py").write_text(namespace["TORCH"].replace("{package}", package))
    (folder / "jax_side.py").write_text(namespace["JAX"])
    sys.path.insert(0, str(root))
    return importlib.import_module(f"{package}.spec")


def remove(root: Path, package: str = PACKAGE) -> None:
    """Undo `build`: its folder off sys.path and its modules forgotten (the spec is unregistered by the caller)."""
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def pytest_addoption(parser):
    parser.addoption("--toy-only", action="store_true", default=False,
                     help="with the toy registered: deselect the items parametrized by a built-in kind alone")


def pytest_configure(config):
    from linrnn.impls import specs

    root = Path(tempfile.mkdtemp(prefix="linrnn-toy-"))
    config._toy_root = root
    specs.register(build(root).spec(PACKAGE))


def pytest_unconfigure(config):
    root = getattr(config, "_toy_root", None)
    if root is not None:
        from linrnn.impls import specs

        if "toy" in specs.kinds():
            specs.unregister("toy")
        remove(root)
        shutil.rmtree(root, ignore_errors=True)


def _values(item) -> list:
    """Every parameter value of a parametrized item, tuples flattened."""
    spec = getattr(item, "callspec", None)
    out: list = []
    for value in (spec.params.values() if spec else ()):
        out.extend(value if isinstance(value, (tuple, list)) else (value,))
    return out


# what a test reads when it lists the registered kinds: the registry's tables and the one-line errors naming them
READS_KINDS = re.compile(r"KINDS\b|kinds\(|MIXER_CONFIGS|specs\.SPECS|BUILTIN|expected one of|\.models\(\)")


def kind_files(root: Path) -> list[Path]:
    """The test files of the default run (tests/, properties/) that name kinds: those whose text reads the registry
    or lists kinds in a message (`READS_KINDS`), but the toy's own test and this plugin."""
    found = []
    for folder in ("tests", "properties"):
        for path in sorted((root / folder).rglob("test_*.py")):
            if "outside" in path.parts or path.name == "test_seventh_model.py":
                continue
            if READS_KINDS.search(path.read_text()):
                found.append(path)
    return found


def _reads_kinds(item) -> bool:
    try:
        return bool(READS_KINDS.search(inspect.getsource(item.function)))
    except (OSError, TypeError):
        return True


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--toy-only"):
        return
    from linrnn.impls import specs

    builtin = set(specs.BUILTIN)
    keep, drop = [], []
    for item in items:
        values = [v for v in _values(item) if isinstance(v, str)]
        mine = "toy" in values or (not builtin.intersection(values) and _reads_kinds(item))
        (keep if mine else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

"""Which optional extra of linrnn installs which import, and the one-line error when one is missing.

`pip install linrnn` installs the core only (NumPy and SciPy: the reference, the tolerance table, the conform battery
and `linrnn.testing`); everything else comes with an extra (pyproject.toml, docs/testing.md's install lines):

    torch       PyTorch: the PyTorch side (`--backend torch`)
    jax         JAX and optax: the JAX side (`--backend jax`, `linrnn train --backend jax` with [train])
    theory      SymPy and threadpoolctl: `linrnn theory`
    train       PyTorch, tqdm, Pillow, scikit-learn: `linrnn train`, `linrnn tasks` (the trivial bars, the data)
    report      everything `linrnn report` runs: [torch], [jax], [theory], [train], statsmodels, Matplotlib, Jinja2
    hypothesis  Hypothesis: `linrnn.testing.strategies`
    cluster (submitit), logs (TensorBoard, wandb), peers (the published implementations), all, test

`missing(err, what)` turns a `ModuleNotFoundError` of one of these modules into a `MissingExtra`: a `LinrnnError`
(the command line prints it as one line, exit 2) that is also a `ModuleNotFoundError` (so `except ImportError` and
`pytest.importorskip` treat it as before). `require(module, what)` imports a module or raises that error. The
command line (`linrnn.cli`) turns any such error of any command into that line; a command with an extra of its own
(`COMMANDS`) names it, since it needs more than the one module that was missing first.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from linrnn.base.errors import LinrnnError

# the top-level module -> (what it is, the distribution that installs it (None: it comes with another), its own extra)
MODULES: dict[str, tuple[str, str | None, str]] = {
    "torch": ("PyTorch", "torch", "torch"),
    "jax": ("JAX", "jax", "jax"),
    "jaxlib": ("JAX", None, "jax"),
    "optax": ("optax", "optax", "jax"),
    "sympy": ("SymPy", "sympy", "theory"),
    "threadpoolctl": ("threadpoolctl", "threadpoolctl", "theory"),
    "tqdm": ("tqdm", "tqdm", "train"),
    "PIL": ("Pillow", "pillow", "train"),
    "sklearn": ("scikit-learn", "scikit-learn", "train"),
    "statsmodels": ("statsmodels", "statsmodels", "report"),
    "matplotlib": ("Matplotlib", "matplotlib", "report"),
    "jinja2": ("Jinja2", "jinja2", "report"),
    "markupsafe": ("MarkupSafe", None, "report"),
    "submitit": ("submitit", "submitit", "cluster"),
    "tensorboard": ("TensorBoard", "tensorboard", "logs"),
    "wandb": ("wandb", "wandb", "logs"),
    "hypothesis": ("Hypothesis", "hypothesis", "hypothesis"),
}

# the extra -> the modules above it installs (pyproject.toml's optional-dependencies say the same: tests/test_extras.py)
INSTALLS: dict[str, frozenset[str]] = {
    "torch": frozenset({"torch"}),
    "jax": frozenset({"jax", "jaxlib", "optax"}),
    "theory": frozenset({"sympy", "threadpoolctl"}),
    "train": frozenset({"torch", "tqdm", "PIL", "sklearn"}),
    "cluster": frozenset({"submitit"}),
    "logs": frozenset({"tensorboard", "wandb"}),
    "hypothesis": frozenset({"hypothesis"}),
}
INSTALLS["report"] = INSTALLS["jax"] | INSTALLS["theory"] | INSTALLS["train"] | {"statsmodels", "matplotlib", "jinja2",
                                                                                  "markupsafe"}

# the command (`linrnn COMMAND`) -> the extra that installs everything it runs, where that is more than one module's
COMMANDS: dict[str, str] = {
    "theory": "theory",
    "train": "train", "tasks": "train",
    "experiment": "report", "reduced-training": "report", "precision-map": "report", "bench": "report",
    "gpucheck": "report", "crosscheck": "report", "report": "report",
}


class MissingExtra(ModuleNotFoundError, LinrnnError):
    """An optional dependency is not installed: the message names the extra that installs it."""


def extra_of(module: str | None) -> str | None:
    """The extra that installs the top-level `module`, or None for any other module (a submodule missing from an
    installed package is not a missing extra)."""
    entry = MODULES.get(module or "")
    return entry[2] if entry else None


def message(module: str, what: str, extra: str | None = None) -> str:
    """"WHAT needs PyTorch (torch), which is not installed: pip install 'linrnn[torch]'"; `extra` (a command's own)
    is named where it installs the module, else the module's own extra is."""
    name, _, own = MODULES[module]
    extra = extra if extra in INSTALLS and module in INSTALLS[extra] else own
    return f"{what} needs {name} ({module}), which is not installed: pip install 'linrnn[{extra}]'"


def missing(err: ImportError, what: str, extra: str | None = None) -> MissingExtra | None:
    """The one-line error for `err` when the module it misses comes with an extra of linrnn, else None (a module of
    linrnn's own, or any other: not an extra's, so a bug or the user's own import). `extra` overrides the module's
    own extra (a command that needs a whole set)."""
    name = getattr(err, "name", None)      # a MissingExtra too: said again for `what` (a command, a backend)
    if not isinstance(err, ModuleNotFoundError) or extra_of(name) is None:
        return None
    return MissingExtra(message(name, what, extra), name=name)


def require(module: str, what: str, extra: str | None = None) -> ModuleType:
    """`module` imported, or a `MissingExtra` naming the extra that installs it (`what`: who needs it)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        found = missing(err, what, extra)
        if found is None:
            raise
        raise found from None

"""Real datasets of the papers (Long Range Arena, Speech Commands) and the two DLR data tasks.

Every task has a loader module with the same interface (docs/data.md, "Writing a loader"):

    dataset(root, cache=None, **options) -> Dataset    the located folder, options and build recipe
    load(root, split, cache=None, **options) -> Split  memory-mapped arrays of one split
    check(root, cache=None, **options) -> list[str]    every problem found, one line each
    info(root, cache=None, **options) -> list[str]     what the loader sees, without parsing
    _options(options) -> Options                       the options checked, without a folder (`check_options`)

The registry maps a task name to its module *by name*, imported when first used, so a task whose
module is not there (yet) is one clear error and the others keep working. A registry entry may fix
options of a shared module (the two Speech Commands tasks share one module).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from linrnn.base.errors import LinrnnError

# task name -> (loader module, options that the task name fixes)
LOADERS: dict[str, tuple[str, dict]] = {
    "listops": ("linrnn.tasks.data.listops", {}),
    "text": ("linrnn.tasks.data.text", {}),
    "retrieval": ("linrnn.tasks.data.retrieval", {}),
    "image": ("linrnn.tasks.data.image", {}),
    "pathfinder": ("linrnn.tasks.data.pathfinder", {}),  # options: resolution 32|64|128 (128 = Path-X), difficulty
    "sc35": ("linrnn.tasks.data.speech", {"variant": "sc35"}),
    "sc10": ("linrnn.tasks.data.speech", {"variant": "sc10"}),
    "listops-subtrees": ("linrnn.tasks.data.listops_subtrees", {}),
    "pathfinder-segmentation": ("linrnn.tasks.data.pathfinder_segmentation", {}),
}
TASKS = tuple(LOADERS)


def loader(task: str) -> tuple[ModuleType, dict]:
    """The loader module of `task` and the options its name fixes; a one-line error if the task is
    unknown or its module is not installed."""
    if task not in LOADERS:
        raise LinrnnError(f"unknown data task {task!r}: expected one of {', '.join(TASKS)}")
    module_name, fixed = LOADERS[task]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        raise LinrnnError(f"data task {task!r}: its loader {module_name} is not there yet") from None
    return module, dict(fixed)


def check_options(task: str, **options):
    """The loader's options of `task`, checked without touching any folder (a one-line error if bad)."""
    module, fixed = loader(task)
    return module._options(fixed | options)


def load(task: str, root, split: str, cache=None, **options):
    """Load one split of `task` from `root` (see the module docstrings); a `Split` of mapped arrays."""
    module, fixed = loader(task)
    return module.load(root, split, cache=cache, **(fixed | options))

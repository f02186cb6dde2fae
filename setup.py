"""Package discovery for setuptools (everything else is in pyproject.toml).

The import package `linrnn` is spread over the repository's top-level folders: `linrnn/` holds its root
(version, `python -m linrnn`, the command line) and each folder in `AREAS` is one sub-package
(`base/` -> `linrnn.base`, `impls/` -> `linrnn.impls`, ...). Every folder below them, and below `linrnn/` (`linrnn/testing/`), with an
`__init__.py` is found here, so a new sub-package needs no edit anywhere.
"""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
AREAS = ("base", "impls", "verify", "theory", "tasks", "experiments", "reports")   # top-level folders that are sub-packages


def packages() -> list[str]:
    found = ["linrnn"]
    for init in sorted((ROOT / "linrnn").rglob("__init__.py")):     # the root's own sub-packages (linrnn.testing)
        if init.parent != ROOT / "linrnn":
            found.append(".".join(("linrnn", *init.parent.relative_to(ROOT / "linrnn").parts)))
    for area in AREAS:
        for init in sorted((ROOT / area).rglob("__init__.py")):
            found.append(".".join(("linrnn", area, *init.parent.relative_to(ROOT / area).parts)))
    return found


setup(
    packages=packages(),
    package_dir={"linrnn": "linrnn", **{f"linrnn.{area}": area for area in AREAS}},
)

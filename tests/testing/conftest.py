"""tests/testing: linrnn.testing, its strategies and its pytest plugin. `outside/` is a separate package (its own
pyproject.toml) whose tests run in a subprocess of their own (test_outside_package.py), never collected here.

linrnn as a user's package installs it: `linrnn_wheel` builds the wheel (from a copy of the source, so that nothing is
written into the work tree: about 2 s), `fresh_venv(folder, link=...)` makes a virtual environment without pip (pip
runs from here with `--python`), its site-packages extended, where asked, by links to distributions already installed
here (what they require comes along; `pip install` then finds them installed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest

collect_ignore = ["outside"]

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "linrnn", "base", "impls", "verify", "theory", "tasks",
           "experiments", "reports")
SKIP_IN_COPY = shutil.ignore_patterns("__pycache__", "*.egg-info", ".hypothesis", "results", "*.npz", "*.pt")


def pip(python: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """This environment's pip, run for the interpreter `python` (`pip --python`): the venv needs no pip of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def linrnn_wheel(tmp_path_factory) -> Path:
    """linrnn's wheel, built without build isolation from a copy of the sources (setup.py's packages, the templates);
    skips, saying why, only where no wheel can be built here (no setuptools >= 77)."""
    try:
        import setuptools
        major = int(setuptools.__version__.split(".")[0])
    except ImportError:
        major = 0
    if major < 77:
        pytest.skip("building linrnn's wheel needs setuptools >= 77 (pyproject.toml's build-system), not installed "
                    "here")
    copy = tmp_path_factory.mktemp("linrnn-source")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=SKIP_IN_COPY)
        elif source.exists():
            shutil.copy2(source, copy / name)
    out = copy / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(out), str(copy)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (wheel,) = out.glob("linrnn-*.whl")
    return wheel


def requirements(name: str) -> list[str]:
    """The distributions `name` requires here (no extras; markers evaluated for this interpreter)."""
    from packaging.requirements import Requirement
    found = []
    for text in metadata.distribution(name).requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found.append(req.name)
    return found


def link_distributions(folder: Path, names) -> list[str]:
    """Links in `folder` to the installed files (packages, modules, dist-info) of each distribution named and of
    everything it requires, from this environment; returns the distributions linked."""
    folder.mkdir(parents=True, exist_ok=True)
    todo, seen = list(names), {}
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue                          # an optional requirement not installed here
        seen[name] = dist
        todo += requirements(name)
    for dist in seen.values():
        base = Path(dist.locate_file(""))
        for top in sorted({f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] not in ("..", "__pycache__")
                           and not f.parts[0].endswith(".data")}):
            if (base / top).exists() and not (folder / top).exists():
                (folder / top).symlink_to(base / top)
    return sorted(seen)


@pytest.fixture(scope="session")
def fresh_venv():
    """make(folder, link=()) -> the venv's python: a new virtual environment without pip; `link` names distributions
    of this environment that its site-packages see (a .pth file to a folder of links, `link_distributions`)."""
    def make(folder: Path, link=()) -> Path:
        venv.EnvBuilder(with_pip=False, clear=True).create(folder)
        python = folder / "bin" / "python"
        if link:
            site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                       capture_output=True, text=True, check=True).stdout.strip())
            linked = link_distributions(folder / "linked", link)
            (site / "linked.pth").write_text(str(folder / "linked") + "\n")
            (folder / "linked.txt").write_text("\n".join(linked) + "\n")
        return python
    return make


@pytest.fixture(scope="session")
def venv_pip():
    """pip(python, *args): this environment's pip for another interpreter (`pip`)."""
    return pip

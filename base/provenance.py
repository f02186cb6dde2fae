"""Provenance of every results file: the code version, the libraries, the machine."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = ("linrnn", "numpy", "scipy", "sympy", "torch", "jax", "jaxlib", "matplotlib", "jinja2")


def code_version() -> str:
    """The package version, plus the git commit (and '-dirty') when run from a checkout."""
    version = metadata.version("linrnn")
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return f"{version}+g{commit}{'-dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return version


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def machine() -> dict[str, Any]:
    return {
        "label": os.environ.get("LINRNN_MACHINE_LABEL") or socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }

"""tools/install-peers.sh, the README's set-up step for the peers installed apart, and what runs it:

- the README's first command and .ci/run install the `[peers]` extra and run the script (CI with --strict);
- a bad argument or no active environment is one line and exit status 2;
- a peer that does not install is one warning line naming it and pip's last line, the others still tried, exit 0;
  with --strict the first such peer stops the script with pip's status;
- the pins are the versions docs/conform.md names.

pip itself is a stand-in here (a `python` first on PATH that records its arguments and fails for one package): the
real installs are measured by the set-up (README) and run by CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "install-peers.sh"
PINS = {"lrnnx": "1.0.0.post1", "recurrentgemma": "1.0.1", "mamba-ssm": "2.3.2.post1"}

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")


def run(tmp_path, *args, fail: str = "", venv: bool = True):
    """The script with a stand-in `python` that logs `ENV ARGS` and fails (exit 3) for the package `fail`."""
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    (shim / "python").write_text(
        "#!/bin/sh\n"
        f'echo "MAMBA_SKIP_CUDA_BUILD=${{MAMBA_SKIP_CUDA_BUILD:-}} $*" >> "{log}"\n'
        f'case "$*" in *"{fail or "-none-"}=="*) echo "WARNING: Location x is ignored" >&2; '
        'echo "ERROR: No matching distribution" >&2; exit 3;; esac\n')
    (shim / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["PATH"] = f"{shim}:{env['PATH']}"
    if venv:
        env["VIRTUAL_ENV"] = str(tmp_path / "venv")
    done = subprocess.run(["sh", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return done, calls


def test_the_readme_and_ci_install_the_peers():
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n```", readme, re.S).group(1)
    assert "\n" not in first and first.startswith("python3 -m venv .venv && ") and first.endswith(" && linrnn report")
    assert "pip install -e '.[report,test,peers]' && sh tools/install-peers.sh && linrnn report" in first
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet -e '.[report,test,peers]'\n" in ci and "\nsh tools/install-peers.sh --strict\n" in ci
    docs = (ROOT / "docs" / "conform.md").read_text()
    for name, version in PINS.items():
        assert f"{name}=={version}" in SCRIPT.read_text() and f"{name}=={version}" in docs, name


def test_each_peer_is_installed_without_its_dependencies(tmp_path):
    done, calls = run(tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert calls == [
        "MAMBA_SKIP_CUDA_BUILD= -m pip install --quiet --no-deps --no-build-isolation lrnnx==1.0.0.post1",
        "MAMBA_SKIP_CUDA_BUILD= -m pip install --quiet --no-deps recurrentgemma==1.0.1",
        "MAMBA_SKIP_CUDA_BUILD=TRUE -m pip install --quiet --no-deps --no-build-isolation mamba-ssm==2.3.2.post1"]


def test_a_peer_that_does_not_install_is_a_warning_or_with_strict_the_end(tmp_path):
    done, calls = run(tmp_path, fail="recurrentgemma")
    assert done.returncode == 0 and len(calls) == 3
    assert done.stderr.splitlines() == [
        "install-peers.sh: recurrentgemma did not install (pip exit 3): ERROR: No matching distribution",
        "install-peers.sh: not installed: recurrentgemma; the report shows their stored findings (linrnn conform "
        "--peers)"]
    done, calls = run(tmp_path / "strict" if (tmp_path / "strict").mkdir() is None else tmp_path, "--strict",
                      fail="recurrentgemma")
    assert done.returncode == 3 and len(calls) == 2 and done.stderr.splitlines() == [
        "install-peers.sh: recurrentgemma did not install (pip exit 3): ERROR: No matching distribution"]


def test_bad_input_is_one_line(tmp_path):
    done, calls = run(tmp_path, "--quiet")
    assert (done.returncode, done.stderr, calls) == (
        2, "install-peers.sh: expected no argument or --strict, found '--quiet'\n", [])
    done, calls = run(tmp_path, venv=False)
    assert (done.returncode, done.stderr, calls) == (
        2, "install-peers.sh: expected an active virtual environment (. .venv/bin/activate), found none\n", [])

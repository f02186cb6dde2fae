"""Helpers shared by every test folder: the `linrnn` command line in-process (`cli`)."""

import pytest

from linrnn.cli import main


class CLI:
    """`linrnn` in-process: `run` returns (exit status, stdout, stderr); `error_line` expects a one-line failure."""

    def __init__(self, capsys):
        self.capsys = capsys

    def run(self, *argv):
        code = main([str(a) for a in argv])
        out, err = self.capsys.readouterr()
        return code, out, err

    def error_line(self, *argv) -> str:
        """A command that must fail: exit status 2 and exactly one line on stderr, no traceback."""
        code, out, err = self.run(*argv)
        assert code == 2, (code, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        return lines[0]


@pytest.fixture
def cli(capsys):
    return CLI(capsys)


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real single-node SLURM cluster for the session (`tools/slurm-cluster.sh start`; stopped at the end unless it
    was already running): the tests that need it skip, with the script's reason, where it cannot start (not root,
    the Debian packages missing: `.ci/run` installs them)."""
    import shutil
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "tools" / "slurm-cluster.sh"
    up = shutil.which("sinfo") and subprocess.run(["sinfo", "-h"], capture_output=True, timeout=30).returncode == 0
    if not up:
        started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=180)
        if started.returncode != 0:
            pytest.skip(f"no SLURM cluster: {(started.stderr or started.stdout).strip().splitlines()[-1]}")
    yield
    if not up:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=180)

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

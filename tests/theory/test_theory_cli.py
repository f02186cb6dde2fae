"""`linrnn theory`: registration, the table, the JSON file, errors; and theory's import boundary."""

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from linrnn.base import results
from linrnn.base.errors import LinrnnError
from linrnn.theory import DERIVATIONS, run_all
from linrnn.theory.cli import format_table, register


def _parse(argv):
    parser = argparse.ArgumentParser(prog="linrnn")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_registry_is_ordered_and_complete():
    assert list(DERIVATIONS) == ["R1", "R2", "R3", "R5", "R9", "D2", "D3"]


def test_theory_command_prints_the_table_and_writes_json(tmp_path, capsys):
    target = tmp_path / "theory.json"
    args = _parse(["theory", "--quick", "--claim", "R5", "--claim", "r3", "--json", str(target)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    rows = [line.split()[:2] for line in out.splitlines() if line[:2] in ("R3", "R5")]
    assert rows[:2] == [["R3", "fails"], ["R5", "proved"]]
    assert "failing parts (exact conditions):" in out and "FAILS when" in out
    payload = results.read(target, results.TheoryRecord).result
    assert payload["schema"] == "linrnn.theory/1" and payload["config"] == {"quick": True, "claims": ["R3", "R5"]}
    assert {"machine", "code_version", "tolerances"} <= set(payload)
    r3 = payload["claims"][0]
    assert r3["claim"] == "R3" and r3["verdict"] == "fails" and r3["partly"] is True
    assert all(s["mathml"].startswith("<math") and s["latex"] for s in r3["steps"])
    for claim in payload["claims"]:
        for step in claim["steps"]:
            ET.fromstring(step["mathml"])  # well-formed, no undefined entities
    assert all(isinstance(v, float) for v in r3["witness"].values())


def test_unknown_claim_and_missing_folder_are_user_errors(tmp_path):
    with pytest.raises(LinrnnError, match="unknown claim"):
        run_all(quick=True, claims=["R7"])
    args = _parse(["theory", "--json", str(tmp_path / "no" / "such" / "theory.json")])
    with pytest.raises(LinrnnError, match="does not exist"):
        args.func(args)


def test_format_table_lists_every_failing_condition():
    results = run_all(quick=True, claims=["R3"])
    table = format_table(results)
    assert table.splitlines()[0].startswith("claim")
    assert results[0].condition.split(" ")[0] in table


def test_theory_imports_neither_torch_nor_jax():
    code = (
        "import pkgutil, importlib, sys\n"
        "import linrnn.theory as t\n"
        "names = [m.name for m in pkgutil.iter_modules(t.__path__)]\n"
        "assert {'registry', 'cli', 'records'} <= set(names), names\n"
        "for name in names: importlib.import_module('linrnn.theory.' + name)\n"
        "from linrnn.theory import run_all\n"
        "run_all(quick=True, claims=['R5'])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'jax', 'jaxlib'))\n"
        "assert not bad, bad\n"
        "print(len(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 8

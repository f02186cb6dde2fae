"""`linrnn crosscheck`: the matrix runs, passes on the real implementations, and fails on a broken one."""

import json

import numpy as np
import pytest

from linrnn.impls import crosscheck
from linrnn.cli import main

SMALL = crosscheck.Selection(kinds=("lru", "rotrnn"), modes=("scan", "step"), dtypes=("float64",),
                             shapes=(crosscheck.Shape(1, 5, 2, 2, False, True),))


def test_small_selection_passes_and_covers_every_pair_and_parameter():
    result = crosscheck.run(SMALL)
    assert result["ok"], [e for e in result["entries"] if not e["ok"]]
    pairs = {e["pair"] for e in result["entries"]}
    assert pairs == {"reference-torch", "reference-jax", "torch-jax"}
    grads = {e["quantity"] for e in result["entries"] if e["mixer"] == "rotrnn"}
    assert {"grad input", "grad M", "grad theta", "grad gamma_log", "grad B", "grad C", "grad D"} <= grads


def test_a_wrong_implementation_is_caught(monkeypatch):
    real = crosscheck.jax_output_and_grads

    def off_by_a_little(bundle, u, w, mode, dtype):
        y, grads = real(bundle, u, w, mode, dtype)
        grads["D"] = grads["D"] * (1 + 1e-9)     # far below any plotting precision, far above rounding
        return y + 1e-9 * np.abs(y).max(), grads

    monkeypatch.setattr(crosscheck, "jax_output_and_grads", off_by_a_little)
    result = crosscheck.run(SMALL)
    bad = {(e["pair"], e["quantity"]) for e in result["entries"] if not e["ok"]}
    assert ("reference-jax", "output") in bad and ("torch-jax", "grad D") in bad
    assert ("reference-torch", "output") not in bad


def test_command_line(tmp_path, capsys):
    out = tmp_path / "cc.json"
    code = main(["crosscheck", "--models", "dlr", "--modes", "conv", "--dtypes", "float32", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "dlr     conv       float32  torch-jax" in text and "all within the tolerance table" in text
    assert json.loads(out.read_text())["ok"] is True


@pytest.mark.parametrize("argv, message", [
    (["--models", "gru"], "--models: expected a comma-separated subset of rotrnn,lru,dlr, found 'gru'"),
    (["--modes", "fast"], "--modes: expected a comma-separated subset of sequential,scan,conv,step"),
    (["--seeds", "one"], "--seeds: expected comma-separated integers, found 'one'"),
])
def test_bad_options(capsys, argv, message):
    assert main(["crosscheck", *argv]) == 2
    assert message in capsys.readouterr().err

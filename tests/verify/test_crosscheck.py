"""`linrnn crosscheck`: the matrix runs, passes on the real implementations, and fails on a broken one."""


import numpy as np
import pytest

from linrnn.base import results
from linrnn.verify import crosscheck
from linrnn.impls.reference import spectral_radius
from linrnn.base.tolerance import tolerance
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


def test_each_gradient_part_is_judged_on_its_own_scale_not_the_largest_parts():
    """Synthetic parts, no framework, L = 1000 at r = 0.9999 (memory 1000): a 1e-9 relative error in a part
    1e-3 of the largest is caught (1e-12 absolute; judged against the largest part, rtol = 2.8e-11, it
    passed), while rounding noise of eps x the largest part in a part that is zero in exact arithmetic
    passes on the floor."""
    eps = float(np.finfo(np.float64).eps)
    ref = {"big": np.array([1.0, -0.5]), "small": np.array([1e-3, 3e-4]), "cancels": np.array([0.0, 0.0])}
    honest = {"big": ref["big"] * (1 + eps), "small": ref["small"] * (1 + eps), "cancels": np.array([eps, -eps])}
    assert all(c.ok for c in crosscheck.compare_gradients(ref, honest, "float64", 1000, 0.9999).values())
    planted = {**honest, "small": ref["small"] * (1 + 1e-9)}
    verdict = crosscheck.compare_gradients(ref, planted, "float64", 1000, 0.9999)
    assert not verdict["small"].ok and verdict["big"].ok and verdict["cancels"].ok


def test_a_planted_error_in_a_small_parameters_gradient_is_caught_in_float64(monkeypatch):
    """The real gradients with a relative error planted in one part that is smaller than the largest: half the
    absolute error that the old rule (every part against the largest part) let through, so this fails under
    that rule; the relative error is still far above float64 rounding (> 100 eps) and far below 1e-9. The
    part is gamma_log, below the largest part for both mixers here (D is RotRNN's largest part at this
    shape, where the two rules coincide)."""
    key = "gamma_log"
    real = crosscheck.jax_output_and_grads
    planted = {}

    def one_part_off(bundle, u, w, mode, dtype):
        y, grads = real(bundle, u, w, mode, dtype)
        whole = max(float(np.max(np.abs(g))) for g in grads.values())
        own = float(np.max(np.abs(grads[key])))
        old_rtol = tolerance("gradient", dtype, u.shape[1], spectral_radius(bundle.config, bundle.params)).rtol
        delta = 0.5 * old_rtol * whole / own
        planted[bundle.config.kind] = (delta, own / whole)
        grads[key] = grads[key] * (1 + delta)
        return y, grads

    monkeypatch.setattr(crosscheck, "jax_output_and_grads", one_part_off)
    result = crosscheck.run(SMALL)
    bad = {(e["mixer"], e["quantity"]) for e in result["entries"] if not e["ok"]}
    assert bad == {(kind, f"grad {key}") for kind in SMALL.kinds}, bad
    for kind, (delta, size) in planted.items():
        assert 100 * np.finfo(np.float64).eps < delta < 1e-9 and size < 1, (kind, delta, size)


def test_a_gradient_part_that_cancels_to_zero_passes_on_its_floor():
    """d/dM at L = 1: y = C P P^T B u + D u does not depend on M, so the computed d/dM is rounding noise of
    terms of the size of the other parts; judged on its own scale alone it would fail."""
    cancelling = crosscheck.Selection(kinds=("rotrnn",), modes=("scan",), dtypes=("float64", "float32"),
                                      shapes=(crosscheck.Shape(2, 1, 3, 4, False, False),))
    result = crosscheck.run(cancelling)
    assert result["ok"], [e for e in result["entries"] if not e["ok"]]
    grad_M = [e for e in result["entries"] if e["quantity"] == "grad M"]
    assert len(grad_M) == 2 and all(e["max_abs"] > 0 for e in grad_M)   # noise, not an exact zero


def test_command_line(tmp_path, capsys):
    out = tmp_path / "cc.json"
    code = main(["crosscheck", "--models", "dlr", "--modes", "conv", "--dtypes", "float32", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "dlr     conv       float32  torch-jax" in text and "all within the tolerance table" in text
    record = results.read(out, results.CrosscheckRecord)          # a record: the envelope, then the result
    assert record.result["ok"] is True and record.envelope.command == "linrnn " + " ".join(
        ["crosscheck", "--models", "dlr", "--modes", "conv", "--dtypes", "float32", "--json", str(out)])


@pytest.mark.parametrize("argv, message", [
    (["--models", "gru"],
     "--models: expected a comma-separated subset of rotrnn,lru,dlr,s4d,s5,attention,rglru, found 'gru'"),
    (["--modes", "fast"], "--modes: expected a comma-separated subset of sequential,scan,conv,step"),
    (["--seeds", "one"], "--seeds: expected comma-separated integers, found 'one'"),
])
def test_bad_options(capsys, argv, message):
    assert main(["crosscheck", *argv]) == 2
    assert message in capsys.readouterr().err

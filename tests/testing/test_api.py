"""linrnn.testing: assert_close, reference, check_layer, parametrize_with_checks' cases, check_vjp, check_step and the
strategies; each failure names what deviates, each bad argument is a one-line error."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import linrnn.testing as lt
from linrnn.base.errors import LinrnnError
from linrnn.impls.reference import apply_mixer
from linrnn.testing import battery
from linrnn.verify import conform

OUTSIDE = Path(__file__).resolve().parent / "outside"


def planted(bug=None):
    """A target on `linrnn.testing.reference` (a truncated DLR kernel: its conv view) with one bug planted: 'dense_D'
    (D as a matrix), 'state_dropped' (the state passed in ignored)."""
    def build(bundle, config):
        off = np.random.default_rng(1).standard_normal((config["d_model"],) * 2) * (1 - np.eye(config["d_model"]))
        mode = "conv" if config.get("max_kernel_length") else None

        def call(u, state=None):
            y, x = lt.reference((bundle, config), u, mode=mode, state=None if bug == "state_dropped" else state,
                                return_state=True)
            return (y + u @ off.T if bug == "dense_D" else y), x
        return call
    return build


# -- assert_close -----------------------------------------------------------------------------------

def test_assert_close_takes_actual_first_and_keywords_only():
    y = np.ones((2, 16, 3))
    lt.assert_close(y + 1e-15, y)
    with pytest.raises(TypeError):
        lt.assert_close(y, y, "forward")                         # row is keyword-only
    bumped = y.copy()
    bumped[1, 5, 2] += 1e-3
    with pytest.raises(AssertionError) as err:
        lt.assert_close(bumped, y, length=16, max_abs_eigenvalue=0.9)
    text = str(err.value)
    assert text.startswith("actual: relative error 1.000e-03 exceeds the bound 7.105e-14; worst entry at index "
                           "(1, 5, 2): actual 1.001, expected 1 (|difference| 1.000e-03, max |expected| 1.000e+00); the bound: ")
    assert "32 x eps(float64) x memory 10 (L=16, r=0.9)" in text


def test_assert_close_reads_the_dtype_length_and_dicts():
    y = np.random.default_rng(0).standard_normal((2, 64, 3))
    lt.assert_close(y.astype(np.float32), y)                   # float32's row at L = 64 (the second-last axis)
    with pytest.raises(AssertionError, match=r"float32 x|eps\(float32\)"):
        lt.assert_close(y.astype(np.float32) + np.float32(1e-3), y)
    with pytest.raises(AssertionError, match=r"^actual\['b'\]: relative error"):
        lt.assert_close({"a": y, "b": y + 1}, {"a": y, "b": y})
    with pytest.raises(AssertionError, match=r"the keys differ: missing \['b'\], not expected \['c'\]"):
        lt.assert_close({"a": y, "c": y}, {"a": y, "b": y})
    with pytest.raises(AssertionError, match=r"1 NaN/Inf in actual, the first at index \(0, 3, 1\)"):
        bad = y.copy()
        bad[0, 3, 1] = np.nan
        lt.assert_close(bad, y)


def test_assert_close_takes_torch_and_jax_arrays():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    y = np.random.default_rng(0).standard_normal((2, 8, 3))
    lt.assert_close(torch.tensor(y, requires_grad=True) * 1, jnp.asarray(y))
    lt.assert_close(torch.tensor(y, dtype=torch.bfloat16), y)   # the bfloat16 row
    with pytest.raises(AssertionError, match="eps\\(bfloat16\\)"):
        lt.assert_close(torch.tensor(y + 0.1, dtype=torch.bfloat16), y)


def test_assert_close_kind_the_rows_former_name_still_selects_the_row_and_warns():
    y = np.ones((2, 16, 3))
    bumped = y.copy()
    bumped[0, 0, 0] += 64 * np.finfo(np.float64).eps * 16   # within the gradient row (128 eps L), not the forward (32)
    with pytest.raises(AssertionError):
        lt.assert_close(bumped, y, row="forward", dtype="float64", length=16)
    lt.assert_close(bumped, y, row="gradient", dtype="float64", length=16)
    with pytest.warns(DeprecationWarning, match="kind= is deprecated, pass row="):
        lt.assert_close(bumped, y, kind="gradient", dtype="float64", length=16)
    with pytest.warns(DeprecationWarning), pytest.raises(AssertionError):
        lt.assert_close(bumped, y, kind="forward", dtype="float64", length=16)


@pytest.mark.parametrize("kwargs, message", [
    ({"row": "output"}, "row: expected one of forward, state, gradient, identity, found 'output'"),
    ({"dtype": "float8"}, "dtype: expected float64, float32, bfloat16 or float16, found 'float8'"),
    ({"length": 0}, "length: expected a positive integer, found 0"),
])
def test_assert_close_refuses_bad_arguments_in_one_line(kwargs, message):
    with pytest.raises(LinrnnError) as err:
        lt.assert_close(np.zeros(3), np.zeros(3), **kwargs)
    assert str(err.value) == message


# -- reference -----------------------------------------------------------------------------------------

def test_reference_reads_a_bundle_a_file_or_params_and_config(tmp_path):
    bundle = lt.make_bundle("s5", d_model=3, d_state=4, discretization="bilinear")
    u = np.random.default_rng(0).standard_normal((2, 9, 3))
    expected = apply_mixer(bundle.config, bundle.params, u)[0]
    np.testing.assert_array_equal(lt.reference(bundle, u), expected)
    np.testing.assert_array_equal(lt.reference(bundle.save(tmp_path / "b.npz"), u), expected)
    config = dataclasses.asdict(bundle.config) | {"kind": "s5"}
    np.testing.assert_array_equal(lt.reference((dict(bundle.params), config), u), expected)
    y, x = lt.reference(bundle, u[:, :4], return_state=True)
    np.testing.assert_allclose(lt.reference(bundle, u[:, 4:], state=x), expected[:, 4:], rtol=0, atol=1e-14)
    assert lt.spectral_radius(bundle) == conform.spectral_radius(bundle.config, bundle.params)
    with pytest.raises(LinrnnError, match="^bundle: expected a linrnn Bundle, a path to a .npz bundle or a "
                                          r"\(params, config\) pair, found dict$"):
        lt.reference(dict(bundle.params), u)


# -- check_layer and the cases ---------------------------------------------------------------------------

def test_check_layer_is_the_conform_battery():
    report = lt.check_layer(planted("dense_D"), "lru", dtypes="float64", lengths=(1, 8), long_length=64,
                            very_long_length=0)
    same = conform.run(planted("dense_D"), "lru", ("float64",), (1, 8), long_length=64, very_long_length=0)
    assert [(c.name, c.status, c.rel) for c in report.checks] == [(c.name, c.status, c.rel) for c in same.checks]
    assert not report.ok and {d.key for d in report.diagnoses()} == {"dense_D"}
    assert str(report).splitlines()[-1].startswith("  - D is applied as a dense matrix, not elementwise")
    pinned = lt.check_layer(planted(), "s5", dtypes="float64", lengths=(8,), long_length=0,
                            discretization="zoh")
    assert pinned.ok and not [c for c in pinned.checks if "bilinear" in c.name]


def test_each_case_runs_its_check_alone_on_the_batterys_inputs():
    """A case runs one check by itself; it finds what the whole battery finds, to the last bit."""
    whole = conform.run(planted("state_dropped"), "rotrnn", ("float64",), (1, 8), long_length=64)
    found = {}
    for case in lt.cases({"mine": planted("state_dropped")}, "rotrnn", dtypes="float64", lengths=(1, 8),
                         long_length=64):
        fresh = dataclasses.replace(case, factory=planted("state_dropped"))     # a battery of its own
        check = fresh.run()
        found[check.name] = (check.status, check.rel, [d.key for d in check.diagnoses])
    assert found == {c.name: (c.status, c.rel, [d.key for d in c.diagnoses]) for c in whole.checks}
    assert found["state"][2] == ["state_not_carried"]


def test_case_ids_name_the_target_kind_variant_dtype_and_check():
    ids = [c.id for c in lt.cases({"mine": planted()}, "s5")]
    # float64 and float32: 19 base checks and 14 variants each; bfloat16 and float16: the 7 output checks each
    assert len(ids) == len(set(ids)) == 2 * (19 + 14) + 2 * 7
    assert {"mine-s5-base-float64-impulse", "mine-s5-base-float32-random-l7", "mine-s5-base-float64-long",
            "mine-s5-base-float64-very-long", "mine-s5-base-float32-state-hand-over", "mine-s5-base-float64-lengths-1-8",
            "mine-s5-base-float32-packing", "mine-s5-base-float64-padding",
            "mine-s5-base-float32-state", "mine-s5-bilinear-float32-impulse", "mine-s5-clip-eigs-float64-impulse",
            "mine-s5-bilinear-clip-eigs-blocks-2-bidirectional-float32-bidirectional"} <= set(ids)
    scan_ids = [c.id for c in lt.cases({"s": planted()}, "scan", dtypes=["float32"])]
    assert "s-scan-complex-reverse-no-varying-float32-impulse" in scan_ids
    with pytest.raises(LinrnnError, match=r"^--set: a lru config has no field 'discretization'"):
        lt.cases({"mine": planted()}, "lru", discretization="zoh")
    with pytest.raises(LinrnnError, match=r"^dtypes: expected some of float64, float32, bfloat16, float16, found "
                                          r"float8$"):
        lt.cases({"mine": planted()}, "lru", dtypes="float8")


def outcome(case) -> tuple[str, str]:
    """('pass' | 'fail' | 'skip', the message): a skip is caught, not let through, so that a case that skips where
    it should fail fails the test that expects 'fail' (a `pytest.skip` inside `pytest.raises(AssertionError)` is no
    AssertionError: it escaped and skipped that test, which then could not fail)."""
    try:
        return "pass", str(case())
    except AssertionError as err:
        return "fail", str(err)
    except pytest.skip.Exception as err:
        return "skip", str(err)


def test_a_case_fails_with_its_deviation_and_skips_what_does_not_apply():
    cases = {c.id: c for c in lt.cases({"mine": planted("state_dropped")}, "lru", dtypes="float64", lengths=(8,))}
    status, message = outcome(cases["mine-lru-base-float64-state"])
    assert status == "fail", message
    lines = message.splitlines()
    assert lines[0].startswith("linrnn check mine-lru-base-float64-state: FAIL state (float64): relative error ")
    assert lines[1].startswith("  - the state is not carried between calls: the second call equals a start from zero")
    assert re.match(r"the whole battery: linrnn conform \S+:planted.<locals>.build --model lru --dtype float64 "
                    r"--lengths 8 --long 4096 --very-long 65537 --seed 0$", lines[2])
    assert outcome(cases["mine-lru-base-float64-impulse"])[0] == "pass"
    status, message = outcome(cases["mine-lru-base-float64-gradient"])
    assert status == "skip" and re.search(r"gradient \(float64\): not differentiable here", message), message


def test_the_case_test_fails_when_a_failing_case_skips_instead(monkeypatch):
    """The mutation the test above must catch: a failing check turned into a skip fails it (it used to be skipped)."""
    def skips(self):
        check = self.run()
        pytest.skip(f"{check.name}: {check.status}")
    monkeypatch.setattr(battery.Case, "__call__", skips)
    with pytest.raises(AssertionError, match="assert 'skip' == 'fail'"):
        test_a_case_fails_with_its_deviation_and_skips_what_does_not_apply()


# -- check_vjp and check_step ---------------------------------------------------------------------------

def torch_lru(params, wrong_backward=False, skip_in_step=True):
    """The LRU of `params` in PyTorch (complex state), its forward, and its step."""
    torch = pytest.importorskip("torch")
    lam = torch.exp(torch.complex(-torch.exp(torch.tensor(params["nu_log"])), torch.exp(torch.tensor(params["theta_log"]))))
    B = torch.exp(torch.tensor(params["gamma_log"]))[:, None] * torch.complex(torch.tensor(params["B_re"]),
                                                                          torch.tensor(params["B_im"]))
    C = torch.complex(torch.tensor(params["C_re"]), torch.tensor(params["C_im"]))
    D = torch.tensor(params["D"])

    def step(u_t, x=None):
        x = (torch.zeros(u_t.shape[0], lam.shape[0], dtype=lam.dtype) if x is None else x) * lam + u_t.to(B.dtype) @ B.T
        return (x @ C.T).real + (D * u_t if skip_in_step else 0), x

    def forward(u):
        x, ys = None, []
        for t in range(u.shape[1]):
            y, x = step(u[:, t], x) if skip_in_step else (lambda o: ((o[0] + D * u[:, t]), o[1]))(step(u[:, t], x))
            ys.append(y)
        y = torch.stack(ys, 1)
        return y if not wrong_backward else y.detach() + (u - u.detach()) * 0.5     # a gradient that is not J^T w

    return forward, step


def test_check_vjp_passes_a_layer_and_names_a_wrong_gradient():
    torch = pytest.importorskip("torch")
    params = lt.make_bundle("lru", d_model=3, d_state=4).params
    u = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    forward, _ = torch_lru(params)
    assert lt.check_vjp(forward, u).ok
    wrong, _ = torch_lru(params, wrong_backward=True)
    with pytest.raises(AssertionError, match=r"^check_vjp: the input gradient by autodiff is not J\^T w, the adjoint "
                                             r"of the call's own forward: input gradient: relative error"):
        lt.check_vjp(wrong, u)
    with pytest.raises(AssertionError, match=r"^check_vjp: the call is not linear in u"):
        lt.check_vjp(lambda v: forward(v) ** 2, u)
    with pytest.raises(LinrnnError, match=r"^u: expected a PyTorch tensor or a JAX array \(check_vjp differentiates "
                                          r"the call\), found ndarray$"):
        lt.check_vjp(forward, u.numpy())


def test_check_vjp_in_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    M = jnp.asarray(np.random.default_rng(0).standard_normal((3, 3)))

    @jax.custom_vjp
    def wrong(u):
        return u @ M

    wrong.defvjp(lambda u: (u @ M, None), lambda _, g: (g @ M,))       # J w where J^T w is due
    u = jnp.asarray(np.random.default_rng(1).standard_normal((2, 4, 3)))
    assert lt.check_vjp(lambda v: v @ M, u).ok
    with pytest.raises(AssertionError, match="not J\\^T w"):
        lt.check_vjp(wrong, u)


def test_check_step_names_the_first_position_that_departs():
    torch = pytest.importorskip("torch")
    params = lt.make_bundle("lru", d_model=3, d_state=4).params
    forward, step = torch_lru(params)
    u = torch.randn(2, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    lt.check_step(step, forward, u)
    _, no_skip = torch_lru(params, skip_in_step=False)
    with pytest.raises(AssertionError, match=r"^check_step: stepping token by token departs from the whole-sequence "
                                             r"forward, first at position t = 0 of L = 6: step outputs: relative error"):
        lt.check_step(no_skip, forward, u)
    with pytest.raises(LinrnnError, match=r"^u: expected an array of shape \(B, L, H\), found shape \(6, 3\)$"):
        lt.check_step(step, forward, u[0])


# -- strategies -----------------------------------------------------------------------------------------------

def test_the_strategies_draw_every_variant_and_their_checks():
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    from linrnn.impls.segments import check_packing
    from linrnn.impls.specs.s5 import S5Config
    from linrnn.testing import strategies as lst

    drawn = hypothesis.find(st.from_type(S5Config), lambda c: c.discretization == "bilinear" and c.clip_eigs
                            and c.blocks == 2 and c.bidirectional)       # the entry point registered the type
    assert isinstance(drawn, S5Config)
    b = hypothesis.find(lst.bundles("lru", radius=(0.99, 0.995)), lambda b: True)
    assert 0.99 <= lt.spectral_radius(b) <= 0.995
    for kind in ("dlr", "s4d"):
        b = hypothesis.find(lst.bundles(kind, radius=(0.9, 0.95)), lambda b: True)
        assert 0.9 - 1e-12 <= lt.spectral_radius(b) <= 0.95 + 1e-12, kind
    segs = hypothesis.find(lst.segments(7, 2), lambda s: len(np.unique(s[0])) == 3)
    lengths = hypothesis.find(lst.lengths(3, 5), lambda n: n.min() == 1 and n.max() == 5)
    check_packing(None, segs, False, 2, 7)
    check_packing(lengths, None, False, 3, 5)
    u = hypothesis.find(lst.inputs((2, st.integers(3, 4), 2), "float32"), lambda u: u.shape[1] == 4)
    assert u.dtype == np.float32 and np.all(np.abs(u) <= 1)
    with pytest.raises(LinrnnError, match=r"^radius: expected \(low, high\) with 0 < low <= high < 1, found"):
        lst.bundles("lru", radius=(0.5, 1.0))
    with pytest.raises(LinrnnError, match=r"^configs\('lru'\): a lru config has no field\(s\) blocks$"):
        lst.configs("lru", blocks=2)


# -- one adapter for the command line and the tests -----------------------------------------------------------

def test_the_outside_packages_adapter_serves_linrnn_conform_too(cli, monkeypatch):
    """The factory the outside package's tests hand parametrize_with_checks is a `linrnn conform` target as it is."""
    pytest.importorskip("torch")
    monkeypatch.syspath_prepend(str(OUTSIDE / "src"))
    monkeypatch.chdir(OUTSIDE / "tests")
    for name in [m for m in sys.modules if m.startswith(("tinyssm", "test_tinyssm"))]:
        monkeypatch.delitem(sys.modules, name)
    code, out, _ = cli.run("conform", "test_tinyssm:make_lru", "--model", "lru", "--lengths", "1", "8", "--long", "256",
                           "--very-long", "0")
    assert code == 0 and "gradient (float64): relative error" in out, out
    not_applicable = {line.split(":")[0] for line in out.splitlines() if line.startswith("  n/a")}
    assert not_applicable == {f"  n/a  {check} ({dtype})" for check in ("parameter gradient", "step")
                              for dtype in ("float64", "float32")} | {"  n/a  build (bfloat16)", "  n/a  build (float16)"}, \
        out                              # no params= nor step; the low dtypes refused (its own dtype table: KeyError)

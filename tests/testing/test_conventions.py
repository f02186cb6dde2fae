"""The conventions users know, and failures a user can replay: `expected_failed_checks` (strict xfails), the
profiles, the replay file and snippet, `assert_close`'s rtol / atol / equal_nan, one-line messages for wrong
argument types, `reference` on every bundle the strategies draw, `strategies.inputs`' scales and low precisions,
drawn bundles printed as `make_bundle(...)` calls, and the JAX paths of `check_vjp` and `check_step`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import linrnn.testing as lt
from linrnn.impls import specs
from linrnn.base.errors import LinrnnError

# A user's test file: a faithful NumPy target (the reference itself) and one with a planted bug (D as a matrix).
USER_TESTS = '''
import numpy as np
from linrnn.testing import parametrize_with_checks, reference

SMALL = dict(dtypes="float64", lengths=(5,), long_length=0, very_long_length=0)


def make(bundle, config):
    def call(u, state=None):
        return reference((bundle, config), u, state=state, return_state=True)
    return call


def make_dense_d(bundle, config):
    off = np.random.default_rng(1).standard_normal((config["d_model"],) * 2) * (1 - np.eye(config["d_model"]))
    def call(u, state=None):
        y, x = reference((bundle, config), u, state=state, return_state=True)
        return y + u @ off.T, x
    return call


@parametrize_with_checks({"good": make}, kind="lru", expected_failed_checks={"state": "a stale entry"}, **SMALL)
def test_good(check):
    check()


@parametrize_with_checks({"bad": make_dense_d}, kind="lru", **SMALL,
                         expected_failed_checks={"lru-base-float64-impulse": "D is dense, on purpose"})
def test_bad(check):
    check()


@parametrize_with_checks({"every": make}, kind="lru")
def test_profiled(check):
    check()
'''


def pytest_in(folder, *args, env=None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300, env={**clean, **(env or {})})


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """The user's file run once (test_good and test_bad), -rA: every outcome with its reason."""
    folder = tmp_path_factory.mktemp("user")
    (folder / "test_user.py").write_text(USER_TESTS)
    (folder / "pytest.ini").write_text("[pytest]\n")
    done = pytest_in(folder, "-rA", "-k", "not profiled")
    return folder, done.stdout + done.stderr


def test_expected_failed_checks_are_strict_xfails(user_run):
    _, out = user_run
    assert re.search(r"^XFAIL test_user.py::test_bad\[bad-lru-base-float64-impulse\] - D is dense, on purpose$", out,
                     flags=re.M), out
    assert re.search(r"^FAILED test_user.py::test_good\[good-lru-base-float64-state\]", out, flags=re.M) and \
        "[XPASS(strict)] a stale entry" in out, out            # a listed check that passes fails the run
    assert re.search(r"^FAILED test_user.py::test_bad\[bad-lru-base-float64-random-l5\]", out, flags=re.M), out


def test_a_failing_case_writes_its_replay_and_the_snippet_reruns_it(user_run, monkeypatch):
    folder, out = user_run
    path = folder / ".linrnn-replay" / "bad-lru-base-float64-random-l5.npz"
    assert path.is_file(), out
    assert ("replay this check alone:\nE           from test_user import make_dense_d; from linrnn.testing import "
            "replay\nE           replay('.linrnn-replay/bad-lru-base-float64-random-l5.npz', make_dense_d)") in out, out
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    import test_user
    with pytest.raises(AssertionError, match=r"^linrnn check bad-lru-base-float64-random-l5: FAIL random L=5 "):
        lt.replay(".linrnn-replay/bad-lru-base-float64-random-l5.npz", test_user.make_dense_d)
    assert lt.replay(path, test_user.make).status == "pass"                     # the faithful factory passes it
    assert lt.replay(path, test_user.make_dense_d, raise_on_failure=False).status == "fail"
    with np.load(path) as data:                            # the base bundle the check ran on, for the user to load
        assert json.loads(str(data["bundle.__meta__"]))["kind"] == "lru" and data["bundle.nu_log"].shape == (4,)
    with pytest.raises(LinrnnError, match=r"^replay: expected the factory make\(bundle, config\) -> call, found str$"):
        lt.replay(path, "make")
    with pytest.raises(LinrnnError, match=r"is not a linrnn replay file"):
        lt.replay(folder / "test_user.py", test_user.make)


def planted_dense_d(bundle, config):
    """The user's file's make_dense_d, here: D as a matrix."""
    off = np.random.default_rng(1).standard_normal((config["d_model"],) * 2) * (1 - np.eye(config["d_model"]))

    def call(u, state=None):
        y, x = lt.reference((bundle, config), u, state=state, return_state=True)
        return y + u @ off.T, x
    return call


def failing_case():
    from linrnn.testing import api
    found = api.parametrize_with_checks({"bad": planted_dense_d}, kind="lru", dtypes="float64", lengths=(5,),
                                        long_length=0, very_long_length=0)
    return next(p.values[0] for p in found.args[1] if p.id == "bad-lru-base-float64-random-l5")


def test_replay_print_shows_the_case_and_off_writes_nothing(tmp_path, monkeypatch):
    from linrnn.testing import plugin
    monkeypatch.setitem(plugin.SETTINGS, "invocation", str(tmp_path))
    monkeypatch.setitem(plugin.SETTINGS, "replay", "print")
    with pytest.raises(AssertionError) as err:
        failing_case()()
    case = re.search(r"^    replay\((\{.*\}), planted_dense_d\)$", str(err.value), flags=re.M)
    assert case and not list(tmp_path.iterdir()), str(err.value)
    with pytest.raises(AssertionError, match="FAIL random L=5"):
        lt.replay(json.loads(case.group(1)), planted_dense_d)          # the printed case alone reruns the check
    monkeypatch.setitem(plugin.SETTINGS, "replay", "off")
    with pytest.raises(AssertionError, match=r"\(no replay: --linrnn-replay=off\)$"):
        failing_case()()
    assert not list(tmp_path.iterdir())


def test_unknown_and_malformed_expected_failures_are_one_line_errors():
    make = lambda bundle, config: None      # noqa: E731  (never called: nothing is built)
    with pytest.raises(LinrnnError, match=r"^expected_failed_checks: 'impluse' names no case \(expected a case id "
                                          r"such as 'lru-base-float64-impulse'"):
        lt.parametrize_with_checks({"m": make}, kind="lru", expected_failed_checks={"impluse": "typo"})
    with pytest.raises(LinrnnError, match=r"^expected_failed_checks: expected a dict \{check: reason\}, found list$"):
        lt.parametrize_with_checks({"m": make}, kind="lru", expected_failed_checks=["impulse"])
    with pytest.raises(LinrnnError, match=r"^expected_failed_checks: expected check names with a reason each"):
        lt.parametrize_with_checks({"m": make}, kind="lru", expected_failed_checks={"impulse": ""})
    mark = lt.parametrize_with_checks({"m": make}, kind="lru", expected_failed_checks={"lru-base-*-state": "r"})
    xfailed = {p.id: p.marks[0] for p in mark.args[1] if p.marks}
    assert set(xfailed) == {"m-lru-base-float64-state", "m-lru-base-float32-state"}, xfailed
    assert all(m.kwargs == {"reason": "r", "raises": AssertionError, "strict": True} for m in xfailed.values())


@pytest.mark.parametrize("profile, wanted, absent", [
    ("quick", {"every-lru-base-float32-impulse", "every-lru-base-float32-state"},
     {"every-lru-base-float64-impulse", "every-lru-base-float32-long", "every-lru-base-float32-very-long"}),
    ("default", {"every-lru-base-float64-long", "every-lru-base-float32-very-long",
                 "every-lru-base-float64-random-l16"}, {"every-lru-base-float64-random-l1024"}),
    ("full", {"every-lru-base-float64-random-l1024", "every-lru-base-float32-very-long"}, set()),
])
def test_the_profiles_choose_the_cases(monkeypatch, profile, wanted, absent):
    """The plugin's settings of each profile (as `pytest_configure` sets them), the cases planned under them and
    those its collection hook keeps."""
    from linrnn.testing import plugin
    for key, value in plugin.PROFILES[profile].items():
        monkeypatch.setitem(plugin.SETTINGS, key, value)
    found = lt.parametrize_with_checks({"every": lambda b, c: None}, kind="lru")
    ids = {p.id for p in found.args[1] if not plugin._left_out(p.values[0])}
    assert wanted <= ids and not absent & ids, sorted(ids)
    if profile == "quick":
        assert all("float32" in i for i in ids), sorted(ids)


def test_the_profile_option_runs_in_pytest_and_the_options_override_it(tmp_path):
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    quick = pytest_in(tmp_path, "--collect-only", "-q", "-k", "profiled", "--linrnn-profile=quick")
    ids = set(re.findall(r"test_profiled\[([^\]]+)\]", quick.stdout))
    assert ids and all("-float32-" in i and not i.endswith("long") for i in ids), (sorted(ids), quick.stderr)
    overridden = pytest_in(tmp_path, "--collect-only", "-q", "-k", "profiled", "--linrnn-profile=quick",
                           "--linrnn-dtypes=float64", "--linrnn-long=64")
    assert "every-lru-base-float64-impulse" in overridden.stdout and "every-lru-base-float64-long" in \
        overridden.stdout and "float32" not in overridden.stdout, overridden.stdout
    bad = pytest_in(tmp_path, "--linrnn-profile=fast")
    assert bad.returncode == 4 and "--linrnn-profile: expected one of quick, default, full, found 'fast'" in \
        bad.stderr, bad.stderr


# -- assert_close -------------------------------------------------------------------------------------------

def test_assert_close_takes_the_callers_rtol_atol_and_equal_nan():
    y = np.ones((2, 8, 3))
    off = y.copy()
    off[0, 3, 1] += 1e-6
    with pytest.raises(AssertionError, match=r"relative error 1.000e-06 exceeds the bound"):
        lt.assert_close(off, y)
    assert lt.assert_close(off, y, rtol=2e-6).ok
    with pytest.raises(AssertionError, match=r"exceeds the bound 5.000e-07; .*the bound: the caller's rtol=5.000e-07$"):
        lt.assert_close(off, y, rtol=5e-7)
    assert lt.assert_close(off, y, atol=1.5e-6).ok                # the table's relative bound plus atol
    nan = y.copy()
    nan[1, 2, 0] = np.nan
    with pytest.raises(AssertionError, match=r"1 NaN/Inf in actual"):
        lt.assert_close(nan, nan)
    assert lt.assert_close(nan, nan, equal_nan=True).ok
    with pytest.raises(AssertionError, match=r"NaN/Inf at index \(1, 2, 0\) in one only: actual nan, expected 1.0"):
        lt.assert_close(nan, y, equal_nan=True)
    inf = y.copy()
    inf[0, 0, 0] = np.inf
    assert lt.assert_close({"a": inf}, {"a": inf}, equal_nan=True)["a"].ok
    with pytest.raises(AssertionError, match=r"in one only: actual inf, expected -inf"):
        lt.assert_close(inf, np.where(np.isinf(inf), -np.inf, inf), equal_nan=True)
    for bad, message in ((dict(rtol=-1.0), r"^rtol: expected a number >= 0 \(or None\), found -1.0$"),
                         (dict(atol="1e-6"), r"^atol: expected a number >= 0 \(or None\), found '1e-6'$"),
                         (dict(equal_nan=1), r"^equal_nan: expected True or False, found 1$")):
        with pytest.raises(LinrnnError, match=message):
            lt.assert_close(y, y, **bad)


def test_wrong_argument_types_are_one_line_errors():
    y = np.ones((1, 4, 2))
    with pytest.raises(LinrnnError, match=r"^actual: expected an array \(NumPy, PyTorch or JAX\), found a tuple of 2 "
                                          r"\(a layer's \(y, state\)\? pass y\)$"):
        lt.assert_close((y, None), y)
    with pytest.raises(LinrnnError, match=r"^expected: expected a NumPy, PyTorch or JAX array, found NoneType$"):
        lt.assert_close(y, None)
    with pytest.raises(LinrnnError, match=r"^u: expected a NumPy, PyTorch or JAX array, found str$"):
        lt.reference(lt.make_bundle("lru"), "u")
    with pytest.raises(LinrnnError, match=r"^radius: expected a number in \[0, 1\), found 1.5$"):
        lt.make_bundle("lru", radius=1.5)
    with pytest.raises(LinrnnError, match=r"^argname: expected a Python name, found 'a check'$"):
        lt.parametrize_with_checks({"m": lambda b, c: None}, kind="lru", argname="a check")
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(2, 2, dtype=torch.float64)
    with pytest.raises(LinrnnError, match=r"^actual: expected an array .* found a tuple of 2"):
        lt.assert_close((layer(torch.ones(1, 4, 2, dtype=torch.float64)), None), y)     # not "requires grad"


# -- reference, strategies --------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def test_the_reference_takes_every_bundle_the_strategies_draw():
    from linrnn.testing import strategies as lst
    u = np.random.default_rng(0).standard_normal((2, 9, 6))

    @hypothesis.settings(max_examples=40, deadline=None, database=None)
    @hypothesis.given(bundle=st.sampled_from(specs.recurrent_kinds()).flatmap(lst.bundles))
    def every(bundle):
        assert lt.reference(bundle, u[..., :bundle.config.d_model]).shape == (2, 9, bundle.config.d_model)
    every()
    truncated = hypothesis.find(lst.bundles("dlr"), lambda b: b.config.max_kernel_length is not None)
    v = u[..., :truncated.config.d_model]        # the reference refused it by default: its recurrent view, L > L_k
    assert np.array_equal(lt.reference(truncated, v), lt.reference(truncated, v, mode="conv"))


def test_a_drawn_bundle_prints_as_the_make_bundle_call_that_makes_it_again():
    from linrnn.testing import strategies as lst
    for kind, radius in (("s5", (0.5, 0.9)), ("rotrnn", None), ("dlr", None), ("attention", None)):
        bundle = hypothesis.find(lst.bundles(kind, **({"radius": radius} if radius else {})), lambda b: True)
        text = repr(bundle)
        assert text.startswith(f"make_bundle({kind!r}, d_model=") and ("radius=" in text) == bool(radius), text
        again = eval(text, {"make_bundle": lt.make_bundle})
        assert again.config == bundle.config and all(np.array_equal(again.params[k], bundle.params[k])
                                                     for k in bundle.params), text


def test_a_callers_config_that_with_radius_cannot_place_is_its_one_line_error():
    from linrnn.testing import strategies as lst
    bilinear = lst.configs("s5", discretization="bilinear")
    with pytest.raises(LinrnnError, match=r"^with_radius: S5 with the zoh discretisation only"):
        hypothesis.find(lst.bundles("s5", radius=(0.5, 0.9), config=bilinear), lambda b: True)
    drawn = hypothesis.find(lst.bundles("s5", radius=(0.5, 0.9)), lambda b: b.config.bidirectional)
    assert drawn.config.discretization == "zoh"          # the drawn configs: the bilinear ones are not drawn


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_inputs_draw_scaled_large_and_low_precision_values(dtype):
    from linrnn.testing import strategies as lst
    stored = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
    u = hypothesis.find(lst.inputs((2, 5, 3), dtype, scale=50.0), lambda u: np.max(np.abs(u)) > 25)
    assert u.dtype == stored and np.max(np.abs(u)) <= 50
    big = hypothesis.find(lst.inputs((2, 4), dtype, large=True), lambda u: np.max(np.abs(u)) > 100)
    assert np.all(np.isfinite(big)) and big.dtype == stored
    drawn = hypothesis.find(lst.inputs((3,), dtype, scale=st.floats(1e-3, 1e3)), lambda u: np.all(u != 0))
    assert drawn.shape == (3,)
    if dtype == "bfloat16":                                    # float32 values bfloat16 holds exactly
        ml_dtypes = pytest.importorskip("ml_dtypes")
        assert np.array_equal(u.astype(ml_dtypes.bfloat16).astype(np.float32), u)
    with pytest.raises(LinrnnError, match=r"^scale: expected a number in \(0, "):
        lst.inputs((2,), dtype, scale=0.0)
    with pytest.raises(LinrnnError, match=r"^large: draws the scale itself; pass scale= or large=True, not both$"):
        lst.inputs((2,), dtype, scale=3.0, large=True)


def test_inputs_refuse_an_unknown_dtype():
    from linrnn.testing import strategies as lst
    with pytest.raises(LinrnnError, match=r"^dtype: expected one of float64, float32, float16, bfloat16, found "
                                          r"'int8'$"):
        lst.inputs((2,), "int8")


# -- check_vjp and check_step on JAX --------------------------------------------------------------------------

def test_check_step_and_check_vjp_on_a_jax_layer():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from linrnn.impls.jax import float64
    params = lt.make_bundle("lru", d_model=3, d_state=4).params
    lam = jnp.exp(-jnp.exp(params["nu_log"]) + 1j * jnp.exp(params["theta_log"]))
    B = jnp.exp(params["gamma_log"])[:, None] * (params["B_re"] + 1j * params["B_im"])
    C, D = params["C_re"] + 1j * params["C_im"], jnp.asarray(params["D"])

    def step(u_t, x=None, skip=True):
        x = (jnp.zeros((u_t.shape[0], 4), complex) if x is None else x) * lam + u_t @ B.T
        return (x @ C.T).real + (D * u_t if skip else 0), x

    def forward(u):
        return jax.lax.scan(lambda x, u_t: step(u_t, x)[::-1], jnp.zeros((u.shape[0], 4), complex),
                            jnp.swapaxes(u, 0, 1))[1].swapaxes(0, 1)

    with float64():
        u = jnp.asarray(np.random.default_rng(0).standard_normal((2, 6, 3)))
        assert lt.check_step(step, forward, u).ok
        with pytest.raises(AssertionError, match=r"^check_step: stepping token by token departs from the "
                                                 r"whole-sequence forward, first at position t = 0 of L = 6"):
            lt.check_step(lambda u_t, x: step(u_t, x, skip=False), forward, u)
        assert lt.check_vjp(forward, u).ok
        wrong = jax.custom_vjp(forward)
        wrong.defvjp(lambda v: (forward(v), None), lambda _, g: (0.5 * g,))
        with pytest.raises(AssertionError, match=r"^check_vjp: the input gradient by autodiff is not J\^T w"):
            lt.check_vjp(wrong, u)

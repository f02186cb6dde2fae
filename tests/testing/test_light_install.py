"""`pip install linrnn` with no extras brings NumPy and SciPy only, and a user's check on a NumPy adapter runs there.

The wheel is built (about 2 s) and installed into a fresh virtual environment by pip from the package index, which
resolves its dependencies: NumPy and SciPy are really installed (the wheel, the environment and the install took
25 s on the 2-core CPU at a load average of 9, from a local index; the whole file 31 s). Then, in that environment: a user's NumPy LRU written here (not linrnn's) passes the
conform battery through `linrnn.testing.check_layer`, with `assert_close` and `reference` beside it; neither PyTorch
nor JAX is installed or imported; a command and an import that need an extra say which, in one line (exit 2 for the
command).
"""

from __future__ import annotations

import json
import subprocess

import pytest

# A user's check: their own LRU in NumPy (docs/models.md's equations), the adapter `make(bundle, config)`, the
# battery, and the reference on a bundle of their own.
USER = r'''
import importlib.util, json, sys
import numpy as np
from linrnn.testing import assert_close, check_layer, make_bundle, reference, spectral_radius


def lru(params, u, x=None):
    lam = np.exp(-np.exp(params["nu_log"]) + 1j * np.exp(params["theta_log"]))
    B = np.exp(params["gamma_log"])[:, None] * (params["B_re"] + 1j * params["B_im"])
    C = params["C_re"] + 1j * params["C_im"]
    x = np.zeros((u.shape[0], lam.shape[0]), complex) if x is None else x
    ys = []
    for t in range(u.shape[1]):
        x = lam * x + u[:, t] @ B.T
        ys.append((x @ C.T).real + params["D"] * u[:, t])
    return np.stack(ys, 1), x


def make_lru(bundle, config, dtype="float64"):
    if config["bidirectional"]:
        raise NotImplementedError("forward only")
    def call(u, state=None):
        y, x = lru(bundle, np.asarray(u, np.float64), state)
        return y.astype(dtype), x
    return call


report = check_layer(make_lru, "lru", dtypes=("float64", "float32"), long_length=512, very_long_length=0)
bundle = make_bundle("lru", d_model=3, d_state=4, seed=1)
u = np.random.default_rng(0).standard_normal((2, 9, 3))
assert_close(lru(bundle.params, u)[0], reference(bundle, u), max_abs_eigenvalue=spectral_radius(bundle))
statuses = {}
for c in report.checks:
    statuses[c.status] = statuses.get(c.status, 0) + 1
print(json.dumps({
    "ok": report.ok, "statuses": statuses, "text": str(report),
    "imported": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "jax", "jaxlib", "hypothesis", "sympy"}),
    "installed": {m: importlib.util.find_spec(m) is not None for m in ("torch", "jax", "jaxlib")},
    "linrnn": __import__("linrnn").__file__,
}))
'''

DISTRIBUTIONS = r'''
import importlib.metadata, json
print(json.dumps(sorted({d.metadata["Name"].lower() for d in importlib.metadata.distributions()})))
'''


@pytest.fixture(scope="module")
def light(tmp_path_factory, linrnn_wheel, fresh_venv, venv_pip):
    """The venv's python after `pip install linrnn-*.whl` (no extras, dependencies from the index)."""
    folder = tmp_path_factory.mktemp("light")
    python = fresh_venv(folder / "venv")
    done = venv_pip(python, "install", "-q", str(linrnn_wheel))
    if done.returncode != 0:
        probe = venv_pip(python, "download", "--no-deps", "-q", "-d", str(folder / "probe"), "numpy")
        if probe.returncode != 0:
            pytest.skip(f"no package index reachable for NumPy and SciPy: {probe.stderr.strip().splitlines()[-1:]}")
        pytest.fail(f"pip install {linrnn_wheel.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return python


def run(python, *args, cwd):
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={"PATH": str(python.parent), "HOME": str(cwd)})


def test_the_wheel_with_no_extras_installs_numpy_and_scipy_only(light, tmp_path):
    found = json.loads(run(light, "-c", DISTRIBUTIONS, cwd=tmp_path).stdout)
    assert found == ["linrnn", "numpy", "scipy"], found


def test_a_users_numpy_layer_is_checked_without_pytorch_or_jax(light, tmp_path):
    done = run(light, "-c", USER, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["ok"], out["text"]
    assert out["statuses"]["pass"] >= 20 and "fail" not in out["statuses"], out["text"]
    assert out["imported"] == [] and out["installed"] == {"torch": False, "jax": False, "jaxlib": False}, out
    assert "site-packages" in out["linrnn"], out["linrnn"]          # the installed wheel, not the work tree


def test_what_needs_an_extra_says_which_in_one_line(light, tmp_path):
    linrnn = light.parent / "linrnn"
    assert run(linrnn, "--help", cwd=tmp_path).returncode == 0
    done = run(linrnn, "params", "init", "--model", "lru", "--layer-only", "--d-model", "3", "--state", "4",
               "--seed", "0", "--out", "lru.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run(light, "-c", "import numpy as np; np.save('u.npy', np.zeros((1, 5, 3)))", cwd=tmp_path)
    for backend, extra in (("reference", None), ("torch", "torch"), ("jax", "jax")):
        done = run(linrnn, "apply", "--params", "lru.npz", "--input", "u.npy", "--out", "y.npy", "--backend", backend,
                   cwd=tmp_path)
        if extra is None:
            assert done.returncode == 0, done.stderr
            continue
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("linrnn apply: error: backend ") and f"pip install 'linrnn[{extra}]'" in \
            done.stderr, done.stderr
    for command, extra in ((("theory",), "theory"), (("report", "--quick", "--out", "r"), "report")):
        done = run(linrnn, *command, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stderr.startswith(
            f"linrnn {command[0]}: error: this command needs ") and f"pip install 'linrnn[{extra}]'" in done.stderr, \
            done.stderr
    done = run(light, "-c", "import linrnn.testing.strategies", cwd=tmp_path)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last == ("linrnn.base.extras.MissingExtra: linrnn.testing.strategies needs "
                                             "Hypothesis (hypothesis), which is not installed: pip install "
                                             "'linrnn[hypothesis]'"), done.stderr

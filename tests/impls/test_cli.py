"""`linrnn params` and `linrnn apply`: the oracle on the command line, and every bad input's message."""

import subprocess
import sys

import numpy as np
import pytest

from linrnn.impls import specs
from linrnn.impls.bundle import load
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer
from linrnn.impls.reference.model import forward
from linrnn.impls.specs.lru import LRUConfig
from linrnn.base.tolerance import assert_close




@pytest.mark.parametrize("model, extra", [
    ("rotrnn", ["--state", 4, "--heads", 2]),
    ("lru", ["--state", 5]),
    ("dlr", ["--state", 5, "--bidirectional"]),
    ("rotrnn", ["--state", 2, "--heads", 3, "--bidirectional"]),
    ("s5", ["--state", 4, "--bidirectional"]),
])
def test_layer_init_and_apply_reproduce_the_reference(cli, tmp_path, model, extra):
    params, u_path, y_path = tmp_path / "p.npz", tmp_path / "u.npy", tmp_path / "y.npy"
    code, out, _ = cli.run("params", "init", "--model", model, "--layer-only", "--d-model", 3, *extra,
                       "--seed", 7, "--out", params)
    assert code == 0 and "wrote layer bundle" in out
    bundle = load(params)
    u = np.random.default_rng(0).standard_normal((2, 11, 3))
    np.save(u_path, u)
    for mode in ("sequential", "conv"):
        assert cli.run("apply", "--params", params, "--input", u_path, "--out", y_path, "--mode", mode)[0] == 0
        expected, _ = apply_mixer(bundle.config, bundle.params, u, mode)
        assert np.array_equal(np.load(y_path), expected)
    other = apply_mixer(bundle.config, bundle.params, u, "sequential")[0]
    assert_close("cli conv vs sequential", other, np.load(y_path), "forward", "float64", 11)


def test_model_init_and_apply(cli, tmp_path):
    params, u_path, y_path, n_path = (tmp_path / n for n in ("m.npz", "u.npy", "y.npy", "n.npy"))
    assert cli.run("params", "init", "--model", "lru", "--d-model", 8, "--state", 4, "--layers", 2,
               "--d-input", 3, "--d-output", 5, "--norm", "batch", "--postnorm", "--pooling", "last",
               "--seed", 1, "--out", params)[0] == 0
    bundle = load(params)
    assert bundle.level == "model" and bundle.config.prenorm is False and bundle.config.norm == "batch"
    u = np.random.default_rng(1).standard_normal((3, 6, 3))
    np.save(u_path, u)
    np.save(n_path, np.array([6, 2, 4]))
    assert cli.run("apply", "--params", params, "--input", u_path, "--out", y_path, "--lengths", n_path)[0] == 0
    assert np.array_equal(np.load(y_path), forward(bundle, u, np.array([6, 2, 4])))


def test_params_show(cli, tmp_path):
    init(LRUConfig(d_model=2, d_state=3), 0).save(tmp_path / "p.npz")
    code, out, _ = cli.run("params", "show", tmp_path / "p.npz")
    assert code == 0 and '"kind": "lru"' in out and "B_re" in out and "(3, 2)" in out


def test_output_file_keeps_its_exact_name(cli, tmp_path):
    init(LRUConfig(d_model=2, d_state=3), 0).save(tmp_path / "p.npz")
    np.save(tmp_path / "u.npy", np.ones((1, 4, 2)))
    assert cli.run("apply", "--params", tmp_path / "p.npz", "--input", tmp_path / "u.npy",
               "--out", tmp_path / "result.out")[0] == 0
    assert (tmp_path / "result.out").is_file() and not (tmp_path / "result.out.npy").exists()


# -- bad inputs: one line, exit status 2 -------------------------------------------------------

@pytest.fixture
def files(tmp_path):
    init(LRUConfig(d_model=3, d_state=2), 0).save(tmp_path / "layer.npz")
    np.save(tmp_path / "u.npy", np.zeros((2, 5, 3)))
    return tmp_path


def test_unknown_model_name(cli, tmp_path):
    line = cli.error_line("params", "init", "--model", "gru", "--seed", 0, "--out", tmp_path / "p.npz")
    assert line == f"linrnn params: error: --model: expected one of {', '.join(specs.kinds())}, found 'gru'"


@pytest.mark.parametrize("argv, message", [
    (["--model", "lru", "--state", 0], "--state: expected a positive integer, found 0"),
    (["--model", "lru", "--d-model", -3], "--d-model: expected a positive integer, found -3"),
    (["--model", "rotrnn", "--state", 3], "RotRNNConfig.d_state: expected an even state size per head"),
    (["--model", "lru", "--heads", 2], "--heads: only rotrnn, attention have heads, found --heads with --model lru"),
    (["--model", "dlr", "--layer-only", "--layers", 2], "--layer-only: model options (n_layers) do not apply"),
    (["--model", "dlr", "--norm", "group"], "ModelConfig.norm: expected one of layer, batch, found 'group'"),
    (["--model", "attention", "--state", 4], "--state: attention has no state, found --state with --model attention"),
    (["--model", "lru", "--window", 4], "--window: only attention has windows, found --window with --model lru"),
])
def test_bad_init_options(cli, tmp_path, argv, message):
    line = cli.error_line("params", "init", *argv, "--seed", 0, "--out", tmp_path / "p.npz")
    assert message in line


def test_init_to_unwritable_path(cli, tmp_path):
    line = cli.error_line("params", "init", "--model", "lru", "--seed", 0, "--out", tmp_path / "no/dir/p.npz")
    assert "cannot write bundle" in line


def test_wrong_input_shape(cli, files):
    np.save(files / "bad.npy", np.zeros((2, 5, 4)))
    line = cli.error_line("apply", "--params", files / "layer.npz", "--input", files / "bad.npy",
                      "--out", files / "y.npy")
    assert "--input: expected shape (B, L, 3) for this layer bundle, found (2, 5, 4)" in line


def test_input_with_nan(cli, files):
    u = np.zeros((1, 4, 3))
    u[0, 2, 1] = np.nan
    np.save(files / "nan.npy", u)
    line = cli.error_line("apply", "--params", files / "layer.npz", "--input", files / "nan.npy",
                      "--out", files / "y.npy")
    assert "input: expected finite values, found 1 NaN/Inf entry" in line


def test_missing_and_corrupt_files(cli, files):
    (files / "corrupt.npz").write_bytes(b"garbage")
    (files / "corrupt.npy").write_bytes(b"garbage")
    assert "cannot read bundle" in cli.error_line("apply", "--params", files / "none.npz", "--input",
                                              files / "u.npy", "--out", files / "y.npy")
    assert "not a valid .npz file" in cli.error_line("apply", "--params", files / "corrupt.npz", "--input",
                                                 files / "u.npy", "--out", files / "y.npy")
    assert "cannot read input" in cli.error_line("apply", "--params", files / "layer.npz", "--input",
                                             files / "none.npy", "--out", files / "y.npy")
    assert "not a valid .npy array" in cli.error_line("apply", "--params", files / "layer.npz", "--input",
                                                  files / "corrupt.npy", "--out", files / "y.npy")


def test_pickled_input_is_refused(cli, files):
    np.save(files / "obj.npy", np.array([object()], dtype=object), allow_pickle=True)
    assert "not a valid .npy array" in cli.error_line("apply", "--params", files / "layer.npz", "--input",
                                                  files / "obj.npy", "--out", files / "y.npy")


@pytest.mark.parametrize("option, message", [
    (["--backend", "numba"], "backend: expected one of reference, torch, jax, found 'numba'"),
    (["--mode", "scan"], "--mode: backend reference has modes sequential, conv, found 'scan'"),
    (["--dtype", "float32"], "--dtype: backend reference computes in float64, found 'float32'"),
    (["--dtype", "float16"], ("--dtype: backend reference computes in float64, found 'float16'; use --backend torch "
                              "or jax")),
    (["--dtype", "int8"], "--dtype: backend reference computes in float64, found 'int8'"),
])
def test_unknown_backend_mode_dtype(cli, files, option, message):
    line = cli.error_line("apply", "--params", files / "layer.npz", "--input", files / "u.npy",
                      "--out", files / "y.npy", *option)
    assert message in line


@pytest.mark.parametrize("option, array, message", [
    ("--segments", np.zeros((2, 4), dtype=np.int64), "segments: expected integer ids of shape (2, 5), found int64 (2, 4)"),
    ("--lengths", np.array([5, 6]), "lengths: expected values in [1, 5], found [5, 6]"),
])
def test_bad_lengths_or_segments(cli, files, option, array, message):
    np.save(files / "a.npy", array)
    line = cli.error_line("apply", "--params", files / "layer.npz", "--input", files / "u.npy",
                          "--out", files / "y.npy", option, files / "a.npy")
    assert message in line


def test_unwritable_output(cli, files):
    line = cli.error_line("apply", "--params", files / "layer.npz", "--input", files / "u.npy",
                      "--out", files / "no" / "dir" / "y.npy")
    assert "cannot write" in line


def test_console_script_prints_one_line_and_no_traceback(tmp_path):
    """The installed entry point, in a fresh process: exit status 2 and one line on stderr."""
    result = subprocess.run([sys.executable, "-m", "linrnn.cli", "params", "init", "--model", "gru",
                             "--seed", "0", "--out", str(tmp_path / "p.npz")], capture_output=True, text=True)
    assert result.returncode == 2
    # a fresh process: the built-in models alone (one registered here exists in this process only)
    assert result.stderr.strip() == f"linrnn params: error: --model: expected one of {', '.join(specs.BUILTIN)}, found 'gru'"


def test_the_parser_loads_no_framework_or_heavy_library():
    """Every `linrnn` command builds the whole parser (each area registers its subcommands), so a module-level import
    in any area was paid by all of them: the report's sections and renderer (SciPy's signal module, SymPy, Matplotlib)
    and the precision map's `scipy.signal` made `linrnn --help` take 1.8 s instead of 0.45 s, and every `linrnn train`
    and torchrun rank in the tests 1.3 s more. A fresh interpreter, so that nothing else has imported them."""
    heavy = ("torch", "jax", "scipy.signal", "scipy.stats", "sympy", "matplotlib", "statsmodels", "pandas")
    code = ("import sys; from linrnn.cli import build_parser; build_parser(); "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"building the CLI's parser imported {done.stdout.strip()}"

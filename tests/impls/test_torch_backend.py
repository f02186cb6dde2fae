"""The `torch` backend of `linrnn apply`, and the rule that the PyTorch side imports neither JAX nor the reference."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

import linrnn.impls.torch as torch_backend
from linrnn.cli import main
from linrnn.impls.backends import backend
from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_bundle as reference_apply, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

LAYERS = [RotRNNConfig(d_model=3, d_state=2, heads=2, bidirectional=True), LRUConfig(d_model=3, d_state=4),
          DLRConfig(d_model=3, d_state=4, bidirectional=True)]


def test_the_registry_serves_this_package():
    assert backend("torch") is torch_backend
    assert torch_backend.MODES[0] == "scan" and set(torch_backend.MODES) == {"scan", "sequential", "conv", "step"}
    assert torch_backend.DTYPES == ("float32", "float64", "bfloat16", "float16")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", LAYERS, ids=lambda c: f"{c.kind}-bi{c.bidirectional}")
def test_apply_bundle_on_a_layer_equals_the_reference(cfg, dtype):
    bundle = init(cfg, 0)
    u = np.random.default_rng(0).standard_normal((2, 17, 3))
    expected = reference_apply(bundle, u)
    for mode in torch_backend.MODES:
        if cfg.bidirectional and mode == "step":
            with pytest.raises(LinrnnError, match="bidirectional"):
                torch_backend.apply_bundle(bundle, u, mode, dtype)
            continue
        y = torch_backend.apply_bundle(bundle, u, mode, dtype)
        assert y.dtype == np.float64 and y.flags.writeable
        assert_close(f"apply {cfg.kind} {mode} {dtype}", expected, y, "forward", dtype, 17,
                     spectral_radius(cfg, bundle.params))


@pytest.mark.parametrize("norm", ["layer", "batch"])     # batch: evaluation mode, the stored statistics
@pytest.mark.parametrize("vocab", [None, 9])
def test_apply_bundle_on_a_model_with_lengths_equals_the_reference(vocab, norm):
    cfg = ModelConfig(mixer=LRUConfig(d_model=4, d_state=3), n_layers=2, d_input=2, vocab_size=vocab, d_output=3,
                      pooling="last", norm=norm)
    bundle = init(cfg, 1)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, (3, 8)) if vocab else rng.standard_normal((3, 8, 2))
    lengths = np.array([8, 3, 5])
    y = torch_backend.apply_bundle(bundle, x, "conv", "float64", lengths)
    assert_close("apply model", reference_apply(bundle, x, lengths=lengths), y, "forward", "float64", 8, 0.999)


def test_apply_bundle_names_the_bad_field():
    bundle = init(LAYERS[1], 0)
    u = np.zeros((1, 4, 3))
    with pytest.raises(LinrnnError, match="^mode: the torch backend has modes scan, sequential, conv, step, "
                                          "found 'fft'"):
        torch_backend.apply_bundle(bundle, u, "fft", "float64")
    with pytest.raises(LinrnnError, match="^dtype: the torch backend computes in float32, float64, bfloat16, float16, "
                                          "found 'int8'"):
        torch_backend.apply_bundle(bundle, u, "scan", "int8")
    with pytest.raises(LinrnnError, match=r"^lengths: expected integers of shape \(1,\)"):
        torch_backend.apply_bundle(bundle, u, "scan", "float64", np.array([4, 4]))
    with pytest.raises(LinrnnError, match=r"^input: expected shape \(B, L, 3\)"):
        torch_backend.apply_bundle(bundle, np.zeros((1, 4, 2)), "scan", "float64")


def test_linrnn_apply_runs_the_torch_backend(capsys, tmp_path):
    bundle = init(LRUConfig(d_model=3, d_state=4), 2)
    params, u_path, y_path = tmp_path / "p.npz", tmp_path / "u.npy", tmp_path / "y.npy"
    bundle.save(params)
    u = np.random.default_rng(2).standard_normal((2, 6, 3))
    np.save(u_path, u)
    code = main(["apply", "--params", str(params), "--input", str(u_path), "--out", str(y_path),
                 "--backend", "torch", "--mode", "step", "--dtype", "float32"])
    assert code == 0, capsys.readouterr()
    assert_close("linrnn apply --backend torch", reference_apply(bundle, u), np.load(y_path), "forward", "float32", 6,
                 spectral_radius(bundle.config, bundle.params))


def test_the_torch_side_imports_neither_jax_nor_the_reference():
    package = Path(torch_backend.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                assert not (name == "jax" or name.startswith(("jax.", "jaxlib", "linrnn.impls.reference",
                                                              "linrnn.impls.jax"))), f"{path.name} imports {name}"


def test_layers_follow_their_parameters_device_and_dtype():
    """No device is hard-coded: every tensor is made where the parameters live (CPU here, CUDA alike)."""
    layer = torch_backend.from_bundle(init(LAYERS[1], 0), torch.float32, device=torch.device("cpu"))
    y, state = layer(torch.zeros(1, 3, 3), "conv")
    assert y.device == layer.D.device and state.device == layer.D.device and state.dtype == torch.complex64
    source = "".join(p.read_text() for p in Path(torch_backend.__file__).parent.glob("*.py"))
    assert "'cpu'" not in source and '"cpu"' not in source and ".cuda()" not in source

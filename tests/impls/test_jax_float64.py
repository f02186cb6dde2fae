"""JAX's float64 is scoped, never process-wide; and the user's default (float32, 64-bit mode off) is right.

The session runs inside `float64()` (the root conftest.py); these tests leave it with
`jax.enable_x64(False)` to see what a user sees, or start a fresh interpreter.
"""

import subprocess
import sys

import jax
import numpy as np
import pytest

from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import apply_bundle, float64, float64_enabled, from_bundle, layer, model
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.reference.model import forward as reference_forward
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

CONFIGS = [RotRNNConfig(d_model=3, d_state=4, heads=2), LRUConfig(d_model=3, d_state=4), DLRConfig(d_model=3, d_state=4)]
L = 7


def inputs(cfg) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, L, cfg.d_model))


def test_importing_the_jax_side_leaves_64_bit_mode_off():
    code = ("import linrnn.impls.jax, jax, jax.numpy as jnp; "
            "print(jax.config.jax_enable_x64, jnp.zeros(3).dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "float32"]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.kind)
def test_an_explicit_float64_call_computes_in_float64_and_restores_the_mode(cfg):
    bundle, u = init(cfg, 0), inputs(cfg)
    ref, _ = apply_mixer(cfg, bundle.params, u, "sequential")
    r = spectral_radius(cfg, bundle.params)
    with jax.enable_x64(False):
        y = apply_bundle(bundle, u, "scan", "float64")              # enters the scope itself
        assert not float64_enabled()
        with float64():
            y_scoped, _ = layer.apply(from_bundle(bundle, "float64"), cfg, u, "scan")
            assert y_scoped.dtype == np.float64
        assert not float64_enabled()
    assert_close("apply_bundle float64", ref, y, "forward", "float64", L, r)
    assert_close("scoped float64", ref, np.asarray(y_scoped), "forward", "float64", L, r)


def one_line_error(call) -> str:
    with pytest.raises(LinrnnError) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and "float64()" in message, message
    return message


def test_a_float64_request_outside_the_scope_is_a_one_line_error():
    cfg = CONFIGS[1]
    bundle, u = init(cfg, 0), inputs(cfg)
    with float64():
        params = from_bundle(bundle, "float64")                     # float64 arrays made inside the scope ...
    model_bundle = init(ModelConfig(mixer=cfg, d_input=3), 0)
    with float64():
        model_params = from_bundle(model_bundle, "float64")
    with jax.enable_x64(False):
        one_line_error(lambda: from_bundle(bundle, "float64"))     # ... or asked for outside it
        one_line_error(lambda: layer.apply(params, cfg, u))         # ... used outside it: JAX would cut them
        one_line_error(lambda: layer.step(params, cfg, u[:, 0]))
        one_line_error(lambda: model.forward(model_params, model_bundle.config, u))
        one_line_error(lambda: model.forward_train(model_params, model_bundle.config, u))


@pytest.mark.parametrize("mode", layer.MODES)
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.kind)
def test_float32_with_the_mode_off_computes_in_float32(cfg, mode):
    """The user's default: no scope at all. Every array here has an explicit dtype, so nothing changes."""
    bundle, u = init(cfg, 0), inputs(cfg)
    ref, _ = apply_mixer(cfg, bundle.params, u, "conv" if mode == "conv" else "sequential")
    with jax.enable_x64(False):
        y, state = layer.apply(from_bundle(bundle, "float32"), cfg, u, mode)
    assert y.dtype == np.float32
    assert_close(f"{cfg.kind} {mode} float32, 64-bit mode off", ref, np.asarray(y), "forward", "float32", L,
                 spectral_radius(cfg, bundle.params))


def test_the_model_and_the_training_adapter_enter_the_scope_for_float64():
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.datatasks import ModelBatch
    from linrnn.tasks.jax_adapter import Adapter

    cfg = TrainConfig(task="shift", length=16, model="lru", d_model=4, mixer={"d_state": 4}, dtype="float64",
                      backend="jax")
    bundle = init(cfg.model_config(), 0)
    x = np.random.default_rng(1).standard_normal((2, 16, cfg.model_config().d_input))
    ref = reference_forward(bundle, x, None, "sequential")
    with jax.enable_x64(False):
        adapter = Adapter(bundle, cfg)
        got = adapter.predict(ModelBatch(x, np.full(2, 16), np.zeros(2)))
        again = apply_bundle(bundle, x, "scan", "float64")
        assert not float64_enabled()
    assert_close("adapter predict float64", ref, got, "forward", "float64", 16)
    assert_close("apply_bundle model float64", ref, again, "forward", "float64", 16)

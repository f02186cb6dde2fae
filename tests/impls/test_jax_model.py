"""The JAX deep model: evaluation against the reference, and what training mode changes.

Evaluation (`model.forward`) equals `linrnn.impls.reference.model.forward` over LayerNorm and
BatchNorm with random stored statistics, prenorm and postnorm, each pooling, a linear and an
embedding encoder, and padded lengths. Training (`model.forward_train`): BatchNorm on batch
statistics with PyTorch's running-statistics update, time-shared dropout with an explicit key.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, model
from linrnn.impls.reference import spectral_radius
from linrnn.impls.reference.model import forward as reference_forward
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

B, L = 3, 6
LENGTHS = np.array([6, 2, 5])

MODELS = {
    "lru layernorm prenorm mean linear": ModelConfig(
        mixer=LRUConfig(d_model=4, d_state=3), d_input=2, d_output=3),
    "lru batchnorm postnorm last embedding": ModelConfig(
        mixer=LRUConfig(d_model=4, d_state=3), vocab_size=5, d_output=2, norm="batch", prenorm=False,
        pooling="last"),
    "rotrnn batchnorm prenorm none linear": ModelConfig(
        mixer=RotRNNConfig(d_model=4, d_state=2, heads=2), n_layers=1, d_input=2,
        d_output=2, norm="batch", pooling="none"),
    "dlr bidirectional layernorm postnorm mean embedding": ModelConfig(
        mixer=DLRConfig(d_model=4, d_state=3, bidirectional=True), vocab_size=5, d_output=2, prenorm=False),
}


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def random_bundle(cfg: ModelConfig, seed: int):
    """An initialised bundle with random norm scales, biases and stored statistics (not 1, 0, 0, 1)."""
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    updates = {}
    for i in range(cfg.n_layers):
        pre = f"layers.{i}.norm."
        updates[pre + "scale"] = rng.uniform(0.5, 1.5, cfg.d_model)
        updates[pre + "bias"] = 0.1 * rng.standard_normal(cfg.d_model)
        if cfg.norm == "batch":
            updates[pre + "mean"] = 0.3 * rng.standard_normal(cfg.d_model)
            updates[pre + "var"] = rng.uniform(0.5, 2.0, cfg.d_model)
    return bundle.replace(**updates)


def model_inputs(cfg: ModelConfig, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if cfg.vocab_size is not None:
        return rng.integers(0, cfg.vocab_size, (B, L))
    return rng.standard_normal((B, L, cfg.d_input))


def radius(bundle) -> float:
    cfg = bundle.config
    return max(spectral_radius(cfg.mixer, {k.split(".", 3)[3]: v for k, v in bundle.params.items()
                                           if k.startswith(f"layers.{i}.mixer.")}) for i in range(cfg.n_layers))


@pytest.mark.parametrize("name", list(MODELS))
def test_evaluation_equals_the_reference(name):
    cfg = MODELS[name]
    bundle = random_bundle(cfg, 11)
    inputs = model_inputs(cfg, 11)
    expected = reference_forward(bundle, inputs, LENGTHS)
    got = model.forward(from_bundle(bundle), cfg, jnp.asarray(inputs), jnp.asarray(LENGTHS))
    assert_close(f"model ({name})", expected, got, "forward", "float64", L, radius(bundle))


def test_evaluation_in_every_mode_and_without_lengths():
    cfg = MODELS["lru layernorm prenorm mean linear"]
    bundle = random_bundle(cfg, 12)
    inputs = model_inputs(cfg, 12)
    expected = reference_forward(bundle, inputs)
    for mode in ("sequential", "conv", "step"):
        got = model.forward(from_bundle(bundle), cfg, jnp.asarray(inputs), mode=mode)
        assert_close(f"model, mode {mode}", expected, got, "forward", "float64", L, radius(bundle))


def test_training_without_dropout_or_batchnorm_is_evaluation():
    cfg = MODELS["lru layernorm prenorm mean linear"]
    bundle = random_bundle(cfg, 13)
    params, inputs = from_bundle(bundle), jnp.asarray(model_inputs(cfg, 13))
    out, running = model.forward_train(params, cfg, inputs, lengths=jnp.asarray(LENGTHS))
    assert running == {}
    assert_close("train vs eval", model.forward(params, cfg, inputs, jnp.asarray(LENGTHS)), out, "forward",
                 "float64", L, radius(bundle))


def test_batchnorm_training_normalises_with_batch_statistics_and_updates_the_running_ones():
    cfg = ModelConfig(mixer=LRUConfig(d_model=4, d_state=3), n_layers=1, d_input=2, d_output=2, norm="batch",
                      pooling="none")
    bundle = random_bundle(cfg, 14)
    inputs = model_inputs(cfg, 14)
    p = bundle.params
    encoded = inputs @ p["encoder.weight"].T + p["encoder.bias"]            # (B L H): the first norm's input
    mean, var = encoded.mean(axis=(0, 1)), encoded.var(axis=(0, 1))
    with_batch_stats = bundle.replace(**{"layers.0.norm.mean": mean, "layers.0.norm.var": var})
    out, running = model.forward_train(from_bundle(bundle), cfg, jnp.asarray(inputs))
    assert_close("batchnorm training output", reference_forward(with_batch_stats, inputs), out, "forward",
                 "float64", L, radius(bundle))
    n = B * L
    assert_close("running mean", 0.9 * p["layers.0.norm.mean"] + 0.1 * mean, running["layers.0.norm.mean"],
                 "forward", "float64")
    assert_close("running var", 0.9 * p["layers.0.norm.var"] + 0.1 * var * n / (n - 1),
                 running["layers.0.norm.var"], "forward", "float64")


def test_dropout_uses_one_mask_for_every_time_step():
    z = jnp.ones((4, 7, 16))
    dropped = np.asarray(model.dropout(z, 0.5, jax.random.key(0)))
    assert np.all(dropped == dropped[:, :1, :]), "the mask differs between time steps"
    assert set(np.unique(dropped)) == {0.0, 2.0}   # dropped, or kept and scaled by 1/(1 - rate)


def test_dropout_in_training_needs_a_key_and_follows_it():
    cfg = ModelConfig(mixer=LRUConfig(d_model=4, d_state=3), n_layers=1, d_input=2, d_output=2, dropout=0.5,
                      pooling="none")
    bundle = random_bundle(cfg, 15)
    params, inputs = from_bundle(bundle), jnp.asarray(model_inputs(cfg, 15))
    with pytest.raises(LinrnnError, match="^key:"):
        model.forward_train(params, cfg, inputs)
    first, _ = model.forward_train(params, cfg, inputs, jax.random.key(1))
    again, _ = model.forward_train(params, cfg, inputs, jax.random.key(1))
    other, _ = model.forward_train(params, cfg, inputs, jax.random.key(2))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    assert_close("evaluation ignores dropout", reference_forward(bundle, np.asarray(inputs)),
                 model.forward(params, cfg, inputs), "forward", "float64", L, radius(bundle))

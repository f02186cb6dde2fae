"""The deep model's retrieval (two-tower) head and gradient checkpointing, in all three implementations.

Retrieval (docs/models.md, "The retrieval head"): rows b and B + b of a (2B, L) batch are one pair of
documents, encoded by the same blocks, pooled to z1, z2 and classified from [z1, z2, z1 - z2, z1 * z2]
by Linear(4H -> H), GELU, Linear(H -> d_output). Checked against a NumPy computation written out
here, across the reference, PyTorch and JAX (outputs, gradients, BatchNorm over all 2B rows), for
shared tower weights and ignored padding. Checkpointing (`checkpoint=True` in PyTorch, `remat=True`
in JAX) recomputes each block in the backward pass and must change no number.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from scipy.special import erf

from linrnn.impls.bundle import Bundle, load, model_shapes, sub_params
from linrnn.impls.config import ModelConfig, config_from_dict, config_to_dict
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, model as jax_model
from linrnn.impls.reference import model as reference, spectral_radius
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import Model

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

H, L = 4, 9
# the heads around a complex and a real-basis mixer (the head adds no mixer code)
MIXERS = {"lru": LRUConfig(d_model=H, d_state=3, r_max=0.99),
          "rotrnn": RotRNNConfig(d_model=H, d_state=4, heads=2, gamma_max=0.99)}   # N = 2 would make P cancel
# three pairs: row b is the first document of pair b, row 3 + b its second; the two lengths differ
LENGTHS = np.array([9, 4, 1, 2, 9, 6])


def retrieval_config(kind: str = "lru", **fields) -> ModelConfig:
    return ModelConfig(**{"mixer": MIXERS[kind], "n_layers": 2, "vocab_size": 7, "d_output": 3,
                          "head": "retrieval", **fields})


def random_bundle(cfg: ModelConfig, seed: int) -> Bundle:
    """An initialised bundle with norm weights and BatchNorm statistics that are not the identity."""
    bundle = init(cfg, seed)
    rng = np.random.default_rng(seed)
    updates = {}
    for i in range(cfg.n_layers):
        updates[f"layers.{i}.norm.scale"] = rng.uniform(0.5, 1.5, H)
        updates[f"layers.{i}.norm.bias"] = 0.1 * rng.standard_normal(H)
        if cfg.norm == "batch":
            updates[f"layers.{i}.norm.mean"] = 0.3 * rng.standard_normal(H)
            updates[f"layers.{i}.norm.var"] = rng.uniform(0.5, 2.0, H)
    return bundle.replace(**updates)


def documents(cfg: ModelConfig, seed: int, rows: int = len(LENGTHS)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if cfg.vocab_size is not None:
        return rng.integers(0, cfg.vocab_size, (rows, L))
    return rng.standard_normal((rows, L, cfg.d_input))


def radius(bundle: Bundle) -> float:
    cfg = bundle.config
    return max(spectral_radius(cfg.mixer, sub_params(bundle.params, f"layers.{i}.mixer."))
               for i in range(cfg.n_layers))


def pooled_one_by_one(bundle: Bundle, inputs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each row's masked mean of the last block's output, every row encoded alone (evaluation: norms act per
    position).   -> (rows H)"""
    cfg, p = bundle.config, bundle.params
    features = []
    for row, length in zip(inputs, lengths):
        x = reference.encode(p, cfg, row[None])                       # (1 L H)
        for i in range(cfg.n_layers):
            x = reference.block(sub_params(p, f"layers.{i}."), cfg, x, "sequential")
        features.append(x[0, :length].sum(axis=0) / length)
    return np.stack(features)


def head_by_hand(p, z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """decoder(gelu(head(f))), f = [z1, z2, z1 - z2, z1 * z2], GELU written with erf.   (B H) x 2 -> (B d_out)"""
    f = np.concatenate([z1, z2, z1 - z2, z1 * z2], axis=1)               # (B 4H)
    a = f @ p["head.weight"].T + p["head.bias"]                           # (B H)
    hidden = a * 0.5 * (1.0 + erf(a / np.sqrt(2.0)))
    return hidden @ p["decoder.weight"].T + p["decoder.bias"]


def torch_forward(bundle: Bundle, inputs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return Model.from_bundle(bundle).eval()(torch.tensor(inputs), torch.tensor(lengths)).detach().numpy()


def jax_forward(bundle: Bundle, inputs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return np.asarray(jax_model.forward(from_bundle(bundle), bundle.config, jnp.asarray(inputs),
                                        jnp.asarray(lengths)))


BACKENDS = {"reference": reference.forward, "torch": torch_forward, "jax": jax_forward}


# -- the contract: config, bundle, initialisation ------------------------------------------------

def test_the_head_adds_two_keys_before_the_decoder_and_round_trips():
    cfg = retrieval_config()
    linear = model_shapes(ModelConfig(mixer=cfg.mixer, n_layers=2, vocab_size=7, d_output=3))
    shapes = model_shapes(cfg)
    assert list(shapes)[-4:] == ["head.weight", "head.bias", "decoder.weight", "decoder.bias"]
    assert shapes["head.weight"] == (H, 4 * H) and shapes["head.bias"] == (H,)
    assert set(shapes) - set(linear) == {"head.weight", "head.bias"}
    assert config_from_dict(json.loads(json.dumps(config_to_dict(cfg)))) == cfg
    old = config_to_dict(ModelConfig(mixer=cfg.mixer))
    del old["head"]                                                       # a bundle written before the field
    assert config_from_dict(old).head == "linear"


def test_the_head_is_initialised_like_the_decoder_and_saved_with_the_bundle(tmp_path):
    cfg = retrieval_config(mixer=LRUConfig(d_model=32, d_state=3))
    bundle = init(cfg, 0)
    bound = 1.0 / np.sqrt(4 * 32)                                         # PyTorch's Linear(4H -> H)
    for key in ("head.weight", "head.bias"):
        values = bundle.params[key]
        assert np.all(np.abs(values) <= bound) and np.max(np.abs(values)) > 0.9 * bound
    back = load(bundle.save(tmp_path / "retrieval.npz"))
    assert back.config == cfg and back.digest() == bundle.digest()
    model = Model.from_bundle(bundle)
    assert list(model.state_dict()) == list(bundle.params)
    assert model.to_bundle().digest() == bundle.digest()


def test_the_command_line_makes_and_applies_a_retrieval_model(cli, tmp_path):
    out = tmp_path / "m.npz"
    code, _, _ = cli.run("params", "init", "--model", "lru", "--d-model", 4, "--state", 2, "--head", "retrieval",
                         "--seed", "0", "--out", out)
    assert code == 0
    bundle = load(out)
    assert bundle.config.head == "retrieval" and "head.weight" in bundle.params
    assert "ModelConfig.pooling" in cli.error_line("params", "init", "--model", "lru", "--head", "retrieval",
                                                   "--pooling", "none", "--seed", "0", "--out", out)
    np.save(tmp_path / "pairs.npy", np.ones((4, 3, 1)))
    np.save(tmp_path / "odd.npy", np.ones((3, 3, 1)))
    for backend in BACKENDS:
        code, _, _ = cli.run("apply", "--params", out, "--input", tmp_path / "pairs.npy", "--out", tmp_path / "y.npy",
                             "--backend", backend)
        assert code == 0 and np.load(tmp_path / "y.npy").shape == (2, bundle.config.d_output)
        line = cli.error_line("apply", "--params", out, "--input", tmp_path / "odd.npy", "--out", tmp_path / "y.npy",
                              "--backend", backend)
        assert line.endswith("input: the retrieval head expects an even number of rows (B first documents, then "
                             "their B second documents), found 3"), line


# -- the head's numbers -----------------------------------------------------------------------------

def test_the_reference_head_equals_the_computation_by_hand():
    cfg = retrieval_config()
    bundle = random_bundle(cfg, 1)
    tokens = documents(cfg, 1)
    z = pooled_one_by_one(bundle, tokens, LENGTHS)
    expected = head_by_hand(bundle.params, z[:3], z[3:])
    got = reference.forward(bundle, tokens, LENGTHS)
    assert got.shape == (3, cfg.d_output)
    assert_close("retrieval head, by hand", expected, got, "forward", "float64", L, radius(bundle))


@pytest.mark.parametrize("norm, pooling", [("layer", "mean"), ("batch", "mean"), ("layer", "last")])
@pytest.mark.parametrize("kind", list(MIXERS))
def test_torch_and_jax_equal_the_reference(kind, norm, pooling):
    cfg = retrieval_config(kind, norm=norm, pooling=pooling, prenorm=norm == "layer")
    bundle = random_bundle(cfg, 2)
    tokens = documents(cfg, 2)
    expected = reference.forward(bundle, tokens, LENGTHS)
    for name in ("torch", "jax"):
        assert_close(f"{name} retrieval {kind} {norm} {pooling}", expected, BACKENDS[name](bundle, tokens, LENGTHS),
                     "forward", "float64", L, radius(bundle))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_both_documents_go_through_the_same_tower(backend):
    """Swapped pairs give the head of the swapped features of each document encoded alone (z1 - z2 flips sign)."""
    cfg = retrieval_config("rotrnn")
    bundle = random_bundle(cfg, 3)
    tokens = documents(cfg, 3)
    z = pooled_one_by_one(bundle, tokens, LENGTHS)
    swapped = np.concatenate([tokens[3:], tokens[:3]])
    swapped_lengths = np.concatenate([LENGTHS[3:], LENGTHS[:3]])
    got = BACKENDS[backend](bundle, swapped, swapped_lengths)
    assert_close(f"{backend}: swapped documents", head_by_hand(bundle.params, z[3:], z[:3]), got, "forward",
                 "float64", L, radius(bundle))
    assert not np.allclose(got, BACKENDS[backend](bundle, tokens, LENGTHS)), "the pair's order has no effect"


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_padding_beyond_each_document_is_ignored(backend):
    cfg = retrieval_config("lru", norm="batch")
    bundle = random_bundle(cfg, 4)
    tokens = documents(cfg, 4)
    other = documents(cfg, 5)
    padding = np.arange(L)[None, :] >= LENGTHS[:, None]                   # (2B L)
    repadded = np.where(padding, other, tokens)
    assert np.any(repadded != tokens)
    expected = BACKENDS[backend](bundle, tokens, LENGTHS)
    assert_close(f"{backend}: other padding", expected, BACKENDS[backend](bundle, repadded, LENGTHS), "forward",
                 "float64", L, radius(bundle))


def test_training_mode_gradients_and_batch_statistics_agree_between_torch_and_jax():
    """BatchNorm on the statistics of the valid positions of the 2B x L batch (padding "masked", the default; the
    first norm sees the embeddings), one loss."""
    cfg = retrieval_config("lru", n_layers=1, norm="batch")
    bundle = random_bundle(cfg, 6)
    tokens = documents(cfg, 6)
    weights = np.random.default_rng(6).standard_normal((3, cfg.d_output))
    embedded = bundle.params["encoder.weight"][tokens]                    # (2B L H)
    valid = embedded[np.arange(L)[None, :] < LENGTHS[:, None]]            # (n H): the valid positions only
    batch_stats = bundle.replace(**{"layers.0.norm.mean": valid.mean(axis=0),
                                    "layers.0.norm.var": valid.var(axis=0)})
    expected = reference.forward(batch_stats, tokens, LENGTHS)
    r = radius(bundle)

    torch_model = Model.from_bundle(bundle).train()
    out = torch_model(torch.tensor(tokens), torch.tensor(LENGTHS))
    (out * torch.tensor(weights)).sum().backward()
    assert_close("torch training output", expected, out.detach().numpy(), "forward", "float64", L, r)

    def loss(params):
        out, running = jax_model.forward_train(params, cfg, jnp.asarray(tokens), lengths=jnp.asarray(LENGTHS))
        return jnp.sum(out * weights), (out, running)

    (_, (jax_out, running)), grads = jax.value_and_grad(loss, has_aux=True)(from_bundle(bundle))
    assert_close("jax training output", expected, jax_out, "forward", "float64", L, r)
    for key in ("layers.0.norm.mean", "layers.0.norm.var"):
        assert_close(f"running {key}", torch_model.state_dict()[key].numpy(), running[key], "forward", "float64")
    torch_grads = {name: p.grad.numpy() for name, p in torch_model.named_parameters()}
    assert set(torch_grads) == set(grads) - {"layers.0.norm.mean", "layers.0.norm.var"}
    for name, grad in torch_grads.items():
        assert_close(f"d loss / d {name}, torch vs jax", grad, grads[name], "gradient", "float64", L, r)


# -- gradient checkpointing ---------------------------------------------------------------------------

def test_torch_checkpointing_recomputes_each_block_and_changes_no_number():
    cfg = retrieval_config("lru", norm="batch", dropout=0.3)
    bundle = random_bundle(cfg, 7)
    tokens, lengths = torch.tensor(documents(cfg, 7)), torch.tensor(LENGTHS)
    results = {}
    for checkpoint in (False, True):
        model = Model.from_bundle(bundle).train()
        calls = []
        for block in model.layers:
            block.mixer.register_forward_hook(lambda *_: calls.append(1))
        torch.manual_seed(8)                                              # the same dropout masks in both runs
        out = model(tokens, lengths, checkpoint=checkpoint)
        out.square().sum().backward()
        assert len(calls) == cfg.n_layers * (2 if checkpoint else 1), "checkpointing: blocks not recomputed"
        results[checkpoint] = (out.detach(), {n: p.grad for n, p in model.named_parameters()}, model.state_dict())
    (out, grads, state), (out_ck, grads_ck, state_ck) = results[False], results[True]
    assert torch.equal(out, out_ck)
    assert grads.keys() == grads_ck.keys() and all(torch.equal(grads[n], grads_ck[n]) for n in grads)
    assert all(torch.equal(state[k], state_ck[k]) for k in state), "BatchNorm statistics updated twice"

    with torch.no_grad():                                                 # nothing to recompute: a plain pass
        model = Model.from_bundle(bundle).train()
        calls = []
        model.layers[0].mixer.register_forward_hook(lambda *_: calls.append(1))
        model(tokens, lengths, checkpoint=True)
        assert len(calls) == 1


def test_jax_remat_checkpoints_each_block_and_changes_no_number():
    cfg = retrieval_config("rotrnn", norm="batch", dropout=0.3)
    bundle = random_bundle(cfg, 9)
    params, r = from_bundle(bundle), radius(bundle)
    tokens, lengths, key = jnp.asarray(documents(cfg, 9)), jnp.asarray(LENGTHS), jax.random.key(9)

    def loss(p, remat):
        out, running = jax_model.forward_train(p, cfg, tokens, key, lengths, remat=remat)
        return jnp.sum(out ** 2), running

    remat_name = jax.make_jaxpr(jax.checkpoint(jnp.sin))(1.0).eqns[0].primitive.name + "["   # remat2 in JAX 0.10
    assert str(jax.make_jaxpr(lambda p: loss(p, True))(params)).count(remat_name) == cfg.n_layers
    assert remat_name not in str(jax.make_jaxpr(lambda p: loss(p, False))(params))
    step = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
    (value, running), grads = step(params, False)
    (value_r, running_r), grads_r = step(params, True)
    assert_close("loss, remat vs not", value, value_r, "forward", "float64", L, r)
    for key_ in running:
        assert_close(f"running {key_}, remat vs not", running[key_], running_r[key_], "forward", "float64")
    for name in grads:
        assert_close(f"d loss / d {name}, remat vs not", grads[name], grads_r[name], "gradient", "float64", L, r)


# -- bad input -----------------------------------------------------------------------------------------

def test_an_odd_number_of_rows_or_pooling_none_is_refused():
    with pytest.raises(LinrnnError, match=r"^ModelConfig.pooling: the retrieval head .* found 'none'$"):
        retrieval_config(pooling="none")
    with pytest.raises(LinrnnError, match="ModelConfig.head: expected one of linear, retrieval, found 'siamese'"):
        retrieval_config(head="siamese")
    cfg = retrieval_config()
    bundle = init(cfg, 0)
    tokens = documents(cfg, 0, rows=5)
    for forward in BACKENDS.values():
        with pytest.raises(LinrnnError, match=r"^input: the retrieval head expects an even number of rows .* "
                                              r"found 5$"):
            forward(bundle, tokens, LENGTHS[:5])
    with pytest.raises(LinrnnError, match="even number of rows"):
        jax_model.forward_train(from_bundle(bundle), cfg, jnp.asarray(tokens))

"""The PyTorch deep model against the reference's `model.forward`, its loading, parameters and training mode."""

import itertools

import numpy as np
import pytest
import torch

from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import spectral_radius
from linrnn.impls.reference.model import forward as reference_forward
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MODES, Model, parameter_groups, recurrence_parameters
from linrnn.impls.torch.model import TimeSharedDropout

H = 6
MIXERS = {   # the deep model around one mixer of each family (every mixer in a model: test_padding.py)
    "rotrnn": RotRNNConfig(d_model=H, d_state=2, heads=2, gamma_max=0.9999),
    "lru": LRUConfig(d_model=H, d_state=3, r_max=0.9999),
    "dlr": DLRConfig(d_model=H, d_state=3, dt_min=2e-4, dt_max=1.0),
}
rng = np.random.default_rng(0)


def model_bundle(cfg: ModelConfig, seed: int):
    """A model bundle whose BatchNorm statistics and norm weights are not the identity."""
    bundle = init(cfg, seed)
    r = np.random.default_rng(seed)
    updates = {}
    for i in range(cfg.n_layers):
        updates[f"layers.{i}.norm.scale"] = r.uniform(0.5, 2.0, H)
        updates[f"layers.{i}.norm.bias"] = r.uniform(-1.0, 1.0, H)
        if cfg.norm == "batch":
            updates[f"layers.{i}.norm.mean"] = r.uniform(-1.0, 1.0, H)
            updates[f"layers.{i}.norm.var"] = r.uniform(0.5, 2.0, H)
    return bundle.replace(**updates)


def model_inputs(cfg: ModelConfig, B: int, L: int, seed: int):
    r = np.random.default_rng(seed)
    if cfg.vocab_size is not None:
        return r.integers(0, cfg.vocab_size, (B, L))
    return r.standard_normal((B, L, cfg.d_input))


def torch_inputs(model: Model, inputs: np.ndarray) -> torch.Tensor:
    return torch.tensor(inputs) if inputs.dtype.kind == "i" else torch.tensor(inputs, dtype=model.dtype)


def radius(cfg: ModelConfig, bundle) -> float:
    mixers = [{k.split("mixer.", 1)[1]: v for k, v in bundle.params.items() if k.startswith(f"layers.{i}.mixer.")}
              for i in range(cfg.n_layers)]
    return max(spectral_radius(cfg.mixer, p) for p in mixers)


CASES = [(kind, norm, prenorm, pooling, vocab)
         for kind, (norm, prenorm), pooling, vocab in itertools.product(
             MIXERS, [("layer", True), ("batch", False), ("layer", False), ("batch", True)],
             ["mean", "last", "none"], [None, 11])]


@pytest.mark.parametrize("kind, norm, prenorm, pooling, vocab", CASES)
def test_eval_mode_equals_the_reference(kind, norm, prenorm, pooling, vocab):
    cfg = ModelConfig(mixer=MIXERS[kind], n_layers=2, d_input=3, vocab_size=vocab, d_output=4, norm=norm,
                      prenorm=prenorm, pooling=pooling)
    bundle = model_bundle(cfg, seed=len(kind) + 2 * prenorm)
    x = model_inputs(cfg, 3, 9, seed=1)
    lengths = np.array([9, 4, 1])
    expected = reference_forward(bundle, x, lengths)
    model = Model.from_bundle(bundle).eval()
    got = model(torch_inputs(model, x), torch.tensor(lengths))
    assert_close(f"model {kind} {norm} prenorm={prenorm} {pooling}", expected, got.detach().numpy(), "forward",
                 "float64", 9, radius(cfg, bundle))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_every_view_of_the_model_equals_the_reference(mode, dtype):
    cfg = ModelConfig(mixer=MIXERS["lru"], n_layers=2, d_input=2, d_output=3, norm="batch", pooling="mean")
    bundle = model_bundle(cfg, 5)
    x = model_inputs(cfg, 2, 33, seed=2)
    model = Model.from_bundle(bundle, getattr(torch, dtype)).eval()
    got = model(torch_inputs(model, x), mode=mode)
    assert got.dtype == getattr(torch, dtype)
    assert_close(f"model {mode} {dtype}", reference_forward(bundle, x), got.detach().numpy(), "forward", dtype, 33,
                 radius(cfg, bundle))


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_round_trip_is_exact_and_state_dict_keys_are_bundle_keys(norm):
    cfg = ModelConfig(mixer=MIXERS["rotrnn"], n_layers=2, vocab_size=7, d_output=3, norm=norm)
    bundle = model_bundle(cfg, 6)
    model = Model.from_bundle(bundle)
    assert list(model.state_dict()) == list(bundle.params)
    back = model.to_bundle()
    assert back.digest() == bundle.digest()
    assert all(np.array_equal(back.params[k], v) for k, v in bundle.params.items())


def test_parameter_counts_are_pinned():
    """Counted by hand: an LRU layer has 4NH + 3N + H parameters; see the sums in the comments."""
    H_, N = 4, 3
    cases = [
        # encoder 4*2 + 4 = 12; per block: LayerNorm 2*4 = 8, LRU 4*3*4 + 3*3 + 4 = 61, GLU 2*(16 + 4) = 40
        # -> 109; two blocks 218; decoder 5*4 + 5 = 25: 12 + 218 + 25 = 255
        (ModelConfig(mixer=LRUConfig(d_model=H_, d_state=N), n_layers=2, d_input=2, d_output=5), 255, 0),
        # embedding 10*4 = 40; one block: BatchNorm 8 (+ 8 stored statistics, buffers), DLR 2*3*4 + 2*3 + 4 = 34,
        # GLU 40 -> 82; decoder 2*4 + 2 = 10: 40 + 82 + 10 = 132 parameters and 8 buffer entries
        (ModelConfig(mixer=DLRConfig(d_model=H_, d_state=N), n_layers=1, vocab_size=10, d_output=2, norm="batch"),
         132, 8),
    ]
    for cfg, parameters, buffers in cases:
        bundle = init(cfg, 0)
        model = Model.from_bundle(bundle)
        assert sum(a.size for a in bundle.params.values()) == parameters + buffers
        assert sum(p.numel() for p in model.parameters()) == parameters
        assert sum(b.numel() for b in model.buffers()) == buffers


def test_parameter_groups_split_the_recurrence_from_the_rest():
    cfg = ModelConfig(mixer=MIXERS["rotrnn"], n_layers=3, d_input=2, d_output=2)
    model = Model.from_bundle(init(cfg, 0))
    names = {id(p): n for n, p in model.named_parameters()}
    groups = parameter_groups(model)
    recurrence = {names[id(p)] for p in groups["recurrence"]}
    assert recurrence == {f"layers.{i}.mixer.{k}" for i in range(3) for k in ("M", "theta", "gamma_log")}
    assert recurrence == {names[id(p)] for p in recurrence_parameters(model)}
    assert {names[id(p)] for p in groups["other"]} == set(names.values()) - recurrence


def test_training_mode_uses_batch_statistics_and_updates_the_stored_ones():
    cfg = ModelConfig(mixer=MIXERS["lru"], n_layers=1, d_input=H, d_output=2, norm="batch", prenorm=True)
    bundle = model_bundle(cfg, 7)
    model = Model.from_bundle(bundle).train()
    x = torch.tensor(model_inputs(cfg, 4, 5, seed=3))
    features = model.encoder(x).detach()                         # what the first norm sees: (B L H)
    model(x)
    mean = features.mean(dim=(0, 1))
    var = features.var(dim=(0, 1), unbiased=True)
    stored = bundle.params
    assert_close("running mean", 0.9 * stored["layers.0.norm.mean"] + 0.1 * mean.numpy(),
                 model.layers[0].norm.mean.numpy(), "identity", "float64")
    assert_close("running var", 0.9 * stored["layers.0.norm.var"] + 0.1 * var.numpy(),
                 model.layers[0].norm.var.numpy(), "identity", "float64")
    normalised = model.layers[0].norm(features)                   # training mode: the batch's own statistics
    expected = ((features - mean) / torch.sqrt(features.var(dim=(0, 1), unbiased=False) + cfg.norm_eps)
                * torch.tensor(stored["layers.0.norm.scale"]) + torch.tensor(stored["layers.0.norm.bias"]))
    assert_close("batch-statistics normalisation", expected.numpy(), normalised.detach().numpy(), "identity", "float64")


def test_dropout_shares_its_mask_over_time_and_only_in_training():
    dropout = TimeSharedDropout(0.5)
    x = torch.ones(3, 50, 8, dtype=torch.float64)
    y = dropout.train()(x)
    assert torch.all((y == 0) | (y == 2.0))
    assert torch.all(y == y[:, :1]), "the mask changes over time"
    assert 0 < (y == 0).sum() < y.numel()
    assert torch.equal(dropout.eval()(x), x)
    cfg = ModelConfig(mixer=MIXERS["dlr"], n_layers=1, d_input=2, d_output=2, dropout=0.5)
    model = Model.from_bundle(init(cfg, 0))
    inputs = torch.tensor(model_inputs(cfg, 2, 6, seed=4))
    assert torch.equal(model.eval()(inputs), model(inputs))
    torch.manual_seed(0)
    assert not torch.equal(model.train()(inputs), model(inputs))


def test_bad_model_inputs_name_what_was_expected():
    cfg = ModelConfig(mixer=MIXERS["lru"], n_layers=1, vocab_size=5, d_output=2)
    model = Model.from_bundle(init(cfg, 0))
    with pytest.raises(LinrnnError, match=r"input: expected token ids in \[0, 5\)"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(LinrnnError, match=r"lengths: expected integers of shape \(1,\) in \[1, 2\]"):
        model(torch.tensor([[0, 4]]), torch.tensor([3]))
    with pytest.raises(LinrnnError, match="mode: the torch backend has modes"):
        model(torch.tensor([[0, 4]]), mode="fast")
    linear = Model.from_bundle(init(ModelConfig(mixer=MIXERS["lru"], n_layers=1, d_input=2), 0))
    with pytest.raises(LinrnnError, match=r"input: expected shape \(B, L, 2\) and dtype torch.float64"):
        linear(torch.zeros(1, 3, 2, dtype=torch.float32))
    with pytest.raises(LinrnnError, match="expected a model bundle"):
        Model.from_bundle(init(MIXERS["lru"], 0))

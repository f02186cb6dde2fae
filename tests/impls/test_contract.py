"""One home for the contract: every backend states each rule with the same check and the same message.

The rules live in the framework-neutral layer (`linrnn.impls.config`, `checks`, `bundle`); the two
frameworks compute by their own routes and meet only there. Each test here would catch a side that
grew its own copy of a rule again (another message, another key list, another signature).
"""

import inspect

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from linrnn.impls import jax as jax_side, reference, specs, torch as torch_side
from linrnn.impls.bundle import RECURRENCE_KEYS, is_recurrence_key, mixer_shapes
from linrnn.impls.config import DTYPES, RECURRENT_KINDS, ModelConfig, mixer_config
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import scan as jax_scan
from linrnn.impls.reference import apply_mixer
from linrnn.impls.specs.base import MODES
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import scan as torch_scan
from linrnn.verify import bench_jax as jax_bench, bench_torch as torch_bench
from linrnn.verify.bench import layer_config

BACKENDS = {"reference": reference, "torch": torch_side, "jax": jax_side}


def message(call) -> str:
    with pytest.raises(LinrnnError) as err:
        call()
    return str(err.value)


def torch_call(bundle, u, mode, state=None):
    layer = torch_side.from_bundle(bundle, torch.float64)
    return layer(torch.tensor(u), mode=mode, state=state)


def jax_call(bundle, u, mode, state=None):
    return jax_side.apply(jax_side.from_bundle(bundle, "float64"), bundle.config, u, mode, state)


@pytest.mark.parametrize("name", list(BACKENDS))
def test_each_backend_takes_its_modes_and_dtypes_from_the_one_table(name):
    backend = BACKENDS[name]
    assert backend.MODES == MODES[name] and backend.DTYPES == DTYPES[name]
    bundle = init(LRUConfig(d_model=2, d_state=2), 0)
    u = np.zeros((1, 3, 2))
    assert message(lambda: backend.apply_bundle(bundle, u, mode="fast")) == (
        f"mode: the {name} backend has modes {', '.join(MODES[name])}, found 'fast'")
    only = " only" if len(DTYPES[name]) == 1 else ""
    assert message(lambda: backend.apply_bundle(bundle, u, dtype="int8")) == (
        f"dtype: the {name} backend computes in {', '.join(DTYPES[name])}{only}, found 'int8'")
    if name == "reference":      # a dtype another backend computes in: named
        assert message(lambda: backend.apply_bundle(bundle, u, dtype="float16")) == (
            "dtype: the reference backend computes in float64 only, found 'float16'; float16 is computed by backend "
            "torch or jax")


def test_a_truncated_dlr_kernel_is_refused_outside_conv_with_one_message():
    cfg = DLRConfig(d_model=2, d_state=3, max_kernel_length=3)
    bundle, u = init(cfg, 0), np.random.default_rng(0).standard_normal((1, 5, 2))
    texts = {"reference": message(lambda: apply_mixer(cfg, bundle.params, u, "sequential")),
             "torch": message(lambda: torch_call(bundle, u, "sequential")),
             "jax": message(lambda: jax_call(bundle, u, "sequential"))}
    assert len(set(texts.values())) == 1, texts
    assert texts["jax"].startswith("mode: DLR with max_kernel_length=3 is defined by its truncated kernel")
    assert cfg.kernel_length(5) == 3 and cfg.kernel_length(2) == 2
    assert DLRConfig(d_model=2, d_state=3).kernel_length(5) == 5


@pytest.mark.parametrize("kind", RECURRENT_KINDS)
def test_a_bidirectional_layer_refuses_a_state_with_one_message_on_both_sides(kind):
    cfg = mixer_config(kind, 2, 2, bidirectional=True)
    bundle, u = init(cfg, 0), np.zeros((1, 3, 2))
    torch_state = torch.zeros((1,) + jax_side.layer.MIXERS[kind].state_shape(cfg), dtype=torch.complex128)
    jax_state = jnp.zeros((1,) + jax_side.layer.MIXERS[kind].state_shape(cfg), dtype=jnp.complex128)
    assert message(lambda: torch_call(bundle, u, "scan", torch_state)) == \
        message(lambda: jax_call(bundle, u, "scan", jax_state))
    assert message(lambda: torch_call(bundle, u, "step")) == message(lambda: jax_call(bundle, u, "step"))


def test_the_recurrence_keys_are_one_table_used_by_both_sides():
    for kind in RECURRENT_KINDS:
        cfg = mixer_config(kind, 3, 4, heads=2)
        keys = RECURRENCE_KEYS[kind]
        assert set(keys) <= set(mixer_shapes(cfg)), kind                   # real parameters of that mixer
        bundle = init(cfg, 0)
        module = torch_side.from_bundle(bundle)
        names = {name for name, p in module.named_parameters()
                 if any(p is q for q in torch_side.recurrence_parameters(module))}
        assert names == set(keys), kind
        mask = jax_side.recurrence_mask(jax_side.from_bundle(bundle), cfg)
        assert {k for k, marked in mask.items() if marked} == set(keys), kind
    model = ModelConfig(mixer=mixer_config("dlr", 3, 4))
    assert is_recurrence_key("layers.0.mixer.theta", model) and not is_recurrence_key("layers.0.norm.scale", model)
    assert is_recurrence_key("B_re", mixer_config("s5", 3, 4))                 # S5's B is in its "ssm" group,
    assert not is_recurrence_key("B_re", mixer_config("lru", 3, 4))            # the LRU's is an ordinary weight


def test_one_mixer_config_builder_with_checked_fields():
    assert mixer_config("rotrnn", 8, 4, heads=2, gamma_max=0.99) == RotRNNConfig(d_model=8, d_state=4, heads=2,
                                                                                  gamma_max=0.99)
    assert mixer_config("lru", 8, 4, r_max=0.99) == LRUConfig(d_model=8, d_state=4, r_max=0.99)
    assert layer_config("rotrnn", 8, 16, heads=4) == RotRNNConfig(d_model=8, d_state=4, heads=4)
    assert message(lambda: mixer_config("lru", 8, 4, gamma_max=0.9)).startswith("LRUConfig: unknown field(s) gamma_max")
    assert message(lambda: mixer_config("s4", 8, 4)) == f"mixer: expected one of {', '.join(specs.kinds())}, found 's4'"


def test_powers_has_one_signature_and_one_meaning_on_both_sides():
    rng = np.random.default_rng(0)
    log_lam = -rng.random(5) + 1j * rng.standard_normal(5)
    steps = np.array([0.0, 1.0, 7.0, 40.0])
    exact = np.exp(steps[:, None] * log_lam[None, :])
    assert list(inspect.signature(torch_scan.powers).parameters) == list(inspect.signature(jax_scan.powers).parameters)
    got_torch = torch_scan.powers(torch.tensor(log_lam), torch.tensor(steps)).numpy()
    got_jax = np.asarray(jax_scan.powers(jnp.asarray(log_lam), jnp.asarray(steps)))
    assert_close("torch powers", exact, got_torch, "forward", "float64")
    assert_close("jax powers", exact, got_jax, "forward", "float64")


def test_both_speed_harnesses_have_one_signature_and_return_type():
    assert inspect.signature(torch_bench.make_forward).parameters.keys() == \
        inspect.signature(jax_bench.make_forward).parameters.keys()
    for a, b in zip(inspect.signature(torch_bench.make_forward).parameters.values(),
                    inspect.signature(jax_bench.make_forward).parameters.values()):
        assert a.default == b.default, a.name
    sizes = dict(B=1, L=4, H=2, N=4, heads=2)
    (f_t, info_t), (f_j, info_j) = (torch_bench.make_forward("lru", "scan", **sizes),
                                    jax_bench.make_forward("lru", "scan", **sizes))
    assert tuple(f_t().shape) == tuple(f_j().shape) == (1, 4, 2)
    shared = ("mixer", "mode", "B", "L", "H", "N", "heads", "dtype", "device", "backend")
    assert all(key in info_t and key in info_j for key in shared)
    assert (info_t["backend"], info_j["backend"]) == ("torch", "jax")


def test_the_state_conversions_have_one_pair_of_names_on_both_sides():
    for kind in RECURRENT_KINDS:
        torch_layer = torch_side.MIXERS[kind]
        jax_module = jax_side.layer.MIXERS[kind]
        for name in ("to_native", "from_native"):
            assert callable(getattr(torch_layer, name)) and callable(getattr(jax_module, name)), (kind, name)
        assert not hasattr(torch_layer, "state_in") and not hasattr(torch_layer, "state_out")

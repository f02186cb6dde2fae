"""Parameters between the bundle and JAX: bit-exact round trips, dtypes, the recurrence mask, the imports."""

import ast
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from linrnn.impls.bundle import RECURRENCE_KEYS, mixer_kind
from linrnn.impls.config import ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, recurrence_mask, to_bundle
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s5 import S5Config

CONFIGS = [
    RotRNNConfig(d_model=3, d_state=4, heads=2, bidirectional=True),
    LRUConfig(d_model=3, d_state=4, bidirectional=True),
    DLRConfig(d_model=3, d_state=4, bidirectional=True),
    ModelConfig(mixer=LRUConfig(d_model=3, d_state=2), norm="batch", vocab_size=7),
    ModelConfig(mixer=RotRNNConfig(d_model=4, d_state=2, heads=2), d_input=3),
    ModelConfig(mixer=S5Config(d_model=3, d_state=2), d_input=2),   # B_re: a recurrence key of S5, not of the LRU
]
JAX_SIDE = Path(__file__).resolve().parents[2] / "impls" / "jax"


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.kind)
def test_float64_round_trip_is_bit_exact(cfg):
    bundle = init(cfg, 3)
    params = from_bundle(bundle, "float64")
    assert set(params) == set(bundle.params)
    assert all(v.dtype == jnp.float64 for v in params.values())
    back = to_bundle(cfg, params)
    assert back.digest() == bundle.digest()
    for key, value in bundle.params.items():
        assert np.array_equal(back.params[key], value), key


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.kind)
def test_float32_loading_rounds_once_and_widens_exactly(cfg):
    bundle = init(cfg, 4)
    params = from_bundle(bundle, "float32")
    assert all(v.dtype == jnp.float32 for v in params.values())
    back = to_bundle(cfg, params)
    for key, value in bundle.params.items():
        assert np.array_equal(back.params[key], value.astype(np.float32).astype(np.float64)), key


def test_to_bundle_validates_keys_and_shapes():
    cfg = CONFIGS[1]
    params = from_bundle(init(cfg, 0))
    with pytest.raises(LinrnnError, match="missing key"):
        to_bundle(cfg, {k: v for k, v in params.items() if k != "D"})
    with pytest.raises(LinrnnError, match="^D: expected shape"):
        to_bundle(cfg, {**params, "D": jnp.zeros(5)})
    with pytest.raises(LinrnnError, match="^dtype:"):
        from_bundle(init(cfg, 0), "int8")


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.kind)
def test_recurrence_mask_marks_exactly_the_recurrence_parameters(cfg):
    params = from_bundle(init(cfg, 0))
    mask = recurrence_mask(params, cfg)
    assert set(mask) == set(params)
    kind = mixer_kind(cfg)
    for key, marked in mask.items():
        name = key.rsplit(".", 1)[-1]
        in_mixer = "." not in key or ".mixer." in key
        assert marked == (in_mixer and name in RECURRENCE_KEYS[kind]), key
    assert any(mask.values())


def test_the_jax_side_imports_neither_torch_nor_the_other_implementations():
    forbidden = ("torch", "linrnn.impls.torch", "linrnn.impls.reference")
    for path in sorted(JAX_SIDE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                assert not any(name == f or name.startswith(f + ".") for f in forbidden), f"{path.name} imports {name}"

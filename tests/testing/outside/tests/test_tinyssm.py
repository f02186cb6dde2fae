"""tinyssm's LRU and S5 against linrnn's float64 reference, with linrnn's testing API and pytest plugin."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.testing import (assert_close, check_step, check_vjp, parametrize_with_checks, reference,
                            spectral_radius)
from linrnn.testing.strategies import bundles, configs, inputs
from tinyssm import LRU, S5

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def loaded(layer, params):
    """The layer with each parameter set from the bundle's array of the same name."""
    with torch.no_grad():
        for name, value in params.items():
            getattr(layer, name).copy_(torch.from_numpy(np.array(value)))
    return layer


def as_call(layer, dtype):
    """linrnn's protocol: call(u, state=None, lengths=None, segments=None) -> (y, state); u a NumPy array, or a
    tensor for the gradient; lengths (B,) of padded rows, segments (B, L) of packed sequences."""
    def call(u, state=None, lengths=None, segments=None):
        x = u if torch.is_tensor(u) else torch.as_tensor(u)
        y, state = layer(x.to(dtype), state, lengths, segments)
        return (y if torch.is_tensor(u) else y.detach().numpy()), state
    return call


# The adapters: make(bundle, config) -> call, the same for `linrnn conform test_tinyssm:make_lru --model lru`.
def make_lru(bundle, config, dtype="float64"):
    layer = LRU(config["d_model"], config["d_state"], config["bidirectional"], dtype=DTYPES[dtype])
    return as_call(loaded(layer, bundle), DTYPES[dtype])


def make_s5(bundle, config, dtype="float64"):
    layer = S5(config["d_model"], config["d_state"], config["discretization"], config["clip_eigs"],
               config["bidirectional"], dtype=DTYPES[dtype])
    return as_call(loaded(layer, bundle), DTYPES[dtype])


# One test per check of linrnn's conform battery, variant and dtype: ids like tiny-s5-bilinear-float32-impulse.
@parametrize_with_checks({"tiny": make_lru}, kind="lru")
def test_lru_conforms(check):
    check()


@parametrize_with_checks({"tiny": make_s5}, kind="s5")
def test_s5_conforms(check):
    check()


# The plugin's fixtures: the marker's layer as a bundle, its reference, and each dtype of --linrnn-dtypes.
@pytest.mark.linrnn_conform(kind="lru", d_model=3, d_state=4)
def test_lru_steps_like_its_forward(linrnn_bundle, linrnn_dtype):
    layer = loaded(LRU(3, 4, dtype=DTYPES[linrnn_dtype]), linrnn_bundle.params)
    u = torch.randn(2, 12, 3, dtype=DTYPES[linrnn_dtype], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        check_step(layer.step, lambda v: layer(v)[0], u, max_abs_eigenvalue=spectral_radius(linrnn_bundle))


@pytest.mark.linrnn_conform(kind="lru", d_model=3, d_state=4)
def test_lru_gradient_is_the_adjoint_of_its_forward(linrnn_bundle):
    layer = loaded(LRU(3, 4, dtype=torch.float64), linrnn_bundle.params)
    u = torch.randn(2, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    check_vjp(lambda v: layer(v)[0], u, max_abs_eigenvalue=spectral_radius(linrnn_bundle))


@pytest.mark.linrnn_conform(kind="lru", d_model=3, d_state=4, bidirectional=True)
def test_bidirectional_lru_matches_the_reference(linrnn_bundle, linrnn_reference):
    layer = loaded(LRU(3, 4, bidirectional=True, dtype=torch.float64), linrnn_bundle.params)
    u = np.random.default_rng(0).standard_normal((2, 20, 3))
    with torch.no_grad():
        y, _ = layer(torch.from_numpy(u))
    assert_close(y, linrnn_reference(u), max_abs_eigenvalue=spectral_radius(linrnn_bundle))


# Hypothesis: any S5 configuration (discretisation, clip, blocks, direction) and input, against the reference;
# the zero-order hold's eigenvalues at a drawn radius, the bilinear rule's at the paper's initialisation.
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_s5_matches_the_reference_on_drawn_layers(data):
    bilinear = bundles("s5", config=configs("s5", discretization="bilinear"))
    bundle = data.draw(bundles("s5", radius=(0.5, 0.999)) | bilinear)
    cfg = bundle.config
    u = data.draw(inputs((2, st.integers(1, 24), cfg.d_model)))
    layer = S5(cfg.d_model, cfg.d_state, cfg.discretization, cfg.clip_eigs, cfg.bidirectional, dtype=torch.float64)
    with torch.no_grad():
        y, _ = loaded(layer, bundle.params)(torch.from_numpy(u))
    assert_close(y, reference(bundle, u), max_abs_eigenvalue=spectral_radius(bundle))

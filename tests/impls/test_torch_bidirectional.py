"""The PyTorch bidirectional layers: every mixer x view against the float64 reference and against their equation.

docs/models.md defines the bidirectional layer as two causal passes over the same inputs,

    RotRNN, LRU:  y_t = C x_fwd_t + D u_t + C_rev x_bwd_t,   x_bwd_t = A x_bwd_{t+1} + B u_t   (u_t included)
    DLR:          y_t = sum_{l<=t} K_l u_{t-l} + D u_t + sum_{j>=0} K^rev_j u_{t+1+j}        (future only)

so the layer equals (1) its unidirectional twin (same parameters, no `_rev` keys) plus (2) that twin with
the `_rev` read-out in place of the forward one and D = 0, run on the reversed sequence and reversed
back (DLR: shifted by one position, so that lag 0 is counted once). These tests pin a dropped D term,
the backward scan read out with C instead of C_rev, and the backward scan with the current input
dropped (RotRNN, LRU) or counted twice (DLR), in every view, at L = 1 and past the scan's first chunk.
"""

import dataclasses

import numpy as np
import pytest
import torch

from linrnn.impls.bundle import Bundle
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import from_bundle

MODES = ("scan", "sequential", "conv")          # `step` streams: a bidirectional layer has none
BIDIRECTIONAL = {   # the two equations of the docstring; S4D, S5: DLR's and the LRU's (tests/models/ cross-check them)
    "rotrnn": RotRNNConfig(d_model=3, d_state=4, heads=2, gamma_max=0.9999, bidirectional=True),
    "lru": LRUConfig(d_model=3, d_state=5, r_min=0.5, r_max=0.9999, bidirectional=True),
    "dlr": DLRConfig(d_model=3, d_state=4, dt_min=2e-4, dt_max=1.0, bidirectional=True),
}


def run(bundle: Bundle, u: np.ndarray, mode: str, dtype: str = "float64") -> np.ndarray:
    layer = from_bundle(bundle, getattr(torch, dtype))
    with torch.no_grad():
        y, state = layer(torch.tensor(u, dtype=layer.dtype), mode)
    assert state is None or not bundle.config.bidirectional
    return y.double().numpy()


def causal_twins(bundle: Bundle) -> tuple[Bundle, Bundle]:
    """(forward, backward): unidirectional bundles with the forward read-out and D, and with the `_rev`
    read-out in place of the forward one and D = 0."""
    cfg = dataclasses.replace(bundle.config, bidirectional=False)
    shared = {k: v for k, v in bundle.params.items() if not k.endswith("_rev")}
    rev = {k[: -len("_rev")]: v for k, v in bundle.params.items() if k.endswith("_rev")}
    return Bundle(cfg, shared), Bundle(cfg, {**shared, **rev, "D": np.zeros_like(bundle.params["D"])})


@pytest.mark.parametrize("L, dtype", [(1, "float64"), (10, "float64"), (10, "float32")])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(BIDIRECTIONAL))
def test_bidirectional_layer_matches_the_reference(kind, mode, L, dtype):
    """L = 1: the backward scan is the current input alone (RotRNN, LRU) or nothing (DLR)."""
    cfg = BIDIRECTIONAL[kind]
    bundle = init(cfg, 11)
    u = np.random.default_rng(12).standard_normal((2, L, cfg.d_model))
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "sequential")
    assert_close(f"torch {kind} bidirectional {mode} {dtype}", y_ref, run(bundle, u, mode, dtype), "forward", dtype,
                 L, spectral_radius(cfg, bundle.params))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(BIDIRECTIONAL))
def test_bidirectional_layer_is_its_forward_pass_plus_a_reversed_pass(kind, mode):
    cfg = BIDIRECTIONAL[kind]
    bundle = init(cfg, 13)
    L = 10
    u = np.random.default_rng(14).standard_normal((2, L, cfg.d_model))
    forward, backward = causal_twins(bundle)
    reversed_pass = run(backward, u[:, ::-1].copy(), mode)[:, ::-1]       # position t: the scan from L-1 down to t
    if kind == "dlr":                                                      # future only: from L-1 down to t+1
        reversed_pass = np.concatenate([reversed_pass[:, 1:], np.zeros_like(reversed_pass[:, :1])], axis=1)
    expected = run(forward, u, mode) + reversed_pass
    assert_close(f"torch {kind} bidirectional {mode} = forward + reversed", expected, run(bundle, u, mode),
                 "forward", "float64", L, spectral_radius(cfg, bundle.params))

"""Gradients of the PyTorch layers: finite differences (gradcheck, float64) and every view against the loop.

gradcheck differentiates y with respect to the input, every raw parameter and (unidirectional) the
initial state, on small sizes; the second test compares the autograd gradients of the fast views
with those of the plain loop, in both precisions, through a length where the decays matter.
"""

import numpy as np
import pytest
import torch
from torch.func import functional_call

from linrnn.impls import specs
from linrnn.impls.config import mixer_config, modes
from linrnn.impls.init import init
from linrnn.impls.reference import spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MODES, dlr, from_bundle

# every registered kind with the four views and a state (attention: tests/impls/test_attention.py; the RG-LRU, no conv
# view: tests/models/test_rglru.py and tests/impls/test_derivatives.py)
KINDS = tuple(k for k in specs.kinds() if specs.spec(k).stateful and set(modes("torch", k)) == set(MODES))
BUILTIN_CASES = ("rotrnn", "lru", "dlr", "s4d", "s5")      # the cases below; another model's: its spec's cross-check


def config(kind, bidirectional=False):
    if kind not in BUILTIN_CASES:
        return mixer_config(kind, 2, 2, heads=2, bidirectional=bidirectional,
                            **specs.spec(kind).crosscheck(False, bidirectional))
    if kind == "rotrnn":
        return RotRNNConfig(d_model=2, d_state=2, heads=2, gamma_max=0.999, bidirectional=bidirectional)
    if kind == "lru":
        return LRUConfig(d_model=2, d_state=2, r_max=0.999, bidirectional=bidirectional)
    if kind == "s4d":
        return S4DConfig(d_model=2, d_state=2, dt_min=2e-3, dt_max=0.5, bidirectional=bidirectional)
    if kind == "s5":    # both discretisations: ZOH one way, the bilinear transform both ways
        return S5Config(d_model=2, d_state=2, dt_min=2e-3, dt_max=0.5, bidirectional=bidirectional,
                        discretization="bilinear" if bidirectional else "zoh")
    return DLRConfig(d_model=2, d_state=2, dt_min=2e-3, dt_max=0.5, bidirectional=bidirectional)


def initial_state(kind, cfg, layer, B, generator):
    """A random state of the spec's shape and dtype of one row (complex128, or the layer's real dtype)."""
    shape, dtype = specs.spec(kind).state(cfg)
    return torch.randn((B, *shape), dtype=torch.complex128 if dtype.startswith("complex") else layer.dtype,
                       generator=generator)


@pytest.mark.parametrize("kind, mode, bidirectional", [
    (k, m, bi) for k in KINDS for m in MODES for bi in (False, True) if not (bi and m == "step")])   # step streams
def test_gradcheck(kind, mode, bidirectional):
    cfg = config(kind, bidirectional)
    layer = from_bundle(init(cfg, 1))
    names = [name for name, _ in layer.named_parameters()]
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(1, 5, cfg.d_model, dtype=torch.float64, generator=generator, requires_grad=True)
    params = [p.detach().clone().requires_grad_() for p in layer.parameters()]
    if bidirectional:
        def y_of(u, *params):
            return functional_call(layer, dict(zip(names, params)), (u, mode))[0]
        inputs = (u, *params)
    else:
        x0 = initial_state(kind, cfg, layer, 1, generator).requires_grad_()

        def y_of(u, x0, *params):
            return functional_call(layer, dict(zip(names, params)), (u, mode, x0))[0]
        inputs = (u, x0, *params)
    assert torch.autograd.gradcheck(y_of, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind, mode", [(k, m) for k in KINDS for m in ("scan", "conv", "step")]
                         + [("dlr", "scan, short chunks")])   # RotRNN and LRU already scan L = 45 in chunks of 8
def test_gradients_of_every_view_equal_those_of_the_loop(kind, mode, dtype, monkeypatch):
    if mode == "scan, short chunks":        # DLR's scan picks T >= 64: force several chunks at L = 45
        monkeypatch.setattr(dlr, "chunk_length", lambda length, N: 4)
    cases = {"rotrnn": lambda: RotRNNConfig(d_model=3, d_state=4, heads=2, gamma_max=0.9999),
             "lru": lambda: LRUConfig(d_model=3, d_state=4, r_max=0.9999),
             "dlr": lambda: DLRConfig(d_model=3, d_state=4, dt_min=2e-4, dt_max=0.5),
             "s4d": lambda: S4DConfig(d_model=3, d_state=4, init="inv", dt_min=2e-4, dt_max=0.5),
             "s5": lambda: S5Config(d_model=3, d_state=4, dt_min=2e-4, dt_max=0.5)}
    cfg = cases[kind]() if kind in cases else \
        mixer_config(kind, 3, 4, heads=2, **specs.spec(kind).crosscheck(True, False))
    bundle = init(cfg, 2)
    L = 45
    rng = np.random.default_rng(3)
    u_np, w_np = rng.standard_normal((2, L, 3)), rng.standard_normal((2, L, 3))
    grads = {}
    for view in ("sequential", mode):
        layer = from_bundle(bundle, getattr(torch, dtype))
        u = torch.tensor(u_np, dtype=layer.dtype, requires_grad=True)
        y, _ = layer(u, view.split(",")[0])
        (y * torch.tensor(w_np, dtype=layer.dtype)).sum().backward()
        grads[view] = {"u": u.grad.numpy(), **{n: p.grad.numpy() for n, p in layer.named_parameters()}}
    r = spectral_radius(cfg, bundle.params)
    for name, expected in grads["sequential"].items():
        assert_close(f"{kind} d/d{name} {mode} vs sequential", expected, grads[mode][name], "gradient", dtype, L, r)

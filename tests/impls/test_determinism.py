"""Determinism: two identical calls of every CPU route give bitwise-equal outputs and gradients
(docs/precision.md, "Determinism").

For every mixer (RotRNN, LRU, DLR, S4D, S5 and attention) x every mode each framework offers
(`modes(backend, kind)`), in float32 at small sizes (B = 2, L = 13, H = 4, N = 4):
the layer is run twice on the same input with the same parameters, and the outputs, the final states, the
gradient of <w, y> (w a fixed random cotangent) in the input and in every raw parameter are compared with exact
equality (`torch.equal`, `np.array_equal`), never with a tolerance. A route that summed in an order depending on
thread timing, or drew anything random, would differ in the last bits and fail here.

PyTorch runs each call from scratch (the same module, a fresh input tensor, a fresh autograd graph), causal and
bidirectional. JAX jits one program per mixer and direction that computes every mode and its gradients, and calls
it twice; the second call reuses the compiled program, so what is compared is the execution, which is what a
training run repeats. Compiling is nearly all of the JAX side's time (RotRNN's expm and its gradient take seconds).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from linrnn.impls import jax as lj
from linrnn.impls.config import RECURRENT_KINDS, mixer_config, modes
from linrnn.impls.init import init
from linrnn.impls.torch import MIXERS as TORCH_MIXERS

B, L, H, N = 2, 13, 4, 4           # L odd and not a power of two: the chunked scans and FFTs see a ragged end
ALL_KINDS = RECURRENT_KINDS + ("attention",)


def routes(backend: str):
    """(kind, mode, bidirectional): every mode of every mixer, in both directions (`step` streams forward only)."""
    return [(kind, mode, bi) for kind in ALL_KINDS for mode in modes(backend, kind) for bi in (False, True)
            if not (bi and mode == "step")]


@lru_cache(maxsize=None)
def case(kind: str, bidirectional: bool):
    """cfg, bundle, u (B L H) and the cotangent w of the outputs, float64 NumPy (rounded once to float32)."""
    cfg = mixer_config(kind, H, N, heads=2 if kind in ("rotrnn", "attention") else 1, bidirectional=bidirectional)
    bundle = init(cfg, 11)
    rng = np.random.default_rng(12)
    return cfg, bundle, rng.standard_normal((B, L, H)), rng.standard_normal((B, L, H))


# -- PyTorch ---------------------------------------------------------------------------------------

def torch_run(layer, u_np: np.ndarray, w_np: np.ndarray, mode: str) -> dict[str, torch.Tensor]:
    """One call from scratch: y, the final state (if any), and the gradients of <w, y> in u and every parameter."""
    layer.zero_grad(set_to_none=True)
    u = torch.tensor(u_np, dtype=torch.float32, requires_grad=True)
    y, state = layer(u, mode)
    (y * torch.tensor(w_np, dtype=torch.float32)).sum().backward()
    out = {"y": y.detach().clone(), "d/du": u.grad.clone()}
    if state is not None:
        out["state"] = state.detach().clone()
    out.update({f"d/d{name}": p.grad.clone() for name, p in layer.named_parameters()})
    return out


@pytest.mark.parametrize("kind,mode,bidirectional", routes("torch"))
def test_torch_route_is_bitwise_deterministic(kind, mode, bidirectional):
    cfg, bundle, u, w = case(kind, bidirectional)
    layer = TORCH_MIXERS[kind].from_bundle(bundle, torch.float32)
    first, second = torch_run(layer, u, w, mode), torch_run(layer, u, w, mode)
    assert first.keys() == second.keys()
    assert first["y"].dtype == torch.float32
    differ = [name for name in first if not torch.equal(first[name], second[name])]
    assert not differ, f"torch {kind} {mode} {'bidirectional' if bidirectional else 'causal'}: two identical " \
                       f"calls differ in {', '.join(differ)}"


# -- JAX -------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def jax_program(kind: str, bidirectional: bool):
    """One jitted program: {mode: {y, final state, gradients of <w, y> in u and in every parameter}}."""
    cfg, *_ = case(kind, bidirectional)
    mixer_modes = [mode for mode in modes("jax", kind) if not (bidirectional and mode == "step")]

    @jax.jit
    def run(params, u, w):
        out = {}
        for mode in mixer_modes:
            def loss(p, x, m=mode):
                y, state = lj.apply(p, cfg, x, m)
                return jnp.sum(y * w), (y, state)
            (_, (y, state)), (d_params, d_u) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(params, u)
            out[mode] = {"y": y, "state": state, "d/du": d_u, "d/d": d_params}
        return out

    return run


def jax_leaves(tree) -> list[tuple[str, np.ndarray]]:
    """(name, array) of every leaf, on the host: y, state, d/du, d/d<parameter>."""
    return [("".join(str(getattr(k, "key", k)) for k in path), np.asarray(leaf))
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_jax_routes_are_bitwise_deterministic(kind, bidirectional):
    """Every mode of one mixer (bidirectional: all but `step`), in one program run twice."""
    cfg, bundle, u, w = case(kind, bidirectional)
    params = lj.from_bundle(bundle, "float32")
    run = jax_program(kind, bidirectional)
    args = (params, jnp.asarray(u, jnp.float32), jnp.asarray(w, jnp.float32))
    first, second = jax.device_get(run(*args)), jax.device_get(run(*args))
    for mode in first:
        a, b = jax_leaves(first[mode]), jax_leaves(second[mode])
        assert [p for p, _ in a] == [p for p, _ in b]
        assert first[mode]["y"].dtype == np.float32, f"jax {kind} {mode}: y is {first[mode]['y'].dtype}, not float32"
        differ = [p for (p, x), (_, y) in zip(a, b) if not np.array_equal(x, y)]
        assert not differ, f"jax {kind} {mode} {'bidirectional' if bidirectional else 'causal'}: two identical " \
                           f"calls differ in {', '.join(differ)}"

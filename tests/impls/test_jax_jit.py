"""JAX compiled paths (issue 30 §4; docs/precision.md, "Compiled paths"): jitted and un-jitted results agree for every
mode of every registered mixer, and the training step does not retrace after its first step.

Un-jitted is `jax.disable_jit()`: every operation dispatched on its own (the layer's internal `jax.jit`s, `lax.scan`
and the `custom_vjp` included run op by op), against the layer under an outer `jax.jit`. The output and the
gradients of <w, y> in the input and every raw parameter are compared within the float32 tolerance table, at tiny
sizes (B = 2, L = 5, H = N = 2), causal and bidirectional.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from linrnn.impls import jax as lj, specs
from linrnn.impls.config import mixer_config, modes
from linrnn.impls.init import init
from linrnn.base.tolerance import assert_close

pytestmark = pytest.mark.slow

B, L, H, N = 2, 5, 2, 2


@cache
def case(kind: str, bidirectional: bool):
    # RotRNN at N = 4 (two rotation blocks): at N = 2 its basis P = expm(M - M^T) commutes with the one block, so M
    # drops out and its gradient is rounding noise around 0, with no relative error to compare
    cfg = mixer_config(kind, H, 4 if kind == "rotrnn" else N, heads=1, bidirectional=bidirectional)
    rng = np.random.default_rng(5)
    return cfg, lj.from_bundle(init(cfg, 4), "float32"), rng.standard_normal((B, L, H)), rng.standard_normal((B, L, H))


def value_and_grads(cfg, mode):
    def loss(params, u, w):
        y, _ = lj.apply(params, cfg, u, mode)
        return jnp.sum(y * w), y
    return jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)


def flat(result) -> list[tuple[str, np.ndarray]]:
    (_, y), (d_params, d_u) = result
    return [("y", np.asarray(y, np.float64)), ("d/du", np.asarray(d_u, np.float64))] + \
        [(f"d/d{k}", np.asarray(v, np.float64)) for k, v in sorted(d_params.items())]


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("kind", specs.kinds())
def test_jitted_and_unjitted_agree_in_every_mode(kind, bidirectional):
    cfg, params, u, w = case(kind, bidirectional)
    args = (params, jnp.asarray(u, jnp.float32), jnp.asarray(w, jnp.float32))
    for mode in modes("jax", kind):
        if bidirectional and mode == "step":
            continue
        f = value_and_grads(cfg, mode)
        jitted = flat(jax.jit(f)(*args))
        with jax.disable_jit():
            eager = flat(f(*args))
        assert [n for n, _ in jitted] == [n for n, _ in eager]
        for (name, a), (_, b) in zip(jitted, eager):
            assert_close(f"jax {kind} {mode} {'bi' if bidirectional else 'causal'} {name}: jit vs no jit", b, a,
                         "forward" if name == "y" else "gradient", "float32", L)

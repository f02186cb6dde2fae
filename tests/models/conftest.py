"""The per-model test files share these checks: one file per kind answers "is this model right"."""

from __future__ import annotations

import numpy as np


import pytest

from linrnn.impls import specs
from linrnn.verify import crosscheck
from linrnn.impls.bundle import expected_shapes
from linrnn.impls.init import init
from linrnn.experiments.crosscheck import QUICK_SHAPES

# Small shapes that still cover each view: a causal case with decays near 1 (every mode, the step included)
# and a bidirectional one (no step); the full matrix (three shapes, float32 too) is `linrnn crosscheck`'s.
# The causal case is the quick report's (B 2, L 17, H 3, N 4): its JAX programs are then the report's, which
# the run's shared compilation cache (the root conftest.py) compiles once for both.
SHAPES = (QUICK_SHAPES[0], crosscheck.Shape(1, 11, 4, 4, True, False))


def crosscheck_kind(kind: str) -> None:
    """The reference, PyTorch and JAX against each other in every mode of `kind` (outputs; PyTorch against JAX
    also every parameter's gradient), float64, on `SHAPES`."""
    result = crosscheck.run(crosscheck.Selection(kinds=(kind,), dtypes=("float64",), shapes=SHAPES))
    entries = result["entries"]
    bad = [e for e in entries if not e["ok"]]
    assert not bad, bad[:3]
    spec = specs.spec(kind)
    want = set(spec.modes_of("torch")) & set(spec.modes_of("jax"))
    assert {e["mode"] for e in entries} == want, "a mode of the kind was not compared"
    pairs = {e["pair"] for e in entries}
    assert pairs == {"reference-torch", "reference-jax", "torch-jax"}
    cfg = crosscheck.mixer_config(kind, SHAPES[0])
    grads = {e["quantity"] for e in entries if e["quantity"].startswith("grad ")}
    assert grads >= {f"grad {key}" for key in expected_shapes(cfg)}, "a parameter's gradient was not compared"


def sides_follow_the_spec(kind: str) -> None:
    """Each side holds exactly the spec's bundle keys and returns the state the spec describes."""
    import jax.numpy as jnp
    import torch

    from linrnn.impls.jax import layer as jax_layer
    from linrnn.impls.reference import apply_mixer
    from linrnn.impls.torch import from_bundle

    spec = specs.spec(kind)
    cfg = crosscheck.mixer_config(kind, SHAPES[0])
    bundle = init(cfg, 0)
    assert {k: v.shape for k, v in bundle.params.items()} == spec.shapes(cfg)
    module = from_bundle(bundle)
    assert dict((k, tuple(p.shape)) for k, p in module.named_parameters()) == spec.shapes(cfg)
    u = np.random.default_rng(0).standard_normal((2, 5, cfg.d_model))
    _, x_ref = apply_mixer(cfg, bundle.params, u, "sequential" if spec.stateful else None)
    _, x_torch = module(torch.tensor(u), mode=spec.modes_of("torch")[0])
    _, x_jax = jax_layer.apply({k: jnp.asarray(v) for k, v in bundle.params.items()}, cfg, u,
                               spec.modes_of("jax")[0])
    if not spec.stateful:
        assert x_ref is None and x_torch is None and x_jax is None
        return
    shape, dtype = spec.state(cfg)
    for x in (x_ref, x_torch.detach().numpy(), np.asarray(x_jax)):
        assert x.shape == (2, *shape)
        assert np.iscomplexobj(x) == dtype.startswith("complex")




@pytest.fixture(name="crosscheck_kind")
def _crosscheck_kind():
    return crosscheck_kind


@pytest.fixture(name="sides_follow_the_spec")
def _sides_follow_the_spec():
    return sides_follow_the_spec

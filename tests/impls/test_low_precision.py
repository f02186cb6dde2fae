"""Low precision (docs/precision.md, "Low precision"): bfloat16 and float16 in both frameworks under the policy users
train with (inputs, projections and outputs in the low dtype; the recurrence, its state and its accumulation in
float32), every kind x mode x backend within the tolerance table's low rows against the float64 reference.

The layers have long memories (largest |eigenvalue| 0.997 to 0.9999 at L = 64), so a recurrence run in the low dtype,
or a recurrence parameter rounded to it, would leave the rows: the low rows do not grow with the memory, since under the
policy the only low-dtype roundings are the projections' operands and results.

Forward: every route against the reference's view of the same definition (`conv` against `conv`, the others against
`sequential`). Gradient: the input gradient of <g, y> (g rounded to the low dtype, as a low-precision loss would give
it) against the reference's exact one, J^T g, J the layer's Jacobian in u (the recurrent layers are linear in u: the
reference on the unit inputs; the RG-LRU's gates read u: its reference's complex step; attention: a central difference
of the reference, exact to about 1e-10 at step 1e-5 on these sizes, far below the rows).

JAX runs causal layers only (as tests/impls/test_determinism.py): compiling is nearly all of its time, and a
bidirectional layer runs the same scans on the reversed input; PyTorch runs both directions.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from linrnn.impls import backends, specs
from linrnn.impls import jax as lj
from linrnn.impls.bundle import RECURRENCE_KEYS
from linrnn.impls.config import RECURRENT_KINDS, LOW_DTYPES, ModelConfig, mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import MIXERS, apply_mixer, spectral_radius
from linrnn.base.tolerance import assert_close, tolerance
from linrnn.impls.torch import from_bundle

B, L, H, N = 2, 64, 4, 4
ALL_KINDS = RECURRENT_KINDS + ("attention",)
# The built-in models' long memories by their own initialisation fields (decays spread over [0.99, 0.999] or their
# steps' equivalent); a model added later gets every decay at LONG_MEMORY from its spec's `with_radius`.
SLOW = {"rotrnn": {"gamma_min": 0.99, "gamma_max": 0.999}, "lru": {"r_min": 0.99, "r_max": 0.999},
        "dlr": {"dt_min": 2e-4, "dt_max": 2e-3}, "s4d": {"dt_min": 2e-3, "dt_max": 2e-2},
        "s5": {"dt_min": 2e-3, "dt_max": 2e-2}, "attention": {}, "rglru": {"r_min": 0.99, "r_max": 0.999}}
LONG_MEMORY = 0.998


@cache
def case(kind: str, bidirectional: bool = False):
    """bundle, u (B L H), the cotangent g (B L H), the reference's views and its input gradient J^T g."""
    cfg = mixer_config(kind, H, N, heads=2 if kind == "attention" else 1, bidirectional=bidirectional,
                       **SLOW.get(kind, {}))
    bundle = init(cfg, 3)
    if kind not in SLOW:
        bundle = bundle.replace(**specs.spec(kind).with_radius(cfg, bundle.params, LONG_MEMORY))
    rng = np.random.default_rng(4)
    u, g = rng.standard_normal((B, L, H)), rng.standard_normal((B, L, H))
    views = {m: apply_mixer(cfg, bundle.params, u, m)[0] for m in modes("reference", kind)}
    return bundle, u, g, views, reference_input_gradient(bundle, u, g)


def reference_input_gradient(bundle, u: np.ndarray, g: np.ndarray) -> np.ndarray:
    """d<g, y(u)>/du by the float64 reference: J^T g row by row (recurrent kinds: y is linear in u, so J's columns are
    the layer on the unit inputs; the RG-LRU, whose gates read u: its reference's exact `input_gradient`, by a complex
    step; attention: central differences at step 1e-5)."""
    cfg = bundle.config
    module = MIXERS[cfg.kind]
    if hasattr(module, "input_gradient"):
        return module.input_gradient(bundle.params, cfg, u, g)
    eye = np.eye(L * H).reshape(L * H, L, H)
    out = np.empty_like(u)
    for b in range(B):
        if cfg.kind == "attention":
            h = 1e-5
            plus = apply_mixer(cfg, bundle.params, u[b] + h * eye)[0]
            minus = apply_mixer(cfg, bundle.params, u[b] - h * eye)[0]
            columns = (plus - minus) / (2 * h)                                  # (L*H, L, H): dy/du_j
        else:
            columns = apply_mixer(cfg, bundle.params, eye)[0]
        out[b] = np.einsum("jlh,lh->j", columns, g[b]).reshape(L, H)
    return out


def ref_view(kind: str, mode: str, views):
    return views[mode if mode in views else modes("reference", kind)[0]]


def torch_route(bundle, u: np.ndarray, g: np.ndarray, mode: str, dtype: str):
    """y and d<g, y>/du by the PyTorch layer in `dtype` (a low dtype: the layer's input and output dtype)."""
    low = getattr(torch, dtype)
    layer = from_bundle(bundle, low)
    x = torch.tensor(u.astype(np.float32)).to(low).requires_grad_()
    y, _ = layer(x, mode)
    (y.float() * torch.tensor(g.astype(np.float32)).to(low).float()).sum().backward()
    assert y.dtype == low and x.grad.dtype == low
    return y.detach().double().numpy(), x.grad.double().numpy()


@cache
def jax_program(kind: str, bidirectional: bool):
    """One jitted program per mixer: every mode's y and d<g, y>/du (compiled once, for both low dtypes alike: the
    mixer runs in float32 after its input's cast)."""
    cfg = case(kind, bidirectional)[0].config
    routes = [m for m in modes("jax", kind) if not (bidirectional and m == "step")]

    def run(params, u, g):
        out = {}
        for mode in routes:
            loss = lambda x, mode=mode: jnp.sum(lj.apply(params, cfg, x, mode)[0].astype(jnp.float32)
                                                * g.astype(jnp.float32))
            y = lj.apply(params, cfg, u, mode)[0]
            out[mode] = (y.astype(jnp.float32), jax.grad(loss)(u).astype(jnp.float32))
        return out

    return routes, run


def jax_routes(bundle, u: np.ndarray, g: np.ndarray, dtype: str, bidirectional: bool):
    routes, run = jax_program(bundle.config.kind, bidirectional)
    params = lj.from_bundle(bundle, dtype)
    low = lambda a: jnp.asarray(a.astype(np.float32)).astype(dtype)
    out = run(params, low(u), low(g))
    return {m: tuple(np.asarray(a, dtype=np.float64) for a in out[m]) for m in routes}


@pytest.mark.parametrize("dtype", LOW_DTYPES)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_route_in_the_low_dtypes_is_within_its_row(kind, bidirectional, dtype):
    bundle, u, g, views, grad = case(kind, bidirectional)
    r = spectral_radius(bundle.config, bundle.params)
    assert kind == "attention" or r > 0.997                     # long memories: a low-dtype recurrence would show
    results = {} if bidirectional else {("jax", m): v for m, v in jax_routes(bundle, u, g, dtype, False).items()}
    for mode in modes("torch", kind):
        if not (bidirectional and mode == "step"):
            results["torch", mode] = torch_route(bundle, u, g, mode, dtype)
    assert len(results) == (1 if bidirectional else 2) * len(modes("torch", kind)) - (bidirectional and kind != "attention")
    for (backend, mode), (y, dy) in results.items():
        name = f"{kind} {'bidirectional ' if bidirectional else ''}{backend} {mode} {dtype}"
        assert_close(name + " y", ref_view(kind, mode, views), y, "forward", dtype, L, r)
        assert_close(name + " d/du", grad, dy, "gradient", dtype, L, r)


# -- the policy itself ---------------------------------------------------------------------------------

def rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    return torch.tensor(a.astype(np.float32)).to(getattr(torch, dtype)).double().numpy()


@pytest.mark.parametrize("dtype", LOW_DTYPES)
# one kind per place the policy splits: real blocks (RotRNN), complex pairs (LRU), steps (S5), attention's projections
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "s5", "attention"])
def test_the_policy_keeps_the_recurrence_in_float32_and_the_rest_in_the_low_dtype(kind, dtype):
    """Parameters: the recurrence's float32 (not rounded to the low dtype), the projections' low values; the input and
    output in the low dtype; the state float32 (complex64); both frameworks alike."""
    bundle, u, _, _, _ = case(kind)
    recurrence = RECURRENCE_KEYS[kind]
    layer = from_bundle(bundle, getattr(torch, dtype))
    params = lj.from_bundle(bundle, dtype)
    for key, value in bundle.params.items():
        want = value.astype(np.float32) if key in recurrence else rounded(value, dtype).astype(np.float32)
        assert getattr(layer, key).dtype == torch.float32 and np.array_equal(getattr(layer, key).detach().numpy(), want), key
        assert params[key].dtype == jnp.float32 and np.array_equal(np.asarray(params[key]), want), key
    x = torch.tensor(u.astype(np.float32)).to(getattr(torch, dtype))
    y, state = layer(x, modes("torch", kind)[0])
    y_jax, state_jax = lj.apply(params, bundle.config, jnp.asarray(x.float().numpy()).astype(dtype),
                                modes("jax", kind)[0])
    assert y.dtype == getattr(torch, dtype) and y_jax.dtype == jnp.dtype(dtype)
    if kind != "attention":
        assert state.dtype in (torch.float32, torch.complex64) and state_jax.dtype in (jnp.float32, jnp.complex64)
        y_t, _ = layer.step(x[:, 0])
        assert y_t.dtype == getattr(torch, dtype)
    with pytest.raises(LinrnnError, match=f"^input: expected dtype torch.{dtype} \\(the layer's\\), found torch.float32"):
        layer(x.float())


@pytest.mark.parametrize("dtype", LOW_DTYPES)
@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("kind", ["lru", "attention"])   # the model adds no mixer code: one recurrent kind and attention
def test_a_model_in_the_low_dtypes_is_within_the_model_row(kind, backend, dtype):
    cfg = ModelConfig(mixer=mixer_config(kind, 8, 8, heads=2 if kind == "attention" else 1, **SLOW[kind]), n_layers=2,
                      d_input=3, d_output=5, norm="batch", pooling="mean")
    bundle = init(cfg, 0)
    x = np.random.default_rng(0).standard_normal((2, 40, 3))
    lengths = np.array([25, 40])
    ref = backends.backend("reference").apply_bundle(bundle, x, modes("reference", kind)[0], lengths=lengths)
    y = backends.backend(backend).apply_bundle(bundle, x, modes(backend, kind)[0], dtype, lengths=lengths)
    assert np.array_equal(y, rounded(y, dtype))                                      # the model's output is low
    r = spectral_radius(cfg.mixer, {k.split(".")[-1]: v for k, v in bundle.params.items() if ".0.mixer." in k})
    assert_close(f"{kind} model {backend} {dtype}", ref, y, "model", dtype, 40, r, depth=cfg.n_layers + 1)


def test_the_low_rows_do_not_grow_with_the_memory():
    """The recurrence is float32: only its own (float32) term grows with L and r."""
    for dtype, eps in (("bfloat16", 2.0**-7), ("float16", 2.0**-10)):
        short, long = tolerance("forward", dtype, 1, 0.0), tolerance("forward", dtype, 2**16, 0.9999)
        assert short.rtol == pytest.approx(4 * eps + 32 * np.finfo(np.float32).eps)
        assert long.rtol - short.rtol == pytest.approx(32 * np.finfo(np.float32).eps * (1e4 - 1), rel=1e-6)
        assert tolerance("model", dtype, 1, depth=3).rtol == pytest.approx(12 * eps + 32 * np.finfo(np.float32).eps)
    with pytest.raises(KeyError, match="unknown tolerance row 'state' for bfloat16"):
        tolerance("state", "bfloat16")
    with pytest.raises(ValueError, match="depth"):
        tolerance("forward", "float16", depth=2)


# -- the command line --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,stored", [("bfloat16", np.float32), ("float16", np.float16)])
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_linrnn_apply_in_a_low_dtype_writes_its_values_exactly(cli, tmp_path, backend, dtype, stored):
    params, inp, out = tmp_path / "m.npz", tmp_path / "u.npy", tmp_path / "y.npy"
    assert cli.run("params", "init", "--model", "s4d", "--layer-only", "--d-model", 4, "--state", 4, "--seed", 0,
                   "--out", params)[0] == 0
    u = np.random.default_rng(1).standard_normal((2, 9, 4))
    np.save(inp, u)
    code, stdout, _ = cli.run("apply", "--params", params, "--input", inp, "--out", out, "--backend", backend,
                              "--dtype", dtype, "--mode", "conv")
    assert code == 0 and f"({backend}, mode conv, {dtype})" in stdout
    y = np.load(out)
    assert y.dtype == stored and np.array_equal(y.astype(np.float64), rounded(y.astype(np.float64), dtype))
    from linrnn.impls.bundle import load
    bundle = load(params)
    assert_close(f"cli {backend} {dtype}", apply_mixer(bundle.config, bundle.params, u, "conv")[0], y, "forward", dtype,
                 9, spectral_radius(bundle.config, bundle.params))


def test_the_reference_refuses_a_low_dtype_naming_the_backends_that_compute_in_it(cli, tmp_path):
    params, inp = tmp_path / "m.npz", tmp_path / "u.npy"
    cli.run("params", "init", "--model", "lru", "--layer-only", "--d-model", 4, "--state", 4, "--seed", 0, "--out", params)
    np.save(inp, np.zeros((1, 3, 4)))
    line = cli.error_line("apply", "--params", params, "--input", inp, "--out", tmp_path / "y.npy", "--dtype", "bfloat16")
    assert line.endswith("--dtype: backend reference computes in float64, found 'bfloat16'; use --backend torch or jax")


def test_the_kernels_refuse_a_low_dtype_naming_the_route_that_takes_it():
    """The Triton and Pallas scans take float32 (complex64) or float64 only; under the policy a layer's scan is float32,
    so a low-dtype drive is a caller's mistake: one line that names the cast and the layer's mode."""
    triton_scan = pytest.importorskip("linrnn.impls.torch.triton_scan")
    from linrnn.impls.jax import pallas_scan
    log_lam = torch.zeros(2, dtype=torch.complex64)
    with pytest.raises(LinrnnError, match="^v must be float32 or float64, got torch.bfloat16; .*cast v to float32, "
                                          "or use the layer's scan mode$"):
        triton_scan.check_inputs(log_lam, torch.zeros(1, 3, 2, 2, dtype=torch.bfloat16), None, None, 2)
    z = jnp.zeros(2, jnp.complex64)
    with pytest.raises(LinrnnError, match="cast to complex64, or use the layer's scan mode$"):
        pallas_scan.check_inputs(z, jnp.zeros((3, 2), jnp.bfloat16), z)

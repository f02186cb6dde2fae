"""Derivatives beyond the first, every route of both frameworks, in float64 (docs/precision.md, "Derivatives").

For each mixer and mode, at the smallest sizes (B = 1, L = 3, H = N = 2):

* the input Jacobian by batched reverse mode (`autograd.grad(..., is_grads_batched=True)`, `vmap` of `jax.vjp`)
  and by forward mode (`torch.func.jacfwd`, `jax.jacfwd`) against the reference's: exact for the recurrent
  mixers (linear in u: the reference on the unit inputs; the RG-LRU, whose gates read u, by its reference's complex
  step, `jacobian`), a central difference of the reference for attention;
* second order: the Hessian-vector product of 0.5 ||y||^2 in the input and every raw parameter at once
  (`create_graph=True` double backward; JAX's forward-over-reverse) against a central difference of the
  gradient, bounded by SCALED['central_difference'] (Richardson's estimate of the truncation plus the rounding);
  and JAX's `jax.hessian` in u against J^T J from the reference's exact Jacobian;
* where a route has no forward mode (JAX's `scan`: its backward is a `custom_vjp`), a one-line LinrnnError that
  names the modes that have one.

Before the fix, PyTorch's hand-written backwards (the scans' adjoints, DLR's FFT correlations) returned a
second derivative of 0 through `create_graph=True`, so a Hessian-vector product or a gradient penalty was
silently wrong; these checks fail on that (tested below by planting it).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.func

from linrnn.impls import jax as lj
from linrnn.impls.config import RECURRENT_KINDS, mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import layer
from linrnn.impls.jax import scan as scan_module
from linrnn.impls.reference import MIXERS, apply_mixer, spectral_radius
from linrnn.base.tolerance import (assert_close, central_difference_scale, memory, scaled_tolerance)
from linrnn.impls.torch import MIXERS as TORCH_MIXERS
from linrnn.impls.torch import autodiff, layer_scan

B, L, H, N = 1, 3, 2, 2
STEP = 1e-4                       # h of the central differences: parameters and inputs are O(1)


def routes(backend: str):
    """(kind, mode, bidirectional): every mode of every mixer, and the bidirectional ones where they differ."""
    out = []
    for kind in RECURRENT_KINDS + ("attention",):
        for mode in modes(backend, kind):
            out.append((kind, mode, False))
            # bidirectional where the backward pass is code of its own (S4D and S5 run DLR's and the LRU's)
            if mode not in ("step",) and kind in ("rotrnn", "lru", "dlr", "attention"):
                out.append((kind, mode, True))
    return out


@lru_cache(maxsize=None)
def case(kind: str, bidirectional: bool):
    """cfg, bundle, u (B L H), a direction (d_u, {key: d}) and the reference's Jacobian (L H, L H) with its bound."""
    cfg = mixer_config(kind, H, N, heads=1, bidirectional=bidirectional)
    bundle = init(cfg, 3)
    rng = np.random.default_rng(4)
    u = rng.standard_normal((B, L, H))
    d_u = rng.standard_normal(u.shape)
    d_p = {k: rng.standard_normal(v.shape) for k, v in bundle.params.items()}
    jac, scale = reference_jacobian(cfg, bundle, u)
    return cfg, bundle, u, d_u, d_p, jac, scale


def linear_in_u(kind: str) -> bool:
    """A recurrent mixer whose output is linear in its input (every one but the RG-LRU, whose gates read u)."""
    return kind in RECURRENT_KINDS and not hasattr(MIXERS[kind], "jacobian")


def reference(cfg, params, u):
    return apply_mixer(cfg, params, u, None)[0]


def reference_jacobian(cfg, bundle, u):
    """J[(t, h), (s, k)] = d y_{t,h} / d u_{s,k}, and the scale of its error (None: judged as a gradient).

    Recurrent mixers are linear in u: J is the reference on the unit inputs, exactly; a recurrent mixer that is not
    (the RG-LRU) gives its exact J by a complex step (its reference's `jacobian`). Attention is not either: a central
    difference of the reference, with its Richardson bound."""
    n = L * H
    if hasattr(MIXERS[cfg.kind], "jacobian"):
        return MIXERS[cfg.kind].jacobian(bundle.params, cfg, u)[0], None
    if cfg.kind in RECURRENT_KINDS:
        unit = np.eye(n).reshape(n, L, H)
        return reference(cfg, bundle.params, unit).reshape(n, n).T, None
    def difference(h):
        steps = h * np.eye(n).reshape(n, L, H)
        plus, minus = reference(cfg, bundle.params, u + steps), reference(cfg, bundle.params, u - steps)
        return ((plus - minus) / (2 * h)).reshape(n, n).T
    d_h, d_2h = difference(STEP), difference(2 * STEP)
    y_max = float(np.max(np.abs(reference(cfg, bundle.params, u))))
    return d_h, central_difference_scale(d_h, d_2h, y_max, STEP)


def check_jacobian(name, cfg, bundle, jac, scale, got):
    if scale is None:
        assert_close(name, jac, got, row="gradient", dtype="float64", length=L,
                     max_abs_eigenvalue=spectral_radius(cfg, bundle.params))
    else:
        np.testing.assert_array_less(np.max(np.abs(got - jac)), scaled_tolerance("central_difference", "float64",
                                                                                  scale), err_msg=name)


def check_central_difference(name, hvp, g_plus, g_minus, g_plus2, g_minus2, g_max, r):
    """hvp against D(h) = (g(+h) - g(-h)) / 2h, bounded by SCALED['central_difference'] from D(2h)."""
    d_h = (g_plus - g_minus) / (2 * STEP)
    d_2h = (g_plus2 - g_minus2) / (4 * STEP)
    tol = scaled_tolerance("central_difference", "float64",
                           central_difference_scale(d_h, d_2h, g_max, STEP, memory(L, r)))
    err = float(np.max(np.abs(hvp - d_h)))
    assert err <= tol, f"{name}: Hessian-vector product off its central difference by {err:.3e} > {tol:.3e}"
    assert float(np.max(np.abs(d_h))) > 10 * tol, f"{name}: the central difference is too small to judge"


# -- PyTorch ---------------------------------------------------------------------------------------

def torch_layer(kind, bidirectional):
    cfg, bundle, *_ = case(kind, bidirectional)
    return TORCH_MIXERS[kind].from_bundle(bundle, torch.float64)


@pytest.mark.parametrize("kind,mode,bidirectional", routes("torch"))
def test_torch_jacobians_and_hessian_vector_products(kind, mode, bidirectional):
    cfg, bundle, u_np, d_u, d_p, jac, scale = case(kind, bidirectional)
    layer = torch_layer(kind, bidirectional)
    names = [k for k, _ in layer.named_parameters()]
    u = torch.tensor(u_np, requires_grad=True)
    y = layer(u, mode)[0]
    eye = torch.eye(L * H, dtype=torch.float64).reshape(L * H, B, L, H)
    rows = torch.autograd.grad(y, u, eye, is_grads_batched=True)[0]                     # (LH B L H): J^T rows
    check_jacobian(f"torch {kind} {mode} reverse, batched", cfg, bundle, jac, scale,
                   rows.reshape(L * H, L * H).detach().numpy())
    forward = torch.func.jacfwd(lambda x: layer(x, mode)[0])(u.detach())                # (B L H B L H)
    check_jacobian(f"torch {kind} {mode} forward mode", cfg, bundle, jac, scale,
                   forward.reshape(L * H, L * H).detach().numpy())

    def gradient(shift):
        """The gradient of 0.5 ||y||^2 in (u, every parameter) at the point moved by shift * direction."""
        params = {k: torch.tensor(bundle.params[k] + shift * d_p[k], requires_grad=True) for k in names}
        x = torch.tensor(u_np + shift * d_u, requires_grad=True)
        out = torch.func.functional_call(layer, params, (x, mode))[0]
        grads = torch.autograd.grad(0.5 * (out ** 2).sum(), [x, *params.values()], create_graph=shift == 0)
        return x, list(params.values()), grads

    x, params, grads = gradient(0.0)
    directions = [torch.tensor(d_u)] + [torch.tensor(d_p[k]) for k in names]
    inner = sum((g * d).sum() for g, d in zip(grads, directions) if g.requires_grad)
    hvp = torch.autograd.grad(inner, [x, *params], allow_unused=True)
    flat = lambda gs: np.concatenate([(torch.zeros_like(t) if g is None else g).detach().resolve_neg().numpy().ravel()
                                      for g, t in zip(gs, [x, *params])])
    check_central_difference(f"torch {kind} {mode}", flat(hvp), *(flat(gradient(s)[2]) for s in
                                                                  (STEP, -STEP, 2 * STEP, -2 * STEP)),
                             float(np.max(np.abs(flat(grads)))), spectral_radius(cfg, bundle.params))


def test_a_second_derivative_of_zero_is_caught(monkeypatch):
    """The bug this file was written for, planted: the hand-written backward's second derivative is 0 again."""
    monkeypatch.setattr(layer_scan, "recorded", lambda *grads: not torch.is_grad_enabled() and autodiff.recorded(*grads))
    with pytest.raises(AssertionError, match="Hessian-vector product"):
        test_torch_jacobians_and_hessian_vector_products("lru", "scan", False)


# -- JAX -------------------------------------------------------------------------------------------
# The JAX side's own derivative rule is the `scan` mode's custom_vjp (the adjoint scan); the other modes are
# JAX's autodiff of lax.scan and FFTs. So the default run checks every mode's Jacobians (reverse by a vmap of
# vjp, forward where there is one), the `scan` mode's second derivatives of every mixer, and one plain route's
# second derivatives in the raw parameters; `pytest --benchmark` runs the second derivatives of every route
# (`test_jax_second_derivatives_of_every_route`), which takes minutes (RotRNN's expm alone compiles for seconds).

def direction_like(tree, seed):
    """A random direction shaped as `tree` (complex leaves get complex directions)."""
    rng = np.random.default_rng(seed)
    def one(a):
        d = rng.standard_normal(a.shape)
        return jnp.asarray(d + 1j * rng.standard_normal(a.shape) if jnp.iscomplexobj(a) else d, a.dtype)
    return jax.tree.map(one, tree)


def second_order(f, x, p, direction):
    """For loss(x, p) = 0.5 ||f(p, x)||^2: the Hessian in x, the gradient, its product with `direction`
    (forward over reverse) and the gradients at the points moved by +-h, +-2h along it (central differences)."""
    def loss(z, q):
        return 0.5 * jnp.sum(jnp.abs(f(q, z)) ** 2)
    grad = jax.grad(loss, argnums=(0, 1))
    hvp = jax.jvp(grad, (x, p), direction)[1]
    shifts = jnp.array([STEP, -STEP, 2 * STEP, -2 * STEP])
    moved = jax.vmap(lambda s: grad(*jax.tree.map(lambda a, d: a + (s * d).astype(a.dtype), (x, p), direction)))(shifts)
    return jax.hessian(loss)(x, p), grad(x, p), hvp, moved


def flat(tree, index=None) -> np.ndarray:
    """Every leaf of a pytree (or entry `index` of its stacked leaves) as one real float64 vector."""
    leaves = jax.tree.leaves(tree)
    if index is not None:
        leaves = [a[index] for a in leaves]
    return np.concatenate([np.asarray(jnp.stack([jnp.real(a), jnp.imag(a)]) if jnp.iscomplexobj(a) else a).ravel()
                           for a in leaves])


def check_second_order(name, cfg, bundle, jac, results):
    hess_u, grads, hvp, moved = jax.device_get(results)
    r = spectral_radius(cfg, bundle.params)
    if linear_in_u(cfg.kind):                           # the Hessian of 0.5 ||y||^2 is J^T J
        assert_close(f"{name} jax.hessian in u", jac.T @ jac, np.asarray(hess_u).reshape(L * H, L * H),
                     row="gradient", dtype="float64", length=L, max_abs_eigenvalue=r)
    check_central_difference(name, flat(hvp), *(flat(moved, i) for i in range(4)), float(np.max(np.abs(flat(grads)))), r)


@lru_cache(maxsize=None)
def jax_jacobians(kind, bidirectional):
    """{mode: (jac_rev, jac_fwd or None)} for every mode of one mixer, from one jitted program."""
    cfg, bundle, u, *_ = case(kind, bidirectional)
    params = lj.from_bundle(bundle, "float64")

    @jax.jit
    def run(p, x):
        out = {}
        for mode in modes("jax", kind):
            if mode == "step" and bidirectional:
                continue
            f = lambda z, m=mode: lj.apply(p, cfg, z, m)[0]
            out[mode] = (jax.jacrev(f)(x), None if mode == "scan" else jax.jacfwd(f)(x))
        return out

    return jax.device_get(run(params, jnp.asarray(u)))


@pytest.mark.parametrize("kind,bidirectional", [(k, False) for k in RECURRENT_KINDS + ("attention",)]
                         + [("lru", True), ("attention", True)])
def test_jax_jacobians_of_every_mode(kind, bidirectional):
    cfg, bundle, *_, jac, scale = case(kind, bidirectional)
    for mode, (jac_rev, jac_fwd) in jax_jacobians(kind, bidirectional).items():
        check_jacobian(f"jax {kind} {mode} reverse (vmap of vjp)", cfg, bundle, jac, scale,
                       np.asarray(jac_rev).reshape(L * H, L * H))
        if jac_fwd is not None:
            check_jacobian(f"jax {kind} {mode} forward mode", cfg, bundle, jac, scale,
                           np.asarray(jac_fwd).reshape(L * H, L * H))


def scan_second_order(kind):
    """The `scan` mode's second derivatives in u and the materialised system (its custom_vjp's inputs)."""
    cfg, bundle, u, d_u, *_ = case(kind, False)
    system = layer.materialise(lj.from_bundle(bundle, "float64"), cfg)
    direction = (jnp.asarray(d_u), direction_like(system, 5))
    f = lambda s, z: layer.apply_system(s, cfg, z, "scan")[0]
    return jax.jit(lambda s, z: second_order(f, z, s, direction))(system, jnp.asarray(u))


@pytest.mark.parametrize("kind", RECURRENT_KINDS)
def test_jax_scan_second_derivatives(kind):
    cfg, bundle, *_, jac, _ = case(kind, False)
    check_second_order(f"jax {kind} scan", cfg, bundle, jac, scan_second_order(kind))


def raw_second_order(kind, mode, bidirectional):
    cfg, bundle, u, d_u, d_p, *_ = case(kind, bidirectional)
    direction = (jnp.asarray(d_u), {k: jnp.asarray(v) for k, v in d_p.items()})
    f = lambda p, z: lj.apply(p, cfg, z, mode)[0]
    return jax.jit(lambda p, z: second_order(f, z, p, direction))(lj.from_bundle(bundle, "float64"), jnp.asarray(u))


def test_jax_second_derivatives_in_the_raw_parameters():
    cfg, bundle, *_, jac, _ = case("lru", True)
    check_second_order("jax lru sequential (raw parameters)", cfg, bundle, jac, raw_second_order("lru", "sequential", True))


@pytest.mark.bench
@pytest.mark.parametrize("kind,mode,bidirectional", routes("jax"))
def test_jax_second_derivatives_of_every_route(kind, mode, bidirectional):
    cfg, bundle, *_, jac, _ = case(kind, bidirectional)
    check_second_order(f"jax {kind} {mode}", cfg, bundle, jac, raw_second_order(kind, mode, bidirectional))


@pytest.mark.parametrize("kind", ["lru", "s4d"])
def test_jax_second_derivatives_of_a_wrong_adjoint_are_caught(kind):
    """Planted in the `scan` mode's custom_vjp, `scan.blocked`'s (LRU, RotRNN, S5 through `diagonal.run`; DLR and S4D
    through `depthwise.chunkwise`): the backward's outputs lose their dependence on the cotangent (a constant instead)."""
    function, forward, backward = (getattr(scan_module, f"_blocks{part}") for part in ("", "_forward", "_backward"))
    function.defvjp(forward, lambda *a: backward(*a[:-1], jax.lax.stop_gradient(a[-1])))
    try:
        jax.clear_caches()
        cfg, bundle, *_, jac, _ = case(kind, False)
        with pytest.raises(AssertionError):
            check_second_order(f"jax {kind} scan", cfg, bundle, jac, scan_second_order(kind))
    finally:
        function.defvjp(forward, backward)
        jax.clear_caches()


@pytest.mark.parametrize("kind", RECURRENT_KINDS)
def test_jax_scan_refuses_forward_mode_in_one_line(kind):
    cfg, bundle, u, *_ = case(kind, False)
    params = lj.from_bundle(bundle, "float64")
    with pytest.raises(LinrnnError) as err:
        jax.jvp(lambda x: lj.apply(params, cfg, x, "scan")[0], (jnp.asarray(u),), (jnp.asarray(u),))
    assert len(str(err.value).splitlines()) == 1 and "use mode sequential, conv or step" in str(err.value)

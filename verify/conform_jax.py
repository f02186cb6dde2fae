"""`linrnn conform`'s target on the JAX side, and its JAX gradient probe (`linrnn.verify.conform`).

    linrnn-jax        the project's own layer (`linrnn.impls.jax.layer.apply`), mode `scan`
    linrnn-jax-scan   the project's scans (`linrnn.impls.jax.scan.associative`, a constant a;
                      `linrnn.impls.jax.varying_scan.chunked`, a varying a) as a target of the scan contract
    recurrentgemma    recurrentgemma's `recurrentgemma.jax.scan.linear_scan` (the scan contract): its native
                      linear scan on the CPU, accumulating in `acc_float_dtype` = float32 as it ships

It follows the protocol of docs/conform.md: `linrnn_jax(bundle, config, dtype)` returns
`call(u, state=None) -> (y, state)`, u a NumPy or JAX array (a traced one too, for `jax.vjp`). A float64
target computes inside JAX's 64-bit scope (`params.precision`), entered on every call.
"""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import config_from_dict
from linrnn.impls.jax.layer import MODES, apply
from linrnn.impls.jax.params import float64, from_bundle, precision
from linrnn.impls.jax import varying_scan
from linrnn.impls.jax.scan import associative

__all__ = ["input_gradient", "linrnn_jax", "linrnn_jax_scan", "missing_reason", "parameter_gradient", "recurrentgemma",
           "state_gradient", "state_like"]

INSTALL = ("install recurrentgemma without its dependencies (it pins an older NumPy): pip install --no-deps "
           "recurrentgemma, then its imports' packages (docs/conform.md)")


def linrnn_jax(bundle: dict, config: dict, dtype: str = "float64"):
    """The project's own JAX layer, holding the bundle's numbers in `dtype`."""
    cfg = config_from_dict(config)
    with precision(dtype):
        params_ = from_bundle(Bundle(cfg, bundle), dtype)

    mode = "conv" if config.get("max_kernel_length") else MODES[0]     # a truncated DLR kernel: only its own view

    def call(u, state=None, lengths=None, segments=None, params=None):
        """params: {bundle key: array} computed with in place of the layer's own (the parameter gradients)."""
        with precision(dtype):
            own = params_ if params is None else {k: jnp.asarray(v).astype(params_[k].dtype)
                                                   for k, v in params.items()}
            return apply(own, cfg, u, mode, state, lengths, segments)

    def step(u_t, state=None):
        """One position: u_t (B H) -> (y_t (B H), the state after it), by the layer's `step` mode."""
        with precision(dtype):
            y, state = apply(params_, cfg, np.asarray(u_t)[:, None, :], "step", state)
        return y[:, 0], state

    if not config.get("max_kernel_length") and not config.get("bidirectional"):     # the layers that stream
        call.step = step
    return call


def input_gradient(call, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, call(u)>/du by `jax.vjp` (in JAX's 64-bit scope); a call that does not trace raises.

    u, w (B L H) float64 -> (B L H) float64"""
    with float64():               # what a target written for NumPy or torch raises on a tracer, conform reports
        y, pullback = jax.vjp(lambda x: jnp.asarray(call(x)), jnp.asarray(u, dtype=jnp.float64))
        (grad,) = pullback(jnp.asarray(w, dtype=y.dtype))
    return np.asarray(grad, dtype=np.float64), "jax.vjp"


def state_gradient(call, u: np.ndarray, state, w: np.ndarray, v: np.ndarray) -> tuple[dict | None, str]:
    """{"input", "state"}: the gradients of <w, y> + <v, state out> ((y, state out) = call(x, s), from the state
    `state` passed in) by `jax.grad`, as NumPy (a complex state's: d/dRe + i d/dIm, the conjugate of JAX's own
    convention); or (None, why not)."""
    if not isinstance(state, jax.Array):
        return None, f"jax: the state is a {type(state).__name__}, not a JAX array"

    def loss(x, s):
        y, out = call(x, s)
        total = jnp.sum(jnp.asarray(y) * w)
        if out is not None:
            total = total + jnp.sum(jnp.real(out) * np.real(v)) + jnp.sum(jnp.imag(out) * np.imag(v))
        return total

    with float64():
        gx, gs = jax.grad(loss, argnums=(0, 1))(jnp.asarray(u, dtype=jnp.float64), state)
    return {"input": np.asarray(gx, dtype=np.float64), "state": np.conj(np.asarray(gs))}, "jax.grad"


def state_like(state, array: np.ndarray):
    """`array` as a state of `state`'s dtype (a state the target returned, moved by a probe)."""
    with float64():
        return jnp.asarray(np.asarray(array), dtype=state.dtype)


def parameter_gradient(call, u: np.ndarray, params: dict, w: np.ndarray) -> tuple[dict | None, str]:
    """{key: d<w, y>/d key} for y = call(x, {key: float64 array}) by `jax.grad`, as NumPy; or (None, why not)."""
    with float64():
        x = jnp.asarray(u, dtype=jnp.float64)
        leaves = {k: jnp.asarray(np.asarray(v), dtype=jnp.float64) for k, v in params.items()}
        grads = jax.grad(lambda p: jnp.sum(jnp.asarray(call(x, p)) * w))(leaves)
    return {k: np.asarray(g, dtype=np.float64) for k, g in grads.items()}, "jax.grad"


def missing_reason(name: str) -> str | None:
    """None when recurrentgemma's JAX scan imports here, else one line saying why not and what to install."""
    try:
        importlib.import_module("recurrentgemma.jax.scan")
    except Exception as err:                  # a package installed without its dependencies fails in its own ways
        return f"{name} cannot be imported (`import recurrentgemma.jax.scan`: {type(err).__name__}: {err}); {INSTALL}"
    return None


def _scan_inputs(a, b, dtype: str):
    complex_ = np.iscomplexobj(a) or np.iscomplexobj(b)
    cast = {"float32": (jnp.float32, jnp.complex64), "float64": (jnp.float64, jnp.complex128)}[dtype][complex_]
    return jnp.asarray(a, dtype=cast), jnp.asarray(b, dtype=cast)


def recurrentgemma(bundle: dict, config: dict, dtype: str = "float64"):
    """recurrentgemma's `linear_scan(x=b, a=a, reverse=...)`, everything else as it ships (its
    `acc_float_dtype` float32, the native linear scan: `ScanType.AUTO` on a CPU)."""
    scan = importlib.import_module("recurrentgemma.jax.scan")

    def call(a, b):
        with precision(dtype):
            a, b = _scan_inputs(a, b, dtype)
            x, _ = scan.linear_scan(x=b, a=a, reverse=config["reverse"])
            return np.asarray(x)

    return call


def linrnn_jax_scan(bundle: dict, config: dict, dtype: str = "float64"):
    """The project's scans, one sequence (L N), vmapped over the batch: with a constant a its associative scan
    (`scan.associative`, one transition per lane), with a varying a its two-level scan (`varying_scan.chunked`, a
    transition per position, on log a: complex, a real a of either sign has its log's phase pi); the backward scan on
    the reversed sequence, as the project's bidirectional layers run it."""

    def call(a, b):
        with precision(dtype):
            cplx = jnp.complex64 if dtype == "float32" else jnp.complex128
            log_a = jnp.asarray(np.log(np.asarray(a, dtype=complex)), dtype=cplx)              # (B L D)
            v = jnp.asarray(np.asarray(b, dtype=complex), dtype=cplx)                          # (B L D)
            log_a, v = (log_a[:, ::-1], v[:, ::-1]) if config["reverse"] else (log_a, v)
            x0 = jnp.zeros(v.shape[2], dtype=cplx)
            if config["varying"]:
                states = jax.vmap(lambda la, seq: varying_scan.chunked(la, seq, x0))(log_a, v)
            else:
                states = jax.vmap(lambda seq: associative(log_a[0, 0], seq, x0))(v)
            states = np.asarray(states[:, ::-1] if config["reverse"] else states)
            return states if config["complex"] else states.real

    return call

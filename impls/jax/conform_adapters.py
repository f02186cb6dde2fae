"""`linrnn conform`'s target on the JAX side, and its JAX gradient probe (`linrnn.impls.conform`).

    linrnn-jax   the project's own layer (`linrnn.impls.jax.layer.apply`), mode `scan`

It follows the protocol of docs/conform.md: `linrnn_jax(bundle, config, dtype)` returns
`call(u, state=None) -> (y, state)`, u a NumPy or JAX array (a traced one too, for `jax.vjp`). A float64
target computes inside JAX's 64-bit scope (`params.precision`), entered on every call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import config_from_dict
from linrnn.impls.jax.layer import MODES, apply
from linrnn.impls.jax.params import float64, from_bundle, precision

__all__ = ["input_gradient", "linrnn_jax"]


def linrnn_jax(bundle: dict, config: dict, dtype: str = "float64"):
    """The project's own JAX layer, holding the bundle's numbers in `dtype`."""
    cfg = config_from_dict(config)
    with precision(dtype):
        params = from_bundle(Bundle(cfg, bundle), dtype)

    mode = "conv" if config.get("max_kernel_length") else MODES[0]     # a truncated DLR kernel: only its own view

    def call(u, state=None):
        with precision(dtype):
            return apply(params, cfg, u, mode, state)

    return call


def input_gradient(call, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, call(u)>/du by `jax.vjp` (in JAX's 64-bit scope); a call that does not trace raises.

    u, w (B L H) float64 -> (B L H) float64"""
    with float64():               # what a target written for NumPy or torch raises on a tracer, conform reports
        y, pullback = jax.vjp(lambda x: jnp.asarray(call(x)), jnp.asarray(u, dtype=jnp.float64))
        (grad,) = pullback(jnp.asarray(w, dtype=y.dtype))
    return np.asarray(grad, dtype=np.float64), "jax.vjp"

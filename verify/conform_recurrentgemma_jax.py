"""`linrnn conform`'s targets of RecurrentGemma's JAX RG-LRU (`recurrentgemma.jax.layers.RGLRU`, a flax module) loaded
with an rglru bundle, as it ships, in each of its scan types (`conform_recurrentgemma.py` says how the numbers go in):

    recurrentgemma-rglru-jax          scan_type AUTO: its native linear scan (`lax.scan`) off a TPU
    recurrentgemma-rglru-jax-assoc    scan_type ASSOCIATIVE_NATIVE: `lax.associative_scan`
    recurrentgemma-rglru-jax-pallas   scan_type LINEAR_PALLAS: its Pallas kernel, on a TPU or GPU only (the width padded
                                      to a multiple of 128, which its kernel spec asks for)

Each follows the protocol of docs/conform.md: `function(bundle, config, dtype)` returns `call(u, state=None,
segments=None) -> (y, state)`; u as NumPy (y NumPy) or a JAX array, traced too (y a JAX array, for `jax.vjp`). A float64
target computes inside JAX's 64-bit scope (`params.precision`), entered on every call.
"""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.jax.params import precision
from linrnn.verify.conform_recurrentgemma import INSTALL, check_config, peer_arrays, segment_positions

SCAN_TYPES = {"recurrentgemma-rglru-jax": "AUTO", "recurrentgemma-rglru-jax-assoc": "ASSOCIATIVE_NATIVE",
              "recurrentgemma-rglru-jax-pallas": "LINEAR_PALLAS"}
PALLAS_PLATFORMS = ("tpu", "gpu")        # where its Pallas kernel runs (it has no interpret mode)

__all__ = ["missing_reason", "recurrentgemma_rglru_jax", "recurrentgemma_rglru_jax_assoc",
           "recurrentgemma_rglru_jax_pallas"]


def missing_reason(name: str) -> str | None:
    """None when the target `name` runs here, else one line saying why not and what would run it."""
    try:
        importlib.import_module("recurrentgemma.jax.layers")
    except Exception as err:                  # a package installed without its dependencies fails in its own ways
        return f"{name} cannot be imported (`import recurrentgemma.jax.layers`: {type(err).__name__}: {err}); {INSTALL}"
    platform = jax.devices()[0].platform
    if SCAN_TYPES[name] == "LINEAR_PALLAS" and platform not in PALLAS_PLATFORMS:
        return (f"{name}: RecurrentGemma's Pallas scan compiles for a TPU or GPU only (it has no interpret mode); "
                f"JAX runs on {platform} here")
    return None


def _build(name: str, bundle: dict, config: dict, dtype: str):
    check_config(config, name)
    layers = importlib.import_module("recurrentgemma.jax.layers")
    common = importlib.import_module("recurrentgemma.common")
    scan_type = SCAN_TYPES[name]
    arrays = peer_arrays(bundle, config, 128 if scan_type == "LINEAR_PALLAS" else 2)     # its width: even (Pallas: 128)
    H, width = int(config["d_model"]), arrays["width"]
    with precision(dtype):
        real = jnp.dtype(dtype)
        module = layers.RGLRU(width=width, num_heads=arrays["heads"], scan_type=getattr(common.ScanType, scan_type),
                              dtype=real, param_dtype=real)
        as_real = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, dtype=real), tree)      # noqa: E731
        params = {"params": {"a_param": as_real(arrays["a_param"]), "input_gate": as_real(arrays["input_gate"]),
                             "a_gate": as_real(arrays["a_gate"])}}

    def call(u, state=None, segments=None):
        numpy_in = isinstance(u, np.ndarray)
        with precision(dtype):
            x = jnp.asarray(u, dtype=real)
            B, L, _ = x.shape
            x = jnp.pad(x, ((0, 0), (0, 0), (0, width - H)))                    # the added channels: zero inputs
            pos = jnp.asarray(segment_positions(B, L, state is not None, segments))
            y, last = module.apply(params, x, pos, state, return_cache=True)
            y = y[..., :H]
            return (np.asarray(y), last) if numpy_in else (y, last)

    return call


def recurrentgemma_rglru_jax(bundle: dict, config: dict, dtype: str = "float64"):
    """scan_type AUTO (its native linear scan off a TPU)."""
    return _build("recurrentgemma-rglru-jax", bundle, config, dtype)


def recurrentgemma_rglru_jax_assoc(bundle: dict, config: dict, dtype: str = "float64"):
    """scan_type ASSOCIATIVE_NATIVE."""
    return _build("recurrentgemma-rglru-jax-assoc", bundle, config, dtype)


def recurrentgemma_rglru_jax_pallas(bundle: dict, config: dict, dtype: str = "float64"):
    """scan_type LINEAR_PALLAS (a TPU or GPU)."""
    return _build("recurrentgemma-rglru-jax-pallas", bundle, config, dtype)

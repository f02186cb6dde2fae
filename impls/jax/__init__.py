"""The JAX side of `impls/`: the three mixers and the deep model as jit-compiled pure functions.

Importing this package turns on JAX's 64-bit mode (`jax.config.update("jax_enable_x64", True)`),
process-wide: float64 needs it, and every array here is created with an explicit dtype, so float32
runs still compute in float32 (complex64). Code that imports this package and relies on JAX's 32-bit
defaults (e.g. `jnp.zeros(3)` being float32) should pass dtypes explicitly.

Layout (one job per file, one sequence per function, batched once with vmap in `layer`):

    scan.py      diagonal recurrences over time: lax.scan, associative scan, FFT convolution
    diagonal.py  the complex diagonal layer that RotRNN (as complex pairs) and LRU materialise into
    rotrnn.py    RotRNN through complex pairs in the rotated basis
    lru.py       LRU
    dlr.py       DLR: lax.scan with read-out, chunkwise scan, chunked kernel + FFT
    layer.py     apply / step on a batch: modes, state boundary, checks
    model.py     the deep model (encoder, norm, mixer, GELU, dropout, GLU, residual, pooling, decoder)
    params.py    bundle <-> jnp dicts, dtypes, the recurrence-parameter mask
    bench.py     the speed harness (`make_forward`)

The backend interface of `linrnn.impls.backends`: MODES (first the default), DTYPES, `apply_bundle`.
This package imports no torch and nothing from `linrnn.impls.torch` or `linrnn.impls.reference`.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from linrnn.impls.checks import check_lengths, check_sequences, check_tokens  # noqa: E402
from linrnn.impls.errors import LinrnnError  # noqa: E402
from linrnn.impls.jax import layer, model  # noqa: E402
from linrnn.impls.jax.layer import MODES, apply, step  # noqa: E402
from linrnn.impls.jax.params import DTYPES, check_dtype, from_bundle, recurrence_mask, to_bundle  # noqa: E402

__all__ = ["MODES", "DTYPES", "apply_bundle", "apply", "step", "from_bundle", "to_bundle", "recurrence_mask",
           "layer", "model"]


def apply_bundle(bundle, inputs: np.ndarray, mode: str = MODES[0], dtype: str = "float64",
                 lengths: np.ndarray | None = None) -> np.ndarray:
    """A layer bundle on u (B L H) -> y (B L H), or a model bundle (evaluation mode) on its inputs.

    Returns a float64 NumPy copy of the result, computed in `dtype`.
    """
    layer.check_mode(mode)
    check_dtype(dtype)
    params = from_bundle(bundle, dtype)
    cfg = bundle.config
    if bundle.kind == "model":
        if cfg.vocab_size is not None:
            x = jnp.asarray(check_tokens(inputs, cfg.vocab_size))
        else:
            x = jnp.asarray(check_sequences(inputs, cfg.d_input), dtype=dtype)
        lengths = jnp.asarray(check_lengths(lengths, x.shape[0], x.shape[1]))
        out = model.forward(params, cfg, x, lengths, mode)
    else:
        if lengths is not None:
            raise LinrnnError("lengths: only a model bundle (with pooling) takes lengths")
        u = jnp.asarray(check_sequences(inputs, cfg.d_model), dtype=dtype)
        out, _ = layer.apply(params, cfg, u, mode)
    return np.array(out, dtype=np.float64)

"""The JAX side of `impls/`: the seven mixers and the deep model as jit-compiled pure functions.

Importing this package leaves JAX's 64-bit mode as it is (off, by JAX's default). Float64 is scoped:

    from linrnn.impls import jax as lj
    with lj.float64():                                   # jax.enable_x64(True), this thread, this block
        params = lj.from_bundle(bundle, "float64")
        y, state = lj.apply(params, bundle.config, u)    # computed in float64 (complex128)

`apply_bundle(..., dtype="float64")`, the command line, the cross-check and the training adapter enter
the scope themselves. A float64 request outside it is a `LinrnnError`, never a float32 result.

Layout (one job per file, one sequence per function, batched once with vmap in `layer`, or on the whole batch by
DLR and S4D, `run_batch`):

    scan.py      diagonal recurrences over time: lax.scan, associative scan (own VJP), FFT convolution
    pallas_scan.py  the diagonal scan as a Pallas kernel, forward and VJP (the `scan` mode on a GPU)
    diagonal.py  the complex diagonal layer that RotRNN (as complex pairs) and LRU materialise into
    rotrnn.py    RotRNN through complex pairs in the rotated basis
    lru.py       LRU
    dlr.py       DLR: lax.scan with read-out, chunkwise scan, chunked kernel + FFT
    layer.py     apply / step on a batch: modes, state boundary, checks
    model.py     the deep model (encoder, norm, mixer, GELU, dropout, GLU, residual, pooling, decoder)
    params.py    bundle <-> jnp dicts, dtypes and the float64 scope, the recurrence-parameter mask
    s4d.py, s5.py, attention.py  the baselines

The speed harness (`make_forward`) is `linrnn.verify.bench_jax`.

The backend interface of `linrnn.impls.backends`: MODES (first the default), DTYPES, `apply_bundle`.
This package imports no torch and nothing from `linrnn.impls.torch` or `linrnn.impls.reference`.
"""

from __future__ import annotations

if __name__ == "jax":   # impls/ is the working directory, so this folder shadows the library
    raise ImportError("`import jax` found linrnn's impls/jax folder, not the JAX library: Python was started "
                      "inside impls/ (its folder comes first on sys.path); start it from another directory")

from linrnn.base.extras import require

require("jax", "linrnn.impls.jax")   # where JAX is missing: one line naming linrnn[jax]
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from linrnn.impls.checks import check_lengths, check_sequences, check_tokens
from linrnn.impls.config import DTYPES as _DTYPES
from linrnn.impls.config import LOW_DTYPES
from linrnn.base.errors import LinrnnError
from linrnn.impls.jax import layer, model
from linrnn.impls.jax.layer import MODES, apply, step
from linrnn.impls.segments import check_layer_only
from linrnn.impls.jax.params import (check_dtype, float64, float64_enabled, from_bundle, precision,
                                     recurrence_mask, to_bundle)

DTYPES = _DTYPES["jax"]

__all__ = ["MODES", "DTYPES", "apply_bundle", "apply", "step", "from_bundle", "to_bundle", "recurrence_mask",
           "float64", "float64_enabled", "precision", "layer", "model"]


def apply_bundle(bundle, inputs: np.ndarray, mode: str = MODES[0], dtype: str = "float64",
                 lengths: np.ndarray | None = None, segments: np.ndarray | None = None) -> np.ndarray:
    """A layer bundle on u (B L H) -> y (B L H), or a model bundle (evaluation mode) on its inputs.

    Returns a float64 NumPy copy of the result, computed in `dtype` (float64 inside `float64()`).
    lengths (B,): padded rows (a layer, or a model: its mixers and pooling); segments (B L): packed sequences
    (a layer only).
    """
    layer.check_mode(mode, bundle.mixer_kind)
    with precision(dtype):
        return _apply_bundle(bundle, inputs, mode, dtype, lengths, segments)


def _apply_bundle(bundle, inputs: np.ndarray, mode: str, dtype: str, lengths: np.ndarray | None,
                  segments: np.ndarray | None) -> np.ndarray:
    params = from_bundle(bundle, dtype)
    cfg = bundle.config
    if bundle.level == "model":
        check_layer_only(segments)
        if cfg.vocab_size is not None:
            x = jnp.asarray(check_tokens(inputs, cfg.vocab_size))
        else:
            x = _as(check_sequences(inputs, cfg.d_input), dtype)
        lengths = jnp.asarray(check_lengths(lengths, x.shape[0], x.shape[1]))
        out = model.forward(params, cfg, x, lengths, mode)
    else:
        u = _as(check_sequences(inputs, cfg.d_model), dtype)
        out, _ = layer.apply(params, cfg, u, mode, lengths=lengths, segments=segments)
    return np.array(out.astype(jnp.float32) if dtype in LOW_DTYPES else out, dtype=np.float64)


def _as(inputs: np.ndarray, dtype: str) -> jnp.ndarray:
    """Float64 inputs in `dtype`; a low dtype by way of float32 (the rounding a float32 pipeline's cast makes)."""
    if dtype in LOW_DTYPES:
        return jnp.asarray(inputs.astype(np.float32)).astype(dtype)
    return jnp.asarray(inputs, dtype=dtype)

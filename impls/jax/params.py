"""Parameters between the bundle and JAX: exact loading both ways, dtypes, the optimiser groups.

`from_bundle(bundle, dtype)` gives a flat dict of jnp arrays keyed exactly like the bundle (layer
bundle: `M`, `theta`, ...; model bundle: `encoder.weight`, `layers.0.mixer.theta`, ...). In float64
the round trip `to_bundle(config, from_bundle(bundle, "float64"))` is bit-exact; from float32 it is
the float32 numbers, widened exactly.

`recurrence_mask(params, config)` marks the recurrence parameters of the bundle's mixer
(`linrnn.impls.bundle.RECURRENCE_KEYS`), which a trainer puts in their own optimiser group (own learning rate, no weight decay), e.g. with
`optax.masked` or `optax.multi_transform`.

Float64 is scoped, never process-wide. JAX computes in 64 bits only while its `jax_enable_x64` flag
is on, and with the flag off it silently turns every float64 request into float32. Importing this
package leaves the flag alone; `float64()` turns it on for one `with` block (in this thread only:
`jax.enable_x64` is thread-local, and jit caches key on it, so code compiled inside is compiled
again outside). Every entry point that computes in float64 enters it (`apply_bundle`, the command
line, the cross-check, the training adapter, the Monte Carlo); a float64 request made outside the
scope is a `LinrnnError` that says how to get float64, never a float32 result.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.bundle import RECURRENCE_KEYS, Bundle, check_compute_range, is_recurrence_key
from linrnn.impls.checks import check_dtype as check_dtype_name
from linrnn.impls.config import LOW_DTYPES, STATE_DTYPE, Config, ModelConfig
from linrnn.base.errors import LinrnnError

Params = Mapping[str, jnp.ndarray]

FLOAT64_HINT = ("JAX computes in float64 only inside `with linrnn.impls.jax.float64():` (or with "
                "JAX_ENABLE_X64=1 set before Python starts)")


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """A scope in which JAX computes in float64: `jax.enable_x64(True)`, for this thread, until the block ends."""
    with jax.enable_x64(True):
        yield


def float64_enabled() -> bool:
    """Whether float64 is available to JAX here (inside `float64()`, or the flag set for the process)."""
    return bool(jax.config.jax_enable_x64)


def precision(dtype: str) -> contextlib.AbstractContextManager:
    """The scope a computation in `dtype` needs: `float64()` for 'float64', nothing for float32 and the low dtypes."""
    check_dtype_name(dtype, "jax")
    return float64() if dtype == "float64" else contextlib.nullcontext()


def check_dtype(dtype: str) -> None:
    """A dtype name the jax side computes in and can honour here (float64: inside `float64()`)."""
    check_dtype_name(dtype, "jax")
    if dtype == "float64" and not float64_enabled():
        raise LinrnnError(f"dtype: float64 was requested outside JAX's 64-bit mode, which would compute in "
                          f"float32; {FLOAT64_HINT}")


def check_compute_dtype(array) -> None:
    """Parameters of float64 used outside the scope would be cut to float32 by JAX: refuse instead."""
    if jnp.dtype(array.dtype) == jnp.float64 and not float64_enabled():
        check_dtype("float64")


def from_bundle(bundle: Bundle, dtype: str = "float64") -> dict[str, jnp.ndarray]:
    """The bundle's arrays as jnp arrays of `dtype`, same keys (float64: the same numbers, bit for bit).

    A low dtype (bfloat16, float16; docs/precision.md, "Low precision"): every mixer parameter in float32, those
    outside the recurrence (the projections) rounded to the low dtype's values; a model's other parameters (encoder,
    norms, GLU, head, decoder) in the low dtype. A mixer given an input in a low dtype computes in its parameters'
    float32 and returns its output in the input's dtype (`layer.apply`).
    """
    check_dtype(dtype)
    # the guard of the compute dtype's range: under a low dtype, the recurrence's float32
    check_compute_range(bundle.config, bundle.params, STATE_DTYPE if dtype in LOW_DTYPES else dtype)
    if dtype not in LOW_DTYPES:
        return {key: jnp.asarray(value, dtype=dtype) for key, value in bundle.params.items()}
    mixer = bundle.config.mixer if isinstance(bundle.config, ModelConfig) else bundle.config
    low = lambda value: jnp.asarray(value, dtype=jnp.float32).astype(dtype)          # f64 -> f32 master -> low
    out = {}
    for key, value in bundle.params.items():
        parts = key.split(".")
        if len(parts) > 1 and parts[-2] != "mixer":
            out[key] = low(value)                                                      # a model's non-mixer weight
        elif parts[-1] in RECURRENCE_KEYS[mixer.kind]:
            out[key] = jnp.asarray(value, dtype=STATE_DTYPE)                           # the recurrence: float32
        else:
            out[key] = low(value).astype(STATE_DTYPE)                                  # a projection: low values, f32
    return out


def to_bundle(config: Config, params: Params) -> Bundle:
    """A validated float64 bundle from jnp arrays (keys and shapes are checked by `Bundle`)."""
    return Bundle(config, {key: np.asarray(value).astype(np.float64) for key, value in params.items()})


def recurrence_mask(params: Params, config: Config) -> dict[str, bool]:
    """A pytree of booleans like `params` (of a bundle with `config`): True for the recurrence parameters."""
    return {key: is_recurrence_key(key, config) for key in params}

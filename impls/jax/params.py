"""Parameters between the bundle and JAX: exact loading both ways, dtypes, the optimiser groups.

`from_bundle(bundle, dtype)` gives a flat dict of jnp arrays keyed exactly like the bundle (layer
bundle: `M`, `theta`, ...; model bundle: `encoder.weight`, `layers.0.mixer.theta`, ...). In float64
the round trip `to_bundle(config, from_bundle(bundle, "float64"))` is bit-exact; from float32 it is
the float32 numbers, widened exactly.

`recurrence_mask(params)` marks the recurrence parameters (docs/models.md: `M`, `theta`, `gamma_log`,
`nu_log`, `theta_log`, `a`), which a trainer puts in their own optimiser group (own learning rate,
no weight decay), e.g. with `optax.masked` or `optax.multi_transform`.
"""

from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import Config
from linrnn.impls.errors import LinrnnError

DTYPES = ("float32", "float64")
RECURRENCE_KEYS = ("M", "theta", "gamma_log", "nu_log", "theta_log", "a")

Params = Mapping[str, jnp.ndarray]


def check_dtype(dtype: str) -> None:
    if dtype not in DTYPES:
        raise LinrnnError(f"dtype: the jax backend computes in {', '.join(DTYPES)}, found {dtype!r}")


def from_bundle(bundle: Bundle, dtype: str = "float64") -> dict[str, jnp.ndarray]:
    """The bundle's arrays as jnp arrays of `dtype`, same keys (float64: the same numbers, bit for bit)."""
    check_dtype(dtype)
    return {key: jnp.asarray(value, dtype=dtype) for key, value in bundle.params.items()}


def to_bundle(config: Config, params: Params) -> Bundle:
    """A validated float64 bundle from jnp arrays (keys and shapes are checked by `Bundle`)."""
    return Bundle(config, {key: np.asarray(value).astype(np.float64) for key, value in params.items()})


def is_recurrence_key(key: str) -> bool:
    """`theta`, or `layers.3.mixer.theta` in a model; never an encoder, norm, GLU or decoder weight."""
    parts = key.split(".")
    in_mixer = len(parts) == 1 or (len(parts) >= 2 and parts[-2] == "mixer")
    return in_mixer and parts[-1] in RECURRENCE_KEYS


def recurrence_mask(params: Params) -> dict[str, bool]:
    """A pytree of booleans like `params`: True for the recurrence parameters."""
    return {key: is_recurrence_key(key) for key in params}

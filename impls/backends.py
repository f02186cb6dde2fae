"""The registry of backends behind `linrnn apply` (and, later, `linrnn crosscheck`).

A backend is a module with:

    MODES   tuple of mode names, the first being the default
    DTYPES  tuple of dtype names it computes in ('float64', 'float32')
    apply_bundle(bundle, inputs, mode, dtype, lengths=None, segments=None) -> np.ndarray (float64 copy of the result;
                lengths (B,): padded rows, a layer's or a model's; segments (B L): packed sequences, a layer's only)

Backends are imported lazily, so the reference works without torch or JAX installed.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from linrnn.base.errors import LinrnnError
from linrnn.base.extras import missing

BACKENDS = {
    "reference": "linrnn.impls.reference",
    "torch": "linrnn.impls.torch",
    "jax": "linrnn.impls.jax",
}


def backend(name: str) -> ModuleType:
    if name not in BACKENDS:
        raise LinrnnError(f"backend: expected one of {', '.join(BACKENDS)}, found {name!r}")
    try:
        return importlib.import_module(BACKENDS[name])
    except ImportError as err:
        raise missing(err, f"backend {name!r}") or LinrnnError(f"backend {name!r} is not available: {err}") from None

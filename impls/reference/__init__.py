"""The float64 NumPy reference: the oracle every other implementation is checked against.

Each mixer has two views with one signature, `sequential(params, config, u, x0)` (the recurrence) and `conv(params,
config, u)` (the impulse response and a causal convolution). Attention has neither: its one view is `full(params,
config, u)` (`linrnn.impls.config.KIND_MODES`). `apply_mixer` dispatches (`mixer.py`, below the deep model's
`model.py`); this package's names are the backend interface of `linrnn apply` and the reference's API.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.checks import check_dtype, check_mode
from linrnn.impls.config import DTYPES as _DTYPES
from linrnn.impls.reference.mixer import MIXERS, apply_mixer, placed_radius, spectral_radius  # noqa: F401  (the API)
from linrnn.impls.reference.model import forward
from linrnn.impls.segments import check_layer_only
from linrnn.impls.specs.base import MODES as _MODES

MODES = _MODES["reference"]


# -- the backend interface of `linrnn apply` (see linrnn.impls.backends) --------------------------

DTYPES = _DTYPES["reference"]


def apply_bundle(bundle, inputs: np.ndarray, mode: str = "sequential", dtype: str = "float64",
                 lengths: np.ndarray | None = None, segments: np.ndarray | None = None) -> np.ndarray:
    """A layer bundle on u (B L H) -> y (B L H), or a model bundle on its inputs -> its outputs.

    lengths (B,): padded rows (a layer, or a model: its mixers and pooling); segments (B L): packed sequences
    (a layer only).
    """
    check_dtype(dtype, "reference")
    if bundle.level == "model":
        check_mode(mode, "reference", bundle.config.mixer.kind)
        check_layer_only(segments)
        return forward(bundle, inputs, lengths, mode)
    y, _ = apply_mixer(bundle.config, bundle.params, inputs, mode, lengths=lengths, segments=segments)
    return y

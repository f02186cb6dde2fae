"""The float64 NumPy reference: the oracle every other implementation is checked against.

Each mixer has two views with one signature, `sequential(params, config, u, x0)` (the recurrence) and
`conv(params, config, u)` (the impulse response and a causal convolution). Attention has neither: its one
view is `full(params, config, u)` (`linrnn.impls.config.KIND_MODES`). `apply_mixer` dispatches.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.checks import check_dtype, check_mode, check_sequences, check_stateless
from linrnn.impls.config import DTYPES as _DTYPES, MixerConfig, modes
from linrnn.impls.errors import LinrnnError
from linrnn.impls.segments import check_layer_only, check_packing, padding_segments, valid
from linrnn.impls.specs import implementations
from linrnn.impls.specs.base import MODES as _MODES

MIXERS = implementations("reference")     # kind -> its module here (each model registers it in its spec)
MODES = _MODES["reference"]


def apply_mixer(cfg: MixerConfig, params: Mapping[str, np.ndarray], u: np.ndarray, mode: str | None = None,
                x0: np.ndarray | None = None, lengths: np.ndarray | None = None, segments: np.ndarray | None = None):
    """One mixer layer on u (B L H) -> (y (B L H), forward state after the last step or None for 'conv' and 'full').

    mode      None: the kind's default ('sequential'; attention: 'full')
    lengths   (B,) or None: row b's positions t >= lengths[b] are padding; its valid part is computed as if alone
              (the padding a segment of its own) and its output at the padding is 0
    segments  (B L) or None: packed sequences, each computed as if alone (`linrnn.impls.segments`)
    With lengths or segments there is no state in or out.
    """
    mode = modes("reference", cfg.kind)[0] if mode is None else mode
    check_mode(mode, "reference", cfg.kind)
    check_stateless(cfg, x0 is not None)
    u = check_sequences(u, cfg.d_model)
    lengths, segments = check_packing(lengths, segments, x0 is not None, *u.shape[:2])
    if lengths is not None:
        segments = padding_segments(lengths, u.shape[1])
    module = MIXERS[cfg.kind]
    if mode == "full":
        y, x = module.full(params, cfg, u, segments), None
    elif mode == "sequential":
        y, x = module.sequential(params, cfg, u, x0, segments)
    elif x0 is not None:
        raise LinrnnError("mode 'conv' starts from a zero state; use mode 'sequential' to pass a state")
    else:
        y, x = module.conv(params, cfg, u, segments), None
    if lengths is not None:
        y = np.where(valid(lengths, u.shape[1])[..., None], y, 0.0)
    return y, (None if segments is not None else x)


def spectral_radius(cfg: MixerConfig, params: Mapping[str, np.ndarray]) -> float:
    """The largest |eigenvalue| of the transition (RotRNN: max gamma_h; LRU, DLR, S4D: max |lambda|; S5: max
    |Lambda_bar|, which depends on the config's discretisation). Attention has no transition and no decay: 1, so
    the tolerance table's memory is the whole length (every output can weigh every position)."""
    return float(MIXERS[cfg.kind].spectral_radius(params, cfg))


# -- the backend interface of `linrnn apply` (see linrnn.impls.backends) --------------------------

DTYPES = _DTYPES["reference"]


def apply_bundle(bundle, inputs: np.ndarray, mode: str = "sequential", dtype: str = "float64",
                 lengths: np.ndarray | None = None, segments: np.ndarray | None = None) -> np.ndarray:
    """A layer bundle on u (B L H) -> y (B L H), or a model bundle on its inputs -> its outputs.

    lengths (B,): padded rows (a layer, or a model: its mixers and pooling); segments (B L): packed sequences
    (a layer only).
    """
    check_dtype(dtype, "reference")
    if bundle.kind == "model":
        from linrnn.impls.reference.model import forward
        check_mode(mode, "reference", bundle.config.mixer.kind)
        check_layer_only(segments)
        return forward(bundle, inputs, lengths, mode)
    y, _ = apply_mixer(bundle.config, bundle.params, inputs, mode, lengths=lengths, segments=segments)
    return y

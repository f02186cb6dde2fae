"""One mixer layer of the float64 NumPy reference, by its kind's module here (`MIXERS`, registered in each model's
spec): `apply_mixer` dispatches to its view, `spectral_radius` reads its largest decay, `placed_radius` where its
`with_radius` puts the decays. The deep model
(`model.py`) and the package's backend interface (`__init__.py`) both build on it.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.checks import check_mode, check_sequences, check_stateless
from linrnn.impls.config import MixerConfig, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.segments import check_packing, padding_segments, valid
from linrnn.impls.specs import implementations

MIXERS = implementations("reference")     # kind -> its module here (each model registers it in its spec)


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


def placed_radius(cfg: MixerConfig, params: Mapping[str, np.ndarray]) -> float:
    """Where the model's `ModelSpec.with_radius` puts its decays: the spectral radius, or, for a kind whose decay the
    input moves (its reference module has `decay_floor`: the RG-LRU's decay at the gate's largest value), that floor,
    the largest over channels. The spectral radius bounds the memory the tolerance table needs; this is the radius a
    radius ladder sets."""
    module = MIXERS[cfg.kind]
    if hasattr(module, "decay_floor"):
        return float(module.decay_floor(params, cfg))
    return spectral_radius(cfg, params)


def spectral_radius(cfg: MixerConfig, params: Mapping[str, np.ndarray]) -> float:
    """The largest |eigenvalue| of the transition (RotRNN: max gamma_h; LRU, DLR, S4D: max |lambda|; S5: max
    |Lambda_bar|, which depends on the config's discretisation). Attention has no transition and no decay: 1, so
    the tolerance table's memory is the whole length (every output can weigh every position)."""
    return float(MIXERS[cfg.kind].spectral_radius(params, cfg))

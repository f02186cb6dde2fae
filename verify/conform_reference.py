"""`linrnn conform`'s measurements against the contract: the float64 reference from a zero state, the normwise relative
error of the tolerance table, a least-squares factor, the unit impulses, the reference's exact input gradient `J^T w`,
and the contract's read-out in words.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from linrnn.impls.config import MixerConfig
from linrnn.impls.reference import MIXERS, apply_mixer
from linrnn.base.tolerance import compare
from linrnn.verify.conform_bundles import COMPLEX_READOUTS, H


def reference(cfg: MixerConfig, params: Mapping[str, np.ndarray], u: np.ndarray, **packing) -> np.ndarray:
    """The float64 reference from a zero state (`packing`: lengths= or segments=).     u (B L H) -> y (B L H)"""
    mode = "conv" if getattr(cfg, "max_kernel_length", None) else "sequential"
    return apply_mixer(cfg, params, u, mode, **packing)[0]


def rel_error(ref: np.ndarray, got: np.ndarray, scale: float | None = None) -> float:
    """max|got - ref| / max(max|ref|, scale): `linrnn.base.tolerance.compare`'s normwise measure (inf on NaN)."""
    return compare("conform", ref, got, "forward", "float64", scale=scale).rel


def fit_factor(ref: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """The least-squares c in got ~ c ref, and the relative error of that fit."""
    denom = float(np.sum(ref * ref))
    if denom == 0:
        return 0.0, np.inf
    c = float(np.sum(got * ref)) / denom
    return c, rel_error(c * ref, got, float(np.max(np.abs(ref))))


def impulses(length: int, at: int = 0) -> np.ndarray:
    """One sequence per input channel, a unit impulse on that channel at position `at`.     -> (H L H)"""
    u = np.zeros((H, length, H))
    u[np.arange(H), at, np.arange(H)] = 1.0
    return u


def linear_in_u(kind: str) -> bool:
    """Whether the contract's output is linear in its input (every recurrent mixer's but the RG-LRU's, whose gates read
    u: its reference module gives its exact Jacobian, `jacobian`, instead). The difference of two calls along a
    direction of u is then that direction's derivative, exactly but for rounding."""
    return not hasattr(MIXERS[kind], "jacobian")


def reference_gradient(cfg: MixerConfig, params: Mapping[str, np.ndarray], w: np.ndarray,
                       u: np.ndarray | None = None) -> np.ndarray:
    """J^T w for y = J u: J is the reference's response to each unit impulse (exact, the layer is linear in u). A
    layer not linear in u (the RG-LRU, whose gates read u) has a J of its own at each u: its reference module's
    `input_gradient(params, cfg, u, w)` gives J^T w there.

    w, u (B L H) -> (B L H)"""
    module = MIXERS[cfg.kind]
    if hasattr(module, "input_gradient"):
        return module.input_gradient(params, cfg, u, w)
    _, L, _ = w.shape
    basis = np.eye(L * H).reshape(L * H, L, H)                    # impulse at (position, channel)
    J = reference(cfg, params, basis).reshape(L * H, L * H)       # row: the input entry; column: the output entry
    return (w.reshape(len(w), L * H) @ J.T).reshape(w.shape)


def imaginary_readout(params: Mapping[str, np.ndarray], pairs: tuple[tuple[str, str], ...]) -> dict:
    """Parameters whose Re(C' x) is Im(C x): C' = C_im - i C_re for every (real, imaginary) pair present."""
    out = dict(params)
    for re, im in pairs:
        if re in params:
            out[re], out[im] = params[im], -params[re]
    return out


def readout(kind: str, backward: bool = False) -> str:
    """The output term of the contract as docs/models.md writes it: 'Re(C x)', '2 Re(C x)', 'C x' (RotRNN, real);
    the backward scan's with `backward`: 'Re(C_rev x_bwd)'."""
    matrix, _, factor = COMPLEX_READOUTS.get(kind, ("C", (), 0))
    term = f"{matrix}_rev x_bwd" if backward else f"{matrix} x"
    return f"{'2 ' if factor == 2 else ''}Re({term})" if factor else term

"""Checks of user inputs shared by every backend: each failure is a `LinrnnError` naming what was expected."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import DTYPES, KIND_MODES, MixerConfig, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import spec
from linrnn.impls.specs.dlr import DLRConfig


# -- the calls a layer defines (docs/models.md): one rule, one message, every backend ----------------

def check_mode(mode: str, backend: str, kind: str | None = None) -> str:
    """A mode of `backend` for the mixer `kind` (`linrnn.impls.config.modes`: a kind's own, else MODES)."""
    allowed = modes(backend, kind)
    if mode not in allowed:
        own = f" for {kind}" if kind in KIND_MODES else ""
        raise LinrnnError(f"mode: the {backend} backend has modes {', '.join(allowed)}{own}, found {mode!r}")
    return mode


def check_stateless(cfg: MixerConfig, has_state: bool) -> None:
    """A mixer without recurrence (attention: its spec has no state) takes no state."""
    if has_state and not spec(cfg.kind).stateful:
        raise LinrnnError(f"state: {cfg.kind} has no recurrent state; call it without one")


def check_dtype(dtype: str, backend: str) -> str:
    """A dtype name that `backend` computes in (`linrnn.impls.config.DTYPES`)."""
    if dtype not in DTYPES[backend]:
        allowed = ", ".join(DTYPES[backend]) + (" only" if len(DTYPES[backend]) == 1 else "")
        others = [b for b in DTYPES if b != backend and dtype in DTYPES[b]]
        hint = f"; {dtype} is computed by backend {' or '.join(others)}" if others else ""
        raise LinrnnError(f"dtype: the {backend} backend computes in {allowed}, found {dtype!r}{hint}")
    return dtype


def check_streaming(cfg: MixerConfig, mode: str, has_state: bool) -> None:
    """A bidirectional layer has no `step` and no streaming state: its backward scan needs the whole sequence."""
    if cfg.bidirectional and mode == "step":
        raise LinrnnError(f"mode: a bidirectional {cfg.kind} layer has no streaming step (its backward scan needs "
                          f"the whole sequence); use mode scan, sequential or conv")
    if cfg.bidirectional and has_state:
        raise LinrnnError(f"state: a bidirectional {cfg.kind} layer has no streaming state (its backward scan needs "
                          f"the whole sequence); call it without one")


def check_kernel_view(cfg: MixerConfig, mode: str, length: int, has_state: bool) -> None:
    """DLR with `max_kernel_length` is defined by its truncated kernel: only `conv` from a zero state computes it.

    The recurrent views (and a carried state) equal the truncated kernel only while L <= max_kernel_length
    and the state is zero, so anything else is refused rather than answered with another model.
    """
    if not isinstance(cfg, DLRConfig):
        return
    limit = cfg.max_kernel_length
    if limit is not None and (has_state or (mode != "conv" and length > limit)):
        raise LinrnnError(f"mode: DLR with max_kernel_length={limit} is defined by its truncated kernel; the "
                          f"recurrent view holds only for L <= {limit} from a zero state (found mode {mode}, L = "
                          f"{length}{', a given state' if has_state else ''}): use mode conv without a state")


def check_sequences(u: np.ndarray, d: int, name: str = "input") -> np.ndarray:
    """A real (B, L, d) array with B, L >= 1 and finite values; returned as float64."""
    if not isinstance(u, np.ndarray):
        raise LinrnnError(f"{name}: expected a NumPy array of shape (B, L, {d}), found {type(u).__name__}")
    if not (np.issubdtype(u.dtype, np.floating) or np.issubdtype(u.dtype, np.integer)) or u.dtype == np.bool_:
        raise LinrnnError(f"{name}: expected a real floating-point array, found dtype {u.dtype}")
    if u.ndim != 3 or u.shape[-1] != d or u.shape[0] < 1 or u.shape[1] < 1:
        raise LinrnnError(f"{name}: expected shape (B, L, {d}) with B, L >= 1, found {u.shape}")
    bad = int(u.size - np.count_nonzero(np.isfinite(u)))
    if bad:
        raise LinrnnError(f"{name}: expected finite values, found {bad} NaN/Inf entr{'y' if bad == 1 else 'ies'}")
    return u.astype(np.float64, copy=False)


def check_tokens(tokens: np.ndarray, vocab_size: int, name: str = "input") -> np.ndarray:
    """An integer (B, L) array of token ids in [0, vocab_size)."""
    if not isinstance(tokens, np.ndarray) or not np.issubdtype(tokens.dtype, np.integer):
        found = tokens.dtype if isinstance(tokens, np.ndarray) else type(tokens).__name__
        raise LinrnnError(f"{name}: expected integer token ids of shape (B, L), found {found}")
    if tokens.ndim != 2 or tokens.shape[0] < 1 or tokens.shape[1] < 1:
        raise LinrnnError(f"{name}: expected shape (B, L) with B, L >= 1, found {tokens.shape}")
    if tokens.min() < 0 or tokens.max() >= vocab_size:
        raise LinrnnError(f"{name}: expected token ids in [0, {vocab_size}), found ids in "
                          f"[{tokens.min()}, {tokens.max()}]")
    return tokens.astype(np.int64, copy=False)


def check_lengths(lengths: np.ndarray | None, batch: int, length: int) -> np.ndarray:
    """Valid lengths (B,) in [1, L] for masked pooling; None means every sequence is full."""
    if lengths is None:
        return np.full(batch, length, dtype=np.int64)
    lengths = np.asarray(lengths)
    if not np.issubdtype(lengths.dtype, np.integer) or lengths.shape != (batch,):
        raise LinrnnError(f"lengths: expected integers of shape ({batch},), found {lengths.dtype} {lengths.shape}")
    if lengths.min() < 1 or lengths.max() > length:
        raise LinrnnError(f"lengths: expected values in [1, {length}], found [{lengths.min()}, {lengths.max()}]")
    return lengths.astype(np.int64)

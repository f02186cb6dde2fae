"""Padded rows and packed sequences: the checks and the index arithmetic every backend shares (NumPy only).

A layer takes, besides its input u (B L H), at most one of

    lengths   (B,) integers in [1, L]   row b is valid at positions t < lengths[b]; the rest is padding
    segments  (B L) integers            a segment is a maximal run of equal ids in a row; the state resets
                                        where the id changes

and then computes each row's valid part, or each segment, as if it were run alone (docs/models.md,
"Padding and packed sequences"). With lengths the output at the padded positions is 0. Neither takes a
state in, and neither returns one.

The frameworks run packed sequences (except in the streaming `step` mode, which resets its state) as one
padded batch of the segments: `pieces` gathers every segment into a row of its own, the layer runs that
batch with its lengths, and `inverse` puts each position back. The reference computes them as the
equations read (its `sequential` resets the state, its `conv` sums only over lags inside a segment).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from linrnn.impls.checks import check_lengths
from linrnn.base.errors import LinrnnError


def check_segments(segments, batch: int, length: int) -> np.ndarray:
    """Integer segment ids of shape (B, L); returned as int64 NumPy."""
    segments = np.asarray(segments)
    if not np.issubdtype(segments.dtype, np.integer) or segments.shape != (batch, length):
        raise LinrnnError(f"segments: expected integer ids of shape ({batch}, {length}), found "
                          f"{segments.dtype} {segments.shape}")
    return segments.astype(np.int64, copy=False)


def check_packing(lengths, segments, has_state: bool, batch: int, length: int):
    """The checks of a call with lengths or segments -> (lengths (B,) int64 or None, segments (B L) int64 or None).

    Values are checked where they are concrete (NumPy, a tensor); a traced JAX array is checked by shape only.
    """
    if lengths is not None and segments is not None:
        raise LinrnnError("lengths, segments: give one of them (padding is a segment of its own), found both")
    if (lengths is not None or segments is not None) and has_state:
        raise LinrnnError(f"state: with {'lengths' if lengths is not None else 'segments'} every row or segment "
                          f"starts from a zero state and none is returned; call it without a state")
    if segments is not None:
        segments = check_segments(segments, batch, length)
    if lengths is not None:
        lengths = check_lengths(np.asarray(lengths), batch, length)
    return lengths, segments


def check_layer_only(segments) -> None:
    """Packed sequences are a layer's input: a model bundle takes lengths (padding), not segments."""
    if segments is not None:
        raise LinrnnError("segments: packed sequences are a layer's input (a layer bundle); a model takes lengths")


def valid(lengths: np.ndarray, length: int) -> np.ndarray:
    """(B L) bool: True at the valid positions t < lengths[b]."""
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def padding_segments(lengths: np.ndarray, length: int) -> np.ndarray:
    """(B L) ids: 0 on each row's valid positions, 1 on its padding."""
    return (~valid(lengths, length)).astype(np.int64)


def starts(segments: np.ndarray) -> np.ndarray:
    """(B L) bool: True where a new segment begins after position 0 (the id changes): the state resets there."""
    out = np.zeros(segments.shape, dtype=bool)
    out[:, 1:] = segments[:, 1:] != segments[:, :-1]
    return out


def ends(segments: np.ndarray) -> np.ndarray:
    """(B L) bool: True at the last position of a segment that another follows: a backward scan resets there."""
    out = np.zeros(segments.shape, dtype=bool)
    out[:, :-1] = starts(segments)[:, 1:]
    return out


def runs(segments: np.ndarray) -> np.ndarray:
    """(B L) int: the ordinal of each position's segment in its row (0, 0, 1, 1, 1, 2, ...)."""
    return np.cumsum(starts(segments), axis=1)


def positions(segments: np.ndarray) -> np.ndarray:
    """(B L) int: each position's offset from the start of its segment."""
    B, L = segments.shape
    t = np.broadcast_to(np.arange(L), (B, L))
    first = np.where(starts(segments) | (t == 0), t, 0)
    return t - np.maximum.accumulate(first, axis=1)


@dataclass(frozen=True)
class Pieces:
    """Every segment of a (B L) batch as a row of its own: a padded (R Lmax) batch."""

    index: np.ndarray     # (R Lmax) int: the flat position b L + t of each entry (the segment's start where padded)
    lengths: np.ndarray   # (R,) int: each segment's length
    inverse: np.ndarray   # (B L) int: where each position went in the flattened (R Lmax) batch


def pieces(segments: np.ndarray, power_of_two: bool = False) -> Pieces:
    """The gather and scatter indices that run each segment of `segments` (B L) alone, as one padded batch.

    power_of_two: round the batch's rows and width up to powers of two (the extra rows repeat position 0 with
    length 1), so that a compiled program (JAX's jit) serves every segmentation of a shape bucket.
    """
    B, L = segments.shape
    offset = positions(segments)
    flat_start = np.flatnonzero(offset.ravel() == 0)                          # (R,) b L + t of every start
    bounds = np.append(flat_start, B * L)
    lengths = np.diff(bounds)                                                 # (R,) a segment never spans rows
    width = int(lengths.max())
    segment_of = np.repeat(np.arange(len(flat_start)), lengths)               # (B L) flat
    if power_of_two:
        rows, width = 1 << (len(flat_start) - 1).bit_length(), 1 << (width - 1).bit_length()
        flat_start = np.append(flat_start, np.zeros(rows - len(flat_start), dtype=flat_start.dtype))
        lengths = np.append(lengths, np.ones(len(flat_start) - len(lengths), dtype=lengths.dtype))
    steps = np.arange(width)[None, :]
    index = flat_start[:, None] + np.minimum(steps, lengths[:, None] - 1)     # (R Lmax)
    inverse = segment_of * width + offset.ravel()
    return Pieces(index, lengths, inverse.reshape(B, L))

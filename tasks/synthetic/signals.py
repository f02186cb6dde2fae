"""Building blocks shared by the synthetic tasks (DLR `src/dataloaders/sequence1d.py`).

Everything here works in float64 on a batch; the registry rounds once to the requested dtype, so
the float32 and float64 batches of one (seed, k) hold the same numbers up to float32 rounding.

    x = z / max_l |z_l|,   z ~ N(0, 1)^L                          (L-infinity-normalised base signal)
    pos_l = [cos(2 pi l / L_in), sin(2 pi l / L_in)],  l = 0 .. L_in - 1   (L_in: the input length)
"""

from __future__ import annotations

import numpy as np


def normalised_randn(rng: np.random.Generator, batch_size: int, length: int) -> np.ndarray:
    """Standard normal rows, each divided by its own maximum absolute value.

    Returns:
        x   float64 (B L)   every row has max_l |x_l| = 1, so values lie in [-1, 1]
    """
    z = rng.standard_normal((batch_size, length))  # (B L)
    # A row of length >= 1 is all zero with probability 0; DLR's F.normalize would divide by 1e-12.
    return z / np.abs(z).max(axis=-1, keepdims=True)  # (B L)


def positional_channels(length: int) -> np.ndarray:
    """The two position features DLR appends to every input (`concat_pos`).

    Returns:
        pos   float64 (L 2)   [cos(2 pi l / L), sin(2 pi l / L)] for l = 0 .. L - 1
    """
    angle = 2.0 * np.pi * np.arange(length) / length  # (L)
    return np.stack([np.cos(angle), np.sin(angle)], axis=-1)  # (L 2)


def with_positions(features: np.ndarray) -> np.ndarray:
    """Append the positional channels of the input's own length L_in = features.shape[1].

    Args:
        features   float64 (B L d)
    Returns:
        inputs     float64 (B L d+2)   [features, cos, sin]
    """
    batch_size, length, width = features.shape
    inputs = np.empty((batch_size, length, width + 2))  # (B L d+2)
    inputs[..., :width] = features
    inputs[..., width:] = positional_channels(length)  # broadcast over B
    return inputs


def sorted_random_subset(rng: np.random.Generator, batch_size: int, n: int, m: int) -> np.ndarray:
    """For each row, m distinct indices drawn uniformly from 0 .. n-1, in increasing order.

    DLR takes the top-m of n uniform numbers; the m smallest of n uniforms is the same distribution.

    Returns:
        indices   int64 (B m)   strictly increasing along the last axis
    """
    u = rng.random((batch_size, n))  # (B n)
    chosen = np.argpartition(u, m - 1, axis=-1)[:, :m]  # (B m), unordered
    return np.sort(chosen, axis=-1)  # (B m)


def orthogonal_polar(a: np.ndarray) -> np.ndarray:
    """The orthogonal polar factor U V^T of a = U S V^T (DLR's random orthogonal matrix).

    Args:
        a   float64 (... N N)
    Returns:
        q   float64 (... N N)   q q^T = I
    """
    u, _, vh = np.linalg.svd(a)  # (... N N), (... N), (... N N)
    return u @ vh  # (... N N)

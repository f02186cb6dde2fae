"""MaskedSelect and MaskedSelectFixed: copy the M marked values, in order, after the sequence.

Here `length` L is the number of noise tokens and M = 32 values are to be copied:

    v = normalised randn of length M + L, followed by M zeros         (B M+L+M)
    p_0 < ... < p_{M-1}: M distinct positions among 0 .. M+L-1        (marked)
    inputs[l] = [v_l, 1{l in p}, cos(2 pi l / L_in), sin(2 pi l / L_in)],  L_in = L + 2M, d_in = 4
    y_i = v_{p_i},  i = 0 .. M-1                                      (B M 1), read from the last M outputs

MaskedSelect redraws p for every sample. MaskedSelectFixed draws p once, from a generator seeded with
0 (per length), and uses it for every sample, seed and batch (DLR: train and validation alike).
"""

from __future__ import annotations

import functools

import numpy as np

from linrnn.tasks.synthetic.signals import normalised_randn, sorted_random_subset, with_positions

NUM_SELECTED = 32  # DLR's M: the number of marked values to copy


@functools.lru_cache(maxsize=16)
def fixed_positions(length: int) -> np.ndarray:
    """The marked positions of MaskedSelectFixed for `length` noise tokens.

    Returns:
        p   int64 (M)   increasing, in 0 .. M+L-1; read-only, shared by every batch
    """
    p = sorted_random_subset(np.random.default_rng(0), 1, NUM_SELECTED + length, NUM_SELECTED)[0]
    p.flags.writeable = False
    return p


def _select(values: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Build inputs and targets from the (B M+L) values and the (B M) marked positions."""
    batch_size, visible = values.shape
    features = np.zeros((batch_size, visible + NUM_SELECTED, 2))  # (B M+L+M 2): value, marker
    features[:, :visible, 0] = values
    np.put_along_axis(features[..., 1], positions, 1.0, axis=-1)
    y = np.take_along_axis(values, positions, axis=-1)  # (B M)
    return with_positions(features), y[..., None]


def masked_select(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """MaskedSelect: marked positions redrawn for each sample.

    Returns:
        inputs    (B L+2M 4)
        targets   (B M 1)
    """
    positions = sorted_random_subset(rng, batch_size, NUM_SELECTED + length, NUM_SELECTED)  # (B M)
    values = normalised_randn(rng, batch_size, NUM_SELECTED + length)  # (B M+L)
    return _select(values, positions)


def masked_select_fixed(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """MaskedSelectFixed: the same marked positions (seed 0) in every sample.

    Returns:
        inputs    (B L+2M 4)
        targets   (B M 1)
    """
    positions = np.broadcast_to(fixed_positions(length), (batch_size, NUM_SELECTED))  # (B M)
    values = normalised_randn(rng, batch_size, NUM_SELECTED + length)  # (B M+L)
    return _select(values, positions)

"""The single-signal tasks: Shift, CumSum, CumMax, Reverse, Sort, ContextShift.

Each starts from the L-infinity-normalised signal x (B L) of `signals.normalised_randn` and feeds the
model [x, cos, sin] (d_in = 3). Every function has the same signature,

    sample(rng, length, batch_size) -> (inputs (B L_in 3), targets (B L_out d_out)), float64,

and the model's answer is read from its last L_out outputs. Indices start at 0.
"""

from __future__ import annotations

import numpy as np

from linrnn.tasks.synthetic.signals import normalised_randn, with_positions

NUM_SHIFTS = 8  # DLR's `num_shifts`: Shift's target holds this many delayed copies (d_out)


def shift_sizes(length: int) -> np.ndarray:
    """s_h = floor(h L / 8), h = 0 .. 7: DLR's int(linspace(0, L - L/8, 8)) computed exactly.

    Returns:
        s   int64 (8)   0, L/8, ..., 7L/8 when 8 divides L; distinct whenever L >= 8
    """
    return np.arange(NUM_SHIFTS) * length // NUM_SHIFTS  # (8)


def shift(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Eight simultaneous shifts.

        y[l, h] = x[l - s_h] if l >= s_h else 0,   s_h = floor(h L / 8)

    Returns:
        inputs    (B L 3)   [x, cos, sin]
        targets   (B L 8)
    """
    x = normalised_randn(rng, batch_size, length)  # (B L)
    y = np.zeros((batch_size, length, NUM_SHIFTS))  # (B L 8)
    for h, s in enumerate(shift_sizes(length)):  # 8 slices, each a view copy
        y[:, s:, h] = x[:, : length - s]
    return with_positions(x[..., None]), y


def cumsum(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Running sum, rescaled so that its variance does not grow with l.

        y_l = (sum_{j <= l} x_j) / sqrt(l + 1)

    Returns:
        inputs    (B L 3)
        targets   (B L 1)
    """
    x = normalised_randn(rng, batch_size, length)  # (B L)
    y = np.cumsum(x, axis=-1) / np.sqrt(np.arange(1, length + 1))  # (B L)
    return with_positions(x[..., None]), y[..., None]


def cummax(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum.

        y_l = max_{j <= l} x_j

    Returns:
        inputs    (B L 3)
        targets   (B L 1)
    """
    x = normalised_randn(rng, batch_size, length)  # (B L)
    y = np.maximum.accumulate(x, axis=-1)  # (B L)
    return with_positions(x[..., None]), y[..., None]


def reverse(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Reverse x; the input is x followed by L zeros (L_in = 2L).

        y_i = x_{L - 1 - i},   i = 0 .. L - 1

    Returns:
        inputs    (B 2L 3)   positions use L_in = 2L
        targets   (B L 1)
    """
    x = normalised_randn(rng, batch_size, length)  # (B L)
    padded = np.concatenate([x, np.zeros_like(x)], axis=-1)  # (B 2L)
    return with_positions(padded[..., None]), x[:, ::-1, None].copy()


def sort(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort x by distance from its first value (a stable sort); the input is x then L zeros.

        y = (x_{p_0}, ..., x_{p_{L-1}}),  p the stable ordering of |x_j - x_0| ascending, so y_0 = x_0

    This is not a plain ascending sort (DLR HEAD 580d854).

    Returns:
        inputs    (B 2L 3)   positions use L_in = 2L
        targets   (B L 1)
    """
    x = normalised_randn(rng, batch_size, length)  # (B L)
    order = np.argsort(np.abs(x - x[:, :1]), axis=-1, kind="stable")  # (B L)
    y = np.take_along_axis(x, order, axis=-1)  # (B L)
    padded = np.concatenate([x, np.zeros_like(x)], axis=-1)  # (B 2L)
    return with_positions(padded[..., None]), y[..., None]


def context_shift(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """A shift whose size is written in the first two tokens.

        s ~ Uniform{0, ..., L - 3} per sample,   z = [cos(2 pi s / L), sin(2 pi s / L), x_1, ..., x_{L-2}]
        y_l = z_{l - s} if l >= s else 0

    x_1 .. x_{L-2} is a normalised signal of length L - 2; the header is part of the delayed target.

    Returns:
        inputs    (B L 3)   [z, cos, sin]
        targets   (B L 1)
    """
    s = rng.integers(0, length - 2, size=batch_size)  # (B), upper bound exclusive: 0 .. L-3
    x = normalised_randn(rng, batch_size, length - 2)  # (B L-2)
    angle = 2.0 * np.pi * s / length  # (B)
    z = np.concatenate([np.cos(angle)[:, None], np.sin(angle)[:, None], x], axis=-1)  # (B L)
    source = np.arange(length) - s[:, None]  # (B L), index of z that lands at l
    y = np.take_along_axis(z, np.maximum(source, 0), axis=-1)  # (B L)
    y[source < 0] = 0.0
    return with_positions(z[..., None]), y[..., None]

"""Solve and SolveFixed: read an orthogonal linear system A X = B, output its solution X.

    N_s = floor(sqrt(L + 1) - 1)               the largest N with N^2 + 2N <= L (63 for L = 4096)
    A = U V^T,  G = U S V^T,  G ~ N(0, 1)^{N_s x N_s}       (orthogonal: A A^T = I)
    X ~ N(0, 1)^{N_s} / ||.||_2,   B = A X
    z = row-major flattening of [A | B] (N_s^2 + N_s numbers), then zeros up to length L
    inputs = [z, cos, sin]  (B L 3);   y = X  (B N_s 1), read from the last N_s outputs

(B in "A X = B" is the paper's right-hand side; in shapes, B is the batch.)

Solve redraws A for every sample. SolveFixed draws A once, from a generator seeded with 0 (per
length), and uses it for every sample, seed and batch; X is always redrawn.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from linrnn.tasks.synthetic.signals import orthogonal_polar, with_positions


def system_size(length: int) -> int:
    """N_s = floor(-1 + sqrt(1 + L)), the positive root of N^2 + 2N - L rounded down (exact integers)."""
    return math.isqrt(length + 1) - 1


@functools.lru_cache(maxsize=16)
def fixed_matrix(length: int) -> np.ndarray:
    """The matrix A of SolveFixed for inputs of length `length`.

    Returns:
        a   float64 (N_s N_s)   orthogonal; read-only, shared by every batch
    """
    n = system_size(length)
    a = orthogonal_polar(np.random.default_rng(0).standard_normal((n, n)))
    a.flags.writeable = False
    return a


def _system(a: np.ndarray, rng: np.random.Generator, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw X, form B = A X and lay out [A | B] as the input. a: (B N N)."""
    batch_size, n, _ = a.shape
    x = rng.standard_normal((batch_size, n))  # (B N)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    b = np.einsum("bij,bj->bi", a, x)  # (B N)
    augmented = np.concatenate([a, b[..., None]], axis=-1)  # (B N N+1)
    z = np.zeros((batch_size, length))  # (B L)
    z[:, : n * (n + 1)] = augmented.reshape(batch_size, n * (n + 1))  # row-major
    return with_positions(z[..., None]), x[..., None]


def solve(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Solve: a fresh orthogonal A for each sample.

    Returns:
        inputs    (B L 3)
        targets   (B N_s 1)
    """
    n = system_size(length)
    a = orthogonal_polar(rng.standard_normal((batch_size, n, n)))  # (B N N)
    return _system(a, rng, length)


def solve_fixed(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """SolveFixed: one orthogonal A (seed 0) in every sample.

    Returns:
        inputs    (B L 3)
        targets   (B N_s 1)
    """
    n = system_size(length)
    a = np.broadcast_to(fixed_matrix(length), (batch_size, n, n))  # (B N N)
    return _system(a, rng, length)

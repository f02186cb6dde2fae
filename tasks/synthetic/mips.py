"""MIPS: causal maximum-inner-product search.

    q_i, k_i, v_i = unit-norm vectors in R^D (normalised randn), D = 4, i = 0 .. L-1
    inputs[i] = [q_i, k_i, v_i, cos(2 pi i / L), sin(2 pi i / L)]      (B L 3D+2) = (B L 14)
    j*(i) = argmax_{j <= i} q_i . k_j   (the smallest such j on a tie, as np.argmax / torch.argmax)
    y_i = v_{j*(i)}                                                    (B L D)
"""

from __future__ import annotations

import numpy as np

from linrnn.tasks.synthetic.signals import with_positions

KEY_SIZE = 4  # DLR's D: the size of queries, keys and values
_SIMILARITY_BLOCK = 2**20  # elements of one block of q.k scores: 8 MiB in float64, fastest measured


def causal_argmax(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """j*(i) = argmax_{j <= i} q_i . k_j for each batch row, without forming the (B L L) scores.

    Rows are handled in blocks [i0, i1); a block only needs the keys 0 .. i1-1, and only its own
    diagonal square needs the causal mask, so the work is about B L^2 D / 2.

    Args:
        q, k   float64 (B L D)
    Returns:
        j      int64 (B L)   j[b, i] <= i
    """
    batch_size, length, _ = q.shape
    block = max(1, min(length, _SIMILARITY_BLOCK // (batch_size * length)))
    j = np.empty((batch_size, length), dtype=np.int64)  # (B L)
    future = np.triu(np.ones((block, block), dtype=bool), k=1)  # (b b): key after query
    for i0 in range(0, length, block):
        i1 = min(i0 + block, length)
        scores = q[:, i0:i1] @ k[:, :i1].transpose(0, 2, 1)  # (B b i1)
        scores[:, :, i0:][:, future[: i1 - i0, : i1 - i0]] = -np.inf
        j[:, i0:i1] = np.argmax(scores, axis=-1)
    return j


def mips(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """MIPS with causal search.

    Returns:
        inputs    (B L 14)
        targets   (B L 4)
    """
    qkv = rng.standard_normal((batch_size, 3, length, KEY_SIZE))  # (B 3 L D)
    qkv /= np.linalg.norm(qkv, axis=-1, keepdims=True)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # (B L D) each
    j = causal_argmax(q, k)  # (B L)
    y = np.take_along_axis(v, j[..., None], axis=1)  # (B L D)
    return with_positions(np.concatenate([q, k, v], axis=-1)), y

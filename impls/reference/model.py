"""The deep model of docs/models.md in evaluation mode, float64 NumPy reference.

    encoder:  Linear(d_in -> H)  or  Embedding(vocab -> H)
    block i:  z = norm(x); z = mixer(z); z = gelu(z); z = glu(z) = (W1 z + b1) * sigmoid(W2 z + b2);
              x = x + z                    (prenorm; postnorm: x = norm(x + mixer-path(x)))
    head:     pool over time (mean over the valid positions | last valid position | none), Linear(H -> d_out);
              retrieval: rows b and B + b of (2B L) inputs are one pair of documents, pooled to z1, z2 (B H):
              Linear(H -> d_out)(gelu(Linear(4H -> H)([z1, z2, z1 - z2, z1 * z2])))

Evaluation mode: dropout is the identity and BatchNorm uses its stored statistics. GELU is the exact
erf form (PyTorch's default; note that `jax.nn.gelu` defaults to the tanh approximation). Padded rows
(`lengths`): with `padding = "masked"` (the default) every mixer computes each row's valid positions as if the
row were alone (docs/models.md, "Padding and packed sequences"); with "unmasked" it runs over the padding.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.special import erf, expit

from linrnn.impls.bundle import Bundle, sub_params
from linrnn.impls.checks import check_lengths, check_sequences, check_tokens
from linrnn.impls.config import ModelConfig
from linrnn.impls.reference.mixer import apply_mixer

Params = Mapping[str, np.ndarray]


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Normalise over H (biased variance).     x (B L H)"""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def batch_norm(x: np.ndarray, scale, bias, mean, var, eps: float) -> np.ndarray:
    """Normalise each of the H features with its stored running statistics.     x (B L H)"""
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def norm(p: Params, cfg: ModelConfig, x: np.ndarray) -> np.ndarray:
    if cfg.norm == "layer":
        return layer_norm(x, p["norm.scale"], p["norm.bias"], cfg.norm_eps)
    return batch_norm(x, p["norm.scale"], p["norm.bias"], p["norm.mean"], p["norm.var"], cfg.norm_eps)


def glu(p: Params, z: np.ndarray) -> np.ndarray:
    """(W1 z + b1) * sigmoid(W2 z + b2).     z (B L H)"""
    return (z @ p["glu.W1"].T + p["glu.b1"]) * expit(z @ p["glu.W2"].T + p["glu.b2"])


def block(p: Params, cfg: ModelConfig, x: np.ndarray, mode: str, lengths: np.ndarray | None = None) -> np.ndarray:
    """One residual block.     x (B L H) -> (B L H); lengths (B,): the mixer sees each row's valid positions only"""
    z = norm(p, cfg, x) if cfg.prenorm else x
    z, _ = apply_mixer(cfg.mixer, sub_params(p, "mixer."), z, mode, lengths=lengths)
    z = glu(p, gelu(z))
    x = x + z
    return x if cfg.prenorm else norm(p, cfg, x)


def encode(p: Params, cfg: ModelConfig, inputs: np.ndarray) -> np.ndarray:
    """(B L d_in) floats or (B L) token ids -> (B L H)"""
    if cfg.vocab_size is not None:
        return p["encoder.weight"][check_tokens(inputs, cfg.vocab_size)]
    return check_sequences(inputs, cfg.d_input) @ p["encoder.weight"].T + p["encoder.bias"]


def pool(x: np.ndarray, lengths: np.ndarray, how: str) -> np.ndarray:
    """(B L H) -> (B H) for 'mean' (valid positions only) and 'last' (last valid position); 'none' keeps (B L H)."""
    if how == "none":
        return x
    if how == "last":
        return x[np.arange(x.shape[0]), lengths - 1]
    valid = np.arange(x.shape[1])[None, :] < lengths[:, None]      # (B L)
    return (x * valid[..., None]).sum(axis=1) / lengths[:, None]


def head(p: Params, cfg: ModelConfig, z: np.ndarray) -> np.ndarray:
    """Pooled features -> outputs: (B H) -> (B d_out), or (B L H) -> (B L d_out) with pooling 'none'.

    Retrieval: z (2B H), the first documents then the second ones -> (B d_out).
    """
    if cfg.head == "retrieval":
        z1, z2 = np.split(z, 2)                                         # (B H) each
        features = np.concatenate([z1, z2, z1 - z2, z1 * z2], axis=-1)  # (B 4H)
        z = gelu(features @ p["head.weight"].T + p["head.bias"])
    return z @ p["decoder.weight"].T + p["decoder.bias"]


def mixer_lengths(cfg: ModelConfig, lengths: np.ndarray, length: int) -> np.ndarray | None:
    """The lengths the mixers see: the rows' with padding "masked" where some row is padded, else None (the same
    output, without the masking)."""
    return lengths if cfg.padding == "masked" and np.any(lengths < length) else None


def forward(bundle: Bundle, inputs: np.ndarray, lengths: np.ndarray | None = None,
            mode: str = "sequential") -> np.ndarray:
    """The model's output: (B d_out) with pooling, (B L d_out) with pooling 'none'.

    inputs   (B L d_in) real, or (B L) integer token ids with an embedding encoder; with the retrieval
             head B = 2B' rows, the first documents then the second ones, and the output is (B' d_out)
    lengths  (B,) valid lengths for masked mean / last pooling, or None (all full)
    mode     the mixers' view: 'sequential' or 'conv' ('full' for attention; `linrnn.impls.config.modes`)
    """
    cfg, p = bundle.config, bundle.params
    x = encode(p, cfg, inputs)                                      # (B L H)
    cfg.check_rows(x.shape[0])
    lengths = check_lengths(lengths, x.shape[0], x.shape[1])
    masked = mixer_lengths(cfg, lengths, x.shape[1])
    for i in range(cfg.n_layers):
        x = block(sub_params(p, f"layers.{i}."), cfg, x, mode, masked)
    return head(p, cfg, pool(x, lengths, cfg.pooling))

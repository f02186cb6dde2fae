"""The deep model of docs/models.md, JAX: evaluation (`forward`) and training (`forward_train`) passes.

    encoder:  Linear(d_in -> H)  or  Embedding(vocab -> H)
    block i:  z = norm(x); z = mixer(z); z = gelu(z); z = dropout(z);
              z = glu(z) = (W1 z + b1) * sigmoid(W2 z + b2); z = dropout(z); x = x + z
              (prenorm; postnorm: x = norm(x + mixer-path(x)))
    head:     pool over time (mean over the valid positions | last valid position | none), Linear(H -> d_out);
              retrieval: rows b and B + b of (2B L) inputs are one pair of documents, pooled to z1, z2 (B H):
              Linear(H -> d_out)(gelu(Linear(4H -> H)([z1, z2, z1 - z2, z1 * z2])))

GELU is the exact erf form (`jax.nn.gelu(approximate=False)`; JAX's default is the tanh approximation).

Training mode (`forward_train`) differs in two places:

* dropout, time-shared: one Bernoulli mask of shape (B 1 H) per dropout site, the same at every time
  step, kept entries scaled by 1/(1 - rate); two sites per block, keys split from the one given;
* BatchNorm normalises with the batch statistics over all B x L positions (with padding "masked", the
  default, the valid ones only; "unmasked" counts the padding, as PyTorch's BatchNorm1d on (B H L) does) with
  the biased variance, and returns the updated running
  statistics with m = `linrnn.impls.config.BATCHNORM_MOMENTUM` (PyTorch's rule): mean <- (1 - m) mean
  + m batch_mean, var <- (1 - m) var + m batch_var * n/(n-1) (n = B L).

`forward_train(..., remat=True)` wraps each block in `jax.checkpoint`: its activations are recomputed
in the backward pass instead of stored (the same numbers, with less memory).

`params` is a flat dict keyed like the model bundle; its dtype is the compute dtype. Under a low dtype
(`params.from_bundle(b, "bfloat16")`) the encoder, norms, GLU, head and decoder compute in it and the mixers in
float32 with their outputs in it; mean pooling sums in float32 (docs/precision.md, "Low precision").
"""

from __future__ import annotations

from functools import partial
from typing import Mapping

import jax
import jax.numpy as jnp

from linrnn.impls.bundle import sub_params
from linrnn.impls.config import BATCHNORM_MOMENTUM, LOW_DTYPES, ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.jax import layer
from linrnn.impls.jax.params import check_compute_dtype

Params = Mapping[str, jnp.ndarray]


def gelu(x: jnp.ndarray) -> jnp.ndarray:
    return jax.nn.gelu(x, approximate=False)


def layer_norm(x: jnp.ndarray, scale, bias, eps: float) -> jnp.ndarray:
    """Normalise over H (biased variance).     x (B L H)"""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * scale + bias


def batch_norm(x: jnp.ndarray, scale, bias, mean, var, eps: float) -> jnp.ndarray:
    """Normalise each of the H features with the given statistics.     x (B L H), mean, var (H,)"""
    return (x - mean) / jnp.sqrt(var + eps) * scale + bias


def norm(p: Params, cfg: ModelConfig, x: jnp.ndarray, train: bool, valid=None):
    """-> (normalised x, updated running statistics {'norm.mean', 'norm.var'} or {});
    valid (B L 1) bool or None: the positions BatchNorm's batch statistics count"""
    if cfg.norm == "layer":
        return layer_norm(x, p["norm.scale"], p["norm.bias"], cfg.norm_eps), {}
    if not train:
        return batch_norm(x, p["norm.scale"], p["norm.bias"], p["norm.mean"], p["norm.var"], cfg.norm_eps), {}
    if valid is None:
        n = x.shape[0] * x.shape[1]
        mean = jnp.mean(x, axis=(0, 1))                                   # (H,)
        var = jnp.mean((x - mean) ** 2, axis=(0, 1))                      # (H,) biased
        unbiased = var * (n / max(n - 1, 1))
    else:
        n = jnp.sum(valid).astype(x.dtype)                                # the valid positions of the batch
        mean = jnp.sum(jnp.where(valid, x, 0), axis=(0, 1)) / n
        var = jnp.sum(jnp.where(valid, (x - mean) ** 2, 0), axis=(0, 1)) / n
        unbiased = var * (n / jnp.maximum(n - 1, 1))
    m = BATCHNORM_MOMENTUM
    stats = {"norm.mean": (1 - m) * p["norm.mean"] + m * mean, "norm.var": (1 - m) * p["norm.var"] + m * unbiased}
    return batch_norm(x, p["norm.scale"], p["norm.bias"], mean, var, cfg.norm_eps), stats


def glu(p: Params, z: jnp.ndarray) -> jnp.ndarray:
    """(W1 z + b1) * sigmoid(W2 z + b2).     z (B L H)"""
    return (z @ p["glu.W1"].T + p["glu.b1"]) * jax.nn.sigmoid(z @ p["glu.W2"].T + p["glu.b2"])


def dropout(z: jnp.ndarray, rate: float, key) -> jnp.ndarray:
    """Time-shared dropout: one mask (B 1 H) for every position.     z (B L H)"""
    keep = jax.random.bernoulli(key, 1.0 - rate, (z.shape[0], 1, z.shape[2]))
    return jnp.where(keep, z / (1.0 - rate), jnp.zeros((), z.dtype))


def block(p: Params, cfg: ModelConfig, x: jnp.ndarray, mode: str, train: bool, keys, lengths=None):
    """One residual block.     x (B L H) -> (B L H), updated norm statistics;
    lengths (B,) or None: the mixer and BatchNorm see each row's valid positions only"""
    stats = {}
    z = x
    valid = None if lengths is None else (jnp.arange(x.shape[1])[None, :] < lengths[:, None])[..., None]
    if cfg.prenorm:
        z, stats = norm(p, cfg, x, train, valid)
    z, _ = layer.apply(sub_params(p, "mixer."), cfg.mixer, z, mode, lengths=lengths)
    z = gelu(z)
    if train and cfg.dropout > 0:
        z = dropout(z, cfg.dropout, keys[0])
    z = glu(p, z)
    if train and cfg.dropout > 0:
        z = dropout(z, cfg.dropout, keys[1])
    x = x + z
    if not cfg.prenorm:
        x, stats = norm(p, cfg, x, train, valid)
    return x, stats


def encode(p: Params, cfg: ModelConfig, inputs: jnp.ndarray) -> jnp.ndarray:
    """(B L d_in) reals or (B L) token ids -> (B L H)"""
    if cfg.vocab_size is not None:
        if inputs.ndim != 2 or not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise LinrnnError(f"input: expected integer token ids of shape (B, L), found {inputs.dtype} {inputs.shape}")
        return p["encoder.weight"][inputs]
    if inputs.ndim != 3 or inputs.shape[-1] != cfg.d_input:
        raise LinrnnError(f"input: expected shape (B, L, {cfg.d_input}), found {inputs.shape}")
    W = p["encoder.weight"]
    return inputs.astype(W.dtype) @ W.T + p["encoder.bias"]


def pool(x: jnp.ndarray, lengths: jnp.ndarray, how: str) -> jnp.ndarray:
    """(B L H) -> (B H) for 'mean' (valid positions only) and 'last' (last valid position); 'none' keeps (B L H)."""
    if how == "none":
        return x
    if how == "last":
        return x[jnp.arange(x.shape[0]), lengths - 1]
    acc = jnp.float32 if x.dtype.name in LOW_DTYPES else x.dtype    # a sum over L: float32 under a low dtype
    valid = (jnp.arange(x.shape[1], dtype=lengths.dtype)[None, :] < lengths[:, None]).astype(acc)   # (B L)
    return (jnp.sum(x.astype(acc) * valid[..., None], axis=1) / lengths[:, None].astype(acc)).astype(x.dtype)


def head(p: Params, cfg: ModelConfig, z: jnp.ndarray) -> jnp.ndarray:
    """Pooled features -> outputs: (B H) -> (B d_out), or (B L H) -> (B L d_out) with pooling 'none'.

    Retrieval: z (2B H), the first documents then the second ones -> (B d_out).
    """
    if cfg.head == "retrieval":
        z1, z2 = jnp.split(z, 2)                                          # (B H) each
        z = gelu(jnp.concatenate([z1, z2, z1 - z2, z1 * z2], axis=-1) @ p["head.weight"].T + p["head.bias"])
    return z @ p["decoder.weight"].T + p["decoder.bias"]


def _forward(params: Params, cfg: ModelConfig, inputs, lengths, mode: str, train: bool, key, remat: bool = False):
    layer.check_mode(mode, cfg.mixer.kind)
    if train and cfg.dropout > 0 and key is None:
        raise LinrnnError(f"key: training with dropout {cfg.dropout} needs a PRNG key")
    x = encode(params, cfg, inputs)                                       # (B L H)
    masked = lengths if cfg.padding == "masked" else None     # the mixers' and BatchNorm's view of the padding
    if lengths is None:
        lengths = jnp.full((x.shape[0],), x.shape[1], dtype=jnp.int32)
    elif jnp.shape(lengths) != (x.shape[0],):
        raise LinrnnError(f"lengths: expected shape ({x.shape[0]},), found {jnp.shape(lengths)}")
    keys = jax.random.split(key, 2 * cfg.n_layers) if key is not None else [None] * (2 * cfg.n_layers)
    run_block = jax.checkpoint(block, static_argnums=(1, 3, 4)) if remat else block   # cfg, mode, train
    running = {}
    for i in range(cfg.n_layers):
        prefix = f"layers.{i}."
        x, stats = run_block(sub_params(params, prefix), cfg, x, mode, train, keys[2 * i: 2 * i + 2], masked)
        running.update({prefix + k: v for k, v in stats.items()})
    return head(params, cfg, pool(x, lengths, cfg.pooling)), running


@partial(jax.jit, static_argnames=("cfg", "mode"))
def _evaluate(params: Params, cfg: ModelConfig, inputs, lengths, mode: str) -> jnp.ndarray:
    return _forward(params, cfg, inputs, lengths, mode, False, None)[0]


@partial(jax.jit, static_argnames=("cfg", "mode", "remat"))
def _train(params: Params, cfg: ModelConfig, inputs, key, lengths, mode: str, remat: bool):
    return _forward(params, cfg, inputs, lengths, mode, True, key, remat)


def forward(params: Params, cfg: ModelConfig, inputs, lengths=None, mode: str = "scan") -> jnp.ndarray:
    """Evaluation: the model's output, (B d_out) with pooling, (B L d_out) with pooling 'none'.

    inputs   (B L d_in) real, or (B L) integer token ids with an embedding encoder; with the retrieval
             head B = 2B' rows, the first documents then the second ones, and the output is (B' d_out)
    lengths  (B,) integers in [1, L]: the valid lengths for mean / last pooling; None: all full
    mode     the mixers' mode (layer.MODES; attention: full or chunked)
    """
    check_compute_dtype(params["decoder.weight"])      # before jit, which would cut float64 to float32
    cfg.check_rows(jnp.shape(inputs)[0])               # before jit, whose traceback note would follow the line
    return _evaluate(params, cfg, inputs, lengths, mode)


def forward_train(params: Params, cfg: ModelConfig, inputs, key=None, lengths=None, mode: str = "scan",
                  remat: bool = False):
    """Training: dropout (needs `key` when cfg.dropout > 0) and BatchNorm on batch statistics.

    remat: wrap each block in `jax.checkpoint`, so that its activations are recomputed in the backward
    pass instead of stored (the same value and gradients).

    -> (output, running statistics): the updated `layers.{i}.norm.mean` / `.var` entries for
    BatchNorm, to be merged into params by the trainer; {} for LayerNorm.
    """
    check_compute_dtype(params["decoder.weight"])
    cfg.check_rows(jnp.shape(inputs)[0])
    return _train(params, cfg, inputs, key, lengths, mode, remat)

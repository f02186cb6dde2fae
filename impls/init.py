"""Initialisation from a seed, once, in NumPy float64 (docs/models.md); every framework loads these numbers.

Each mixer follows its paper's (authors' code) initialisation, written in its contract file beside its config
(`linrnn.impls.specs.<kind>`: `init`, the rule in its docstring). The deep model's other weights follow PyTorch's
defaults (Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; Embedding: N(0, 1); norms: scale 1, bias 0,
running mean 0, running variance 1).
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import Config, MixerConfig, ModelConfig
from linrnn.impls.specs import spec
from linrnn.impls.specs.base import linear


def init_mixer(cfg: MixerConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The raw parameters of one mixer, by its spec's initialisation (`linrnn.impls.specs`)."""
    return spec(cfg.kind).init(cfg, rng)


def init_model(cfg: ModelConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H = cfg.d_model
    params: dict[str, np.ndarray] = {}
    if cfg.vocab_size is not None:
        params["encoder.weight"] = rng.standard_normal((cfg.vocab_size, H))
    else:
        params["encoder.weight"], params["encoder.bias"] = linear(rng, H, cfg.d_input)
    for i in range(cfg.n_layers):
        pre = f"layers.{i}."
        params[pre + "norm.scale"] = np.ones(H)
        params[pre + "norm.bias"] = np.zeros(H)
        if cfg.norm == "batch":
            params[pre + "norm.mean"] = np.zeros(H)
            params[pre + "norm.var"] = np.ones(H)
        for key, value in init_mixer(cfg.mixer, rng).items():
            params[pre + "mixer." + key] = value
        params[pre + "glu.W1"], params[pre + "glu.b1"] = linear(rng, H, H)
        params[pre + "glu.W2"], params[pre + "glu.b2"] = linear(rng, H, H)
    if cfg.head == "retrieval":
        params["head.weight"], params["head.bias"] = linear(rng, H, 4 * H)
    params["decoder.weight"], params["decoder.bias"] = linear(rng, cfg.d_output, H)
    return params


def init(config: Config, seed: int) -> Bundle:
    """A bundle initialised from `seed` (NumPy's PCG64); the same seed gives the same numbers everywhere."""
    rng = np.random.default_rng(seed)
    params = init_model(config, rng) if isinstance(config, ModelConfig) else init_mixer(config, rng)
    return Bundle(config, params)

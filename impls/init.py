"""Initialisation from a seed, once, in NumPy float64 (docs/models.md); every framework loads these numbers.

Each mixer follows its paper's (authors' code) initialisation:

* RotRNN: theta ~ U[0, max_phase]; -log gamma log-uniform on [-log gamma_max, -log gamma_min];
  M ~ N(0, 1) (or N(0, 1)/sqrt(N + heads*N), "near_identity"); B, C ~ N(0, 1)/sqrt(H + heads*N); D ~ N(0, 1).
* LRU: ring initialisation, |lambda|^2 ~ U[r_min^2, r_max^2], arg lambda ~ U[0, max_phase];
  gamma_log = log sqrt(1 - |lambda|^2); B ~ (N(0,1) + i N(0,1))/sqrt(2H); C ~ (N(0,1) + i N(0,1))/sqrt(N).
* DLR: Delta_n log-uniform on [dt_min, dt_max]; lambda_n = exp(-Delta_n/2) exp(2 pi i n/N), so
  a_n = sqrt(Delta_n/2), theta_n = 2 pi n/N; W ~ (N(0,1) + i N(0,1))/N; D ~ N(0, 1).

The deep model's other weights follow PyTorch's defaults (Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight
and bias; Embedding: N(0, 1); norms: scale 1, bias 0, running mean 0, running variance 1).
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import Config, DLRConfig, LRUConfig, MixerConfig, ModelConfig, RotRNNConfig


def _log_uniform(rng: np.random.Generator, low: float, high: float, size) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def init_rotrnn(cfg: RotRNNConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H, N, heads = cfg.d_model, cfg.d_state, cfg.heads
    # -log gamma is log-uniform, and gamma_log = log(-log gamma): uniform in log space
    neg_log_gamma = _log_uniform(rng, -np.log(cfg.gamma_max), -np.log(cfg.gamma_min), heads)  # (heads,)
    m_scale = 1.0 if cfg.m_init == "normal" else 1.0 / np.sqrt(N + heads * N)
    glorot = 1.0 / np.sqrt(H + heads * N)
    params = {
        "M": rng.standard_normal((heads, N, N)) * m_scale,
        "theta": rng.uniform(0.0, cfg.max_phase, (heads, N // 2)),
        "gamma_log": np.log(neg_log_gamma),
        "B": rng.standard_normal((heads, N, H)) * glorot,
        "C": rng.standard_normal((H, heads * N)) * glorot,
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_rev"] = rng.standard_normal((H, heads * N)) * glorot
    return params


def init_lru(cfg: LRUConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H, N = cfg.d_model, cfg.d_state
    u1 = rng.uniform(0.0, 1.0, N)
    u2 = rng.uniform(0.0, 1.0, N)
    abs_sq = u1 * (cfg.r_max ** 2 - cfg.r_min ** 2) + cfg.r_min ** 2   # |lambda|^2, uniform on the ring
    abs_sq = np.maximum(abs_sq, np.finfo(np.float64).tiny)             # r_min = 0 and u1 = 0: keep nu_log finite
    phase = np.maximum(cfg.max_phase * u2, np.finfo(np.float64).tiny)  # u2 = 0: keep theta_log finite
    params = {
        "nu_log": np.log(-0.5 * np.log(abs_sq)),
        "theta_log": np.log(phase),
        "gamma_log": 0.5 * np.log(1.0 - abs_sq),                        # log sqrt(1 - |lambda|^2)
        "B_re": rng.standard_normal((N, H)) / np.sqrt(2 * H),
        "B_im": rng.standard_normal((N, H)) / np.sqrt(2 * H),
        "C_re": rng.standard_normal((H, N)) / np.sqrt(N),
        "C_im": rng.standard_normal((H, N)) / np.sqrt(N),
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_re_rev"] = rng.standard_normal((H, N)) / np.sqrt(N)
        params["C_im_rev"] = rng.standard_normal((H, N)) / np.sqrt(N)
    return params


def init_dlr(cfg: DLRConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H, N = cfg.d_model, cfg.d_state
    delta = _log_uniform(rng, cfg.dt_min, cfg.dt_max, N)   # (N,)
    params = {
        "a": np.sqrt(0.5 * delta),                          # Re log lambda = -a^2 = -Delta/2
        "theta": 2.0 * np.pi * np.arange(N) / N,            # the N-th roots of unity
        "W_re": rng.standard_normal((H, N)) / N,
        "W_im": rng.standard_normal((H, N)) / N,
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["W_re_rev"] = rng.standard_normal((H, N)) / N
        params["W_im_rev"] = rng.standard_normal((H, N)) / N
    return params


MIXER_INIT = {"rotrnn": init_rotrnn, "lru": init_lru, "dlr": init_dlr}


def init_mixer(cfg: MixerConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return MIXER_INIT[cfg.kind](cfg, rng)


def _linear(rng: np.random.Generator, d_out: int, d_in: int) -> tuple[np.ndarray, np.ndarray]:
    bound = 1.0 / np.sqrt(d_in)
    return rng.uniform(-bound, bound, (d_out, d_in)), rng.uniform(-bound, bound, d_out)


def init_model(cfg: ModelConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H = cfg.d_model
    params: dict[str, np.ndarray] = {}
    if cfg.vocab_size is not None:
        params["encoder.weight"] = rng.standard_normal((cfg.vocab_size, H))
    else:
        params["encoder.weight"], params["encoder.bias"] = _linear(rng, H, cfg.d_input)
    for i in range(cfg.n_layers):
        pre = f"layers.{i}."
        params[pre + "norm.scale"] = np.ones(H)
        params[pre + "norm.bias"] = np.zeros(H)
        if cfg.norm == "batch":
            params[pre + "norm.mean"] = np.zeros(H)
            params[pre + "norm.var"] = np.ones(H)
        for key, value in init_mixer(cfg.mixer, rng).items():
            params[pre + "mixer." + key] = value
        params[pre + "glu.W1"], params[pre + "glu.b1"] = _linear(rng, H, H)
        params[pre + "glu.W2"], params[pre + "glu.b2"] = _linear(rng, H, H)
    if cfg.head == "retrieval":
        params["head.weight"], params["head.bias"] = _linear(rng, H, 4 * H)
    params["decoder.weight"], params["decoder.bias"] = _linear(rng, cfg.d_output, H)
    return params


def init(config: Config, seed: int) -> Bundle:
    """A bundle initialised from `seed` (NumPy's PCG64); the same seed gives the same numbers everywhere."""
    rng = np.random.default_rng(seed)
    params = init_model(config, rng) if isinstance(config, ModelConfig) else init_mixer(config, rng)
    return Bundle(config, params)

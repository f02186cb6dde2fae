"""Initialisation from a seed, once, in NumPy float64 (docs/models.md); every framework loads these numbers.

Each mixer follows its paper's (authors' code) initialisation:

* RotRNN: theta ~ U[0, max_phase]; -log gamma log-uniform on [-log gamma_max, -log gamma_min];
  M ~ N(0, 1) (or N(0, 1)/sqrt(N + heads*N), "near_identity"); B, C ~ N(0, 1)/sqrt(H + heads*N); D ~ N(0, 1).
* LRU: ring initialisation, |lambda|^2 ~ U[r_min^2, r_max^2], arg lambda ~ U[0, max_phase];
  gamma_log = log sqrt(1 - |lambda|^2); B ~ (N(0,1) + i N(0,1))/sqrt(2H); C ~ (N(0,1) + i N(0,1))/sqrt(N).
* DLR: Delta_n log-uniform on [dt_min, dt_max]; lambda_n = exp(-Delta_n/2) exp(2 pi i n/N), so
  a_n = sqrt(Delta_n/2), theta_n = 2 pi n/N; W ~ (N(0,1) + i N(0,1))/N; D ~ N(0, 1).
* S4D: log dt_h ~ U[log dt_min, log dt_max]; Re A = -0.5 (log_A_real = log 0.5); A_imag = pi n (S4D-Lin) or
  (2N/pi)(2N/(2n+1) - 1) (S4D-Inv, 2N the s4 code's state size); C ~ N(0, 1/2) + i N(0, 1/2); D ~ N(0, 1).
* S5: HiPPO-N eigenvalues and eigenvectors V in `blocks` blocks (`hippo_n`), one of each conjugate pair kept;
  B~ = V^H B, C~ = C V with B (2N H) real and C (H 2N) complex, each part lecun-normal truncated at 2 sigma
  (fan-in 2N); D ~ N(0, 1); log_step ~ U[log dt_min, log dt_max] per mode.
* Attention (the DLR code's): W_q, W_k, W_v, W_o and their biases as PyTorch's Linear, U(-1/sqrt(H), 1/sqrt(H));
  temperature d_head^(-1/2) in every head (log_temperature = -log(d_head) / 2).

The deep model's other weights follow PyTorch's defaults (Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight
and bias; Embedding: N(0, 1); norms: scale 1, bias 0, running mean 0, running variance 1).
"""

from __future__ import annotations

import math

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import (AttentionConfig, Config, DLRConfig, LRUConfig, MixerConfig, ModelConfig,
                                 RotRNNConfig, S4DConfig, S5Config)


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


def s4d_imaginary_parts(cfg: S4DConfig) -> np.ndarray:
    """A_imag of one channel, n = 0..N-1: pi n (S4D-Lin) or (M/pi)(M/(2n+1) - 1), M = 2N (S4D-Inv).     -> (N,)"""
    n = np.arange(cfg.d_state)
    if cfg.init == "lin":
        return np.pi * n
    M = 2 * cfg.d_state                                      # the s4 code's N: d_state modes and their conjugates
    return M / np.pi * (M / (2 * n + 1) - 1)


def init_s4d(cfg: S4DConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    H, N = cfg.d_model, cfg.d_state
    params = {
        "log_dt": rng.uniform(np.log(cfg.dt_min), np.log(cfg.dt_max), H),
        "log_A_real": np.full((H, N), np.log(0.5)),          # Re A = -0.5
        "A_imag": np.tile(s4d_imaginary_parts(cfg), (H, 1)),
        "C_re": rng.standard_normal((H, N)) * np.sqrt(0.5),  # C standard complex normal: E|C|^2 = 1
        "C_im": rng.standard_normal((H, N)) * np.sqrt(0.5),
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_re_rev"] = rng.standard_normal((H, N)) * np.sqrt(0.5)
        params["C_im_rev"] = rng.standard_normal((H, N)) * np.sqrt(0.5)
    return params


def hippo_n(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HiPPO-N, the normal part of HiPPO-LegS, and its eigendecomposition (the S5 code's `make_DPLR_HiPPO`).

    HiPPO-LegS is A_ij = -sqrt((2i+1)(2j+1)) below the diagonal, A_ii = -(i+1), 0 above; with the
    low-rank term P_i = sqrt(i + 1/2),

        S = A + P P^T:   S_ij = -sqrt((2i+1)(2j+1))/2 (i > j),   -1/2 (i = j),   +sqrt((2i+1)(2j+1))/2 (i < j)

    so S = -I/2 + K with K real skew-symmetric. K is normal: a unitary V diagonalises it, K V = V diag(i w)
    with w real (the eigenvalues of the Hermitian -iK, `eigh`), and since K is real they come in pairs
    +-w with eigenvectors v and conj(v). Hence S V = V diag(Lambda), Lambda = -1/2 + i w: every eigenvalue
    has real part exactly -1/2 (the mean of diag S, which is how the code writes it), and V^-1 = V^H.

    For an even `size` the pairs split evenly: sorted by w, the first half (w < 0) are the conjugates of
    the second. A real system x' = S x + B u, y = C x (B, C real) then has, in the eigenbasis x~ = V^H x,
    conjugate coordinates for conjugate modes, so y = C V x~ = 2 Re(C V_half x~_half) with only the
    first half kept: what S5 stores (`init_s5`).

    size -> S (size size) real, Lambda (size,) complex sorted by imaginary part, V (size size) unitary
    """
    n = np.arange(size)
    root = np.sqrt(2 * n + 1)
    A = -(np.tril(root[:, None] * root[None, :]) - np.diag(n))
    P = np.sqrt(n + 0.5)
    S = A + P[:, None] * P[None, :]
    w, V = np.linalg.eigh(-1j * 0.5 * (S - S.T))          # -iK, K = the skew part of S
    return S, np.mean(np.diag(S)) + 1j * w, V


def _lecun_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """JAX's `lecun_normal`: a normal truncated at +-2 sigma, scaled to variance 1/fan_in."""
    x = rng.standard_normal(shape)
    while np.any(outside := np.abs(x) > 2):
        x[outside] = rng.standard_normal(int(np.count_nonzero(outside)))
    # the standard deviation of a standard normal truncated to [-2, 2]
    truncated_std = math.sqrt(1 - 4 * math.exp(-2) / math.sqrt(2 * math.pi) / math.erf(math.sqrt(2)))
    return x / truncated_std / math.sqrt(fan_in)


def init_s5(cfg: S5Config, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """HiPPO-N at the block size b = 2N/J, repeated J times, one of each conjugate pair kept (the S5 code's defaults).

    B (2N H) is real and C (H 2N) complex, both lecun-normal with fan-in 2N, the state size before the
    conjugate half is dropped (the code's "trunc_standard_normal" C, its default); they are stored in the
    eigenbasis, B~ = V_half^H B (N H) and C~ = C V_half (H N), with V_half = blockdiag(V[:, :b/2], J times)
    (2N N), applied block by block.
    """
    H, N, J = cfg.d_model, cfg.d_state, cfg.blocks
    b = 2 * N // J
    _, Lambda, V = hippo_n(b)
    V_half = V[:, : b // 2]                                   # (b b/2): the first half of each pair, Im Lambda < 0
    B = _lecun_normal(rng, (2 * N, H), 2 * N).reshape(J, b, H)
    B_tilde = np.einsum("pk,jph->jkh", V_half.conj(), B).reshape(N, H)

    def output_matrix():
        C = (_lecun_normal(rng, (H, 2 * N), 2 * N) + 1j * _lecun_normal(rng, (H, 2 * N), 2 * N)).reshape(H, J, b)
        return np.einsum("hjp,pk->hjk", C, V_half).reshape(H, N)

    C_tilde = output_matrix()
    params = {"Lambda_re": np.tile(Lambda.real[: b // 2], J), "Lambda_im": np.tile(Lambda.imag[: b // 2], J),
              "B_re": B_tilde.real, "B_im": B_tilde.imag, "C_re": C_tilde.real, "C_im": C_tilde.imag}
    if cfg.bidirectional:
        C_rev = output_matrix()
        params.update(C_re_rev=C_rev.real, C_im_rev=C_rev.imag)
    params["D"] = rng.standard_normal(H)
    params["log_step"] = rng.uniform(np.log(cfg.dt_min), np.log(cfg.dt_max), N)
    return params


def init_attention(cfg: AttentionConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Q, K, V, O as PyTorch's Linear(H, H) (weight, then bias, each map in turn); temperature d_head^(-1/2)."""
    params = {}
    for name in "qkvo":
        params[f"W_{name}"], params[f"b_{name}"] = _linear(rng, cfg.d_model, cfg.d_model)
    params["log_temperature"] = np.full(cfg.heads, -0.5 * np.log(cfg.d_head))
    return params


def init_mixer(cfg: MixerConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The raw parameters of one mixer, by its spec's initialisation (`linrnn.impls.specs`)."""
    from linrnn.impls.specs import spec
    return spec(cfg.kind).init(cfg, rng)


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

"""The RG-LRU's spec (De et al. 2024, Griffin; the recurrence of RecurrentGemma): a real diagonal recurrence of width H
whose decay and input are gated by the input, initialised as RecurrentGemma ships it.

    r_t = sigma(W_a u_t + b_a),   i_t = sigma(W_x u_t + b_x)          (block-diagonal gates, `blocks` blocks)
    log a_t = c r_t log sigma(Lambda) = -c r_t softplus(-Lambda)
    x_t = a_t * x_{t-1} + sqrt(1 - a_t^2) * (i_t * u_t)               (a sequence's first position: i_t * u_t)
    y_t = x_t

docs/models.md has the whole contract (the first position, packed sequences, the bidirectional form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import ModelSpec, check_bool, check_float, check_int

# RecurrentGemma draws a^2 ~ U[r_min^2, r_max^2] + 1e-8 (its `rnn_param_init` / `rnn_real_param_init`, eps = 1e-8)
RING_EPS = 1e-8


@dataclass(frozen=True)
class RGLRUConfig:
    """One RG-LRU layer: a real gated diagonal recurrence of width d_model (De et al. 2024)."""

    kind: ClassVar[str] = "rglru"
    d_model: int = 64              # H: features in and out, and the recurrence's width (RecurrentGemma's lru_width)
    blocks: int = 1                # diagonal blocks of the two gates (RecurrentGemma's num_heads); divides d_model
    bidirectional: bool = False    # add the same layer run on the reversed sequence (docs/models.md)
    c: float = 8.0                 # a_t = sigma(Lambda)^(c r_t): the paper's and RecurrentGemma's constant 8
    r_min: float = 0.9             # ring initialisation of sigma(Lambda): its square ~ U[r_min^2, r_max^2] + 1e-8
    r_max: float = 0.999           # (RecurrentGemma's min_rad 0.9 and max_rad 0.999)

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "blocks")
        if self.d_model % self.blocks:
            raise LinrnnError(f"RGLRUConfig.blocks: expected a divisor of d_model = {self.d_model}, found "
                              f"{self.blocks}")
        check_bool(self, "bidirectional")
        check_float(self, "c", 0.0, 1e6, low_open=True)
        check_float(self, "r_min", 0.0, 1.0, high_open=True)
        check_float(self, "r_max", self.r_min, 1.0, high_open=True)
        if self.r_max ** 2 + RING_EPS >= 1.0:
            raise LinrnnError(f"RGLRUConfig.r_max: expected r_max^2 + {RING_EPS:g} < 1 (sigma(Lambda) < 1 after the "
                              f"ring's guard), found {self.r_max}")

    @property
    def block_width(self) -> int:
        return self.d_model // self.blocks


def shapes(cfg: RGLRUConfig) -> dict:
    H, K, W = cfg.d_model, cfg.blocks, cfg.block_width
    return {"Lambda": (H,), "W_a": (K, W, W), "b_a": (H,), "W_x": (K, W, W), "b_x": (H,)}


def init(cfg: RGLRUConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """RecurrentGemma's initialisation (`recurrentgemma.jax.layers.RGLRU`): sigma(Lambda)^2 ~ U[r_min^2, r_max^2] +
    1e-8, a ring, so Lambda = logit(sigma); the gates' weights ~ N(0, 1/H) (its JAX side's fan-in, flax's
    variance_scaling over all blocks; its PyTorch side draws N(0, blocks/H), each block's own fan-in: the two agree at
    blocks = 1), stored (block, out, in); the biases 0."""
    H, K, W = cfg.d_model, cfg.blocks, cfg.block_width
    square = rng.uniform(cfg.r_min ** 2, cfg.r_max ** 2, H) + RING_EPS
    sigma = np.sqrt(square)
    return {"Lambda": np.log(sigma) - np.log1p(-sigma),
            "W_a": rng.standard_normal((K, W, W)) / np.sqrt(H), "b_a": np.zeros(H),
            "W_x": rng.standard_normal((K, W, W)) / np.sqrt(H), "b_x": np.zeros(H)}


def with_radius(cfg: RGLRUConfig, p, r: float) -> dict:
    """Every channel's strongest decay, a at r_t = 1, set to r: sigma(Lambda)^c = r, so a_t = r^(r_t) lies in [r, 1)
    for every input. Lambda = logit(r^(1/c)), in log space (r^(1/c) is near 1 for r near 1)."""
    log_sigma = np.log(r) / cfg.c
    return {"Lambda": np.full_like(p["Lambda"], log_sigma - np.log(-np.expm1(log_sigma)))}


SPEC = ModelSpec(
    kind="rglru", config=RGLRUConfig, shapes=shapes, recurrence_keys=("Lambda",), init=init,
    implementations={"reference": "linrnn.impls.reference.rglru", "torch": "linrnn.impls.torch.rglru:RGLRU",
                     "jax": "linrnn.impls.jax.rglru"},
    # no convolution view: a transition that changes with the input has no impulse response of its own
    modes={"reference": ("sequential",), "torch": ("scan", "sequential", "step"),
           "jax": ("scan", "sequential", "step")},
    state=lambda cfg: ((cfg.d_model,), "float64"),
    crosscheck=lambda near_one, bi: {"r_min": 0.99, "r_max": 0.99999} if near_one else {},
    variants={"blocks": (1, 3)},         # dense gates, and block-diagonal ones (conform's H = 3: blocks of 1)
    with_radius=with_radius,
    task_defaults=lambda n: {},          # RecurrentGemma's initialisation at every length: its state is H wide
)

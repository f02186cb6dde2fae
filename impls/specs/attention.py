"""Softmax attention's spec (the DLR code's baseline): rotary positions, a learnable temperature, no state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import ModelSpec, check_bool, check_int, linear


@dataclass(frozen=True)
class AttentionConfig:
    """One softmax-attention layer: `heads` heads with rotary positions and a learnable temperature (the DLR code's
    baseline). It has no recurrence and so no state: no `d_state` field."""

    kind: ClassVar[str] = "attention"
    d_model: int = 64              # H: features in and out of the layer
    heads: int = 4                 # heads of d_head = H / heads features each (even: rotary pairs)
    bidirectional: bool = False    # every position sees the past and the future; else causal (j <= i)
    window: int | None = None      # None: full attention; w: local, position i sees the windows of w positions
                                   # floor(i/w) - 1 and floor(i/w) (bidirectional: also floor(i/w) + 1)

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "heads")
        if self.d_model % self.heads or (self.d_model // self.heads) % 2:
            raise LinrnnError(f"AttentionConfig.heads: expected heads dividing d_model = {self.d_model} into an "
                              f"even d_head (rotary pairs), found {self.heads}")
        check_bool(self, "bidirectional")
        if self.window is not None:
            check_int(self, "window")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


def shapes(cfg: AttentionConfig) -> dict:
    H = cfg.d_model       # four H x H maps, their biases, a temperature per head
    return {"W_q": (H, H), "b_q": (H,), "W_k": (H, H), "b_k": (H,), "W_v": (H, H), "b_v": (H,),
            "W_o": (H, H), "b_o": (H,), "log_temperature": (cfg.heads,)}


def init(cfg: AttentionConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Q, K, V, O as PyTorch's Linear(H, H) (weight, then bias, each map in turn); temperature d_head^(-1/2)."""
    params = {}
    for name in "qkvo":
        params[f"W_{name}"], params[f"b_{name}"] = linear(rng, cfg.d_model, cfg.d_model)
    params["log_temperature"] = np.full(cfg.heads, -0.5 * np.log(cfg.d_head))
    return params


SPEC = ModelSpec(
    kind="attention", config=AttentionConfig, shapes=shapes, recurrence_keys=(), init=init,
    implementations={"reference": "linrnn.impls.reference.attention", "torch": "linrnn.impls.torch.attention:Attention",
                     "jax": "linrnn.impls.jax.attention"},
    modes={"reference": ("full",), "torch": ("full", "chunked"), "jax": ("full", "chunked")},
    state=None,                          # no recurrence: no state, no step, no convolution view
    # local (window 5, L not a multiple) in the causal case with decays near 1, else full
    crosscheck=lambda near_one, bi: {"window": 5 if near_one and not bi else None},
    # 2 heads need an even d_head: the width is H rounded up to even, doubled (H 3 or 4 -> 8)
    crosscheck_width=lambda H: 4 * -(-H // 2),
    training_modes=("chunked",),         # a training run's mode (the benchmarks time the recurrent mixers only)
    task_defaults=lambda n: {"heads": 4},   # the DLR code's 4 heads
)

"""Softmax attention's spec (the DLR code's baseline): rotary positions, a learnable temperature, no state."""

from __future__ import annotations

from linrnn.impls.config import AttentionConfig
from linrnn.impls.init import init_attention
from linrnn.impls.specs import ModelSpec


def shapes(cfg: AttentionConfig) -> dict:
    H = cfg.d_model       # four H x H maps, their biases, a temperature per head
    return {"W_q": (H, H), "b_q": (H,), "W_k": (H, H), "b_k": (H,), "W_v": (H, H), "b_v": (H,),
            "W_o": (H, H), "b_o": (H,), "log_temperature": (cfg.heads,)}


SPEC = ModelSpec(
    kind="attention", config=AttentionConfig, shapes=shapes, recurrence_keys=(), init=init_attention,
    implementations={"reference": "linrnn.impls.reference.attention", "torch": "linrnn.impls.torch.attention:Attention",
                     "jax": "linrnn.impls.jax.attention"},
    modes={"reference": ("full",), "torch": ("full", "chunked"), "jax": ("full", "chunked")},
    state=None,                          # no recurrence: no state, no step, no convolution view
    # local (window 5, L not a multiple) in the causal case with decays near 1, else full
    crosscheck=lambda near_one, bi: {"window": 5 if near_one and not bi else None},
    # 2 heads need an even d_head: the width is H rounded up to even, doubled (H 3 or 4 -> 8)
    crosscheck_width=lambda H: 4 * -(-H // 2),
    training_modes=(),                   # not among the benchmarks' training modes
    task_defaults=lambda n: {"heads": 4},   # the DLR code's 4 heads
)

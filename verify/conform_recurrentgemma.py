"""RecurrentGemma's own RG-LRU layers as `linrnn conform` targets of the rglru contract: what its two sides share.

The targets (their code: `conform_recurrentgemma_torch.py`, `conform_recurrentgemma_jax.py`):

    recurrentgemma-rglru-torch        `recurrentgemma.torch.layers.RGLRU`, as it ships
    recurrentgemma-rglru-jax          `recurrentgemma.jax.layers.RGLRU` (flax), scan_type AUTO: its native linear
                                      scan (`lax.scan`) on a CPU or GPU, its Pallas kernel on a TPU
    recurrentgemma-rglru-jax-assoc    the same with scan_type ASSOCIATIVE_NATIVE (`lax.associative_scan`)
    recurrentgemma-rglru-jax-pallas   the same with scan_type LINEAR_PALLAS: its Pallas kernel, on a TPU or GPU only

Every variant of the package's RG-LRU that computes this contract: its JAX layer's fourth setting, only_real=False,
is another model (a complex state of H/2 lanes fed by the two halves of u, one gate per lane for both halves, and a
phase of its own, `a_imag_param`), which no rglru bundle describes: not a target (docs/conform.md).

The bundle's numbers go into the layer's parameters (docs/models.md, "RG-LRU"): its `a_param` is -Lambda (its decay
exp(-8 r softplus(a_param)) is sigma(Lambda)^(8 r)); each gate's `w` is the bundle's blocks transposed, (block, in,
out), and `b` the bias in blocks. Its constant c is 8: another c is "n/a", and so is the bidirectional form, which it
does not have. Its JAX layer asserts an even width (the Pallas kernel a multiple of 128): an odd H is run as H + W
(whole blocks of W = H / blocks channels added, the Pallas variant as many as a multiple of 128 needs) with zero
weights, biases and inputs in the added channels, whose outputs are dropped: the same layer exactly (an added channel
stays at 0 and no real channel's gate reads it).

A call without a state begins a sequence (its `segment_pos` counts 0, 1, ...; position 0 resets, as the contract's
first input enters unnormalised); a state passed in continues one (`segment_pos` from 1: no reset); `segments=`
(packed sequences) become each position's offset in its segment. The layers keep their state in float32 whatever
the layer's dtype (their `init_cache`), so the state passed between calls is theirs, opaque.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from linrnn.impls.segments import positions

C = 8.0                      # RecurrentGemma's constant: log a = -8 r softplus(a_param)
INSTALL = ("install recurrentgemma without its dependencies (it pins an older NumPy): pip install --no-deps "
           "recurrentgemma, then its imports' packages (docs/conform.md)")


def check_config(config: Mapping[str, Any], name: str) -> None:
    """The configs RecurrentGemma's layer computes; NotImplementedError (conform's "n/a") for the others."""
    if config.get("kind") != "rglru":
        raise NotImplementedError(f"{name} implements the rglru contract only, not {config.get('kind')!r}")
    if config.get("bidirectional"):
        raise NotImplementedError(f"{name} is causal: RecurrentGemma's RG-LRU has no bidirectional form")
    if float(config.get("c", C)) != C:
        raise NotImplementedError(f"{name} has the constant c = 8 built in, found c = {config['c']}")


def padded_width(H: int, blocks: int, multiple: int) -> tuple[int, int]:
    """(width, blocks) of the layer that runs an H-wide bundle: whole blocks of H / blocks channels added until the
    width is a multiple of `multiple`."""
    width = H // blocks
    extra = 0
    while (width * (blocks + extra)) % multiple:
        extra += 1
    return width * (blocks + extra), blocks + extra


def peer_arrays(bundle: Mapping[str, np.ndarray], config: Mapping[str, Any], multiple: int = 1) -> dict:
    """The layer's parameters (float64 NumPy, its layout) and sizes from an rglru bundle.

    -> {"a_param" (H',), "input_gate": {"w" (K' W W) (block, in, out), "b" (K' W)}, "a_gate": {...}, "width": H',
        "heads": K'}; H' >= H, K' >= blocks (`padded_width`), the added channels zero."""
    H, blocks = int(config["d_model"]), int(config["blocks"])
    width, heads = padded_width(H, blocks, multiple)
    W = H // blocks
    a_param = np.zeros(width)
    a_param[:H] = -np.asarray(bundle["Lambda"], dtype=np.float64)

    def gate(weight: np.ndarray, bias: np.ndarray) -> dict:
        w = np.zeros((heads, W, W))
        w[:blocks] = np.swapaxes(np.asarray(weight, dtype=np.float64), 1, 2)       # (block, out, in) -> (block, in, out)
        b = np.zeros((heads, W))
        b[:blocks] = np.asarray(bias, dtype=np.float64).reshape(blocks, W)
        return {"w": w, "b": b}

    return {"a_param": a_param, "input_gate": gate(bundle["W_x"], bundle["b_x"]),
            "a_gate": gate(bundle["W_a"], bundle["b_a"]), "width": width, "heads": heads}


def segment_positions(batch: int, length: int, continuing: bool, segments=None) -> np.ndarray:
    """Each position's `segment_pos` (B L) int32: its offset in its packed segment, else 0, 1, ... (from 1 when a
    state continues the sequence)."""
    if segments is not None:
        return positions(np.asarray(segments)).astype(np.int32)
    start = 1 if continuing else 0
    return np.broadcast_to(np.arange(start, start + length, dtype=np.int32), (batch, length)).copy()

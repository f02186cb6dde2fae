"""`linrnn conform`'s target `recurrentgemma-rglru-torch`: RecurrentGemma's PyTorch RG-LRU (`recurrentgemma.torch.layers
.RGLRU`) loaded with an rglru bundle, as it ships (`conform_recurrentgemma.py` says how the numbers go in).

It follows the protocol of docs/conform.md: `recurrentgemma_rglru_torch(bundle, config, dtype)` returns `call(u,
state=None, segments=None) -> (y, state)`; u as NumPy (y NumPy, no graph) or as a tensor (y a tensor with its graph,
for the gradient check). The package's `__init__` imports its JAX side; the PyTorch side is entered by its path, as
mamba-ssm's scan is (`conform_peers_torch.package_without_init`), so this target imports no JAX.
"""

from __future__ import annotations

import importlib

import numpy as np
import torch

from linrnn.impls.torch.layer import torch_dtype
from linrnn.verify.conform_peers_torch import package_without_init
from linrnn.verify.conform_recurrentgemma import INSTALL, check_config, peer_arrays, segment_positions

NAME = "recurrentgemma-rglru-torch"
MODULE = "recurrentgemma.torch.layers"

__all__ = ["missing_reason", "recurrentgemma_rglru_torch"]


def _layers():
    """`recurrentgemma.torch.layers`, without the package's `__init__` (which imports JAX) where it is not imported."""
    package_without_init("recurrentgemma")
    return importlib.import_module(MODULE)


def missing_reason(name: str) -> str | None:
    """None when RecurrentGemma's PyTorch layers import here, else one line saying why not and what to install."""
    try:
        _layers()
    except Exception as err:                  # a package installed without its dependencies fails in its own ways
        return f"{name} cannot be imported (`import {MODULE}`: {type(err).__name__}: {err}); {INSTALL}"
    return None


def _load(module, arrays: dict, dtype: torch.dtype) -> None:
    with torch.no_grad():
        module.a_param.copy_(torch.as_tensor(arrays["a_param"], dtype=dtype))
        for gate in ("input_gate", "a_gate"):
            getattr(module, gate).w.copy_(torch.as_tensor(arrays[gate]["w"], dtype=dtype))
            getattr(module, gate).b.copy_(torch.as_tensor(arrays[gate]["b"], dtype=dtype))


def recurrentgemma_rglru_torch(bundle: dict, config: dict, dtype: str = "float64"):
    """RecurrentGemma's PyTorch RG-LRU holding the bundle's numbers in `dtype` (its state float32, as it keeps it)."""
    check_config(config, NAME)
    layers = _layers()
    real = torch_dtype(dtype)
    arrays = peer_arrays(bundle, config)
    module = layers.RGLRU(width=arrays["width"], num_heads=arrays["heads"], dtype=real, device="cpu")
    _load(module, arrays, real)

    def call(u, state=None, segments=None):
        x = u if isinstance(u, torch.Tensor) else torch.from_numpy(np.array(u, dtype=np.float64))
        B, L, _ = x.shape
        pos = torch.as_tensor(segment_positions(B, L, state is not None, segments))
        with torch.set_grad_enabled(x.requires_grad):
            y, last = module(x.to(real), pos, cache=state, return_cache=True)
        if x.requires_grad:
            return y, last
        return (y.float() if y.dtype == torch.bfloat16 else y).detach().cpu().numpy(), last   # NumPy has no bfloat16

    return call

"""The PyTorch side: the mixers and the deep model as `torch.nn.Module`s, and the `torch` backend.

    from linrnn.impls.torch import from_bundle
    layer = from_bundle(bundle, dtype=torch.float32, device=None)    # a mixer of MIXERS, or Model
    y, state = layer(u, mode="scan")                                 # modes: MODES
    bundle_again = layer.to_bundle()                                 # exact round trip in float64

Files mirror the reference: `rotrnn.py`, `lru.py`, `dlr.py`, `s4d.py`, `s5.py`, `attention.py`, `rglru.py`, `model.py`;
the recurrences in `scan.py` (the chunked scan; `triton_scan.py`, its Triton kernel on CUDA; `varying_scan.py` and
`triton_varying.py`, the same with a transition per position; `fast_scan.py`, which of them a device runs; `layer_scan.py`, RotRNN's and LRU's `scan` view over blocks of time; `diagonal.py`, the projected
form RotRNN and LRU share), FFT convolution in `conv.py`, the shared layer machinery in `layer.py`, what the autograd
Functions share in `autodiff.py`. The timing harness is `linrnn.verify.bench_torch`. Nothing here imports JAX or the
reference; the two backends meet only in the bundle.

Backend interface of `linrnn apply` (see `linrnn.impls.backends`): `MODES` (the first is the default),
`DTYPES`, `apply_bundle`.
"""

from __future__ import annotations

if __name__ == "torch":   # impls/ is the working directory, so this folder shadows the library
    raise ImportError("`import torch` found linrnn's impls/torch folder, not PyTorch: Python was started "
                      "inside impls/ (its folder comes first on sys.path); start it from another directory")

from linrnn.base.extras import require

require("torch", "linrnn.impls.torch")   # where PyTorch is missing: one line naming linrnn[torch]
import numpy as np  # noqa: E402
import torch  # noqa: E402

from linrnn.impls.bundle import Bundle
from linrnn.impls.checks import check_dtype, check_lengths, check_mode, check_sequences, check_tokens
from linrnn.impls.config import DTYPES as _DTYPES
from linrnn.base.errors import LinrnnError
from linrnn.impls.segments import check_layer_only
from linrnn.impls.specs import implementations
from linrnn.impls.torch.attention import Attention
from linrnn.impls.torch.dlr import DLR
from linrnn.impls.torch.layer import MODES, Mixer, parameter_groups, recurrence_parameters
from linrnn.impls.torch.lru import LRU
from linrnn.impls.torch.model import Model
from linrnn.impls.torch.rglru import RGLRU
from linrnn.impls.torch.rotrnn import RotRNN
from linrnn.impls.torch.s4d import S4D
from linrnn.impls.torch.s5 import S5

DTYPES = _DTYPES["torch"]
MIXERS = implementations("torch")   # kind -> its module class (each model registers it in its spec)

__all__ = ["Attention", "DLR", "DTYPES", "LRU", "MIXERS", "MODES", "Mixer", "Model", "RGLRU", "RotRNN", "S4D", "S5",
           "apply_bundle", "from_bundle", "parameter_groups", "recurrence_parameters"]


def from_bundle(bundle: Bundle, dtype: torch.dtype = torch.float64, device=None) -> torch.nn.Module:
    """The module of a layer bundle (any of the seven mixers) or of a model bundle (Model), holding its numbers."""
    if bundle.level == "model":
        return Model.from_bundle(bundle, dtype, device)
    return MIXERS[bundle.config.kind].from_bundle(bundle, dtype, device)


def apply_bundle(bundle: Bundle, inputs: np.ndarray, mode: str = MODES[0], dtype: str = "float64",
                 lengths: np.ndarray | None = None, segments: np.ndarray | None = None) -> np.ndarray:
    """A layer bundle on u (B L H) -> y (B L H), or a model bundle (evaluation mode: BatchNorm uses its stored
    statistics, as the reference and JAX do) on its inputs -> its outputs (float64 copy).

    lengths (B,): padded rows (a layer, or a model: its mixers and pooling); segments (B L): packed sequences
    (a layer only).
    """
    cfg = bundle.config
    check_mode(mode, "torch", bundle.mixer_kind)
    check_dtype(dtype, "torch")
    torch_dtype = getattr(torch, dtype)
    module = from_bundle(bundle, torch_dtype).eval()     # a module starts in training mode: BatchNorm on the batch
    device = next(module.parameters()).device
    with torch.no_grad():
        if bundle.level == "model":
            check_layer_only(segments)
            if cfg.vocab_size is not None:
                x = torch.tensor(check_tokens(inputs, cfg.vocab_size), device=device)
            else:
                x = _as(check_sequences(inputs, cfg.d_input), torch_dtype, device)
            n = check_lengths(lengths, x.shape[0], x.shape[1])
            out = module(x, torch.tensor(n, device=device), mode=mode)
        else:
            u = _as(check_sequences(inputs, cfg.d_model), torch_dtype, device)
            out, _ = module(u, mode=mode, lengths=lengths, segments=segments)
    return out.detach().cpu().to(torch.float64).numpy().copy()


def _as(inputs: np.ndarray, dtype: torch.dtype, device) -> torch.Tensor:
    """Float64 inputs in `dtype`; a low dtype by way of float32 (the rounding a float32 pipeline's cast makes)."""
    if dtype in (torch.bfloat16, torch.float16):
        return torch.tensor(inputs.astype(np.float32), device=device).to(dtype)
    return torch.tensor(inputs, dtype=dtype, device=device)

"""S5, PyTorch (Smith, Warrington, Linderman 2023; docs/models.md).

One MIMO diagonal SSM over all H channels, N kept complex modes, real input u_t in R^H:

    Lambda = Lambda_re + i Lambda_im  (clip_eigs: min(Lambda_re, -1e-4)),   Delta = exp(log_step)   (N,)
    zoh:       Lambda_bar = exp(Lambda Delta),                          B_bar = (Lambda_bar - 1)/Lambda B~
    bilinear:  Lambda_bar = (1 + Delta Lambda/2)/(1 - Delta Lambda/2),  B_bar = Delta/(1 - Delta Lambda/2) B~
    x_t = Lambda_bar * x_{t-1} + B_bar u_t,      y_t = 2 Re(C~ x_t) + D * u_t
    bidirectional:  y_t += 2 Re(C~_rev x_bwd_t),  x_bwd_t = Lambda_bar x_bwd_{t+1} + B_bar u_t

Route: once discretised, S5 is the LRU's diagonal form (`diagonal.py`), with

    log lambda = Lambda Delta (zoh, exact: no logarithm is taken) or 2 atanh(Delta Lambda / 2) (bilinear,
                 the log of the ratio without forming it)
    W_in  = rows (Re B_bar[j], Im B_bar[j])           (2N H)
    W_out = columns (2 C_re[:, j], -2 C_im[:, j])     (H 2N)     2 Re(C~ x) = 2 C_re x_re - 2 C_im x_im

so every view, the chunked scan with its own backward and the Triton kernel are the LRU's. The ZOH
factor is expm1(Lambda Delta)/Lambda (the difference exp - 1 would cancel for small |Lambda Delta|).
States cross the boundary as (B N) complex tensors, as the LRU's.
"""

from __future__ import annotations

import torch

from linrnn.impls.specs.s5 import S5Config
from linrnn.impls.torch import diagonal
from linrnn.impls.torch.diagonal import DiagonalForm, lanes_from_native, lanes_to_native, pairs


# -- materialise the raw parameters -------------------------------------------------------------

def discretise(layer: "S5") -> tuple[torch.Tensor, torch.Tensor]:
    """(log Lambda_bar (N,) complex, the per-mode factor of B_bar (N,) complex: B_bar = factor * B~)."""
    cfg = layer.config
    real = layer.Lambda_re.clamp(max=cfg.CLIP_RE) if cfg.clip_eigs else layer.Lambda_re
    Lambda = torch.complex(real, layer.Lambda_im)                            # (N,)
    delta = torch.exp(layer.log_step)                                        # (N,)
    if cfg.discretization == "zoh":
        log_lam = Lambda * delta
        return log_lam, torch.expm1(log_lam) / Lambda
    half = Lambda * (delta / 2)                                              # Delta Lambda / 2
    return 2 * torch.atanh(half), delta / (1 - half)


def materialise(layer: "S5") -> DiagonalForm:
    """Raw parameters -> the real diagonal form (module docstring)."""
    log_lam, factor = discretise(layer)
    B_bar = factor[:, None] * torch.complex(layer.B_re, layer.B_im)         # (N H)
    W_in = pairs(B_bar.real, B_bar.imag, dim=0)                              # (2N H)
    W_out = pairs(2 * layer.C_re, -2 * layer.C_im, dim=1)                    # (H 2N)
    W_out_rev = pairs(2 * layer.C_re_rev, -2 * layer.C_im_rev, dim=1) if layer.config.bidirectional else None
    return DiagonalForm.build(log_lam, W_in, W_out, W_out_rev, layer.D)


# -- the layer ----------------------------------------------------------------------------------

class S5(diagonal.DiagonalMixer):
    """One S5 layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = S5Config

    materialise = materialise
    to_native = lanes_to_native        # the state is the lanes, as the LRU's: x (B N) complex <-> pairs (B N 2)
    from_native = lanes_from_native

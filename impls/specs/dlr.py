"""DLR's spec (Gupta et al. 2022): N eigenvalues shared by the H channels, complex output weights per channel."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import DLRConfig
from linrnn.impls.init import init_dlr
from linrnn.impls.specs import ModelSpec


def shapes(cfg: DLRConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"a": (N,), "theta": (N,), "W_re": (H, N), "W_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"W_re_rev": (H, N), "W_im_rev": (H, N)})
    return out


def with_radius(cfg: DLRConfig, p, r: float) -> dict:
    """Every |lambda_n| = exp(-a_n^2) = r."""
    return {"a": np.full_like(p["a"], np.sqrt(-np.log(r)))}

SPEC = ModelSpec(
    kind="dlr", config=DLRConfig, shapes=shapes, recurrence_keys=("a", "theta"), init=init_dlr,
    implementations={"reference": "linrnn.impls.reference.dlr", "torch": "linrnn.impls.torch.dlr:DLR",
                     "jax": "linrnn.impls.jax.dlr"},
    state=lambda cfg: ((cfg.d_model, cfg.d_state), "complex128"),
    crosscheck=lambda near_one, bi: {"dt_min": 1e-5 if near_one else 1e-3, "dt_max": 1e-1},
    training_modes=("conv", "scan"),     # the kernel route (the fastest here) and the chunked kernel-form scan
    variants={"max_kernel_length": (None, 5)},   # the kernel as long as the input, or truncated (L_k = 5 < L)
    readout=("W", (("W_re", "W_im"), ("W_re_rev", "W_im_rev")), 1),
    task_defaults=lambda n: {"d_state": n, "dt_min": 1e-5, "dt_max": 1e-5},
    derived={"a": ("a^2 = -log|lambda|", np.square)},
    with_radius=with_radius,
)

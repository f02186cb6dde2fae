"""DLR's spec (Gupta et al. 2022): N eigenvalues shared by the H channels, complex output weights per channel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.impls.specs.base import ModelSpec, check_bool, check_float, check_int, log_uniform


@dataclass(frozen=True)
class DLRConfig:
    """One DLR layer: N eigenvalues shared by the H channels, complex output weights per channel (Gupta et al. 2022)."""

    kind: ClassVar[str] = "dlr"
    d_model: int = 64              # H: channels (the layer is depthwise in H)
    d_state: int = 64              # N: eigenvalues lambda_n shared by all channels
    bidirectional: bool = False    # add a strictly anti-causal kernel W_rev (docs/models.md)
    dt_min: float = 1e-4           # Delta_n log-uniform in [dt_min, dt_max]; |lambda_n| = exp(-Delta_n / 2)
    dt_max: float = 1e-1           # the synthetic tasks use dt_min = dt_max = 1e-5
    max_kernel_length: int | None = None  # L_k = min(max_kernel_length, L); None: the whole input length

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "d_state")
        check_bool(self, "bidirectional")
        check_float(self, "dt_min", 0.0, 1e3, low_open=True)
        check_float(self, "dt_max", self.dt_min, 1e3)
        if self.max_kernel_length is not None:
            check_int(self, "max_kernel_length")

    def kernel_length(self, length: int) -> int:
        """L_k = min(max_kernel_length, L): the taps of the kernel on an input of `length` positions."""
        return length if self.max_kernel_length is None else min(self.max_kernel_length, length)


def shapes(cfg: DLRConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"a": (N,), "theta": (N,), "W_re": (H, N), "W_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"W_re_rev": (H, N), "W_im_rev": (H, N)})
    return out


def init(cfg: DLRConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The paper's (authors' code) initialisation: Delta_n log-uniform on [dt_min, dt_max]; lambda_n =
    exp(-Delta_n/2) exp(2 pi i n/N), so a_n = sqrt(Delta_n/2), theta_n = 2 pi n/N; W ~ (N(0,1) + i N(0,1))/N; D ~
    N(0, 1)."""
    H, N = cfg.d_model, cfg.d_state
    delta = log_uniform(rng, cfg.dt_min, cfg.dt_max, N)   # (N,)
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


def with_radius(cfg: DLRConfig, p, r: float) -> dict:
    """Every |lambda_n| = exp(-a_n^2) = r."""
    return {"a": np.full_like(p["a"], np.sqrt(-np.log(r)))}

SPEC = ModelSpec(
    kind="dlr", config=DLRConfig, shapes=shapes, recurrence_keys=("a", "theta"), init=init,
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

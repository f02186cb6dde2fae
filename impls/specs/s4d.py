"""S4D's spec (Gu et al. 2022): per channel, `d_state` complex modes discretised by zero-order hold."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import S4DConfig
from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init_s4d
from linrnn.impls.specs import ModelSpec


def shapes(cfg: S4DConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"log_dt": (H,), "log_A_real": (H, N), "A_imag": (H, N), "C_re": (H, N), "C_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def validate(cfg: S4DConfig, p) -> None:
    """exp(dt A) and the ZOH factor (exp(dt A) - 1)/A must be defined."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        A_real = -np.exp(p["log_A_real"])                                  # (H N)
        dtA = np.exp(p["log_dt"])[:, None] * (A_real + 1j * p["A_imag"])
    for bad, why in ((~np.isfinite(dtA), "dt A overflows, so exp(dt A) is undefined"),
                     ((A_real == 0) & (p["A_imag"] == 0),
                      "A = 0 (exp(log_A_real) underflows and A_imag = 0), so the ZOH factor (exp(dt A) - 1)/A "
                      "is undefined")):
        if np.any(bad):
            h, n = np.argwhere(bad)[0]
            raise LinrnnError(f"log_dt, log_A_real, A_imag: at channel {h}, mode {n}, {why}")

class Discretisation:
    """S4D's discretisation as `linrnn conform` probes it: zero-order hold, one step per channel, one response per
    channel and mode (`linrnn.verify.conform_spectrum`)."""

    input_name = "C~"             # the factor the zero-order hold's expm1 multiplies (C~ = 2 C g)
    step_key = "log_dt"           # one step per channel (H,)
    conjugate_ambiguous = True    # one real response per channel cannot tell lambda from its conjugate

    def rule(self, cfg: S4DConfig) -> str:
        return "zoh"

    def clips(self, cfg: S4DConfig) -> tuple:
        return (None,)

    def continuous(self, cfg: S4DConfig, p, clip: bool | None = None):
        """(A, Delta) of every channel and mode (H N)."""
        A = -np.exp(p["log_A_real"]) + 1j * p["A_imag"]
        return A, np.broadcast_to(np.exp(p["log_dt"])[:, None], A.shape)

    def probe_steps(self, cfg: S4DConfig, p, probe_step: float):
        """Steps with |Delta A| = probe_step for the largest |A| of each channel."""
        return probe_step / np.max(np.abs(self.continuous(cfg, p)[0]), axis=1)

    def estimate(self, cfg: S4DConfig, p, ys, fit_mode):
        """The eigenvalue of each channel and mode (H N) from the single-mode responses ys[n] (H L H)."""
        C = p["C_re"] + 1j * p["C_im"]
        lags = np.arange(1, ys[0].shape[1])
        lam = np.zeros((cfg.d_model, cfg.d_state), complex)
        for n, y in enumerate(ys):
            for h in range(cfg.d_model):
                lam[h, n] = fit_mode(y[h, 1:, h][None, :], 2 * C[h, n:n + 1], lags)[0]
        return lam

    def predicted(self, cfg: S4DConfig, p, lam, g, length: int, n: int):
        """Mode n's impulse responses (H L H) with eigenvalues `lam`, input factors `g` (each channel its own)."""
        C = p["C_re"] + 1j * p["C_im"]
        H = cfg.d_model
        y = np.zeros((H, length, H))
        y[np.arange(H), :, np.arange(H)] = 2 * (C[:, n][:, None] * g[:, n][:, None]
                                                * lam[:, n][:, None] ** np.arange(length)).real
        return y


def with_radius(cfg: S4DConfig, p, r: float) -> dict:
    """Every |lambda| = exp(dt Re A) = r, each channel's step kept."""
    return {"log_A_real": np.log(-np.log(r)) - p["log_dt"][:, None] + np.zeros_like(p["log_A_real"])}

SPEC = ModelSpec(
    kind="s4d", config=S4DConfig, shapes=shapes, recurrence_keys=("log_dt", "log_A_real", "A_imag"), init=init_s4d,
    implementations={"reference": "linrnn.impls.reference.s4d", "torch": "linrnn.impls.torch.s4d:S4D",
                     "jax": "linrnn.impls.jax.s4d"},
    state=lambda cfg: ((cfg.d_model, cfg.d_state), "complex128"),
    crosscheck=lambda near_one, bi: {"dt_min": 2e-4 if near_one else 1e-3, "dt_max": 1e-1},  # |lambda| = exp(-dt/2)
    training_modes=("conv", "scan"),     # the s4 code's route, and the chunked scan over its H N lanes
    variants={"init": ("lin", "inv")},
    readout=("C", (("C_re", "C_im"), ("C_re_rev", "C_im_rev")), 2),
    discretisation=Discretisation(),
    task_defaults=lambda n: {"d_state": n, "dt_min": 1e-4, "dt_max": 1e-1},
    validate=validate,
    derived={"log_A_real": ("exp(log_A_real) = -Re A", np.exp), "log_dt": ("exp(log_dt) = dt", np.exp)},
    product=("log_dt, log_A_real", "dt Re A",
             lambda p, real: np.exp(p["log_dt"].astype(real))[:, None] * np.exp(p["log_A_real"].astype(real))),
    with_radius=with_radius,
)

"""S4D's spec (Gu et al. 2022): per channel, `d_state` complex modes discretised by zero-order hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import DT_FLOOR, ModelSpec, check_bool, check_choice, check_float, check_int


@dataclass(frozen=True)
class S4DConfig:
    """One S4D layer: per channel, `d_state` complex modes discretised by ZOH (Gu et al. 2022, the s4 repo's S4D)."""

    kind: ClassVar[str] = "s4d"
    d_model: int = 64              # H: channels (the layer is depthwise in H)
    d_state: int = 32              # N: complex modes per channel (the s4 code's N/2; the conjugate half is implicit)
    bidirectional: bool = False    # add a strictly anti-causal kernel read out by C_rev (docs/models.md)
    init: str = "lin"              # A_imag: "lin" (S4D-Lin, pi n) or "inv" (S4D-Inv, (2N/pi)(2N/(2n+1) - 1))
    dt_min: float = 1e-3           # dt_h log-uniform in [dt_min, dt_max] (the s4 code's defaults)
    dt_max: float = 1e-1

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "d_state")
        check_bool(self, "bidirectional")
        check_choice(self, "init", ("lin", "inv"))
        check_float(self, "dt_min", DT_FLOOR, 1e3)
        check_float(self, "dt_max", self.dt_min, 1e3)


def shapes(cfg: S4DConfig) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"log_dt": (H,), "log_A_real": (H, N), "A_imag": (H, N), "C_re": (H, N), "C_im": (H, N), "D": (H,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def s4d_imaginary_parts(cfg: S4DConfig) -> np.ndarray:
    """A_imag of one channel, n = 0..N-1: pi n (S4D-Lin) or (M/pi)(M/(2n+1) - 1), M = 2N (S4D-Inv).     -> (N,)"""
    n = np.arange(cfg.d_state)
    if cfg.init == "lin":
        return np.pi * n
    M = 2 * cfg.d_state                                      # the s4 code's N: d_state modes and their conjugates
    return M / np.pi * (M / (2 * n + 1) - 1)


def init(cfg: S4DConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The paper's (authors' code) initialisation: log dt_h ~ U[log dt_min, log dt_max]; Re A = -0.5 (log_A_real =
    log 0.5); A_imag = pi n (S4D-Lin) or (2N/pi)(2N/(2n+1) - 1) (S4D-Inv, 2N the s4 code's state size); C ~ N(0, 1/2)
    + i N(0, 1/2); D ~ N(0, 1)."""
    H, N = cfg.d_model, cfg.d_state
    params = {
        "log_dt": rng.uniform(np.log(cfg.dt_min), np.log(cfg.dt_max), H),
        "log_A_real": np.full((H, N), np.log(0.5)),          # Re A = -0.5
        "A_imag": np.tile(s4d_imaginary_parts(cfg), (H, 1)),
        "C_re": rng.standard_normal((H, N)) * np.sqrt(0.5),  # C standard complex normal: E|C|^2 = 1
        "C_im": rng.standard_normal((H, N)) * np.sqrt(0.5),
        "D": rng.standard_normal(H),
    }
    if cfg.bidirectional:
        params["C_re_rev"] = rng.standard_normal((H, N)) * np.sqrt(0.5)
        params["C_im_rev"] = rng.standard_normal((H, N)) * np.sqrt(0.5)
    return params


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
    kind="s4d", config=S4DConfig, shapes=shapes, recurrence_keys=("log_dt", "log_A_real", "A_imag"), init=init,
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

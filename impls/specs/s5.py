"""S5's spec (Smith et al. 2023): one MIMO diagonal SSM over all H channels, `d_state` kept complex modes."""

from __future__ import annotations

import numpy as np

from linrnn.impls.config import S5Config
from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init_s5
from linrnn.impls.specs import ModelSpec


def shapes(cfg: S5Config) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"Lambda_re": (N,), "Lambda_im": (N,), "B_re": (N, H), "B_im": (N, H), "C_re": (H, N), "C_im": (H, N),
           "D": (H,), "log_step": (N,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def crosscheck(near_one: bool, bidirectional: bool) -> dict:
    """ZOH (the default), and in the bidirectional case the bilinear transform with clip_eigs, so that the matrix
    covers both discretisations; |Lambda_bar| ~ exp(-Delta / 2)."""
    return {"dt_min": 2e-4 if near_one else 1e-3, "dt_max": 1e-1,
            "discretization": "bilinear" if bidirectional else "zoh", "clip_eigs": bidirectional}


def validate(cfg: S5Config, p) -> None:
    """The rule's factor must be defined: ZOH's (exp(Delta Lambda) - 1)/Lambda, the bilinear Delta/(1 - Delta Lambda/2)."""
    Lambda_re, Lambda_im = p["Lambda_re"], p["Lambda_im"]
    if cfg.clip_eigs:
        Lambda_re = np.minimum(Lambda_re, cfg.CLIP_RE)
    with np.errstate(over="ignore", invalid="ignore"):
        half_step = 0.5 * np.exp(p["log_step"]) * (Lambda_re + 1j * Lambda_im)      # Delta Lambda / 2, (N,)
    if cfg.discretization == "zoh":
        singular = (Lambda_re == 0) & (Lambda_im == 0)
        rule = "Lambda = 0, so the ZOH factor (exp(Delta Lambda) - 1)/Lambda is undefined"
    else:
        singular = half_step == 1
        rule = "Delta Lambda = 2, so the bilinear factor Delta/(1 - Delta Lambda/2) is undefined"
    for bad, why in ((~np.isfinite(half_step), "Delta Lambda overflows"), (singular, rule)):
        if np.any(bad):
            raise LinrnnError(f"Lambda_re, Lambda_im, log_step: at mode {int(np.flatnonzero(bad)[0])}, {why}")

class Discretisation:
    """S5's discretisation as `linrnn conform` probes it: one step per mode, `zoh` or `bilinear` by the config,
    H x H impulse responses sharing each mode's eigenvalue (`linrnn.verify.conform_spectrum`)."""

    input_name = "B_bar"          # the factor the zero-order hold's expm1 multiplies
    step_key = "log_step"         # one step per mode (N,)
    conjugate_ambiguous = False   # the H x H responses of one mode tell lambda from its conjugate

    def rule(self, cfg: S5Config) -> str:
        return cfg.discretization

    def clips(self, cfg: S5Config) -> tuple:
        """Under clip_eigs the rules are also tried without the clip."""
        return (True, False) if cfg.clip_eigs else (None,)

    def continuous(self, cfg: S5Config, p, clip: bool | None = None):
        """(Lambda, Delta) of every mode (N,), the real part clipped as the config says (or `clip`)."""
        clip = cfg.clip_eigs if clip is None else clip
        real = np.minimum(p["Lambda_re"], cfg.CLIP_RE) if clip else p["Lambda_re"]
        return real + 1j * p["Lambda_im"], np.exp(p["log_step"])

    def probe_steps(self, cfg: S5Config, p, probe_step: float):
        """Steps with |Delta Lambda| = probe_step, per mode."""
        return probe_step / np.abs(self.continuous(cfg, p)[0])

    def estimate(self, cfg: S5Config, p, ys, fit_mode):
        """The eigenvalue of each mode (N,) from its single-mode responses ys[n] (H_in L H_out)."""
        B, C = p["B_re"] + 1j * p["B_im"], p["C_re"] + 1j * p["C_im"]
        lags = np.arange(1, ys[0].shape[1])
        lam = np.zeros(cfg.d_state, complex)
        for n, y in enumerate(ys):
            s = y[:, 1:, :].transpose(0, 2, 1).reshape(-1, len(lags))             # (H_in H_out, L - 1)
            m = (2 * C[:, n][None, :] * B[n, :][:, None]).reshape(-1)             # [i, o] -> 2 C[o, n] B[n, i]
            lam[n] = fit_mode(s, m, lags)[0]
        return lam

    def predicted(self, cfg: S5Config, p, lam, g, length: int, n: int):
        """Mode n's impulse responses (H_in L H_out) at lags >= 1 with eigenvalues `lam`, input factors `g`."""
        B, C = p["B_re"] + 1j * p["B_im"], p["C_re"] + 1j * p["C_im"]
        modes = g[n] * lam[n] ** np.arange(length)                                  # (L,)
        return 2 * (C[:, n][None, None, :] * modes[None, :, None] * B[n, :][:, None, None]).real


def with_radius(cfg: S5Config, p, r: float) -> dict:
    """Every |Lambda_bar| = exp(Delta Re Lambda) = r, each mode's step kept (zero-order hold only)."""
    if cfg.discretization != "zoh":
        raise LinrnnError("with_radius: S5 with the zoh discretisation only")
    return {"Lambda_re": np.log(r) / np.exp(p["log_step"])}

SPEC = ModelSpec(
    kind="s5", config=S5Config, shapes=shapes, init=init_s5,
    recurrence_keys=("Lambda_re", "Lambda_im", "B_re", "B_im", "log_step"),   # the S5 code's "ssm" group, B included
    implementations={"reference": "linrnn.impls.reference.s5", "torch": "linrnn.impls.torch.s5:S5",
                     "jax": "linrnn.impls.jax.s5"},
    state=lambda cfg: ((cfg.d_state,), "complex128"),
    crosscheck=crosscheck,
    variants={"discretization": ("zoh", "bilinear"), "clip_eigs": (False, True), "blocks": (1, 2)},
    readout=("C", (("C_re", "C_im"), ("C_re_rev", "C_im_rev")), 2),
    discretisation=Discretisation(),
    task_defaults=lambda n: {"d_state": n, "dt_min": 1e-4, "dt_max": 1e-1},
    validate=validate,
    derived={"log_step": ("exp(log_step) = Delta", np.exp)},
    product=("log_step, Lambda_re, Lambda_im", "Delta Lambda",
             lambda p, real: np.exp(p["log_step"].astype(real)) * np.hypot(p["Lambda_re"].astype(real),
                                                                         p["Lambda_im"].astype(real))),
    with_radius=with_radius,
)

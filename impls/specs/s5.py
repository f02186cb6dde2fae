"""S5's spec (Smith et al. 2023): one MIMO diagonal SSM over all H channels, `d_state` kept complex modes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.specs.base import DT_FLOOR, ModelSpec, check_bool, check_choice, check_float, check_int


@dataclass(frozen=True)
class S5Config:
    """One S5 layer: one MIMO diagonal SSM over all H channels, `d_state` kept complex modes (Smith et al. 2023)."""

    kind: ClassVar[str] = "s5"
    d_model: int = 64              # H: features in and out of the layer
    d_state: int = 64              # N: kept complex modes, one of each conjugate pair (the paper's P/2)
    bidirectional: bool = False    # add a backward scan read out by C_rev (docs/models.md)
    blocks: int = 1                # J: HiPPO-N blocks of 2N/J modes each (J divides N, so each block is even)
    discretization: str = "zoh"    # "zoh" (the code's default) or "bilinear"
    dt_min: float = 1e-3           # Delta_n log-uniform in [dt_min, dt_max], one step per mode (code defaults)
    dt_max: float = 1e-1
    clip_eigs: bool = False        # use min(Re Lambda, CLIP_RE) in the forward pass (left half-plane)
    CLIP_RE: ClassVar[float] = -1e-4  # the S5 code's bound on Re Lambda under clip_eigs

    def __post_init__(self) -> None:
        check_int(self, "d_model")
        check_int(self, "d_state")
        check_bool(self, "bidirectional")
        check_int(self, "blocks")
        if self.d_state % self.blocks:
            raise LinrnnError(f"S5Config.blocks: expected a divisor of d_state = {self.d_state} (each block keeps "
                              f"one of each conjugate pair of its 2N/J HiPPO-N modes), found {self.blocks}")
        check_choice(self, "discretization", ("zoh", "bilinear"))
        check_float(self, "dt_min", DT_FLOOR, 1e3)
        check_float(self, "dt_max", self.dt_min, 1e3)
        check_bool(self, "clip_eigs")


def shapes(cfg: S5Config) -> dict:
    H, N = cfg.d_model, cfg.d_state
    out = {"Lambda_re": (N,), "Lambda_im": (N,), "B_re": (N, H), "B_im": (N, H), "C_re": (H, N), "C_im": (H, N),
           "D": (H,), "log_step": (N,)}
    if cfg.bidirectional:
        out.update({"C_re_rev": (H, N), "C_im_rev": (H, N)})
    return out


def hippo_n(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HiPPO-N, the normal part of HiPPO-LegS, and its eigendecomposition (the S5 code's `make_DPLR_HiPPO`).

    HiPPO-LegS is A_ij = -sqrt((2i+1)(2j+1)) below the diagonal, A_ii = -(i+1), 0 above; with the
    low-rank term P_i = sqrt(i + 1/2),

        S = A + P P^T:   S_ij = -sqrt((2i+1)(2j+1))/2 (i > j),   -1/2 (i = j),   +sqrt((2i+1)(2j+1))/2 (i < j)

    so S = -I/2 + K with K real skew-symmetric. K is normal: a unitary V diagonalises it, K V = V diag(i w)
    with w real (the eigenvalues of the Hermitian -iK, `eigh`), and since K is real they come in pairs
    +-w with eigenvectors v and conj(v). Hence S V = V diag(Lambda), Lambda = -1/2 + i w: every eigenvalue
    has real part exactly -1/2 (the mean of diag S, which is how the code writes it), and V^-1 = V^H.

    For an even `size` the pairs split evenly: sorted by w, the first half (w < 0) are the conjugates of
    the second. A real system x' = S x + B u, y = C x (B, C real) then has, in the eigenbasis x~ = V^H x,
    conjugate coordinates for conjugate modes, so y = C V x~ = 2 Re(C V_half x~_half) with only the
    first half kept: what S5 stores (`init`).

    size -> S (size size) real, Lambda (size,) complex sorted by imaginary part, V (size size) unitary
    """
    n = np.arange(size)
    root = np.sqrt(2 * n + 1)
    A = -(np.tril(root[:, None] * root[None, :]) - np.diag(n))
    P = np.sqrt(n + 0.5)
    S = A + P[:, None] * P[None, :]
    w, V = np.linalg.eigh(-1j * 0.5 * (S - S.T))          # -iK, K = the skew part of S
    return S, np.mean(np.diag(S)) + 1j * w, V


def _lecun_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """JAX's `lecun_normal`: a normal truncated at +-2 sigma, scaled to variance 1/fan_in."""
    x = rng.standard_normal(shape)
    while np.any(outside := np.abs(x) > 2):
        x[outside] = rng.standard_normal(int(np.count_nonzero(outside)))
    # the standard deviation of a standard normal truncated to [-2, 2]
    truncated_std = math.sqrt(1 - 4 * math.exp(-2) / math.sqrt(2 * math.pi) / math.erf(math.sqrt(2)))
    return x / truncated_std / math.sqrt(fan_in)


def init(cfg: S5Config, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """HiPPO-N at the block size b = 2N/J, repeated J times, one of each conjugate pair kept (the S5 code's defaults).

    B (2N H) is real and C (H 2N) complex, both lecun-normal with fan-in 2N, the state size before the
    conjugate half is dropped (the code's "trunc_standard_normal" C, its default); they are stored in the
    eigenbasis, B~ = V_half^H B (N H) and C~ = C V_half (H N), with V_half = blockdiag(V[:, :b/2], J times)
    (2N N), applied block by block.
    """
    H, N, J = cfg.d_model, cfg.d_state, cfg.blocks
    b = 2 * N // J
    _, Lambda, V = hippo_n(b)
    V_half = V[:, : b // 2]                                   # (b b/2): the first half of each pair, Im Lambda < 0
    B = _lecun_normal(rng, (2 * N, H), 2 * N).reshape(J, b, H)
    B_tilde = np.einsum("pk,jph->jkh", V_half.conj(), B).reshape(N, H)

    def output_matrix():
        C = (_lecun_normal(rng, (H, 2 * N), 2 * N) + 1j * _lecun_normal(rng, (H, 2 * N), 2 * N)).reshape(H, J, b)
        return np.einsum("hjp,pk->hjk", C, V_half).reshape(H, N)

    C_tilde = output_matrix()
    params = {"Lambda_re": np.tile(Lambda.real[: b // 2], J), "Lambda_im": np.tile(Lambda.imag[: b // 2], J),
              "B_re": B_tilde.real, "B_im": B_tilde.imag, "C_re": C_tilde.real, "C_im": C_tilde.imag}
    if cfg.bidirectional:
        C_rev = output_matrix()
        params.update(C_re_rev=C_rev.real, C_im_rev=C_rev.imag)
    params["D"] = rng.standard_normal(H)
    params["log_step"] = rng.uniform(np.log(cfg.dt_min), np.log(cfg.dt_max), N)
    return params


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
    kind="s5", config=S5Config, shapes=shapes, init=init,
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

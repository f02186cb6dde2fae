"""`linrnn conform`'s probes of the discretisation: which rule a target's eigenvalues follow, and the signature
of `exp(Delta Lambda) - 1` written as a difference (docs/conform.md, "The diagnosis").

Only the kinds with a continuous-time system have a discretisation: S5 (`zoh` or `bilinear`, per mode) and S4D
(zero-order hold, per channel and mode). The layer is linear and time invariant, so its impulse responses at lags
l >= 1 are sums of modes `Re(m z lambda^l)`. A probe bundle keeps one mode of the output matrix (the others'
columns of C set to zero), so that every response is one mode:

    S5     y_l[i, o] = c Re(2 C~[o, n] B~[n, i] g_n lambda_n^l)      (H x H responses share lambda_n)
    S4D    y_l[h, h] = c Re(2 C[h, n] g_{h,n} lambda_{h,n}^l)         (one response per channel)

with `g` the rule's input factor (`B_bar = g B~`; S4D: `C~ = 2 C g`) and `c` a constant the target may get wrong
(the factor 2). The eigenvalue comes from a Prony fit (`numpy.linalg.lstsq` on `y_l = a1 y_{l-1} + a2 y_{l-2}`,
`numpy.roots`), of the pair of roots and their conjugates the one whose linear fit on the contract's B and C
(`numpy.linalg.lstsq` for `c g`) leaves the least residual. The probe sets the steps so that `|Delta Lambda|` is
`PROBE_STEP` (S4D: its largest mode per channel), where the rules differ by far more than float32 rounding.

The rule with the nearest eigenvalues is named when it is not the contract's and the responses it predicts (the
contract's B and C, that rule's eigenvalues and input factor) fit the target's up to a constant, within the
tolerance table; otherwise "none matches". The zero-order hold's cancellation is named by its signature: the
error at lags >= 1 grows as Delta shrinks, like eps / |Delta Lambda|, while at the largest Delta it conforms.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import numpy as np

from linrnn.impls import specs
from linrnn.impls.config import MixerConfig
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.base.tolerance import compare, tolerance

# the kinds with a continuous-time system and a discretisation rule (S4D, S5): each spec's `discretisation`
DISCRETISED = specs.SpecView(lambda s: s.discretisation, only=lambda s: s.discretisation is not None)
PROBE_STEP = 0.5                 # |Delta Lambda| of the eigenvalue probe: bilinear and ZOH differ by ~|z|^3/12 = 1e-2
PROBE_LENGTH = 32                # lags of the probe's impulse responses (the Prony fit needs a few more than 2)
DELTAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)   # the small-steps check's and the expm1 probe's, largest first
SLOPE = (-1.5, -0.5)             # log-log slope of the error against Delta that reads as 1 / Delta


def _zoh(z, d):
    return np.exp(z), d * np.expm1(z) / z


def _bilinear(z, d):
    return (1 + z / 2) / (1 - z / 2), d / (1 - z / 2)


# name -> (words, rule(z = Delta Lambda, Delta) -> (lambda_bar, g)); B_bar = g B~.
RULES: dict[str, tuple[str, Callable]] = {
    "zoh": ("zero-order hold", _zoh),
    "bilinear": ("the bilinear transform", _bilinear),
    "bilinear_flipped": ("the bilinear transform with the sign of Delta flipped",
                         lambda z, d: ((1 - z / 2) / (1 + z / 2), d / (1 + z / 2))),
    "zoh_flipped": ("zero-order hold with the sign of Delta flipped", lambda z, d: (np.exp(-z), d * np.expm1(-z) / z)),
    "forward_euler": ("forward Euler", lambda z, d: (1 + z, d + 0 * z)),
    "backward_euler": ("backward Euler", lambda z, d: (1 / (1 - z), d / (1 - z))),
    "dirac": ("exp(Delta Lambda) with B_bar = B (no input factor)", lambda z, d: (np.exp(z), 1 + 0 * z)),
}


@dataclasses.dataclass(frozen=True)
class Finding:
    key: str      # 'discretisation', 'discretisation_unknown', 'expm1'
    words: str


def contract_rule(cfg: MixerConfig) -> str:
    return DISCRETISED[cfg.kind].rule(cfg)


def continuous(cfg: MixerConfig, p: Mapping[str, np.ndarray], clip: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Lambda, Delta) of every mode: S5 (N,), S4D (H N); S5's real part clipped as the config says (or `clip`)."""
    return DISCRETISED[cfg.kind].continuous(cfg, p, clip)


def with_steps(cfg: MixerConfig, p: Mapping[str, np.ndarray], delta: np.ndarray | float) -> dict:
    """The bundle with its steps set: S5 one per mode (N,), S4D one per channel (H,), or one number for all."""
    key = DISCRETISED[cfg.kind].step_key
    return {**p, key: np.broadcast_to(np.log(delta), p[key].shape).astype(np.float64).copy()}


def probe_steps(cfg: MixerConfig, p: Mapping[str, np.ndarray]) -> np.ndarray:
    """Steps with |Delta Lambda| = PROBE_STEP: per mode (S5) or for the largest |A| of each channel (S4D)."""
    return DISCRETISED[cfg.kind].probe_steps(cfg, p, PROBE_STEP)


def one_mode(p: Mapping[str, np.ndarray], n: int) -> dict:
    """The bundle with every column of the output matrix but mode n's set to zero."""
    out = dict(p)
    for key in ("C_re", "C_im"):
        out[key] = np.zeros_like(p[key])
        out[key][:, n] = p[key][:, n]
    return out


def impulses(H: int, length: int) -> np.ndarray:
    u = np.zeros((H, length, H))
    u[np.arange(H), 0, np.arange(H)] = 1.0
    return u


def fit_mode(s: np.ndarray, m: np.ndarray, lags: np.ndarray) -> tuple[complex, complex, float]:
    """One mode in real sequences s (K T) = Re(m_k z rho^lag): (rho, z, relative residual), by a Prony fit of
    order 2 (its roots and their conjugates the candidates) and a linear fit for z on each candidate."""
    rows = np.stack([s[:, 1:-1], s[:, :-2]], axis=-1).reshape(-1, 2)             # (K (T-2), 2)
    (a1, a2), *_ = np.linalg.lstsq(rows, s[:, 2:].reshape(-1), rcond=None)
    roots = np.roots([1.0, -a1, -a2]).astype(complex)
    best = (0j, 0j, np.inf)
    scale = float(np.max(np.abs(s))) or 1.0
    for rho in {*roots, *np.conj(roots)}:
        basis = m[:, None] * rho ** lags[None, :]                                  # (K T)
        design = np.stack([basis.real, -basis.imag], axis=-1).reshape(-1, 2)       # Re(b z) = Re b Re z - Im b Im z
        (zr, zi), *_ = np.linalg.lstsq(design, s.reshape(-1), rcond=None)
        residual = float(np.max(np.abs(design @ np.array([zr, zi]) - s.reshape(-1)))) / scale
        if residual < best[2]:
            best = (complex(rho), complex(zr, zi), residual)
    return best


def responses(cfg: MixerConfig, p: Mapping[str, np.ndarray], respond: Callable, length: int) -> list[np.ndarray]:
    """The target's impulse responses of each single-mode bundle.     -> N arrays (H_in L H_out)"""
    return [respond(cfg, one_mode(p, n), impulses(cfg.d_model, length)) for n in range(cfg.d_state)]


def estimate(cfg: MixerConfig, p: Mapping[str, np.ndarray], ys: list[np.ndarray]) -> np.ndarray:
    """The target's eigenvalues, one per mode (S5 (N,); S4D (H N)), from its single-mode impulse responses."""
    return DISCRETISED[cfg.kind].estimate(cfg, p, ys, fit_mode)


def predicted(cfg: MixerConfig, p: Mapping[str, np.ndarray], lam: np.ndarray, g: np.ndarray, length: int,
              n: int) -> np.ndarray:
    """The impulse responses of mode n with eigenvalues `lam` and input factors `g`.     -> (H_in L H_out)"""
    y = DISCRETISED[cfg.kind].predicted(cfg, p, lam, g, length, n)
    y[:, 0] += np.diag(p["D"])
    return y


def rule_values(cfg: MixerConfig, p: Mapping[str, np.ndarray]) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """name -> (words, lambda_bar, g) of every rule; S5 under clip_eigs also each rule without the clip."""
    out = {}
    clips = DISCRETISED[cfg.kind].clips(cfg)
    for clip in clips:
        Lam, Delta = continuous(cfg, p, clip)
        for name, (words, rule) in RULES.items():
            lam, g = rule(Delta * Lam, Delta)
            suffix = ", without the clip of Re(Lambda)" if clip is False else ""
            out[name + ("_unclipped" if clip is False else "")] = (words + suffix, lam, g)
    return out


def discretisation(cfg: MixerConfig, p: Mapping[str, np.ndarray], respond: Callable, fit_tol: float,
                   tol: float) -> list[Finding]:
    """The rule the target's eigenvalues follow, when it is not the contract's; silent when it is."""
    p = with_steps(cfg, p, probe_steps(cfg, p))
    ys = responses(cfg, p, respond, PROBE_LENGTH)
    lam = estimate(cfg, p, ys)
    rules = rule_values(cfg, p)
    # S4D's single response per channel cannot tell lambda from its conjugate (Re(m z lambda^l) with z free): both count
    pairs = (lam, np.conj(lam)) if DISCRETISED[cfg.kind].conjugate_ambiguous else (lam,)
    distance = {name: float(np.max(np.min([np.abs(x - values[1]) for x in pairs], axis=0) / np.abs(values[1])))
                for name, values in rules.items()}
    best = min(distance, key=distance.get)
    contract = contract_rule(cfg)
    if best == contract:
        return []
    words, rule_lam, rule_g = rules[best]
    got = np.concatenate([y[:, 1:] for y in ys], axis=1)
    want = np.concatenate([predicted(cfg, p, rule_lam, rule_g, PROBE_LENGTH, n)[:, 1:] for n in range(len(ys))],
                          axis=1)
    denom = float(np.sum(want * want))
    c = float(np.sum(got * want)) / denom if denom else 0.0
    fit = compare("rule", c * want, got, "forward", "float64", scale=float(np.max(np.abs(want)))).rel
    radius = float(np.max(np.abs(lam)))
    measured = (f"eigenvalues estimated from its impulse responses (a Prony fit at |Delta Lambda| = {PROBE_STEP:g}) "
                f"{distance[best]:.1e} from that rule's, {distance[contract]:.1e} from the contract's")
    if fit <= fit_tol:
        beyond = f"; |lambda| > 1 (up to {radius:.6g})" if radius > 1 else ""
        return [Finding("discretisation", f"the discretisation is {words}, where the contract has "
                                          f"{RULES[contract][0]}: "
                                          f"{measured}{beyond}; the responses that rule predicts fit within "
                                          f"{fit:.2e} (tolerance {tol:.2e})")]
    return [Finding("discretisation_unknown", f"the eigenvalues follow none of the discretisation rules "
                                              f"({', '.join(w for w, *_ in RULES.values())}): the nearest is "
                                              f"{words}, {measured}; its responses fit only within {fit:.2e}")]


def cancellation(cfg: MixerConfig, p: Mapping[str, np.ndarray], respond: Callable, dtype: str) -> list[Finding]:
    """'use expm1' when the error at lags >= 1 grows as Delta shrinks like eps / |Delta Lambda| (the zero-order
    hold's factor (exp(Delta Lambda) - 1) / Lambda written as a difference), conforming at the largest Delta."""
    if contract_rule(cfg) != "zoh":
        return []
    errors, tols, factor = [], [], None
    for delta in DELTAS:
        q = with_steps(cfg, p, delta)
        u = impulses(cfg.d_model, PROBE_LENGTH)
        ref = apply_mixer(cfg, q, u, "sequential")[0][:, 1:]
        got = respond(cfg, q, u)[:, 1:]
        if factor is None:        # a constant factor (named by the factor probe) is taken out at the largest Delta
            factor = float(np.sum(got * ref)) / float(np.sum(ref * ref) or 1.0)
        errors.append(compare("expm1", factor * ref, got, "forward", "float64").rel)
        tols.append(tolerance("forward", dtype, PROBE_LENGTH, spectral_radius(cfg, q)).rtol)
    if not (errors[0] <= tols[0] and errors[-1] > tols[-1]) or min(errors) <= 0:
        return []
    slope = float(np.polyfit(np.log(DELTAS), np.log(errors), 1)[0])     # over the whole sweep: one rounding each
    smallest = float(np.min(np.abs(continuous(cfg, p)[0])))
    # like eps / |Delta Lambda|: the error times |Delta Lambda| is rounding, within the table's forward bound
    if not (SLOPE[0] <= slope <= SLOPE[1] and errors[-1] * DELTAS[-1] * smallest <= tols[-1]):
        return []
    what = DISCRETISED[cfg.kind].input_name
    path = ", ".join(f"{e:.1e} at Delta = {d:g} (tolerance {t:.1e})" for d, e, t in zip(DELTAS, errors, tols))
    return [Finding("expm1", f"{what} computed as exp(Delta Lambda) - 1: use expm1: the error at lags >= 1 grows as "
                             f"Delta shrinks, like eps / |Delta Lambda| (log-log slope {slope:.2f}): {path}")]

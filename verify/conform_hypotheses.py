"""`linrnn conform`'s named hypotheses: what published layers are known to compute instead of the contract, each a
bundle of the contract's own layer that computes it (docs/conform.md, "The diagnosis").

A hypothesis is named when the target's outputs match the reference on the hypothesis's bundle (`mutate`), within the
probe's fit tolerance, where they miss the contract's own. The bundle's numbers change, never the equations, so each
hypothesis is tested with the float64 reference alone and cannot be mistaken for another:

    rotrnn   rotation_transposed   P^T where P is due (gamma P^T Theta P for gamma P Theta P^T): M -> M^T
             input_P2B             B_h -> P_h^2 B_h (a rotation into the eigenbasis written x @ P.T on row vectors)
             input_PT2B            B_h -> (P_h^T)^2 B_h (the same, the other way)
             theta_sign            Theta^T where Theta is due: theta -> -theta
             heads_interleaved     the heads' states laid out (n, h) under C's (h, n) columns
             bidirectional_heads   [fwd_h, bwd_h] per head under the one read-out [C, C_rev], read blockwise
    lru      gamma_missing         the input normalisation left out: exp(gamma_log) -> 1
    dlr      kernel_shift_late     K_l = Re(W lambda^(l+1)): W -> W lambda
             kernel_shift_early    K_l = Re(W lambda^(l-1)): W -> W / lambda

The radius sweep's signature (`radius_cancellation`) names a difference `1 - r^2` that cancels as the radius nears 1,
in the words of the model's contract where it has one (`CANCELLATIONS`: RotRNN's xi, the LRU's gamma).
A model registered elsewhere adds its own: `HYPOTHESES[kind] = (Hypothesis(...), ...)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from linrnn.impls.reference.rotrnn import orthogonal
from linrnn.base.tolerance import tolerance

Params = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Hypothesis:
    key: str                                          # the finding's key
    words: str                                        # what the target computes, in the contract's terms
    mutate: Callable[[object, Params], dict | None]   # (config, bundle) -> the bundle that computes it; None: n/a


def _transposed_rotation(cfg, p: Params) -> dict:
    return {**p, "M": np.swapaxes(p["M"], 1, 2)}


def _rotated_input(power: int) -> Callable:
    def mutate(cfg, p: Params) -> dict:
        P = orthogonal(p["M"])                                             # (heads N N)
        R = P if power > 0 else np.swapaxes(P, 1, 2)
        return {**p, "B": R @ R @ p["B"]}                                  # (heads N H)
    return mutate


def _flipped_theta(cfg, p: Params) -> dict:
    return {**p, "theta": -p["theta"]}


def _interleaved_heads(cfg, p: Params) -> dict | None:
    """C's columns read state entry (h, n) from column n * heads + h (the contract: h * N + n)."""
    heads, N = cfg.heads, cfg.d_state
    if heads == 1:
        return None
    order = np.arange(heads * N).reshape(N, heads).T.reshape(-1)           # contract column h N + n <- n heads + h
    return {**p, **{k: p[k][:, order] for k in ("C", "C_rev") if k in p}}


def _bidirectional_heads(cfg, p: Params) -> dict | None:
    """[C, C_rev] (H, 2 heads N) read blockwise by states stored [fwd_1, bwd_1, fwd_2, bwd_2, ...]."""
    if not getattr(cfg, "bidirectional", False):
        return None
    N, heads = cfg.d_state, cfg.heads
    blocks = np.concatenate([p["C"], p["C_rev"]], axis=1).reshape(-1, 2 * heads, N)    # (H 2heads N)
    return {**p, "C": blocks[:, 0::2].reshape(-1, heads * N), "C_rev": blocks[:, 1::2].reshape(-1, heads * N)}


def _no_gamma(cfg, p: Params) -> dict:
    return {**p, "gamma_log": np.zeros_like(p["gamma_log"])}


def _shifted_kernel(power: int) -> Callable:
    def mutate(cfg, p: Params) -> dict:
        lam = np.exp(-p["a"] ** 2 + 1j * p["theta"]) ** power                 # (N,)
        out = dict(p)
        for suffix in ("", "_rev"):
            if "W_re" + suffix in p:
                W = (p["W_re" + suffix] + 1j * p["W_im" + suffix]) * lam         # (H N)
                out["W_re" + suffix], out["W_im" + suffix] = W.real, W.imag
        return out
    return mutate


HYPOTHESES: dict[str, tuple[Hypothesis, ...]] = {
    "rotrnn": (
        Hypothesis("rotation_transposed", "the rotation P is applied transposed: the transition is gamma P^T Theta P "
                                          "where the contract has gamma P Theta P^T (P = expm(M - M^T))",
                   _transposed_rotation),
        Hypothesis("input_P2B", "the input matrix is P^2 B where the contract has B (the rotation into P's basis "
                                "applied as P where P^T is due, as x @ P.T on row vectors does)", _rotated_input(2)),
        Hypothesis("input_PT2B", "the input matrix is (P^T)^2 B where the contract has B (a rotation applied "
                                 "transposed twice on the input side)", _rotated_input(-2)),
        Hypothesis("theta_sign", "the rotation angles have the wrong sign: Theta^T where the contract has Theta",
                   _flipped_theta),
        Hypothesis("heads_interleaved", "the heads' states are interleaved: C reads entry n of head h from column "
                                        "n * heads + h where the contract has h * d_state + n", _interleaved_heads),
        Hypothesis("bidirectional_heads", "the bidirectional states are stored per head as [fwd_h, bwd_h] under one "
                                          "blockwise read-out: column block 2h of [C, C_rev] reads head h's forward "
                                          "state and block 2h + 1 its backward state, where the contract reads the "
                                          "forward heads with C and the backward heads with C_rev",
                   _bidirectional_heads),
    ),
    "lru": (
        Hypothesis("gamma_missing", "the input normalisation gamma is missing: B u where the contract has "
                                    "diag(gamma) B u, gamma = exp(gamma_log) (at radius r every gamma is "
                                    "sqrt(1 - r^2))", _no_gamma),
    ),
    "dlr": (
        Hypothesis("kernel_shift_late", "the kernel is shifted by one lag: K_l = Re(sum_n W_n lambda_n^(l+1)) where "
                                        "the contract has lambda_n^l", _shifted_kernel(1)),
        Hypothesis("kernel_shift_early", "the kernel is shifted by one lag: K_l = Re(sum_n W_n lambda_n^(l-1)) where "
                                         "the contract has lambda_n^l", _shifted_kernel(-1)),
    ),
}


BETTER = 10.0   # a hypothesis is named when it fits the target this many times better than the contract does


def matching(cfg, params: Params, u: np.ndarray, y: np.ndarray, fit_tol: float, against: float, reference: Callable,
             rel_error: Callable) -> list[tuple[Hypothesis, float]]:
    """The hypotheses of `cfg.kind` whose reference on u matches the target's y within `fit_tol` and `BETTER` times
    better than the contract's (error `against`), with each fit's error, best first."""
    found = []
    for hypothesis in HYPOTHESES.get(cfg.kind, ()):
        mutated = hypothesis.mutate(cfg, params)
        if mutated is not None:
            fit = rel_error(reference(cfg, mutated, u), y)
            if fit <= fit_tol and BETTER * fit <= against:
                found.append((hypothesis, fit))
    return sorted(found, key=lambda pair: pair[1])


# The radius sweep's cancellation, in the words of each contract that computes 1 - r^2 (key, words)
CANCELLATIONS = {
    "rotrnn": "xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F computed with 1 - gamma^2 as a difference: use "
              "-expm1(-2 exp(gamma_log)), as the contract does",
    "lru": "gamma = sqrt(1 - |lambda|^2) recomputed with 1 - |lambda|^2 as a difference (the contract's gamma is "
           "exp(gamma_log), set with -expm1): use -expm1(-2 exp(nu_log)), or exp(gamma_log) itself",
}
SWEEP_SLOPE = (-1.5, -0.5)   # log-log slope of the error against 1 - r that reads as eps / (1 - r^2)


def radius_cancellation(kind: str, dtype: str, radii: tuple[float, ...], errors: list[float],
                        tols: list[float]) -> tuple[str, str] | None:
    """(key, words) when the recurrent part's error over the radius sweep grows like eps / (1 - r^2): it exceeds the
    tolerance at the radius nearest 1, its log-log slope against 1 - r is in `SWEEP_SLOPE`, and times 1 - r^2 it is
    rounding (within the forward row at memory 1: the 1 / (1 - r^2) amplification taken out)."""
    if len(radii) < 3 or min(errors) <= 0 or errors[-1] <= tols[-1]:
        return None
    gap = 1.0 - np.asarray(radii)
    slope = float(np.polyfit(np.log(gap), np.log(errors), 1)[0])
    rounding = tolerance("forward", dtype, 1, 0.0).rtol
    if not (SWEEP_SLOPE[0] <= slope <= SWEEP_SLOPE[1]
            and all(e * (1 - r * r) <= rounding for e, r in zip(errors, radii))):
        return None
    path = ", ".join(f"{e:.1e} at r = {r:g} (tolerance {t:.1e})" for r, e, t in zip(radii, errors, tols))
    cause = CANCELLATIONS.get(kind, "a difference 1 - r^2 (or 1 - r) that cancels as the radius nears 1")
    return "radius_cancellation", (f"{cause}: the recurrent part's error grows like eps / (1 - r^2) toward radius 1 "
                                   f"(log-log slope {slope:.2f} against 1 - r): {path}")


def words(hypothesis: Hypothesis, fit: float, tol: float, against: float) -> str:
    return (f"{hypothesis.words}: its outputs match the contract's computed so (fit error {fit:.2e}, tolerance "
            f"{tol:.2e}; against the contract {against:.2e})")

"""Exact converters between RotRNN and LRU layer bundles (claim R5; docs/models.md; docs/models.md, "RotRNN and LRU").

    rotrnn_to_lru(bundle) -> Bundle                 any RotRNN layer -> an LRU with heads*N/2 modes
    lru_to_rotrnn(bundle, heads=None) -> Bundle     an LRU layer -> a RotRNN (default: one head of size 2 per mode)

Both map a layer to one with the same input-output map (x_0 = 0), computed in float64 from the same
materialisation as the reference (`linrnn.impls.reference`), so the outputs agree to rounding error.
NumPy and SciPy only.

RotRNN -> LRU. Head h in its rotated basis z = P_h^T x^h is diagonal: pair j (0-based, interleaved) is
w_j = z_2j + i z_2j+1 with

    w_j,t = gamma_h e^{i theta_hj} w_j,t-1 + (B'_2j + i B'_2j+1) u_t,    B' = xi_h P_h^T B_h
    C x^h = C P_h z = Re(sum_j (C'_:,2j - i C'_:,2j+1) w_j),            C' = C P_h   (also C_rev)

Mode k = h*N/2 + j of the LRU gets:

    P_h         = expm(M_h - M_h^T), made orthogonal to a few eps (`nearest_orthogonal`)
    nu_log_k    = gamma_log_h                 (-log|lambda| = exp(gamma_log_h): the same number, no rounding)
    theta_log_k = log theta_hj                (theta <= 0 is first mapped to theta mod 2 pi, see below)
    gamma_log_k = log sqrt(1 - gamma_h^2)     the LRU's own convention (its initial value), and then
    B_k         = (P_h^T B_h / ||B_h||_F)_k   so that exp(gamma_log) B = xi_h P_h^T B_h up to one rounding;
                                              each head's B rows have unit Frobenius norm, the RotRNN's
                                              normalisation made explicit (stationary sum_j E|x_j|^2 = 1, R3)
    C_k         = C'_:,2j - i C'_:,2j+1

`1 - gamma^2` is evaluated exactly as the reference does (`-expm1(-2 exp(gamma_log))`, which does not
cancel as gamma -> 1), so the converted LRU reproduces what the float64 RotRNN computes. A head whose
1 - gamma^2 underflows to 0 (exp(gamma_log) = 0) has xi_h = 0 in every implementation: it never receives input,
so its modes get B = 0 and gamma_log = 0 (log sqrt(1 - 1) would be -inf).

Angles: the LRU's phase exp(theta_log) is positive. e^{i theta} is 2 pi-periodic, so theta <= 0 is
replaced by theta mod 2 pi (in [0, 2 pi)); positive angles are kept as they are (no reduction, no extra
rounding). An angle that is 0 mod 2 pi (a real eigenvalue gamma) has no LRU phase: `LinrnnError`,
naming the head and the block.

LRU -> RotRNN. Modes are grouped into `heads` heads of N/heads modes that share one modulus (|lambda|
equal up to the "conjugate_pairing" tolerance of the project's table, relative; the head takes the
first mode's nu_log, so equal nu_log give an exact conversion). Groups are the modes in their order
when that works, otherwise the modes stably sorted by modulus. Head h gets P_h = I (M = 0, expm(0) = I
exactly), gamma_log_h = nu_log, theta_hj = exp(theta_log_j), and

    W_h = rows (Re b_j, Im b_j) interleaved,  b_j = exp(gamma_log_j) (B_re + i B_im)_j   (the LRU's input)
    B_h = W_h
    C   = columns (C_re_j, -C_im_j) interleaved, divided by xi_h = sqrt(1 - gamma_h^2) / ||W_h||_F

The RotRNN's xi_h B_h = sqrt(1 - gamma_h^2) B_h / ||B_h||_F does not depend on the scale of B_h, so no
choice of B_h makes xi_h B_h = W_h in general: the state of the RotRNN is xi_h times the LRU's, and the
factor 1/xi_h goes into C. A head whose W_h = 0 (every mode's input is zero) contributes nothing; it
gets B_h = e_0 e_0^T (xi needs ||B_h||_F > 0) and C = 0 there. No exact conversion (`LinrnnError`):
`heads` not dividing N, modes that cannot be grouped under shared moduli, a modulus that rounds to 1
(xi_h = 0 would cut the input) or to 0 (gamma_log = log(-log 0) is not finite).

Initialisation-only config fields (gamma_min, gamma_max, r_min, r_max, max_phase, m_init) keep their
defaults: a converted bundle was not drawn from an initialisation and they do not affect the layer.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.base.errors import LinrnnError
from linrnn.impls.reference import lru as ref_lru, rotrnn as ref_rotrnn
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import scaled_tolerance

TWO_PI = 2.0 * np.pi


def _check_layer(bundle, kind: str, target: str) -> None:
    if not isinstance(bundle, Bundle):
        raise LinrnnError(f"convert: expected a layer bundle, found {type(bundle).__name__}")
    if bundle.level != "layer":
        raise LinrnnError(f"convert: expected a layer bundle (one mixer), found a model bundle "
                          f"(mixer {bundle.config.mixer.kind}); convert a layer bundle instead")
    found = bundle.config.kind
    if found == target:
        raise LinrnnError(f"convert: the bundle is already a {target} layer; nothing to convert")
    if found != kind:
        raise LinrnnError(f"convert: only RotRNN <-> LRU layers convert exactly; found a {found} layer "
                          f"(to {target} needs a {kind} layer)")


def _finite(params: dict[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
    for key, array in params.items():
        if not np.all(np.isfinite(array)):
            raise LinrnnError(f"convert: {what}: {key} overflowed (non-finite values); "
                              f"no float64 conversion of this bundle exists")
    return params


# -- RotRNN -> LRU -----------------------------------------------------------------------------

def lru_phases(theta: np.ndarray) -> np.ndarray:
    """Positive angles with the same e^{i theta}: theta > 0 kept, theta <= 0 -> theta mod 2 pi.

    theta (heads N/2) -> (heads N/2); a phase 0 mod 2 pi is a LinrnnError naming the head and block.
    """
    phase = np.where(theta > 0, theta, np.mod(theta, TWO_PI))
    zero = np.argwhere(phase == 0)
    if zero.size:
        h, j = (int(i) for i in zero[0])
        raise LinrnnError(f"convert: RotRNN head {h}, block {j} has theta = {theta[h, j]!r}, 0 mod 2 pi (a real "
                          f"eigenvalue gamma): the LRU phase exp(theta_log) > 0 cannot represent it "
                          f"({len(zero)} such block(s))")
    return phase


def nearest_orthogonal(P: np.ndarray) -> np.ndarray:
    """The polar factor U V^T of P = U S V^T: the orthogonal matrix nearest to each computed expm.

    P (heads N N) -> (heads N N). The reference's P is orthogonal to O(N eps) (up to about 1e-14 at
    N = 8). In the RotRNN that residual does not enter at t = 1 at all (x_1 = xi B u, y_1 = C x_1), but
    the LRU applies (C P)(P^T xi B) at every t, so P P^T - I would add an output error of that size,
    above the forward tolerance at L = 1 (32 eps). The polar factor is orthogonal to a few eps and,
    being the orthogonal matrix nearest the computed P, is within twice P's error of the exact P.
    """
    U, _, Vt = np.linalg.svd(P)
    return U @ Vt


def _complex_pairs(real: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Split interleaved pairs (x0, x1), (x2, x3), ... along `axis` into (even, odd)."""
    even = np.take(real, np.arange(0, real.shape[axis], 2), axis=axis)
    odd = np.take(real, np.arange(1, real.shape[axis], 2), axis=axis)
    return even, odd


def rotrnn_to_lru(bundle: Bundle) -> Bundle:
    """A RotRNN layer bundle -> the LRU layer bundle with heads*N/2 modes and the same outputs (module docstring)."""
    _check_layer(bundle, "rotrnn", "lru")
    cfg: RotRNNConfig = bundle.config
    p = bundle.params
    heads, N, H = p["B"].shape
    phase = lru_phases(p["theta"])                                        # (heads N/2)
    P = nearest_orthogonal(ref_rotrnn.orthogonal(p["M"]))                 # (heads N N)
    with np.errstate(over="ignore"):                                      # gamma_log > 709: gamma = 0, still exact
        scale = np.sqrt(-np.expm1(-2.0 * np.exp(p["gamma_log"])))        # xi_h ||B_h||_F, as the reference rounds it
    dead = scale == 0.0                                                   # 1 - gamma^2 underflows: xi_h = 0
    norm_B = np.sqrt(np.sum(p["B"] ** 2, axis=(1, 2)))                    # (heads,)
    B_rot = np.swapaxes(P, 1, 2) @ p["B"] / norm_B[:, None, None]         # (heads N H)  P^T B / ||B||_F
    B_rot[dead] = 0.0
    B_re, B_im = _complex_pairs(B_rot, axis=1)                            # (heads N/2 H) each
    gamma_log = np.where(dead, 0.0, np.log(np.where(dead, 1.0, scale)))   # (heads,)

    def fold_C(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """C (H heads*N) -> C P per head, then pairs (C'_2j, -C'_2j+1).     -> (H heads*N/2) x 2"""
        CP = np.einsum("dhm,hmn->dhn", C.reshape(H, heads, N), P)         # (H heads N)
        even, odd = _complex_pairs(CP, axis=2)
        return even.reshape(H, -1), -odd.reshape(H, -1)

    modes = heads * (N // 2)
    params = {
        "nu_log": np.repeat(p["gamma_log"], N // 2),
        "theta_log": np.log(phase).reshape(modes),
        "gamma_log": np.repeat(gamma_log, N // 2),
        "B_re": B_re.reshape(modes, H),
        "B_im": B_im.reshape(modes, H),
        "D": np.array(p["D"]),
    }
    params["C_re"], params["C_im"] = fold_C(p["C"])
    if cfg.bidirectional:
        params["C_re_rev"], params["C_im_rev"] = fold_C(p["C_rev"])
    out_cfg = LRUConfig(d_model=H, d_state=modes, bidirectional=cfg.bidirectional)
    return Bundle(out_cfg, _finite(params, "RotRNN -> LRU"))


# -- LRU -> RotRNN -----------------------------------------------------------------------------

def modulus_tolerance(n_modes: int) -> float:
    """Relative tolerance for 'two modes share one modulus' (the table's conjugate_pairing, scale = N)."""
    return scaled_tolerance("conjugate_pairing", "float64", n_modes)


def group_modes(modulus: np.ndarray, heads: int) -> np.ndarray:
    """Mode indices grouped into `heads` heads of equal modulus.     modulus (N,) -> (heads N/heads) int

    The modes' own order when each consecutive group shares a modulus, else a stable sort by modulus;
    LinrnnError when neither gives groups whose moduli agree to `modulus_tolerance`.
    """
    n = modulus.shape[0]
    if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or heads < 1:
        raise LinrnnError(f"convert: heads: expected a positive integer, found {heads!r}")
    if n % heads:
        raise LinrnnError(f"convert: heads = {heads} does not divide the LRU's {n} modes")
    tol = modulus_tolerance(n)

    def shared(order: np.ndarray) -> bool:
        groups = modulus[order].reshape(heads, n // heads)
        spread = groups.max(axis=1) - groups.min(axis=1)
        return bool(np.all(spread <= tol * groups.max(axis=1)))

    for order in (np.arange(n), np.argsort(modulus, kind="stable")):
        if shared(order):
            return order.reshape(heads, n // heads)
    distinct = np.unique(modulus)
    raise LinrnnError(f"convert: the LRU's {n} modes cannot be grouped into {heads} heads of {n // heads} modes "
                      f"sharing one modulus |lambda| (relative tolerance {tol:.1e}); found {len(distinct)} "
                      f"distinct moduli in [{distinct.min():.6g}, {distinct.max():.6g}]: use more heads "
                      f"(the default, one head per mode, always works)")


def lru_to_rotrnn(bundle: Bundle, heads: int | None = None) -> Bundle:
    """An LRU layer bundle -> a RotRNN layer bundle with the same outputs (module docstring).

    heads  None: one head of size 2 per mode (always possible); else a divisor of N whose groups of
           N/heads modes share a modulus.
    """
    _check_layer(bundle, "lru", "rotrnn")
    cfg: LRUConfig = bundle.config
    p = bundle.params
    n, H = p["B_re"].shape
    heads = n if heads is None else heads
    with np.errstate(over="ignore"):                                      # nu_log > 709: |lambda| = 0, refused below
        modulus = np.exp(-np.exp(p["nu_log"]))                            # |lambda| as gamma will be computed
    for bad, what in ((modulus >= 1.0, "rounds to 1 (so gamma = 1 and xi = sqrt(1 - gamma^2) = 0 would cut the "
                                       "input)"),
                      (modulus <= 0.0, "rounds to 0 (so gamma_log = log(-log gamma) is not finite)")):
        if np.any(bad):
            j = int(np.flatnonzero(bad)[0])
            raise LinrnnError(f"convert: LRU mode {j} has |lambda| = exp(-exp(nu_log)) that {what}; "
                              f"nu_log = {p['nu_log'][j]!r}: no RotRNN head reproduces it")
    order = group_modes(modulus, heads)                                   # (heads m)
    m = order.shape[1]
    W = ref_lru.input_matrix(p)[order]                                    # (heads m H) complex, exp(gamma_log) B
    B = np.stack([W.real, W.imag], axis=2).reshape(heads, 2 * m, H)       # (heads N H) interleaved
    gamma_log = p["nu_log"][order[:, 0]]                                  # (heads,)
    with np.errstate(over="ignore"):
        norm_W = np.sqrt(np.sum(B**2, axis=(1, 2)))                       # (heads,)
    if not np.all(np.isfinite(norm_W)):
        h = int(np.flatnonzero(~np.isfinite(norm_W))[0])
        raise LinrnnError(f"convert: ||B_h||_F of RotRNN head {h} (the LRU input exp(gamma_log) B of its modes) "
                          f"overflows float64, so xi_h would be 0: no float64 RotRNN reproduces it")
    empty = norm_W == 0.0
    B[empty, 0, 0] = 1.0                                                  # any B with ||B_h||_F > 0: C is 0 there
    xi = ref_rotrnn.normalisation(gamma_log, B)                           # (heads,) as the reference computes it

    def fold_C(suffix: str) -> np.ndarray:
        """C_re + i C_im (H N) -> columns (C_re_j, -C_im_j) per head, / xi_h.     -> (H heads*2m)"""
        C = ref_lru.output_matrix(p, suffix)[:, order]                    # (H heads m) complex
        real = np.stack([C.real, -C.imag], axis=3).reshape(H, heads, 2 * m)
        with np.errstate(over="ignore"):                                  # a huge C / xi: refused by _finite
            real = np.where(empty[None, :, None], 0.0, real / xi[None, :, None])
        return real.reshape(H, heads * 2 * m)

    params = {
        "M": np.zeros((heads, 2 * m, 2 * m)),
        "theta": np.exp(p["theta_log"])[order],
        "gamma_log": np.array(gamma_log),
        "B": B,
        "C": fold_C(""),
        "D": np.array(p["D"]),
    }
    if cfg.bidirectional:
        params["C_rev"] = fold_C("_rev")
    out_cfg = RotRNNConfig(d_model=H, d_state=2 * m, heads=heads, bidirectional=cfg.bidirectional)
    return Bundle(out_cfg, _finite(params, "LRU -> RotRNN"))


CONVERTERS = {"lru": rotrnn_to_lru, "rotrnn": lru_to_rotrnn}


# -- the size of what a conversion's rounding is relative to -----------------------------------

def output_terms(bundle: Bundle, u: np.ndarray) -> np.ndarray:
    """The magnitude of the terms summed into each output, in the complex diagonal (LRU) form.

        terms_t = sum_n |C_dn| s_n,t + |D_d| |u_t,d|,   s_n,t = |lambda_n| s_n,t-1 + sum_e |b_ne| |u_t,e|

    (plus the backward scan read out by |C_rev| when bidirectional), with b = exp(gamma_log) B. A
    conversion rounds C P, P^T B and 1/xi once each, so its error is a few eps times these terms, not
    times an output that happens to cancel (e.g. at L = 1 with a small D u): pass max(terms) as the
    `scale` of `linrnn.base.tolerance.compare`. A RotRNN bundle is measured through `rotrnn_to_lru`.

    bundle  an LRU or RotRNN layer bundle;  u (B L H) float64  ->  (B L H) float64, >= 0
    """
    if bundle.config.kind == "rotrnn":   # this module's subject: RotRNN is measured through its LRU form (R9)
        bundle = rotrnn_to_lru(bundle)
    p, cfg = bundle.params, bundle.config
    lam = np.abs(ref_lru.eigenvalues(p))                                  # (N,)
    drive = np.abs(u) @ np.abs(ref_lru.input_matrix(p)).T                 # (B L N)

    def scan(drive: np.ndarray) -> np.ndarray:
        s, out = np.zeros(drive[:, 0].shape), np.empty_like(drive)
        for t in range(drive.shape[1]):
            s = lam * s + drive[:, t]
            out[:, t] = s
        return out

    terms = scan(drive) @ np.abs(ref_lru.output_matrix(p)).T + np.abs(p["D"] * u)
    if cfg.bidirectional:
        terms = terms + scan(drive[:, ::-1])[:, ::-1] @ np.abs(ref_lru.output_matrix(p, "_rev")).T
    return terms

"""R5: one RotRNN 2x2 block is one complex mode with an implicit conjugate (an LRU mode read out by Re).

Block j of a RotRNN head in the rotated basis: x_t = gamma R(theta) x_{t-1} + b u_t, y_t = c^T x_t
(b, c in R^2; b already carries xi and P^T, c carries P). With z = x[0] + i x[1]:

    z_t = gamma e^{i theta} z_{t-1} + (b1 + i b2) u_t,      y_t = Re((c1 - i c2) z_t).

Numeric helpers (float64 / complex128, one sequence, plain loops: this is a reference, not a layer):

    rotrnn_head_outputs(P, theta, gamma, B_in, C, u)     B_in = xi B (N, H), C (H', N), u (L, H) -> (L, H')
    rotrnn_head_as_lru(P, theta, gamma, B_in, C)          -> lam (N/2,), B_c (N/2, H), C_c (H', N/2)
    complex_diagonal_outputs(lam, B_c, C_c, u)           -> Re(C_c z_t), (L, H')
"""

from __future__ import annotations

import time

import numpy as np
import sympy as sp

from linrnn.theory.records import (
    ClaimResult,
    Lemma,
    claim_from_lemmas,
    is_zero,
    numeric_finding,
    symbolic_finding,
    tolerance,
)
from linrnn.theory.rotation import block_rotation, rotation_from_skew


def impulse_response_real(gamma, theta, b, c, k):
    """c^T (gamma R(theta))^k b, with R^k = R(k theta); arrays broadcast (b, c: (..., 2))."""
    gamma, theta, k = (np.asarray(a, dtype=np.float64) for a in (gamma, theta, k))
    b, c = np.asarray(b, dtype=np.float64), np.asarray(c, dtype=np.float64)
    ck, sk = np.cos(k * theta), np.sin(k * theta)
    rb0 = ck * b[..., 0] - sk * b[..., 1]
    rb1 = sk * b[..., 0] + ck * b[..., 1]
    return gamma**k * (c[..., 0] * rb0 + c[..., 1] * rb1)


def impulse_response_complex(gamma, theta, b, c, k):
    """Re((c1 - i c2) (gamma e^{i theta})^k (b1 + i b2)); arrays broadcast."""
    gamma, theta, k = (np.asarray(a, dtype=np.float64) for a in (gamma, theta, k))
    b, c = np.asarray(b, dtype=np.float64), np.asarray(c, dtype=np.float64)
    lam_k = gamma**k * np.exp(1j * k * theta)
    return ((c[..., 0] - 1j * c[..., 1]) * lam_k * (b[..., 0] + 1j * b[..., 1])).real


def rotrnn_head_outputs(P, theta, gamma, B_in, C, u) -> np.ndarray:
    """y_t = C x_t, x_t = gamma P Theta P^T x_{t-1} + B_in u_t, x_0 = 0; u (L, H) -> y (L, H')."""
    A = gamma * P @ block_rotation(theta) @ P.T  # (N, N)
    x = np.zeros(A.shape[0])
    out = []
    for u_t in np.asarray(u, dtype=np.float64):
        x = A @ x + B_in @ u_t
        out.append(C @ x)
    return np.array(out)


def rotrnn_head_as_lru(P, theta, gamma, B_in, C):
    """The complex diagonal system with the same outputs (docs/models.md, "RotRNN and LRU").

    B' = P^T B_in, C' = C P; lam_j = gamma e^{i theta_j}, B_c[j] = B'[2j] + i B'[2j+1],
    C_c[:, j] = C'[:, 2j] - i C'[:, 2j+1].
    """
    Bp = P.T @ B_in  # (N, H)
    Cp = C @ P  # (H', N)
    lam = gamma * np.exp(1j * np.asarray(theta))  # (N/2,)
    return lam, Bp[0::2] + 1j * Bp[1::2], Cp[:, 0::2] - 1j * Cp[:, 1::2]


def complex_diagonal_outputs(lam, B_c, C_c, u) -> np.ndarray:
    """y_t = Re(C_c z_t), z_t = lam * z_{t-1} + B_c u_t, z_0 = 0; u (L, H) -> y (L, H')."""
    z = np.zeros(lam.shape[0], dtype=np.complex128)
    out = []
    for u_t in np.asarray(u, dtype=np.float64):
        z = lam * z + B_c @ u_t
        out.append((C_c @ z).real)
    return np.array(out)


R5_BLOCK = "one 2x2 RotRNN block <-> one complex mode read out by Re"
R5_HEAD = "a RotRNN head (any P) <-> N/2 complex modes (an LRU) read out by Re"

# One 2x2 block: gamma R(theta), input b, read-out c, state x, input u; the complex mode lambda = gamma e^{i theta}.
_GAMMA = sp.Symbol("gamma", positive=True)
_THETA = sp.Symbol("theta", real=True)
_R = sp.Matrix([[sp.cos(_THETA), -sp.sin(_THETA)], [sp.sin(_THETA), sp.cos(_THETA)]])
_LAM = _GAMMA * sp.exp(sp.I * _THETA)


def r5_one_step() -> Lemma:
    """z = x[0] + i x[1] maps one step of the block onto the complex mode, and c^T x onto Re((c1 - i c2) z)."""
    b1, b2, c1, c2, x0, x1, u = sp.symbols("b1 b2 c1 c2 x0 x1 u", real=True)
    x_next = _GAMMA * _R * sp.Matrix([x0, x1]) + sp.Matrix([b1, b2]) * u
    z_next = _LAM * (x0 + sp.I * x1) + (b1 + sp.I * b2) * u
    step_residual = sp.expand_complex(x_next[0] + sp.I * x_next[1] - z_next)
    readout_residual = sp.expand_complex(c1 * x0 + c2 * x1 - sp.re((c1 - sp.I * c2) * (x0 + sp.I * x1)))
    state_ok = is_zero(step_residual) and is_zero(readout_residual)
    return Lemma(
        steps=(("one step: (x_t[0] + i x_t[1]) - z_t", sp.simplify(step_residual)),
               ("readout: c^T x - Re((c1 - i c2)(x0 + i x1))", sp.simplify(readout_residual))),
        findings=(symbolic_finding(
            "z = x[0] + i x[1] maps one step of gamma R(theta) x + b u onto gamma e^{i theta} z + (b1 + i b2) u and "
            "c^T x onto Re((c1 - i c2) z); by induction from x_0 = z_0 = 0 the outputs agree for every t",
            state_ok, scope="all gamma, theta, b, c, x, u (symbolic, one 2x2 block)", general=True, covers=R5_BLOCK,
            fails_when=f"step residual {step_residual}, readout residual {readout_residual}"),))


def r5_impulse_response() -> Lemma:
    """The impulse responses agree for symbolic k, using R^k = R(k theta) (R2)."""
    k = sp.Symbol("k", integer=True, nonnegative=True)
    b1, b2, c1, c2 = sp.symbols("b1 b2 c1 c2", real=True)
    Rk = _R.subs(_THETA, k * _THETA)
    real_response = (sp.Matrix([[c1, c2]]) * _GAMMA**k * Rk * sp.Matrix([b1, b2]))[0]
    lam_k = sp.expand_power_base(sp.powsimp(_LAM**k, force=True), force=True)
    complex_response = sp.re((c1 - sp.I * c2) * sp.powsimp(lam_k, force=True) * (b1 + sp.I * b2))
    impulse_residual = sp.expand_complex(real_response - complex_response)
    return Lemma(
        steps=(("c^T (gamma R)^k b", sp.expand(real_response)),
               ("Re(c~ (gamma e^{i theta})^k (b1 + i b2))", sp.expand(sp.expand_complex(complex_response))),
               ("difference", sp.simplify(impulse_residual))),
        findings=(symbolic_finding(
            "impulse responses agree for symbolic k: c^T (gamma R)^k b = Re((c1 - i c2)(gamma e^{i theta})^k (b1 + i b2))",
            is_zero(impulse_residual), scope="all gamma, theta, b, c and integers k >= 0 (symbolic, one 2x2 block)",
            general=True, covers=R5_BLOCK, fails_when=f"difference {sp.simplify(impulse_residual)}"),))


def r5_head() -> Lemma:
    """A whole head is N/2 independent blocks whose outputs add.

    x' = P^T x turns gamma P Theta P^T x + B u into gamma Theta x' + (P^T B) u and C x into (C P) x' (P^T P = P P^T = I,
    non-commuting symbols); Theta = blockdiag(R(theta_1), Theta') with Theta' of symbolic size m decouples block 1 from
    the rest, so by induction on the number of blocks a head is N/2 independent blocks whose outputs add.
    """
    P, Pt, Th, x, Bs, us, Cs = sp.symbols("P P^T Theta x B u C", commutative=False)
    rotated = sp.expand(Pt * (_GAMMA * P * Th * Pt * x + Bs * us)).subs(Pt * P, 1)
    basis_ok = sp.expand(rotated - (_GAMMA * Th * (Pt * x) + (Pt * Bs) * us)) == 0
    read_ok = sp.expand((Cs * P) * (Pt * x)).subs(P * Pt, 1) == Cs * x
    m_size, h_in = sp.symbols("m H", integer=True, positive=True)
    R1_, Th_rest = sp.MatrixSymbol("R1", 2, 2), sp.MatrixSymbol("Theta'", m_size, m_size)
    x1, x_rest = sp.MatrixSymbol("x1", 2, 1), sp.MatrixSymbol("x''", m_size, 1)
    bb1, bb_rest, uu = sp.MatrixSymbol("b1", 2, h_in), sp.MatrixSymbol("b''", m_size, h_in), sp.MatrixSymbol("u", h_in, 1)
    cc1, cc_rest = sp.MatrixSymbol("c1", 1, 2), sp.MatrixSymbol("c''", 1, m_size)
    state = sp.BlockMatrix([[x1], [x_rest]])
    decoupled = sp.block_collapse(_GAMMA * sp.BlockDiagMatrix(R1_, Th_rest) * state
                                  + sp.BlockMatrix([[bb1], [bb_rest]]) * uu)
    expected = sp.BlockMatrix([[_GAMMA * R1_ * x1 + bb1 * uu], [_GAMMA * Th_rest * x_rest + bb_rest * uu]])
    decoupled_ok = decoupled == expected
    readout = sp.block_collapse(sp.BlockMatrix([[cc1, cc_rest]]) * state)
    readout_ok = readout == cc1 * x1 + cc_rest * x_rest
    return Lemma(
        steps=(("x' = P^T x: P^T (gamma P Theta P^T x + B u) with P^T P = I",
                sp.Eq(sp.Symbol("x'_t"), rotated, evaluate=False)),
               ("Theta = blockdiag(R1, Theta'), Theta' of symbolic size m: one step", decoupled),
               ("readout splits over the blocks", readout)),
        findings=(symbolic_finding(
            "a head with any orthogonal P is N/2 independent 2x2 blocks after x' = P^T x (B' = P^T xi B, C' = C P), "
            "whose outputs add (induction on the number of blocks)", basis_ok and read_ok and decoupled_ok and readout_ok,
            scope="all even N, any orthogonal P, any B, C (symbolic)", general=True, covers=R5_HEAD,
            fails_when=f"change of basis {rotated}, decoupled step {decoupled}, readout {readout}"),))


def r5_numeric(quick: bool, seed: int) -> Lemma:
    """A whole head with a random P (docs/models.md, "RotRNN and LRU" mapping) against its complex diagonal form."""
    rng = np.random.default_rng(seed)
    n, h, T = (6, 3, 50) if quick else (8, 4, 200)
    P = rotation_from_skew(rng.standard_normal((n, n)))
    theta_num = rng.uniform(0, 2 * np.pi, n // 2)
    g = float(rng.uniform(0.9, 0.999))
    B = rng.standard_normal((n, h))
    B_in = np.sqrt(1 - g**2) / np.linalg.norm(B) * B
    C = rng.standard_normal((h, n))
    u = rng.standard_normal((T, h))
    y_rot = rotrnn_head_outputs(P, theta_num, g, B_in, C, u)
    y_lru = complex_diagonal_outputs(*rotrnn_head_as_lru(P, theta_num, g, B_in, C), u)
    err = float(np.abs(y_rot - y_lru).max())
    tol = tolerance("recurrence_equality", "float64", T * n * max(1.0, np.abs(y_rot).max()))
    eig = np.linalg.eigvals(g * P @ block_rotation(theta_num) @ P.T)
    pairs = np.concatenate([g * np.exp(1j * theta_num), g * np.exp(-1j * theta_num)])
    eig_err = float(max(np.min(np.abs(pairs - e)) for e in eig))
    return Lemma(
        witness={"max_output_difference": err, "max_eigenvalue_distance": eig_err, "T": float(T), "N": float(n)},
        findings=(numeric_finding(
            f"random head (N = {n}, H = {h}, random P, T = {T}): RotRNN outputs equal those of the complex diagonal "
            "system lam_j = gamma e^{i theta_j}, B' = P^T xi B, C' = C P; eigenvalues of gamma P Theta P^T are the "
            "conjugate pairs gamma e^{+-i theta_j}",
            err <= tol and eig_err <= tolerance("schur_reconstruction", "float64", n),
            scope=f"one random head, N = {n}, H = {h}, T = {T} (numeric, float64)", covers=R5_HEAD,
            holds_when=f"max |y_RotRNN - y_complex| = {err:.2e}",
            fails_when=f"max output difference {err:.3g} (tolerance {tol:.3g}), eigenvalue distance {eig_err:.3g}"),))


def derive_r5(quick: bool = False, seed: int = 5) -> ClaimResult:
    """R5: RotRNN block <-> complex scalar recurrence read out by Re, for every t."""
    start = time.perf_counter()
    one_step = r5_one_step()
    impulse = r5_impulse_response()
    head = r5_head()
    return claim_from_lemmas(
        "R5", lemmas=(one_step, impulse, head, r5_numeric(quick, seed)), start=start,
        title="a RotRNN head is an LRU whose eigenvalues come in conjugate pairs (one block = one mode + Re)",
        assumptions=("one 2x2 block, b and c real; the head's P and xi are absorbed into b and c",
                     "a head's N/2 modes share one modulus gamma; an LRU with independent moduli maps to N/2 heads of size 2",
                     "the normalisations differ (xi per head vs sqrt(1 - |lambda|^2) per mode), so the equivalence is "
                     "of function classes with B absorbing the scale"))

"""R1 (exp(M - M^T) is a rotation) and R2 (powers of gamma P Theta P^T through 2x2 blocks).

RotRNN (docs/models.md): `P = expm(M - M^T)`, `A = gamma P Theta P^T`, Theta block diagonal over the
interleaved pairs (x[0], x[1]), (x[2], x[3]), ... with block j = R(theta_j) = [[cos, -sin], [sin, cos]].

Numeric helpers (NumPy/SciPy, float64):

    rotation_from_skew(M)          M (N, N) -> P (N, N) = expm(M - M^T)
    random_rotation(N, rng)        a Haar-random rotation in SO(N), orthogonal to rounding (QR)
    block_rotation(theta)          theta (N/2,) -> Theta (N, N)
    rotation_blocks(A)             A (N, N) in SO(N), N even -> P (N, N) in SO(N), theta (N/2,)
    block_power(P, theta, gamma, k)  -> gamma^k P Theta(k theta) P^T, no dense matrix power
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg
import sympy as sp

from linrnn.theory.records import (
    ClaimResult,
    is_zero,
    numeric_finding,
    steps_of,
    symbolic_finding,
    tolerance,
)

# ---------------------------------------------------------------------------------------------
# Numeric helpers
# ---------------------------------------------------------------------------------------------


def rotation_from_skew(M: np.ndarray) -> np.ndarray:
    """P = expm(M - M^T) for an unconstrained M (N, N); P lies in SO(N)."""
    M = np.asarray(M, dtype=np.float64)
    return scipy.linalg.expm(M - M.T)


def random_rotation(n: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-distributed rotation in SO(n) from the QR factorisation of a Gaussian matrix.

    Orthogonal to rounding (unlike expm, whose error grows with ||M - M^T||), so powers of it test
    the block formula and not the defect of the input.
    """
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q = Q * np.sign(np.diag(R))  # Haar: fix the signs of R's diagonal
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def block_rotation(theta: np.ndarray) -> np.ndarray:
    """Theta (N, N): block diagonal over interleaved pairs, block j = R(theta_j)."""
    theta = np.asarray(theta, dtype=np.float64)  # (N/2,)
    n = 2 * theta.shape[0]
    out = np.zeros((n, n))
    c, s = np.cos(theta), np.sin(theta)
    out[0::2, 0::2] = np.diag(c)
    out[0::2, 1::2] = np.diag(-s)
    out[1::2, 0::2] = np.diag(s)
    out[1::2, 1::2] = np.diag(c)
    return out


def rotation_blocks(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Write a rotation A in SO(N), N even, as P Theta(theta) P^T with P in SO(N).

    Uses the real Schur form A = Z T Z^T: A is normal, so T is block diagonal with 2x2 blocks
    [[a, b], [c, a]], b = -c, i.e. R(theta) with theta = atan2(c, a). LAPACK may return det Z = -1;
    flipping the sign of column 1 of Z then turns block 0 into R(-theta_0), so P stays a rotation.
    Raises ValueError when A has a real eigenvalue pair that Schur leaves as 1x1 blocks (a
    non-generic rotation: some theta_j in {0, pi}).
    """
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    if A.shape != (n, n) or n % 2:
        raise ValueError(f"A must be square with an even size, found shape {A.shape}")
    T, Z = scipy.linalg.schur(A, output="real")
    sub = np.abs(np.diag(T, -1))  # (N-1,)
    if np.any(sub[0::2] == 0.0):
        raise ValueError("A has real eigenvalues (1x1 Schur blocks); theta_j in {0, pi} is not generic")
    theta = np.arctan2(np.diag(T, -1)[0::2], np.diag(T)[0::2])  # (N/2,)
    if np.linalg.det(Z) < 0:
        Z = Z.copy()
        Z[:, 1] = -Z[:, 1]
        theta = theta.copy()
        theta[0] = -theta[0]
    return Z, theta


def block_power(P: np.ndarray, theta: np.ndarray, gamma: float, k: int) -> np.ndarray:
    """(gamma P Theta P^T)^k = gamma^k P Theta(k theta) P^T."""
    return gamma**k * P @ block_rotation(k * np.asarray(theta)) @ P.T


def _rot2(angle: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


# ---------------------------------------------------------------------------------------------
# R1
# ---------------------------------------------------------------------------------------------


def derive_r1(quick: bool = False, seed: int = 0) -> ClaimResult:
    """R1: exp(M - M^T) is orthogonal with determinant +1 for every real M."""
    start = time.perf_counter()
    findings, steps, witness = [], [], {}

    # General n: S = M - M^T is skew and traceless (SymPy on matrix symbols, any n).
    n = sp.Symbol("n", integer=True, positive=True)
    M = sp.MatrixSymbol("M", n, n)
    S = M - M.T
    skew_residual = sp.Transpose(S).doit() + S
    trace_S = sp.Trace(S).doit()
    Sn = sp.Symbol("S", commutative=False)
    commutator = sp.expand(Sn * (-Sn) - (-Sn) * Sn)
    general = bool(skew_residual.is_ZeroMatrix) and trace_S == 0 and commutator == 0
    steps += [
        ("S = M - M^T is skew: S^T + S", sp.Eq(sp.MatAdd(sp.Transpose(S), S, evaluate=False), skew_residual,
                                                evaluate=False)),
        ("S is traceless", sp.Eq(sp.Trace(S), trace_S, evaluate=False)),
        ("S and -S commute: [S, -S]", sp.Eq(sp.Symbol("[S, -S]"), commutator, evaluate=False)),
        (
            "hence exp(S)^T exp(S) = exp(-S) exp(S) = exp(0) = I and det exp(S) = exp(tr S)",
            sp.Eq(sp.UnevaluatedExpr(sp.exp(-Sn)) * sp.UnevaluatedExpr(sp.exp(Sn)), 1, evaluate=False),
        ),
    ]
    findings.append(
        symbolic_finding(
            "for every n and every real M, S = M - M^T satisfies S^T = -S and tr S = 0, so exp(S) is "
            "orthogonal (exp(S)^T = exp(S^T) = exp(-S), which commutes with exp(S)) with det = exp(0) = 1",
            general,
            fails_when=f"S^T + S = {skew_residual}, tr S = {trace_S}, [S, -S] = {commutator}",
        )
    )

    # Exact 2x2: SymPy's own matrix exponential.
    m = sp.symbols("m0:4", real=True)
    M2 = sp.Matrix(2, 2, m)
    P2 = (M2 - M2.T).exp().applyfunc(lambda e: sp.simplify(sp.expand_complex(e)))
    orth2 = P2.T * P2 - sp.eye(2)
    det2 = P2.det() - 1
    ok2 = is_zero(orth2) and is_zero(det2)
    steps += [("2x2: exp(M - M^T)", sp.Eq(sp.Symbol("P"), P2, evaluate=False)),
              ("2x2: P^T P - I", sp.simplify(orth2)), ("2x2: det P - 1", sp.simplify(det2))]
    findings.append(
        symbolic_finding("2x2, symbolic M: P^T P = I and det P = 1 exactly", ok2,
                         fails_when=f"P^T P - I = {sp.simplify(orth2)}, det P - 1 = {sp.simplify(det2)}")
    )

    # 3x3 via Rodrigues, derived: S^3 = -t^2 S collapses the exponential series.
    w = sp.symbols("w1:4", real=True)
    S3 = sp.Matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    t = sp.Symbol("t", positive=True)
    t_sq = sum(wi**2 for wi in w)
    cubic = S3**3 + t_sq * S3
    j = sp.Symbol("j", integer=True, nonnegative=True)
    a = sp.summation((-1) ** j * t ** (2 * j) / sp.factorial(2 * j + 1), (j, 0, sp.oo))
    b = sp.summation((-1) ** j * t ** (2 * j) / sp.factorial(2 * j + 2), (j, 0, sp.oo))
    # exp(S) = I + a S + b S^2 and exp(S)^T = I - a S + b S^2; multiply as polynomials in S, then
    # reduce modulo the annihilating polynomial x^3 + t^2 x.
    x, A_, B_ = sp.symbols("x A B")
    product = sp.expand((1 - A_ * x + B_ * x**2) * (1 + A_ * x + B_ * x**2))
    reduced = sp.rem(product, x**3 + t**2 * x, x)
    coeffs = [reduced.coeff(x, d).subs({A_: a, B_: b}) for d in range(3)]
    orth3 = is_zero(coeffs[0] - 1) and is_zero(coeffs[1]) and is_zero(coeffs[2])
    eig = S3.eigenvals()  # {0, +- i t}
    t_expr = sp.sqrt(t_sq)
    det3 = sp.Mul(*[(1 + a.subs(t, t_expr) * mu + b.subs(t, t_expr) * mu**2) ** mult for mu, mult in eig.items()])
    ok3 = is_zero(cubic) and orth3 and is_zero(det3 - 1)
    steps += [
        ("3x3: S^3 + t^2 S with t^2 = w1^2 + w2^2 + w3^2", cubic.applyfunc(sp.expand)),
        ("3x3: odd-series coefficient a(t)", sp.Eq(sp.Symbol("a"), a, evaluate=False)),
        ("3x3: even-series coefficient b(t)", sp.Eq(sp.Symbol("b"), sp.simplify(b), evaluate=False)),
        ("3x3: (I - aS + bS^2)(I + aS + bS^2) mod S^3 + t^2 S", sp.collect(reduced, x)),
        ("3x3: det exp(S) = prod over eigenvalues mu of S of (1 + a mu + b mu^2)", sp.simplify(det3)),
    ]
    findings.append(
        symbolic_finding(
            "3x3, symbolic M (Rodrigues form derived from S^3 = -t^2 S): exp(S)^T exp(S) = I, det = 1",
            ok3,
            fails_when=f"reduced product coefficients {coeffs}, det = {sp.simplify(det3)}",
        )
    )

    # Numeric: scipy expm on random M up to n = 64.
    rng = np.random.default_rng(seed)
    sizes = (2, 3, 4, 8, 16, 32, 64)
    trials = 2 if quick else 5
    worst_ratio, worst_orth, worst_det = 0.0, 0.0, 0.0
    for size in sizes:
        for _ in range(trials):
            M_num = rng.standard_normal((size, size))
            P = rotation_from_skew(M_num)
            orth = float(np.abs(P.T @ P - np.eye(size)).max())
            det_err = abs(float(np.linalg.det(P)) - 1.0)
            scale = size * max(1.0, float(np.linalg.norm(M_num - M_num.T, 2)))
            tol = tolerance("expm_orthogonality", "float64", scale)
            worst_ratio = max(worst_ratio, orth / tol, det_err / tol)
            worst_orth, worst_det = max(worst_orth, orth), max(worst_det, det_err)
    witness.update(max_orthogonality_error=worst_orth, max_det_error=worst_det,
                   worst_error_over_tolerance=worst_ratio, largest_n=float(sizes[-1]),
                   matrices_checked=float(len(sizes) * trials))
    findings.append(
        numeric_finding(
            f"scipy.linalg.expm(M - M^T), M ~ N(0, 1), n in {sizes}: max |P^T P - I| and |det P - 1| "
            "within the expm tolerance",
            worst_ratio <= 1.0,
            holds_when=f"max |P^T P - I| = {worst_orth:.2e}, max |det P - 1| = {worst_det:.2e}",
            fails_when=f"error / tolerance reached {worst_ratio:.3g} (max |P^T P - I| = {worst_orth:.2e})",
        )
    )
    return ClaimResult(
        claim="R1",
        title="exp(M - M^T) is a rotation (orthogonal, det +1) for every real M",
        assumptions=("M real, n x n", "exp is the matrix exponential (power series)",
                     "'stays valid through training' follows because the map holds for every M; the "
                     "check after optimiser steps belongs to the training runs"),
        steps=steps_of(steps),
        findings=tuple(findings),
        witness=witness,
        seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------------------
# R2
# ---------------------------------------------------------------------------------------------


def derive_r2(quick: bool = False, seed: int = 1) -> ClaimResult:
    """R2: A = gamma P Theta P^T gives A^k = gamma^k P Theta(k theta) P^T."""
    start = time.perf_counter()
    findings, steps, witness = [], [], {}

    theta = sp.Symbol("theta", real=True)
    k = sp.Symbol("k", integer=True, nonnegative=True)
    # Induction: R(k theta) R(theta) = R((k+1) theta).
    induction = (_rot2(k * theta) * _rot2(theta) - _rot2((k + 1) * theta)).applyfunc(
        lambda e: sp.simplify(sp.expand_trig(e)))
    # Complex form: R(theta) = V diag(e^{i theta}, e^{-i theta}) V^{-1}, so R^k = V diag(...)^k V^{-1}.
    V = sp.Matrix([[1, 1], [-sp.I, sp.I]])
    D1 = sp.diag(sp.exp(sp.I * theta), sp.exp(-sp.I * theta))
    diag_residual = V * D1 * V.inv() - _rot2(theta)
    Dk = sp.diag(sp.exp(sp.I * theta) ** k, sp.exp(-sp.I * theta) ** k)
    power_residual = V * Dk * V.inv() - _rot2(k * theta)
    single = is_zero(induction) and is_zero(diag_residual) and is_zero(power_residual)
    steps += [
        ("induction step R(k theta) R(theta) - R((k+1) theta)", induction),
        ("complex form: V diag(e^{i theta}, e^{-i theta}) V^{-1} - R(theta)",
         diag_residual.applyfunc(lambda e: sp.simplify(e.rewrite(sp.cos)))),
        ("symbolic k: V diag(e^{i theta}, e^{-i theta})^k V^{-1}", (V * Dk * V.inv()).applyfunc(
            lambda e: sp.simplify(sp.powsimp(e).rewrite(sp.cos)))),
    ]
    findings.append(symbolic_finding(
        "R(theta)^k = R(k theta) for every integer k >= 0 (induction and, for symbolic k, the complex form)",
        single, fails_when=f"residuals {induction}, {power_residual}"))

    # Block diagonal matrices multiply blockwise, so Theta^k rotates block j by k theta_j.
    X1, X2, Y1, Y2 = (sp.MatrixSymbol(s, 2, 2) for s in ("X1", "X2", "Y1", "Y2"))
    blockwise = sp.block_collapse(sp.BlockDiagMatrix(X1, X2) * sp.BlockDiagMatrix(Y1, Y2))
    blocks_ok = sp.Matrix(blockwise) == sp.Matrix(sp.BlockDiagMatrix(X1 * Y1, X2 * Y2))
    # (gamma P Theta P^T)^k: induction step with P^T P = I (non-commuting symbols).
    gamma = sp.Symbol("gamma", positive=True)
    P, Pt, Th = sp.symbols("P P^T Theta", commutative=False)
    step_k = (gamma**k * P * Th**k * Pt) * (gamma * P * Th * Pt)
    reduced = sp.powsimp(step_k.subs(Pt * P, 1))
    target = gamma ** (k + 1) * P * Th ** (k + 1) * Pt
    conj_ok = sp.expand(reduced - target) == 0
    steps += [
        ("blockwise product of block-diagonal matrices", blockwise),
        ("A^k A with P^T P = I", sp.Eq(step_k, reduced, evaluate=False)),
    ]
    findings.append(symbolic_finding(
        "Theta^k = blockdiag(R(k theta_j)) and (gamma P Theta P^T)^k = gamma^k P Theta^k P^T (P^T P = I)",
        bool(blocks_ok) and conj_ok, fails_when=f"A^k A reduced to {reduced}, expected {target}"))

    # Numeric: a random rotation, its real Schur blocks, and matrix_power.
    rng = np.random.default_rng(seed)
    sizes = (2, 4, 8, 16) if quick else (2, 4, 8, 16, 32, 64)
    powers = (0, 1, 2, 3, 10, 100, 1000)
    worst_rec, worst_pow, worst_ratio, min_det = 0.0, 0.0, 0.0, np.inf
    for size in sizes:
        A_rot = random_rotation(size, rng)
        P_num, theta_num = rotation_blocks(A_rot)
        rec = float(np.abs(P_num @ block_rotation(theta_num) @ P_num.T - A_rot).max())
        min_det = min(min_det, float(np.linalg.det(P_num)))
        worst_rec = max(worst_rec, rec)
        worst_ratio = max(worst_ratio, rec / tolerance("schur_reconstruction", "float64", size))
        g = float(rng.uniform(0.9, 0.999))
        for kk in powers:
            dense = np.linalg.matrix_power(g * A_rot, kk)
            err = float(np.abs(block_power(P_num, theta_num, g, kk) - dense).max()) / g**kk
            worst_pow = max(worst_pow, err)
            worst_ratio = max(worst_ratio, err / tolerance("matrix_power", "float64", size * (1 + kk)))
    witness.update(max_schur_reconstruction_error=worst_rec, max_power_error_over_gamma_k=worst_pow,
                   min_det_P=min_det, worst_error_over_tolerance=worst_ratio, largest_k=float(powers[-1]),
                   largest_n=float(sizes[-1]))
    findings.append(numeric_finding(
        f"Haar-random A in SO(N), N in {sizes}: real Schur gives P in SO(N) and theta with A = P Theta P^T; "
        f"gamma^k P Theta(k theta) P^T equals numpy.linalg.matrix_power(gamma A, k) for k in {powers}",
        worst_ratio <= 1.0 and abs(min_det - 1.0) < 1e-8,
        holds_when=f"max |A^k - block form| / gamma^k = {worst_pow:.2e}",
        fails_when=f"error / tolerance reached {worst_ratio:.3g}, min det P = {min_det:.3g}"))
    return ClaimResult(
        claim="R2",
        title="A^k = gamma^k P Theta^k P^T, Theta^k rotating block j by k theta_j",
        assumptions=("N even; interleaved pairs; R(theta) = [[cos, -sin], [sin, cos]]",
                     "k a non-negative integer", "P orthogonal (R1)"),
        steps=steps_of(steps),
        findings=tuple(findings),
        witness=witness,
        seconds=time.perf_counter() - start,
    )

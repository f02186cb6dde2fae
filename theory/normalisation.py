"""R3: what the RotRNN normalisation xi = sqrt(1 - gamma^2) / ||B||_F does and does not promise.

RotRNN head (docs/models.md): x_t = gamma R x_{t-1} + xi B u_t, R = P Theta P^T orthogonal, x_0 = 0.
LRU mode j:              x_{t,j} = lambda_j x_{t-1,j} + gamma_j B_j u_t,  gamma_j = exp(gamma_log_j).
Inputs u_t: i.i.d. over time, zero mean, identity covariance, independent of the past.

Closed forms (NumPy, vectorised, broadcast over all arguments; reused by the framework Monte Carlo):

    rotrnn_expected_sq_norm(gamma, t, e0=0.0)                      E||x_t||^2 of one head
    lru_expected_sq_norm(lam_abs, gamma_in, b_sq_norm, t, e0=0.0)  E|x_{t,j}|^2 of one mode
    expected_sq_norm_recursion(A, B_in, T, sigma0=None)            exact E||x_t||^2, t = 0..T, any A
    monte_carlo_rotrnn_norm(M, theta, gamma_log, B, n_seq=, T=, seed=, start=)   sampled, with a CI
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.stats
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

MC_STARTS = ("zero", "stationary", "unit_first_input")

# ---------------------------------------------------------------------------------------------
# Closed forms and the exact expectation recursion
# ---------------------------------------------------------------------------------------------


def rotrnn_expected_sq_norm(gamma, t, e0=0.0) -> np.ndarray:
    """E||x_t||^2 = 1 - gamma^(2t) (1 - e0) for one normalised RotRNN head (e0 = E||x_0||^2).

    gamma in [0, 1], t >= 0 (any real), all broadcast. Uses expm1 so gamma close to 1 keeps digits.
    """
    gamma, t, e0 = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (gamma, t, e0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        decay = np.where(gamma == 0.0, (t == 0).astype(np.float64), np.exp(2.0 * t * np.log(gamma)))
        rise = np.where(gamma == 0.0, (t > 0).astype(np.float64), -np.expm1(2.0 * t * np.log(gamma)))
    return rise + e0 * decay


def lru_expected_sq_norm(lam_abs, gamma_in, b_sq_norm, t, e0=0.0) -> np.ndarray:
    """E|x_{t,j}|^2 = |lambda|^(2t) e0 + gamma_in^2 ||B_j||^2 (1 - |lambda|^(2t)) / (1 - |lambda|^2).

    lam_abs = |lambda_j| in [0, 1] (at 1 the geometric factor is t), gamma_in = exp(gamma_log_j),
    b_sq_norm = ||B_j||^2 = sum_h |B_jh|^2, t >= 0, e0 = E|x_{0,j}|^2; all broadcast.
    """
    lam_abs, gamma_in, b_sq_norm, t, e0 = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.float64) for a in (lam_abs, gamma_in, b_sq_norm, t, e0)))
    r2 = lam_abs**2
    with np.errstate(divide="ignore", invalid="ignore"):
        log_r2 = np.log(r2)
        decay = np.where(r2 == 0.0, (t == 0).astype(np.float64), np.exp(t * log_r2))
        geometric = np.where(
            r2 == 1.0, t,
            np.where(r2 == 0.0, (t > 0).astype(np.float64), np.expm1(t * log_r2) / np.expm1(log_r2)))
    return e0 * decay + gamma_in**2 * b_sq_norm * geometric


def expected_sq_norm_recursion(A: np.ndarray, B_in: np.ndarray, T: int, sigma0: np.ndarray | None = None) -> np.ndarray:
    """Exact E||x_t||^2, t = 0..T, for x_t = A x_{t-1} + B_in u_t with white unit inputs.

    A (N, N) real or complex, B_in (N, H) (already scaled: xi B for RotRNN, diag(gamma) B for the
    LRU), sigma0 (N, N) = E[x_0 x_0^H] (default 0). Propagates the covariance
    Sigma_t = A Sigma_{t-1} A^H + B_in B_in^H and returns tr Sigma_t: no sampling, no closed form.
    """
    A = np.asarray(A)
    B_in = np.asarray(B_in)
    n = A.shape[0]
    sigma = np.zeros((n, n), dtype=np.result_type(A, B_in)) if sigma0 is None else np.asarray(sigma0)
    drive = B_in @ B_in.conj().T  # (N, N)
    out = np.empty(T + 1)
    out[0] = np.trace(sigma).real
    for step in range(1, T + 1):
        sigma = A @ sigma @ A.conj().T + drive
        out[step] = np.trace(sigma).real
    return out


def rotrnn_head_matrices(M, theta, gamma_log, B) -> tuple[np.ndarray, np.ndarray, float]:
    """One head's A = gamma P Theta P^T (N, N), xi B (N, H) and gamma, from the raw parameters.

    M (N, N), theta (N/2,), gamma_log scalar (gamma = exp(-exp(gamma_log))), B (N, H).
    """
    B = np.asarray(B, dtype=np.float64)
    gamma = float(np.exp(-np.exp(gamma_log)))
    P = rotation_from_skew(M)
    A = gamma * P @ block_rotation(theta) @ P.T
    xi = np.sqrt(1.0 - gamma**2) / np.linalg.norm(B)
    return A, xi * B, gamma


# ---------------------------------------------------------------------------------------------
# Monte Carlo (plain NumPy, one head)
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MonteCarloNorm:
    """Sampled E||x_t||^2 of one head, t = 0..T."""

    t: np.ndarray  # (T+1,) int
    mean: np.ndarray  # (T+1,) sample mean of ||x_t||^2 over n_seq sequences
    ci_low: np.ndarray  # (T+1,) lower end of the normal-approximation confidence interval
    ci_high: np.ndarray  # (T+1,)
    std_error: np.ndarray  # (T+1,) sample std / sqrt(n_seq)
    n_seq: int
    confidence: float
    start: str  # one of MC_STARTS
    gamma: float

    def closed_form(self) -> np.ndarray:
        """The matching closed form: 1 - gamma^(2t) from zero, 1 from a stationary start, and
        1 for t >= 1 (0 at t = 0) when the first input is scaled by 1/||B||_F."""
        if self.start == "zero":
            return rotrnn_expected_sq_norm(self.gamma, self.t, 0.0)
        if self.start == "stationary":
            return rotrnn_expected_sq_norm(self.gamma, self.t, 1.0)
        return (self.t >= 1).astype(np.float64)

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in dataclasses.asdict(self).items()}


def monte_carlo_rotrnn_norm(M, theta, gamma_log, B, *, n_seq: int, T: int, seed: int,
                            start: str = "zero", confidence: float = 0.95) -> MonteCarloNorm:
    """Run the NumPy float64 recursion of one RotRNN head on n_seq white-noise sequences.

    M (N, N), theta (N/2,), gamma_log scalar, B (N, H): raw parameters of one head (docs/models.md).
    start: "zero" (x_0 = 0, the code), "stationary" (x_0 ~ N(0, I/N), so E||x_0||^2 = 1), or
    "unit_first_input" (x_0 = 0 and u_1 scaled by 1/||B||_F instead of xi).
    Inputs u_t ~ N(0, I_H), i.i.d. Returns the mean of ||x_t||^2 and a normal-approximation CI.
    """
    if start not in MC_STARTS:
        raise ValueError(f"start must be one of {MC_STARTS}, found {start!r}")
    A, xiB, gamma = rotrnn_head_matrices(M, theta, gamma_log, B)
    n, h = xiB.shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_seq, n)) / np.sqrt(n) if start == "stationary" else np.zeros((n_seq, n))
    sq = np.empty((T + 1, n_seq))
    sq[0] = np.einsum("bn,bn->b", x, x)
    for step in range(1, T + 1):
        drive = xiB
        if step == 1 and start == "unit_first_input":
            drive = np.asarray(B, dtype=np.float64) / np.linalg.norm(B)
        x = x @ A.T + rng.standard_normal((n_seq, h)) @ drive.T  # (B N)
        sq[step] = np.einsum("bn,bn->b", x, x)
    mean = sq.mean(axis=1)
    se = sq.std(axis=1, ddof=1) / np.sqrt(n_seq)
    z = float(scipy.stats.norm.ppf(0.5 + confidence / 2))
    return MonteCarloNorm(t=np.arange(T + 1), mean=mean, ci_low=mean - z * se, ci_high=mean + z * se,
                          std_error=se, n_seq=n_seq, confidence=confidence, start=start, gamma=gamma)


# ---------------------------------------------------------------------------------------------
# SymPy: the expectation over white inputs
# ---------------------------------------------------------------------------------------------


def expect_white(expr: sp.Expr, inputs: sp.Matrix) -> sp.Expr:
    """E over u of a polynomial in u, with E[u_i] = 0 and E[u_i u_j] = delta_ij (degree <= 2).

    Every other symbol (the state x, independent of u) is held fixed: terms of degree 1 in u vanish
    by independence and zero mean, pure squares keep their coefficient, cross terms vanish.
    """
    poly = sp.Poly(sp.expand(expr), *inputs)
    if poly.total_degree() > 2:
        raise ValueError("expect_white handles polynomials of degree <= 2 in the inputs")
    total = sp.Integer(0)
    for monomial, coeff in poly.terms():
        if sum(monomial) == 0 or (sum(monomial) == 2 and max(monomial) == 2):
            total += coeff
    return total


def expect_white_matrix(expr: sp.MatrixExpr, u: sp.MatrixSymbol) -> tuple[sp.MatrixExpr, sp.Expr]:
    """E over white u of a scalar (1 x 1) quadratic form in matrix symbols of symbolic size.

    `expr` is expanded into terms coeff * F1 F2 ... Fk; a term with no u is kept (with R^T R -> I for
    every adjacent pair R.T, R: R orthogonal), a term with one u or u^T vanishes (E u = 0, u independent
    of the rest), and coeff * u^T Q u becomes coeff * tr(Q) (E u u^T = I). Returns (the u-free part,
    the trace part). Raises ValueError for any other term shape.
    """
    expanded = sp.expand(expr)
    terms = expanded.args if isinstance(expanded, sp.MatAdd) else (expanded,)
    kept, traces = [], sp.Integer(0)
    for term in terms:
        coeff, factors = term.as_coeff_mmul()
        factors = list(factors.args) if isinstance(factors, sp.MatMul) else [factors]
        n_u = sum(f in (u, u.T) for f in factors)
        if n_u == 1:
            continue
        if n_u == 2 and factors[0] == u.T and factors[-1] == u:
            traces += coeff * sp.Trace(sp.MatMul(*factors[1:-1]))
            continue
        if n_u:
            raise ValueError(f"expect_white_matrix: unsupported term {term}")
        reduced, i = [], 0
        while i < len(factors):
            if i + 1 < len(factors) and isinstance(factors[i], sp.Transpose) and factors[i].arg == factors[i + 1]:
                i += 2  # R^T R = I
                continue
            reduced.append(factors[i])
            i += 1
        kept.append(coeff * sp.MatMul(*reduced))
    return (sp.MatAdd(*kept).doit() if kept else sp.Integer(0)), traces


def _one_step_rotrnn():
    """E||gamma R(theta) x + xi B u||^2 for N = 2, H = 3, symbolic R, B and x (u white)."""
    gamma, xi = sp.symbols("gamma xi", positive=True)
    theta = sp.Symbol("theta", real=True)
    x = sp.Matrix(sp.symbols("x0 x1", real=True))
    u = sp.Matrix(sp.symbols("u0:3", real=True))
    B = sp.Matrix(2, 3, sp.symbols("b0:6", real=True))
    R = sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])
    x_next = gamma * R * x + xi * B * u
    expectation = sp.trigsimp(expect_white((x_next.T * x_next)[0], u))
    state_part = expectation.subs({b: 0 for b in B})
    input_part = sp.expand(expectation - state_part)
    return dict(gamma=gamma, xi=xi, x=x, B=B, expectation=expectation,
                state_coeff=sp.simplify(state_part / (x[0] ** 2 + x[1] ** 2)),
                input_residual=sp.simplify(input_part - xi**2 * sum(b**2 for b in B)))


def _one_step_lru():
    """E|lambda x + g B_j u|^2 for one complex mode, H = 2, symbolic lambda = r e^{i phi}, x, B_j."""
    r, g = sp.symbols("r g", positive=True)
    phi = sp.Symbol("phi", real=True)
    xr, xi_ = sp.symbols("x_re x_im", real=True)
    u = sp.Matrix(sp.symbols("u0:2", real=True))
    b = sp.symbols("b_re0:2", real=True), sp.symbols("b_im0:2", real=True)
    z = r * sp.exp(sp.I * phi) * (xr + sp.I * xi_) + g * sum((b[0][h] + sp.I * b[1][h]) * u[h] for h in range(2))
    sq = sp.expand(sp.expand_complex(z * sp.conjugate(z)))
    expectation = sp.trigsimp(expect_white(sq, u))
    b_sq = sum(c**2 for c in b[0] + b[1])
    state_part = expectation.subs({c: 0 for c in b[0] + b[1]})
    return dict(r=r, g=g, expectation=expectation,
                state_coeff=sp.simplify(state_part / (xr**2 + xi_**2)),
                input_residual=sp.simplify(sp.expand(expectation - state_part) - g**2 * b_sq))


def r3_conclusion(*, closed, constant_m0, from_zero, reaches_one, m1_variant, after, lru_closed, lru_fixed,
                  same_profile: bool, recursion_general: bool) -> str:
    """The page's R3 paragraph, written from the SymPy results (no formula in it is typed by hand)."""
    one = sp.Integer(1)
    constant_value = sp.simplify(closed.subs(sp.Symbol("m_0", nonnegative=True), one))
    words = [
        f"E||x_t||^2 = {sp.sstr(sp.factor_terms(closed))} with m_0 = E||x_0||^2"
        + (" (the recursion derived for every N and H)" if recursion_general else " (recursion derived for N = 2, H = 3 only)"),
        f"it is the same for every t exactly when m_0 in {sp.sstr(constant_m0)}, and then equals {sp.sstr(constant_value)}",
    ]
    if 0 in constant_m0:
        words.append("the code's x_0 = 0 is among them, so the paper's 'constant for all t' holds as written")
    else:
        words.append(f"from the code's x_0 = 0 it is {sp.sstr(from_zero)}, below 1 at every t "
                     f"(solve(E||x_t||^2 = 1, t) = {sp.sstr(reaches_one)}), so 'constant for all t' fails there and "
                     "E||x_t||^2 reaches 1 only as t -> oo")
    words.append(f"with the first input scaled by 1/||B||_F instead of xi, E||x_1||^2 = {sp.sstr(sp.simplify(m1_variant))} "
                 f"and E||x_(t+1)||^2 = {sp.sstr(sp.simplify(after))} for t >= 0")
    lru = (f"an LRU mode from x_0 = 0 has E|x_t,j|^2 = {sp.sstr(sp.factor(lru_closed))}, its fixed point "
           f"{sp.sstr(lru_fixed)} times ")
    lru += ("the same profile 1 - |lambda_j|^(2t) as the RotRNN head: the two differ in the fixed point (1 per head "
            "whatever B, ||B_j||^2 per mode at the LRU's normalisation), not in the transient" if same_profile
            else "a profile that differs from the RotRNN head's")
    words.append(lru)
    return "; ".join(words) + "."


R3_CLAIM = "E||x_t||^2 constant for all t under the normalisation, from the code's x_0 = 0"
R3_WHEN = "E||x_t||^2 is constant for all t exactly when E||x_0||^2 = 1"
R3_VARIANT = "constant for t >= 1 when the first input is scaled by 1/||B||_F"
R3_LRU = "an LRU mode reaches its fixed point only as t -> oo, with the same profile"

# The symbols every R3 lemma shares: m(t) = E||x_t||^2, m_0 = E||x_0||^2, beta = ||B||_F, and the one-step
# recursion's right-hand side m_t = gamma^2 m_{t-1} + xi^2 beta^2.
_T = sp.Symbol("t", integer=True, nonnegative=True)
_M = sp.Function("m")
_M0, _BETA = sp.Symbol("m_0", nonnegative=True), sp.Symbol("beta", positive=True)
_GAMMA, _XI = sp.symbols("gamma xi", positive=True)
_M_PREV = sp.Symbol("m_{t-1}")
_RHS = _GAMMA**2 * _M_PREV + _XI**2 * _BETA**2


def r3_recursion_small() -> Lemma:
    """N = 2, H = 3 with every entry symbolic: E||x_t||^2 = gamma^2 E||x_{t-1}||^2 + xi^2 ||B||_F^2."""
    one = _one_step_rotrnn()
    ok = is_zero(one["state_coeff"] - _GAMMA**2) and is_zero(one["input_residual"])
    return Lemma(
        steps=(("E||gamma R x + xi B u||^2 (N = 2, H = 3, white u)", one["expectation"]),
               ("recursion m_t = E||x_t||^2", sp.Eq(sp.Symbol("m_t"), _RHS))),
        findings=(symbolic_finding(
            "N = 2, H = 3, entries symbolic: E||x_t||^2 = gamma^2 E||x_{t-1}||^2 + xi^2 ||B||_F^2", ok,
            scope="N = 2, H = 3 (symbolic)",
            fails_when=f"state coefficient {one['state_coeff']}, input residual {one['input_residual']}"),))


def r3_recursion_general() -> Lemma:
    """Any N, H on matrix symbols (R^T R = I, white u): the same recursion. Value: whether it was derived."""
    n_sym, h_sym = sp.symbols("N H", integer=True, positive=True)
    R_m, B_m = sp.MatrixSymbol("R", n_sym, n_sym), sp.MatrixSymbol("B", n_sym, h_sym)
    x_m, u_m = sp.MatrixSymbol("x", n_sym, 1), sp.MatrixSymbol("u", h_sym, 1)
    v_m = _GAMMA * R_m * x_m + _XI * B_m * u_m
    state_part, input_part = expect_white_matrix(v_m.T * v_m, u_m)
    ok = (state_part == _GAMMA**2 * x_m.T * x_m
          and sp.expand(input_part - _XI**2 * sp.Trace(B_m.T * B_m)) == 0)
    return Lemma(
        steps=(("any N, H: E||gamma R x + xi B u||^2 with R^T R = I, E u = 0, E u u^T = I",
                sp.Eq(sp.Symbol("E||x_t||^2"), sp.MatAdd(state_part, input_part * sp.Identity(1)), evaluate=False)),),
        findings=(symbolic_finding(
            "any N, H: E||x_t||^2 = gamma^2 E||x_{t-1}||^2 + xi^2 ||B||_F^2 (R orthogonal, white inputs; "
            "||B||_F^2 = tr(B^T B))", ok, scope="all N, H, orthogonal R, any B (symbolic)", general=True,
            fails_when=f"u-free part {state_part}, input part {input_part}"),),
        value=ok)


def r3_xi_forced() -> Lemma:
    """The stationary value 1 of the recursion forces the code's xi = sqrt(1 - gamma^2) / ||B||_F."""
    xi_solutions = sp.solve(sp.Eq(1, _RHS.subs(_M_PREV, 1)), _XI)
    xi_target = sp.sqrt(1 - _GAMMA**2) / _BETA
    ok = len(xi_solutions) == 1 and is_zero(xi_solutions[0] - xi_target)
    return Lemma(
        steps=(("stationarity m_t = m_{t-1} = 1 solved for xi",
                sp.Eq(_XI, xi_solutions[0] if xi_solutions else sp.nan)),),
        findings=(symbolic_finding("the stationary value 1 forces xi = sqrt(1 - gamma^2) / ||B||_F (the code's xi)",
                                   ok, scope="all 0 < gamma < 1, ||B||_F > 0 (symbolic)", general=True,
                                   fails_when=f"solve gave {xi_solutions}"),))


def r3_closed_form() -> Lemma:
    """rsolve of the normalised recursion: E||x_t||^2 = 1 - gamma^(2t) (1 - m_0). Value: the closed form."""
    closed = sp.rsolve(_M(_T + 1) - _GAMMA**2 * _M(_T) - (1 - _GAMMA**2), _M(_T), {_M(0): _M0})
    ok = is_zero(closed - (1 - _GAMMA ** (2 * _T) * (1 - _M0)))
    return Lemma(
        steps=(("closed form (rsolve), m_0 = E||x_0||^2", sp.Eq(_M(_T), sp.factor_terms(closed))),),
        findings=(symbolic_finding("E||x_t||^2 = 1 - gamma^(2t) (1 - E||x_0||^2)", ok,
                                   scope="all t >= 0, gamma, E||x_0||^2 (symbolic)", general=True,
                                   fails_when=f"rsolve gave {closed}"),),
        value=closed)


def r3_when_constant(closed: sp.Expr) -> Lemma:
    """The closed form is the same for every t iff m_0 = 1; the code's x_0 = 0 is (or is not) among them.

    Value: {"constant_m0": the solution set, "from_zero": m(t) from x_0 = 0, "reaches_one": solve(m(t) = 1, t)}."""
    constant_m0 = sp.solve(sp.Eq(closed.subs(_T, 1), closed.subs(_T, 0)), _M0)
    constant_ok = constant_m0 == [1] and is_zero(closed.subs(_M0, 1) - 1)
    from_zero = sp.simplify(closed.subs(_M0, 0))
    reaches_one = sp.solve(sp.Eq(from_zero, 1), _T)
    return Lemma(
        steps=(("m_1 = m_0 solved for m_0", sp.Eq(_M0, constant_m0[0] if constant_m0 else sp.nan)),
               ("from x_0 = 0", sp.Eq(_M(_T), from_zero)),
               ("deficiency 1 - m_t from x_0 = 0", sp.Eq(1 - _M(_T), sp.simplify(1 - from_zero)))),
        findings=(symbolic_finding(
            "E||x_t||^2 is the same for every t if and only if E||x_0||^2 = 1 (then it is 1 for every t)",
            constant_ok, scope="all 0 < gamma < 1, E||x_0||^2 >= 0 (symbolic)", general=True, covers=R3_WHEN,
            holds_when=f"E||x_0||^2 in {constant_m0}",
            fails_when=f"constant only for E||x_0||^2 in {constant_m0}"),
            symbolic_finding(
            "the paper's 'E||x_t||^2 constant for all t' with the code's initial state x_0 = 0",
            0 in constant_m0, scope="x_0 = 0, all 0 < gamma < 1, all t >= 1 (symbolic)", general=True,
            covers=R3_CLAIM,
            fails_when=(f"x_0 = 0 (E||x_0||^2 = 0, outside the solution set {constant_m0}): E||x_t||^2 = {from_zero}, "
                        f"below 1 by gamma^(2t) at every t (solve(m_t = 1, t) = {reaches_one} for 0 < gamma < 1); "
                        f"it only tends to 1 as t -> oo, exactly like the LRU"))),
        value={"constant_m0": constant_m0, "from_zero": from_zero, "reaches_one": reaches_one})


def r3_first_input_variant() -> Lemma:
    """From x_0 = 0 with the first input scaled by 1/||B||_F instead of xi: 1 at every t >= 1.

    Value: (m_1, m_(t+1))."""
    m1_variant = _RHS.subs({_M_PREV: 0, _XI: 1 / _BETA})
    after = sp.rsolve(_M(_T + 1) - _GAMMA**2 * _M(_T) - (1 - _GAMMA**2), _M(_T), {_M(0): m1_variant})  # m(t) = m_{t+1}
    ok = is_zero(m1_variant - 1) and is_zero(after - 1)
    return Lemma(
        steps=(("first input scaled by 1/||B||_F: m_1", sp.Eq(sp.Symbol("m_1"), m1_variant)),
               ("then m_{t+1} for t >= 0", sp.Eq(_M(_T + 1), sp.simplify(after)))),
        findings=(symbolic_finding(
            "from x_0 = 0 with the first input scaled by 1/||B||_F (instead of xi): E||x_t||^2 = 1 for every t >= 1",
            ok, scope="x_0 = 0, all 0 < gamma < 1, all t >= 1 (symbolic)", general=True, covers=R3_VARIANT,
            fails_when=f"m_1 = {m1_variant}, m_(t+1) = {after}"),),
        value=(m1_variant, after))


def r3_lru_mode(from_zero: sp.Expr) -> Lemma:
    """One LRU mode: its recursion, fixed point and transient from 0, compared with the RotRNN head's `from_zero`,
    and the stationary value under a drifted gamma_log. Value: (the closed form from 0, the fixed point, whether the
    profile is the RotRNN head's)."""
    lru = _one_step_lru()
    r, g = lru["r"], lru["g"]
    s = sp.Symbol("s", positive=True)  # ||B_j||^2
    e = sp.Symbol("e")
    recursion_ok = is_zero(lru["state_coeff"] - r**2) and is_zero(lru["input_residual"])
    fixed = sp.solve(sp.Eq(e, r**2 * e + g**2 * s), e)
    fixed_ok = len(fixed) == 1 and is_zero(fixed[0].subs(g, sp.sqrt(1 - r**2)) - s)
    lru_closed = sp.rsolve(_M(_T + 1) - r**2 * _M(_T) - g**2 * s, _M(_T), {_M(0): 0})
    closed_ok = bool(fixed) and is_zero(lru_closed - fixed[0] * (1 - r ** (2 * _T)))
    same_profile = bool(fixed) and is_zero(lru_closed / fixed[0] - from_zero.subs(_GAMMA, r))
    gamma_log = sp.Symbol("gamma_log", real=True)
    drift = gamma_log - sp.log(sp.sqrt(1 - r**2))
    ratio = fixed[0].subs({g: sp.exp(gamma_log)}) / s if fixed else sp.nan
    drift_ok = is_zero(ratio - sp.exp(2 * drift))
    steps = (("LRU mode: E|lambda x + g B_j u|^2", lru["expectation"]),
             ("LRU fixed point", sp.Eq(e, fixed[0] if fixed else sp.nan)),
             ("LRU from x_0 = 0 (rsolve)", sp.Eq(_M(_T), sp.factor(lru_closed))),
             ("LRU stationary E|x_j|^2 / ||B_j||^2 with g = exp(gamma_log)", sp.Eq(sp.Symbol("rho_j"), sp.simplify(ratio))))
    return Lemma(steps=steps, findings=(
        symbolic_finding(
            "LRU mode: E|x_{t,j}|^2 = |lambda_j|^2 E|x_{t-1,j}|^2 + gamma_j^2 ||B_j||^2; fixed point "
            "gamma_j^2 ||B_j||^2 / (1 - |lambda_j|^2), equal to ||B_j||^2 when gamma_j = sqrt(1 - |lambda_j|^2); "
            "from x_0 = 0 it is the fixed point times (1 - |lambda_j|^(2t))",
            recursion_ok and fixed_ok and closed_ok,
            scope="one mode, H = 2, all |lambda_j| < 1, gamma_j, B_j (symbolic; the LRU is diagonal, so modes are "
                  "independent)",
            covers=R3_LRU,
            fails_when=f"recursion coefficients {lru['state_coeff']}, {lru['input_residual']}; fixed {fixed}; "
                       f"closed {lru_closed}"),
        symbolic_finding(
            "from x_0 = 0 the RotRNN head and an LRU mode approach their fixed points with the same profile "
            "1 - |eigenvalue|^(2t); what differs is the fixed point (1 per head whatever B, vs ||B_j||^2 per mode)",
            same_profile, scope="all 0 < gamma, |lambda| < 1, t >= 0 (symbolic)", general=True, covers=R3_LRU,
            fails_when="the two normalised transients differ"),
        symbolic_finding(
            "LRU with gamma_log drifted by delta = gamma_log - log sqrt(1 - |lambda|^2): stationary "
            "E|x_j|^2 = ||B_j||^2 exp(2 delta)", drift_ok, scope="all gamma_log, |lambda| < 1 (symbolic)",
            general=True, fails_when=f"ratio = {ratio}")),
        value=(lru_closed, fixed[0] if fixed else sp.nan, same_profile))


def r3_exact_recursion(quick: bool, seed: int) -> Lemma:
    """The exact covariance recursion (a random head, N = 8, any P; random drifted LRU modes) against the closed
    forms. Value: the head's raw parameters (M, theta, gamma_log, B) and gamma, which the Monte Carlo reuses."""
    rng = np.random.default_rng(seed)
    n, h, T = 8, 5, 200 if not quick else 64
    gamma_num = 0.95
    M = rng.standard_normal((n, n))
    theta = rng.uniform(0, 2 * np.pi, n // 2)
    B = rng.standard_normal((n, h))
    gl = np.log(-np.log(gamma_num))
    A, xiB, _ = rotrnn_head_matrices(M, theta, gl, B)
    exact_zero = expected_sq_norm_recursion(A, xiB, T)
    exact_stat = expected_sq_norm_recursion(A, xiB, T, sigma0=np.eye(n) / n)
    ts = np.arange(T + 1)
    err_rot = max(np.abs(exact_zero - rotrnn_expected_sq_norm(gamma_num, ts)).max(),
                  np.abs(exact_stat - rotrnn_expected_sq_norm(gamma_num, ts, 1.0)).max())
    lam = np.exp(-np.exp(rng.normal(-3, 1, n)) + 1j * rng.uniform(0, 2 * np.pi, n))
    g_in = np.sqrt(1 - np.abs(lam) ** 2) * np.exp(rng.normal(0, 0.2, n))  # drifted normalisation
    Bc = (rng.standard_normal((n, h)) + 1j * rng.standard_normal((n, h))) / np.sqrt(2 * h)
    exact_lru = expected_sq_norm_recursion(np.diag(lam), g_in[:, None] * Bc, T)
    closed_lru = lru_expected_sq_norm(np.abs(lam)[:, None], g_in[:, None],
                                      (np.abs(Bc) ** 2).sum(1)[:, None], ts[None, :]).sum(0)
    err_lru = float(np.abs(exact_lru - closed_lru).max() / np.abs(closed_lru).max())
    tol = tolerance("expectation_recursion", "float64", T * n)
    return Lemma(
        witness={"exact_vs_closed_rotrnn": err_rot, "exact_vs_closed_lru_rel": err_lru},
        findings=(numeric_finding(
            f"exact covariance recursion (N = {n}, random P, T = {T}) equals the closed forms (RotRNN from 0 and "
            "from a stationary start; LRU with drifted gamma_log)", max(err_rot, err_lru) <= tol,
            scope=f"one random head N = {n}, H = {h}, t <= {T}; {n} random LRU modes (numeric, exact expectation)",
            covers=R3_WHEN,
            fails_when=f"max error {max(err_rot, err_lru):.3g} > {tol:.3g}"),),
        value={"M": M, "theta": theta, "gamma_log": gl, "B": B, "gamma": gamma_num})


def r3_monte_carlo(quick: bool, seed: int, head: dict) -> Lemma:
    """Monte Carlo of the NumPy recursion (the first 4 x 4 of `head`, from the three starts) against the closed
    forms, with a family-wise critical z over the times."""
    M, theta, gl, B, gamma_num = head["M"], head["theta"], head["gamma_log"], head["B"], head["gamma"]
    n_seq = 500 if quick else 2000
    T_mc = 48
    z_crit = float(scipy.stats.norm.ppf(1 - 0.001 / (2 * T_mc)))  # family-wise 0.1% over the T_mc times
    worst_z, witness = 0.0, {}
    for start_kind in MC_STARTS:
        mc = monte_carlo_rotrnn_norm(M[:4, :4], theta[:2], gl, B[:4], n_seq=n_seq, T=T_mc, seed=seed, start=start_kind)
        live = mc.std_error > 0
        zscore = np.abs(mc.mean - mc.closed_form())[live] / mc.std_error[live]
        worst_z = max(worst_z, float(zscore.max()))
        witness[f"mc_{start_kind}_mean_t1"] = float(mc.mean[1])
    witness.update(mc_worst_z=worst_z, mc_z_critical=z_crit, mc_n_seq=float(n_seq), gamma=gamma_num,
                   closed_form_t1_from_zero=float(rotrnn_expected_sq_norm(gamma_num, 1)))
    return Lemma(witness=witness, findings=(numeric_finding(
        f"Monte Carlo ({n_seq} sequences, N = 4, T = {T_mc}, gamma = {gamma_num}) agrees with 1 - gamma^(2t) "
        "from zero, with 1 from a stationary start and from the 1/||B||_F first input",
        worst_z <= z_crit, scope=f"{n_seq} sequences, N = 4, t <= {T_mc}, gamma = {gamma_num} (Monte Carlo)",
        covers=R3_CLAIM, holds_when=f"max |mean - closed form| / std error = {worst_z:.2f} <= {z_crit:.2f}",
        fails_when=f"max |mean - closed form| / std error = {worst_z:.2f} > {z_crit:.2f}", evidence="monte carlo"),))


def r3_default_init_numbers() -> Lemma:
    """Witness numbers at the default initialisation's gamma range: steps to 0.99 and E||x_1||^2 from zero."""
    witness = {}
    for g_init in (0.9, 0.999):
        witness[f"steps_to_0.99_gamma_{g_init}"] = float(np.log(0.01) / (2 * np.log(g_init)))
        witness[f"m1_from_zero_gamma_{g_init}"] = float(rotrnn_expected_sq_norm(g_init, 1))
    return Lemma(witness=witness)


def derive_r3(quick: bool = False, seed: int = 3) -> ClaimResult:
    """R3: E||x_t||^2 under the RotRNN normalisation, and when it is constant; the LRU counterpart."""
    start = time.perf_counter()
    small = r3_recursion_small()
    general = r3_recursion_general()
    xi = r3_xi_forced()
    closed = r3_closed_form()
    constant = r3_when_constant(closed.value)
    variant = r3_first_input_variant()
    lru = r3_lru_mode(constant.value["from_zero"])
    exact = r3_exact_recursion(quick, seed)
    monte_carlo = r3_monte_carlo(quick, seed, exact.value)
    lemmas = (small, general, xi, closed, constant, variant, lru, exact, monte_carlo, r3_default_init_numbers())
    lru_closed, lru_fixed, same_profile = lru.value
    conclusion = r3_conclusion(closed=closed.value, **constant.value, m1_variant=variant.value[0],
                               after=variant.value[1], lru_closed=lru_closed, lru_fixed=lru_fixed,
                               same_profile=same_profile, recursion_general=general.value)
    return claim_from_lemmas(
        "R3", lemmas=lemmas, start=start, conclusion=conclusion,
        title="the normalisation makes E||x_t||^2 = 1 a fixed point; constant for all t only from E||x_0||^2 = 1",
        assumptions=("u_t i.i.d. over time, E u_t = 0, E u_t u_t^T = I, u_t independent of x_{t-1}",
                     "R = P Theta P^T orthogonal (R1); symbolic derivation for N = 2, H = 3, numeric for N = 8 with P",
                     "beta = ||B||_F (so sum of b_i^2 = beta^2); m_t = E||x_t||^2; LRU mode: r = |lambda_j|, "
                     "g = exp(gamma_log_j), s = ||B_j||^2",
                     "0 < gamma < 1 and 0 < |lambda| < 1"))

"""DLR kernels (chunked, any dtype), the float64 closed form at the roots-of-unity initialisation, and D3.

DLR (docs/models.md): K_l = Re(sum_n W_n lambda_n^l), l = 0..L-1, with lambda_n^l = exp(l log lambda_n),
never an N x L matrix larger than one chunk. Initialisation: lambda_n = exp(-Delta_n / 2) e^{2 pi i n / N}.

    dlr_kernel(log_lam, W, L, dtype=, chunk=)     log_lam (N,), W (N,) or (H, N) -> K (L,) or (H, L)
    dlr_kernel_roots_reference(delta, W, L)       same kernel at lambda_n = e^{-delta_n/2} e^{2 pi i n/N},
                                                  float64 with the phase reduced exactly: (n l mod N)
    dft_weights(K)                                K (N,) real -> W = DFT(K) / N, so that K_l = sum_n W_n omega^{n l}

D3 (periodic initialisation): with lambda_n = e^{2 pi i n/N}, V[l, n] = lambda_n^l (l < N) is the DFT
matrix, so W = DFT(K)/N reproduces any length-N kernel exactly, and the kernel is N-periodic.
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

def dlr_kernel(log_lam, W, L: int, *, dtype: str = "float64", chunk: int = 16384) -> np.ndarray:
    """K_l = Re(sum_n W_n exp(l log lambda_n)), l = 0..L-1, in `dtype` ("float32" or "float64").

    log_lam (N,) complex, W (N,) or (H, N) complex. exp(l log lambda) is evaluated as
    e^{l Re log lambda} (cos + i sin)(l Im log lambda) with l and log lambda in `dtype`: the same
    rounding of the phase l * theta as a complex exp, with NumPy's vectorised real exp/cos/sin.
    Works on chunks of `chunk` lags (largest temporary N x chunk). Overflow or an invalid operation
    raises FloatingPointError; underflow of |lambda|^l to 0 is allowed (the true value is below the
    dtype's range).
    """
    real = np.dtype(dtype).type
    log_lam = np.asarray(log_lam, dtype=np.complex128)  # (N,)
    decay_rate = log_lam.real.astype(real)  # (N,)
    phase_rate = log_lam.imag.astype(real)  # (N,)
    W = np.asarray(W, dtype=np.complex128)
    squeeze = W.ndim == 1
    W = W.reshape(-1, log_lam.shape[0])  # (H, N)
    W_re, W_im = W.real.astype(real), W.imag.astype(real)
    out = np.empty((W.shape[0], L), dtype=real)  # (H, L)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        for l0 in range(0, L, chunk):
            lags = np.arange(l0, min(l0 + chunk, L)).astype(real)  # (l,)
            magnitude = np.exp(lags[None, :] * decay_rate[:, None])  # (N, l)
            phase = lags[None, :] * phase_rate[:, None]  # (N, l)
            out[:, l0:l0 + lags.shape[0]] = W_re @ (magnitude * np.cos(phase)) - W_im @ (magnitude * np.sin(phase))
    return out[0] if squeeze else out


def dlr_kernel_roots_reference(delta, W, L: int, *, chunk: int = 16384, with_envelope: bool = False):
    """Float64 closed form of the kernel at lambda_n = e^{-delta_n/2} e^{2 pi i n/N}.

    K_l = sum_n e^{-delta_n l/2} (Re W_n cos(2 pi m/N) - Im W_n sin(2 pi m/N)), m = (n l) mod N: the
    phase is reduced exactly in integers, so it carries no error that grows with l. delta (N,), W (N,).
    With `with_envelope`, also returns sum_n |W_n| |lambda_n|^l (L,), the bound on |K_l| that the
    per-lag error model scales with.
    """
    delta = np.asarray(delta, dtype=np.float64)
    W = np.asarray(W, dtype=np.complex128)
    n_modes = delta.shape[0]
    n = np.arange(n_modes)
    angle = 2 * np.pi * np.arange(n_modes) / n_modes
    cos_table, sin_table = np.cos(angle), np.sin(angle)
    out = np.empty(L)
    envelope = np.empty(L)
    with np.errstate(under="ignore"):
        for l0 in range(0, L, chunk):
            lags = np.arange(l0, min(l0 + chunk, L))
            m = (n[:, None] * lags[None, :]) % n_modes  # (N, l)
            decay = np.exp(-0.5 * delta[:, None] * lags[None, :])  # (N, l)
            terms = decay * (W.real[:, None] * cos_table[m] - W.imag[:, None] * sin_table[m])  # (N, l)
            out[l0:l0 + lags.shape[0]] = terms.sum(0)
            if with_envelope:
                envelope[l0:l0 + lags.shape[0]] = np.abs(W) @ decay
    return (out, envelope) if with_envelope else out


def dft_weights(K) -> np.ndarray:
    """W = DFT(K) / N with DFT(K)_n = sum_l K_l e^{-2 pi i n l / N}; K (N,) -> W (N,) complex."""
    K = np.asarray(K, dtype=np.float64)
    return np.fft.fft(K) / K.shape[0]


def roots_of_unity_log(N: int, delta=0.0) -> np.ndarray:
    """log lambda_n = -delta_n/2 + 2 pi i n / N, n = 0..N-1 (delta scalar or (N,))."""
    return -0.5 * np.broadcast_to(np.asarray(delta, dtype=np.float64), (N,)) + 2j * np.pi * np.arange(N) / N


D3_PART = "a size-N DLR at lambda_n = e^{2 pi i n/N} expresses any length-N kernel"
D3_PERIODIC = "the kernel is N-periodic at |lambda| = 1"


def d3_small_cases() -> Lemma:
    """N = 2, 3, 4 with a symbolic real K: V^H V = N I, and W = DFT(K)/N rebuilds K exactly."""
    exact_ok, steps = True, []
    for N in (2, 3, 4):
        K = sp.Matrix(sp.symbols(f"K0:{N}", real=True))
        omega = [sp.exp(2 * sp.pi * sp.I * n / N) for n in range(N)]
        V = sp.Matrix(N, N, lambda l, n: omega[n] ** l)
        gram = (V.H * V).applyfunc(lambda e: sp.simplify(sp.expand_complex(e)))
        W = [sum(K[l] * sp.exp(-2 * sp.pi * sp.I * n * l / N) for l in range(N)) / N for n in range(N)]
        rebuilt = sp.Matrix([sp.re(sp.expand(sum(W[n] * omega[n] ** l for n in range(N)))) for l in range(N)])
        residual = (rebuilt - K).applyfunc(lambda e: sp.simplify(sp.expand_complex(e)))
        exact_ok = exact_ok and is_zero(gram - N * sp.eye(N)) and is_zero(residual)
        steps += [(f"N = {N}: V^H V (V[l, n] = lambda_n^l)", gram),
                  (f"N = {N}: Re(sum_n W_n lambda_n^l) - K_l with W = DFT(K)/N", residual)]
    return Lemma(steps=tuple(steps), findings=(symbolic_finding(
        "N = 2, 3, 4, symbolic real K: V^H V = N I, so V is invertible and W = DFT(K)/N gives "
        "Re(sum_n W_n lambda_n^l) = K_l exactly for l < N", exact_ok, scope="N = 2, 3, 4, symbolic K (symbolic)",
        covers=D3_PART, fails_when="a Gram matrix or reconstruction residual is not identically zero"),))


def d3_any_size() -> Lemma:
    """Symbolic N: (V^H V)[l, m] = sum_n omega^(n (m - l)), a geometric sum over the N-th roots of unity."""
    n, l, m_, d = sp.symbols("n l m d", integer=True)
    Nsym = sp.Symbol("N", integer=True, positive=True)
    root = lambda e: sp.exp(2 * sp.pi * sp.I * e / Nsym)  # noqa: E731  omega^e, omega = e^{2 pi i/N}
    summand_ok = is_zero(sp.conjugate(root(n * l)) * root(n * m_) - root(n * (m_ - l)))
    geometric = sp.summation(root(n * d), (n, 0, Nsym - 1))  # Piecewise: N where omega^d = 1, else 0
    q = sp.Symbol("q", real=True)  # q = d / N with d = m - l, 0 < |d| < N
    roots_off_diagonal = sp.solveset(sp.cos(2 * sp.pi * q) - 1, q,
                                     sp.Union(sp.Interval.open(-1, 0), sp.Interval.open(0, 1)))
    pieces = geometric.args if isinstance(geometric, sp.Piecewise) else ()
    geometric_ok = (len(pieces) == 2 and pieces[0][0] == Nsym and pieces[1] == (0, True)
                    and pieces[0][1] == sp.Eq(root(d), 1) and roots_off_diagonal == sp.EmptySet
                    and geometric.subs(d, 0) == Nsym)
    steps = (("any N: conj(omega^(n l)) omega^(n m) - omega^(n (m - l))",
              sp.simplify(sp.conjugate(root(n * l)) * root(n * m_) - root(n * (m_ - l)))),
             ("any N: sum_{n<N} omega^(n d)", sp.Eq(sp.Sum(root(n * d), (n, 0, Nsym - 1)), geometric, evaluate=False)),
             ("omega^d = 1 needs cos(2 pi d/N) = 1: solutions with 0 < |d/N| < 1", roots_off_diagonal),
             ("d = 0", sp.Eq(sp.Symbol("(V^H V)_{ll}"), geometric.subs(d, 0), evaluate=False)))
    return Lemma(steps=steps, findings=(symbolic_finding(
        "every N: (V^H V)[l, m] = sum_n omega^(n (m - l)) = N if l = m and 0 if 0 < |m - l| < N, so V^H V = N I, "
        "V^-1 = V^H / N and W = V^-1 K = DFT(K)/N gives sum_n W_n lambda_n^l = K_l exactly for l < N (real K: "
        "the sum is real)", summand_ok and geometric_ok, scope="all N >= 1, any real K (symbolic)", general=True,
        covers=D3_PART, fails_when=f"geometric sum {geometric}, off-diagonal roots {roots_off_diagonal}"),))


def d3_periodic() -> Lemma:
    """With one Delta, K_{l+N} = e^{-Delta N/2} K_l: at |lambda| = 1 the kernel is N-periodic."""
    n, l = sp.symbols("n l", integer=True)
    Nsym = sp.Symbol("N", integer=True, positive=True)
    delta = sp.Symbol("Delta", nonnegative=True)
    lam = sp.exp(-delta / 2 + 2 * sp.pi * sp.I * n / Nsym)
    shift = sp.simplify(sp.powsimp(lam ** (l + Nsym) - sp.exp(-delta * Nsym / 2) * lam**l, force=True))
    unit = sp.simplify(sp.powsimp((lam ** (l + Nsym) - lam**l).subs(delta, 0), force=True))
    return Lemma(
        steps=(("lambda^(l+N) - e^{-Delta N/2} lambda^l", shift), ("|lambda| = 1: lambda^(l+N) - lambda^l", unit)),
        findings=(symbolic_finding(
            "with lambda_n = e^{-Delta/2} e^{2 pi i n/N} (one Delta): K_{l+N} = e^{-Delta N/2} K_l, so at |lambda| = 1 "
            "the kernel is N-periodic", is_zero(shift) and is_zero(unit), scope="all N, n, l, Delta >= 0 (symbolic)",
            general=True, covers=D3_PERIODIC, fails_when=f"residuals {shift}, {unit}"),))


def d3_numeric(quick: bool, seed: int) -> Lemma:
    """Random real K: W = fft(K)/N rebuilds K (the exact-phase sum and the layer's exp(l log lambda) route), and the
    |lambda| = 1 kernel repeats with period N over 2N lags."""
    rng = np.random.default_rng(seed)
    sizes = (2, 3, 4, 16, 256, 1024) if quick else (2, 3, 4, 16, 256, 1024, 4096)
    worst_dft, worst_exp, worst_ratio, worst_period = 0.0, 0.0, 0.0, 0.0
    for N in sizes:
        K = rng.standard_normal(N)
        W = dft_weights(K)
        rebuilt_exact = dlr_kernel_roots_reference(np.zeros(N), W, N, chunk=max(1, 2**22 // N))
        rebuilt_exp = dlr_kernel(roots_of_unity_log(N), W, 2 * N, chunk=max(1, 2**22 // N))
        scale_k = max(1.0, np.abs(K).max())
        err_dft = float(np.abs(rebuilt_exact - K).max())
        err_exp = float(np.abs(rebuilt_exp[:N] - K).max())
        err_period = float(np.abs(rebuilt_exp[N:] - rebuilt_exp[:N]).max())
        phase_scale = (N + 2 * N * 2 * np.pi) * np.abs(W).sum()  # largest lag 2N
        worst_ratio = max(worst_ratio,
                          err_dft / tolerance("dft_reconstruction", "float64", np.sqrt(N) * np.log2(2 * N) * scale_k),
                          max(err_exp, err_period) / tolerance("kernel_phase", "float64", phase_scale))
        worst_dft, worst_exp = max(worst_dft, err_dft), max(worst_exp, err_exp)
        worst_period = max(worst_period, err_period)
    return Lemma(
        witness={"max_error_exact_phase": worst_dft, "max_error_exp_log": worst_exp,
                 "max_periodicity_error": worst_period, "worst_error_over_tolerance": worst_ratio,
                 "largest_N": float(sizes[-1])},
        findings=(numeric_finding(
            f"random real K, N in {sizes}: W = fft(K)/N reproduces K (exact-phase sum and the layer's exp(l log lambda) "
            "route), and the |lambda| = 1 kernel repeats with period N over 2N lags",
            worst_ratio <= 1.0, scope=f"one random K per N in {sizes} (numeric, float64)", covers=D3_PART,
            holds_when=f"max error {max(worst_dft, worst_exp):.2e}, periodicity error {worst_period:.2e}",
            fails_when=f"error / tolerance reached {worst_ratio:.3g}"),))


def derive_d3(quick: bool = False, seed: int = 13) -> ClaimResult:
    """D3: at lambda_n = e^{2 pi i n/N} a size-N DLR reproduces any length-N kernel; N-periodicity.

    Derived for symbolic N through the geometric sum over the roots of unity (V^H V = N I, `d3_any_size`); the
    N = 2, 3, 4 matrices and the random kernels are checks of the same statement on cases.
    """
    start = time.perf_counter()
    small = d3_small_cases()
    general = d3_any_size()
    periodic = d3_periodic()
    return claim_from_lemmas(
        "D3", lemmas=(small, general, periodic, d3_numeric(quick, seed)), start=start,
        title="periodic initialisation: a size-N DLR expresses any length-N kernel (W = DFT(K)/N)",
        assumptions=("lambda_n = exp(2 pi i n / N), n = 0..N-1; kernel length N; K real",
                     "K_l = Re(sum_n W_n lambda_n^l) (docs/models.md)"))

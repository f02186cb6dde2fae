"""The project's one tolerance table and the one comparison helper (`compare`, `assert_close`).

Error measure: the normwise relative error  rel = max|got - ref| / max|ref|  (inf-norms over every
entry), reported together with the max-abs error. A normwise measure does not blow up at entries that
happen to be near zero, and it is what a user of an oracle wants to know: how far is my output from
the right one, compared with the size of the right one.

Tolerance: rtol = factor(row) * eps(dtype) * memory, where

    memory = min(L, 1 / (1 - r))        r = the largest |eigenvalue| (RotRNN: gamma; LRU, DLR: |lambda|)

is the number of past steps that effectively contribute to one output. A linear recurrence, or a sum
over a kernel, adds one rounding error per contributing step, so the worst-case relative error grows
linearly in that number (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 3 and 8), and
it is the same for a sequential scan, a tree scan, or a long convolution sum up to the constant. The
factors cover the constant (a few roundings per step, the products with B and C around the scan, an
FFT's log L): they are fixed per row, never per test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# row -> (factor, why)
FACTORS: dict[str, tuple[float, str]] = {
    "forward": (32.0, "outputs of two implementations or views of one layer or model: a few roundings per "
                      "contributing step in the scan or kernel sum, plus the projections B u and C x"),
    "state": (32.0, "final or streamed states: the same roundings as the outputs, without the read-out"),
    "gradient": (128.0, "gradients by reverse-mode autodiff: a second scan in reverse time and products of "
                        "the forward quantities, so about twice the forward roundings and a larger constant"),
    "identity": (64.0, "an algebraic identity checked numerically (orthogonality, power formulas, "
                       "converters): matrix exponentials and products of size N, no scan over L"),
}

# States that cross an orthogonal change of basis on the way in and out (RotRNN in PyTorch and JAX holds
# z = P^T x, P = expm(S), S = M - M^T): one extra term, relative, proportional to `basis_scale(M)`.
BASIS: tuple[float, str] = (
    8.0, "the state crosses P = expm(M - M^T) in and out (z = P^T x); scaling and squaring makes P orthogonal "
         "only to about eps * n * ||M - M^T||_2 (measured: at most 4.5 x eps x n max(1, ||M - M^T||_2) over 1,500 "
         "random M in float32, 2.9 in float64)")

EPS = {"float64": float(np.finfo(np.float64).eps), "float32": float(np.finfo(np.float32).eps),
       # the low dtypes of the mixed-precision policy (docs/precision.md, "Low precision"): machine epsilon, twice
       # the unit roundoff (2^-8, 2^-11); bf16's is torch.finfo(torch.bfloat16).eps (NumPy has no bfloat16)
       "bfloat16": 2.0**-7, "float16": float(np.finfo(np.float16).eps)}
LOW = ("bfloat16", "float16")

# The low dtypes' rows. Under the policy only the operands and results of the projections are in the low dtype; the
# recurrence (state, scan, kernel, FFT) is float32. So a low-dtype error does not grow with the memory: it is a fixed
# number of roundings, each at most the unit roundoff eps / 2, relative to the summands they round, and the bound is
#     rtol = factor(row) * eps(low) * depth  +  the float32 row of the same name (the recurrence's own error)
# depth is 1 for a layer, n_layers + 1 for a model (each block, and the encoder with the decoder, one layer's worth).
# row -> (factor, why)
LOW_FACTORS: dict[str, tuple[float, str]] = {
    "forward": (4.0, ("a layer's output: the input, the input projection's weights (B, W_in), the read-out's (C, W_out) "
                     "and D each rounded once, and the output once: 4 roundings of eps/2 = 2 eps of the summands, and "
                     "twice that for the summands' size over the output's (their cancellation in the normwise measure)")),
    "gradient": (8.0, ("a layer's gradients: the forward's roundings reach them, the output's cotangent is rounded to the "
                      "low dtype, and the input gradient once more on the way out: about twice the forward's")),
    "model": (4.0, ("a deep model's output, per depth unit (each block; the encoder with the decoder): a block rounds "
                   "the norm's output, the mixer's (the forward row), GELU's, the GLU's two products and their product, "
                   "and the residual sum: about 8 roundings of eps/2, 4 eps of the summands")),
}


@dataclass(frozen=True)
class Tolerance:
    rtol: float     # bound on the normwise relative error
    why: str        # the reason for the size, shown in failure messages and reports


def memory(length: int, max_abs_eigenvalue: float) -> float:
    """min(L, 1/(1 - r)), at least 1: the effective number of past steps behind one output."""
    if max_abs_eigenvalue >= 1.0:
        return float(max(length, 1))
    return float(max(1.0, min(length, 1.0 / (1.0 - max_abs_eigenvalue))))


def basis_scale(M) -> float:
    """n * max(1, max_h ||M_h - M_h^T||_2) for RotRNN's M (heads n n): the size of P's orthogonality defect / eps."""
    M = np.asarray(M, dtype=np.float64)
    S = M - np.swapaxes(M, -1, -2)
    return float(M.shape[-1] * max(1.0, float(np.max(np.linalg.norm(S, ord=2, axis=(-2, -1))))))


def tolerance(row: str, dtype: str, length: int = 1, max_abs_eigenvalue: float = 0.0,
              basis: float = 0.0, depth: int = 1) -> Tolerance:
    """The tolerance for comparing two computations of one quantity in `dtype`, by the table's `row` (forward,
    state, gradient, identity; in a low dtype forward, gradient, model).

    `basis`: `basis_scale(M)` when the compared quantity crossed RotRNN's rotated basis (a state passed in
    or out of an implementation that holds z = P^T x, or outputs computed from such a state); 0 otherwise.
    `depth`: the low dtypes' row 'model' only: n_layers + 1 (LOW_FACTORS).
    """
    if dtype in LOW:
        return low_tolerance(row, dtype, length, max_abs_eigenvalue, basis, depth)
    if row not in FACTORS:
        raise KeyError(f"unknown tolerance row {row!r}; expected one of {', '.join(FACTORS)}")
    if dtype not in EPS:
        raise KeyError(f"unknown dtype {dtype!r}; expected one of {', '.join(EPS)}")
    factor, why = FACTORS[row]
    m = memory(length, max_abs_eigenvalue)
    why = f"{factor:g} x eps({dtype}) x memory {m:.4g} (L={length}, r={max_abs_eigenvalue:.6g}): {why}"
    if basis < 0:
        raise ValueError(f"basis: expected basis_scale(M) >= 0, found {basis}")
    if basis == 0:
        return Tolerance(factor * EPS[dtype] * m, why)
    return Tolerance(factor * EPS[dtype] * m + BASIS[0] * EPS[dtype] * basis,
                     f"{why}; + {BASIS[0]:g} x eps({dtype}) x basis {basis:.4g}: {BASIS[1]}")


def low_tolerance(row: str, dtype: str, length: int = 1, max_abs_eigenvalue: float = 0.0, basis: float = 0.0,
                  depth: int = 1) -> Tolerance:
    """A low dtype's row: factor(row) * eps(low) * depth + the float32 row (LOW_FACTORS)."""
    if row not in LOW_FACTORS:
        raise KeyError(f"unknown tolerance row {row!r} for {dtype}; expected one of {', '.join(LOW_FACTORS)}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1 or (depth > 1 and row != "model"):
        raise ValueError(f"depth: expected a positive integer, above 1 only for row 'model', found {depth!r}")
    factor, why = LOW_FACTORS[row]
    inner = tolerance("forward" if row == "model" else row, "float32", length, max_abs_eigenvalue, basis)
    return Tolerance(factor * EPS[dtype] * depth + inner.rtol,
                     f"{factor:g} x eps({dtype}) x depth {depth}: {why}; + the float32 recurrence: {inner.why}")


@dataclass(frozen=True)
class Comparison:
    name: str
    max_abs: float
    rel: float
    rtol: float
    ok: bool
    why: str

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "EXCEEDS"
        return (f"{self.name}: max-abs {self.max_abs:.3e}, relative {self.rel:.3e} {verdict} "
                f"tolerance {self.rtol:.3e} [{self.why}]")


def compare(name: str, ref, got, row: str, dtype: str, length: int = 1,
            max_abs_eigenvalue: float = 0.0, scale: float | None = None, basis: float = 0.0,
            depth: int = 1) -> Comparison:
    """Compare `got` with `ref` (any array-likes of one shape); NaN/Inf in either fails first.

    `scale`: when `ref` is a sum of larger terms that cancel (e.g. y(u) + y(v) in a linearity check),
    rounding errors are relative to those terms, not to the small result: pass their magnitude, and
    the error is measured relative to max(max|ref|, scale).
    """
    ref = np.asarray(ref)
    got = np.asarray(got)
    tol = tolerance(row, dtype, length, max_abs_eigenvalue, basis, depth)
    if ref.shape != got.shape:
        return Comparison(name, np.inf, np.inf, tol.rtol, False, f"shape {got.shape} != reference {ref.shape}")
    for label, arr in (("reference", ref), ("result", got)):
        if not np.all(np.isfinite(arr)):
            return Comparison(name, np.inf, np.inf, tol.rtol, False, f"NaN/Inf in the {label}")
    if ref.size == 0:
        return Comparison(name, 0.0, 0.0, tol.rtol, True, tol.why)
    ref64 = ref.astype(np.complex128 if np.iscomplexobj(ref) else np.float64)
    max_abs = float(np.max(np.abs(got.astype(ref64.dtype) - ref64)))
    scale = max(float(np.max(np.abs(ref64))), scale or 0.0)
    rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else np.inf)
    return Comparison(name, max_abs, rel, tol.rtol, rel <= tol.rtol, tol.why)


def assert_close(name: str, ref, got, row: str, dtype: str, length: int = 1,
                 max_abs_eigenvalue: float = 0.0, scale: float | None = None, basis: float = 0.0,
                 depth: int = 1) -> Comparison:
    """`compare`, raising AssertionError (with both errors and the reason for the tolerance) on failure."""
    result = compare(name, ref, got, row, dtype, length, max_abs_eigenvalue, scale, basis, depth)
    if not result.ok:
        raise AssertionError(str(result))
    return result


# ---------------------------------------------------------------------------------------------
# Identities of the theory (no scan over L): the error grows with a scale each reason names
# (a matrix size, a power k, a phase l*theta), which the caller passes. A tolerance is
# `factor * eps(dtype) * scale`.
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScaledTolerance:
    factor: float  # multiple of eps(dtype) * scale
    reason: str  # why the error is expected to grow with `scale`


SCALED: dict[tuple[str, str], ScaledTolerance] = {
    ("expm_orthogonality", "float64"): ScaledTolerance(
        100.0,
        "expm's scaling and squaring does ~log2||S|| squarings of n-term sums: scale = n * max(1, ||S||_2)",
    ),
    ("schur_reconstruction", "float64"): ScaledTolerance(
        100.0,
        "real Schur form is backward stable: scale = n (sums of n terms, ||A||_2 = 1)",
    ),
    ("matrix_power", "float64"): ScaledTolerance(
        100.0,
        "each squaring doubles the error already in A^j, so it grows like k (not log k), and the block side "
        "rounds the angle k*theta to eps * k*|theta|: scale = n * (1 + k)",
    ),
    ("dft_reconstruction", "float64"): ScaledTolerance(
        10.0,
        "an N-term sum of unit-modulus terms after an FFT (log N stages): scale = sqrt(N) * log2(2N) * max|K|",
    ),
    ("kernel_phase", "float64"): ScaledTolerance(
        4.0,
        "exp(l log lambda) rounds the phase l*theta to eps * l*|theta|, and the sum has N terms: per lag, "
        "scale = (N + l * max|theta|) * sum_n |W_n| |lambda_n|^l",
    ),
    ("kernel_phase", "float32"): ScaledTolerance(
        4.0,
        "as for float64 with eps(float32); l*theta itself is rounded in float32, so the error grows like l",
    ),
    ("conjugate_pairing", "float64"): ScaledTolerance(
        100.0,
        "each eigenvalue exp(-exp(nu_log) + i exp(theta_log)) is rounded to a few eps; N of them are matched: scale = N",
    ),
    ("recurrence_equality", "float64"): ScaledTolerance(
        100.0,
        "two float64 recursions of T steps, each step an N-term sum: scale = T * N * max|y|",
    ),
    ("expectation_recursion", "float64"): ScaledTolerance(
        100.0,
        "T steps of a covariance recursion, each rounding once per entry: scale = T * N",
    ),
    ("covariance_recursion", "float64"): ScaledTolerance(
        2.0,
        "tr Sigma_t (Sigma_t = A Sigma_{t-1} A^T + xiB xiB^T, A = gamma P Theta P^T) against 1 - gamma^(2t), "
        "per t: a step's rounding (N-term sums, the H-term drive, xi's own rounding) then decays like gamma^2 "
        "per step, and a computed A / gamma whose singular values lie within delta of 1 (expm's defect in P, "
        "mostly) changes ||A^k xiB||_F^2 by up to 2 k delta times its size: scale_t = (N + H + 2) S1_t + "
        "2 (delta / eps) S2_t, S1_t = sum_{k<t} gamma^(2k) <= min(t, 1 / (1 - gamma^2)), "
        "S2_t = (1 - gamma^2) sum_{k<t} k gamma^(2k) <= min(t^2 (1 - gamma^2) / 2, gamma^2 / (1 - gamma^2)); "
        "the delta term is attained at N = 2 (A / gamma a multiple of a rotation), so the factor 2 is the margin",
    ),
    ("central_difference", "float64"): ScaledTolerance(
        2.0,
        "a derivative against the central difference D(h) = (g(p + h d) - g(p - h d)) / 2h of the computed g: "
        "D(h)'s truncation error (c h^2 + O(h^4)) is estimated by Richardson from D(2h), |D(2h) - D(h)| / 3, "
        "and its rounding is at most the gradient row's error of g divided by h: scale = |D(2h) - D(h)| / eps "
        "+ 128 memory max|g| / h (`central_difference_scale`); the factor 2 leaves 6 times the truncation "
        "estimate, for the O(h^4) term",
    ),
}


def central_difference_scale(d_h, d_2h, g_max: float, h: float, memory: float = 1.0) -> float:
    """The scale of SCALED['central_difference']: |D(2h) - D(h)| / eps + 128 memory max|g| / h (float64)."""
    eps = float(np.finfo(np.float64).eps)
    spread = float(np.max(np.abs(np.asarray(d_2h) - np.asarray(d_h)))) if np.size(d_h) else 0.0
    return spread / eps + FACTORS["gradient"][0] * memory * g_max / h


def scaled_tolerance(row: str, dtype: str, scale: float) -> float:
    """The allowed error for a comparison by SCALED's `row` in `dtype` at the given scale."""
    entry = SCALED[(row, dtype)]
    return entry.factor * float(np.finfo(np.dtype(dtype)).eps) * float(scale)

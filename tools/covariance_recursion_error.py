"""Measure how the covariance recursion's error against 1 - gamma^(2t) grows, and how tight its bound is.

The property test_rotrnn_closed_form_equals_the_covariance_recursion (properties/) compares the float64
recursion Sigma_t = A Sigma_{t-1} A^T + xiB xiB^T (theory.normalisation.expected_sq_norm_recursion) with
the closed form 1 - gamma^(2t), under the bound `covariance_recursion_tolerance` (the
"covariance_recursion" entry of base/tolerance.py). This script splits the error over a grid of T,
gamma, N, H and ||M - M^T|| into

    rounding  float64 recursion - the same recursion in long double on the same A, xiB
    drift     long-double recursion - the exact 1 - gamma^(2t) (A / gamma not orthogonal, xi rounded)

and prints max(error / bound) per gamma_log and T range (bound = the property's), so the law and its
constant can be checked: every entry must be below 1, and the largest near 1 / factor.

    python tools/covariance_recursion_error.py [--T 4096] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import pathlib
import time

import numpy as np

from linrnn.theory.normalisation import expected_sq_norm_recursion, rotrnn_expected_sq_norm, rotrnn_head_matrices
from linrnn.theory.rotation import rotation_from_skew

ROOT = pathlib.Path(__file__).resolve().parents[1]
EPS = float(np.finfo(np.float64).eps)
LD = np.longdouble


def _law():
    """The property's bound, imported from the test module itself so the two cannot drift apart."""
    path = ROOT / "properties" / "test_theory_properties.py"
    spec = importlib.util.spec_from_file_location("theory_properties", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.covariance_recursion_tolerance


def one_case(gamma_log: float, n: int, h: int, m_scale: float, seed: int, T: int, bound) -> dict:
    """Errors of one head over t = 0..T, and the head's conditioning."""
    rng = np.random.default_rng(seed)
    M = m_scale * rng.standard_normal((n, n))
    A, xiB, gamma = rotrnn_head_matrices(M, rng.uniform(0, 7, n // 2), gamma_log, rng.standard_normal((n, h)))
    P = rotation_from_skew(M)
    t = np.arange(T + 1)
    got = expected_sq_norm_recursion(A, xiB, T)
    closed = rotrnn_expected_sq_norm(gamma, t)
    # long-double reference on the same A, xiB: tr Sigma_t = sum_{k<t} ||A^k xiB||_F^2
    A_ld, V = A.astype(LD), xiB.astype(LD)
    sq = np.empty(T, dtype=LD)
    for k in range(T):
        sq[k] = np.sum(V * V)
        V = A_ld @ V
    ref = np.concatenate([[LD(0)], np.cumsum(sq)])
    exact_closed = -np.expm1(2 * t.astype(LD) * np.log(LD(gamma)))
    tol = bound(A, gamma, h, T)
    return dict(gamma_log=gamma_log, n=n, h=h, s_norm=float(np.linalg.norm(M - M.T, 2)),
                p_defect=float(np.linalg.norm(P.T @ P - np.eye(n), 2)) / EPS,
                ratio=np.abs(got - closed)[1:] / tol[1:],
                rounding=np.abs((got - ref).astype(np.float64))[1:] / tol[1:],
                drift=np.abs((ref - exact_closed).astype(np.float64))[1:] / tol[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=4096, help="longest sequence (default 4096)")
    parser.add_argument("--quick", action="store_true", help="a smaller grid (N in 2, 8; one seed; 11 gammas)")
    args = parser.parse_args(argv)
    if np.finfo(LD).eps > 1e-18:
        parser.error("needs an extended-precision long double (x86-64 Linux) for the reference")
    bound = _law()
    gamma_logs = np.linspace(-8, 2, 11 if args.quick else 21)
    ns, seeds = ((2, 8), (0,)) if args.quick else ((2, 4, 6, 8), (0, 1))
    grid = list(itertools.product(gamma_logs, ns, (1, 3), (0.3, 1.0, 3.0), seeds))
    start = time.perf_counter()
    cases = [one_case(gl, n, h, ms, 1000 * s + 7, args.T, bound) for gl, n, h, ms, s in grid]
    edges = [1, 2, 8, 32, 128, 512, 2048, args.T]
    edges = sorted({e for e in edges if e <= args.T})
    print(f"{len(cases)} heads, t = 1..{args.T}, in {time.perf_counter() - start:.0f} s; "
          f"entries: max over the heads of max_t error / bound (below 1 = within the bound)\n")
    head = "gamma_log  gamma    " + " ".join(f"t<={e:<5d}" for e in edges) + "  rounding  drift"
    print(head)
    for gl in gamma_logs:
        rows = [c for c in cases if c["gamma_log"] == gl]
        cells = []
        lo = 0
        for e in edges:
            cells.append(max(c["ratio"][lo:e].max() for c in rows) if e > lo else np.nan)
            lo = e
        rnd = max(c["rounding"].max() for c in rows)
        dft = max(c["drift"].max() for c in rows)
        print(f"{gl:8.1f}  {np.exp(-np.exp(gl)):.5f}  " + " ".join(f"{x:8.3f}" for x in cells)
              + f"  {rnd:8.3f}  {dft:6.3f}")
    print("\nby N and the scale of M: max error / bound, and how far expm's P is from orthogonal")
    groups: dict[tuple[int, float], list[dict]] = {}
    for c, (gl, n, h, ms, s) in zip(cases, grid):
        groups.setdefault((n, ms), []).append(c)
    for (n, ms), rows in sorted(groups.items()):
        print(f"N = {n}  M scale {ms:3.1f}  ||M - M^T|| up to {max(c['s_norm'] for c in rows):5.2f}:  "
              f"max ratio {max(c['ratio'].max() for c in rows):.3f}  ||P^T P - I|| / eps up to "
              f"{max(c['p_defect'] for c in rows):7.1f}")
    overall = max(c["ratio"].max() for c in cases)
    print(f"\noverall max error / bound = {overall:.3f}")
    return 0 if overall <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""R5: a RotRNN block is a complex mode read out by Re."""

import numpy as np

from linrnn.theory.equivalence import (
    complex_diagonal_outputs,
    derive_r5,
    impulse_response_complex,
    impulse_response_real,
    rotrnn_head_as_lru,
    rotrnn_head_outputs,
)
from linrnn.theory.records import tolerance
from linrnn.theory.rotation import rotation_from_skew


def test_r5_every_part_holds():
    r5 = derive_r5(quick=True)
    assert r5.claim == "R5" and r5.verdict == "proved"
    assert [f.verdict for f in r5.findings] == ["proved", "proved", "proved", "verified"]
    assert [f.general for f in r5.findings] == [True, True, True, False]
    assert len(r5.parts) == 2 and all("proved for" in r5.part_scope(p) for p in r5.parts)
    T, N = r5.witness["T"], r5.witness["N"]
    assert r5.witness["max_output_difference"] <= tolerance("recurrence_equality", "float64", T * N * 10)


def test_impulse_responses_agree_and_the_sign_of_c_matters():
    rng = np.random.default_rng(0)
    b, c = rng.standard_normal((50, 2)), rng.standard_normal((50, 2))
    gamma, theta, k = rng.uniform(0.5, 1, 50), rng.uniform(-7, 7, 50), rng.integers(0, 300, 50)
    real = impulse_response_real(gamma, theta, b, c, k)
    tol = tolerance("kernel_phase", "float64", (1 + 300 * 7) * np.abs(b).sum(1).max() * np.abs(c).sum(1).max())
    assert np.abs(real - impulse_response_complex(gamma, theta, b, c, k)).max() <= tol
    wrong_sign = c * np.array([1.0, -1.0])  # c~ = c1 + i c2 instead of c1 - i c2
    assert np.abs(real - impulse_response_complex(gamma, theta, b, wrong_sign, k)).max() > 1e6 * tol


def test_head_outputs_match_the_complex_system():
    rng = np.random.default_rng(1)
    n, h, T = 6, 2, 40
    P = rotation_from_skew(rng.standard_normal((n, n)))
    theta, gamma = rng.uniform(0, 2 * np.pi, n // 2), 0.95
    B_in, C, u = rng.standard_normal((n, h)), rng.standard_normal((3, n)), rng.standard_normal((T, h))
    y = rotrnn_head_outputs(P, theta, gamma, B_in, C, u)
    lam, B_c, C_c = rotrnn_head_as_lru(P, theta, gamma, B_in, C)
    assert lam.shape == (n // 2,) and B_c.shape == (n // 2, h) and C_c.shape == (3, n // 2)
    tol = tolerance("recurrence_equality", "float64", T * n * np.abs(y).max())
    assert np.abs(y - complex_diagonal_outputs(lam, B_c, C_c, u)).max() <= tol
    # Dropping P from the mapping breaks the equality (P is not the identity here).
    lam2, B2, C2 = rotrnn_head_as_lru(np.eye(n), theta, gamma, B_in, C)
    assert np.abs(y - complex_diagonal_outputs(lam2, B2, C2, u)).max() > 1e6 * tol

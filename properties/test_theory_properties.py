"""Hypothesis properties of the theory helpers: small sizes, bulk arrays from a drawn seed."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.theory.dlr_kernel import dft_weights, dlr_kernel, dlr_kernel_roots_reference, roots_of_unity_log
from linrnn.theory.equivalence import impulse_response_complex, impulse_response_real
from linrnn.theory.records import TOLERANCES, tolerance
from linrnn.theory.normalisation import (
    expected_sq_norm_recursion,
    lru_expected_sq_norm,
    rotrnn_expected_sq_norm,
    rotrnn_head_matrices,
)
from linrnn.theory.rotation import block_power, random_rotation, rotation_blocks, rotation_from_skew

seeds = st.integers(0, 2**32 - 1)
# Decays inside the stable ring by construction (gamma < 1); 1.0 itself is covered by unit tests.
decays = st.floats(0.0, 0.999)


@settings(deadline=None)
@given(n=st.integers(1, 8), seed=seeds, scale=st.floats(0.01, 3.0))
def test_expm_of_skew_part_is_a_rotation(n, seed, scale):
    M = scale * np.random.default_rng(seed).standard_normal((n, n))
    P = rotation_from_skew(M)
    tol = tolerance("expm_orthogonality", "float64", n * max(1.0, np.linalg.norm(M - M.T, 2)))
    assert np.abs(P.T @ P - np.eye(n)).max() <= tol
    assert abs(np.linalg.det(P) - 1.0) <= tol


@settings(deadline=None)
@given(half=st.integers(1, 4), seed=seeds, gamma=st.floats(0.5, 1.0), k=st.integers(0, 60))
def test_block_power_equals_matrix_power(half, seed, gamma, k):
    n = 2 * half
    A = random_rotation(n, np.random.default_rng(seed))
    P, theta = rotation_blocks(A)  # generic A: all Schur blocks are 2x2
    dense = np.linalg.matrix_power(gamma * A, k)
    assert np.abs(block_power(P, theta, gamma, k) - dense).max() <= tolerance("matrix_power", "float64", n * (1 + k)) * gamma**k


@settings(deadline=None)
@given(gamma=decays, e0=st.floats(0.0, 3.0), T=st.integers(0, 120))
def test_rotrnn_closed_form_equals_the_expectation_recursion(gamma, e0, T):
    m, expected = e0, [e0]
    for _ in range(T):
        m = gamma**2 * m + (1 - gamma**2)
        expected.append(m)
    got = rotrnn_expected_sq_norm(gamma, np.arange(T + 1), e0)
    assert np.abs(got - np.array(expected)).max() <= tolerance("expectation_recursion", "float64", (1 + T) * max(1.0, e0))


def covariance_recursion_tolerance(A, gamma, h, T):
    """Per-t bound (t = 0..T) on |tr Sigma_t - (1 - gamma^(2t))| for the float64 covariance recursion.

    Why a law and not a constant (the "covariance_recursion" entry of the tolerance table): the
    recursion iterates the computed A, and A / gamma is orthogonal only to its singular values' distance
    delta from 1 (P = expm(M - M^T) comes out of scaling and squaring up to ~1000 eps from orthogonal
    for ||M - M^T|| of a few, even at N = 2), so ||A^k xi B||_F^2 drifts from gamma^(2k) ||xi B||_F^2
    by up to 2 k delta times its size: summed, 2 delta S2_t. The rounding of each step decays like
    gamma^2 per later step: eps (N + H + 2) S1_t. tools/covariance_recursion_error.py measures both
    against a long-double reference on a grid of T, gamma, N, H and ||M||.
    """
    n = A.shape[0]
    sv = np.linalg.svd(A, compute_uv=False) / gamma
    delta = max(sv[0] - 1.0, 1.0 - sv[-1], 0.0)
    eps = np.finfo(np.float64).eps
    q_k = (gamma**2) ** np.arange(T + 1)  # gamma^(2k)
    s1 = np.concatenate([[0.0], np.cumsum(q_k[:-1])])  # sum_{k<t} gamma^(2k)
    s2 = (1 - gamma**2) * np.concatenate([[0.0], np.cumsum((np.arange(T + 1) * q_k)[:-1])])
    scale = (n + h + 2) * s1 + 2 * (delta / eps) * s2
    return np.array([tolerance("covariance_recursion", "float64", s) for s in scale])


@settings(deadline=None)
@given(half=st.integers(1, 4), h=st.integers(1, 3), seed=seeds, m_scale=st.floats(0.01, 3.0),
       gamma_log=st.floats(-8.0, 2.0), T=st.integers(0, 64))
def test_rotrnn_closed_form_equals_the_covariance_recursion(half, h, seed, m_scale, gamma_log, T):
    rng = np.random.default_rng(seed)
    n = 2 * half
    M = m_scale * rng.standard_normal((n, n))  # ||M - M^T|| sets how far expm's P is from orthogonal
    A, xiB, gamma = rotrnn_head_matrices(M, rng.uniform(0, 7, half), gamma_log, rng.standard_normal((n, h)))
    exact = expected_sq_norm_recursion(A, xiB, T)
    error = np.abs(exact - rotrnn_expected_sq_norm(gamma, np.arange(T + 1)))
    assert (error <= covariance_recursion_tolerance(A, gamma, h, T)).all()


def test_covariance_recursion_tolerance_is_attained_by_a_non_orthogonal_head():
    """The law is tight, not a loose constant: at N = 2 with A / gamma = (1 + d) times a rotation, the
    recursion drifts from 1 - gamma^(2t) by the full 2 delta S2_t, i.e. 1 / factor of the tolerance."""
    gamma, T, d = 0.95, 64, 1e-10  # d far above eps, so the drift term dominates the rounding term
    c, s = np.cos(0.7), np.sin(0.7)
    A = gamma * (1 + d) * np.array([[c, -s], [s, c]])
    xiB = np.sqrt(1 - gamma**2) * np.array([[0.6], [0.8]])
    error = np.abs(expected_sq_norm_recursion(A, xiB, T) - rotrnn_expected_sq_norm(gamma, np.arange(T + 1)))
    ratio = error[1:] / covariance_recursion_tolerance(A, gamma, 1, T)[1:]
    factor = TOLERANCES[("covariance_recursion", "float64")].factor
    assert 0.9 / factor <= ratio[-1] <= ratio.max() <= 1.0


@settings(deadline=None)
@given(lam_abs=decays, g=st.floats(0.0, 2.0), s=st.floats(0.0, 5.0), e0=st.floats(0.0, 3.0), T=st.integers(0, 120))
def test_lru_closed_form_equals_the_expectation_recursion(lam_abs, g, s, e0, T):
    m, expected = e0, [e0]
    for _ in range(T):
        m = lam_abs**2 * m + g**2 * s
        expected.append(m)
    got = lru_expected_sq_norm(lam_abs, g, s, np.arange(T + 1), e0)
    tol = tolerance("expectation_recursion", "float64", (1 + T) * max(1.0, max(expected)))
    assert np.abs(got - np.array(expected)).max() <= tol


@settings(deadline=None)
@given(N=st.integers(1, 64), seed=seeds)
def test_dft_weights_reconstruct_any_kernel(N, seed):
    K = np.random.default_rng(seed).normal(size=N)
    W = dft_weights(K)
    exact = dlr_kernel_roots_reference(np.zeros(N), W, 2 * N)
    through_exp = dlr_kernel(roots_of_unity_log(N), W, 2 * N)
    exact_tol = tolerance("dft_reconstruction", "float64", np.sqrt(N) * np.log2(2 * N) * max(1.0, np.abs(K).max()))
    exp_tol = tolerance("kernel_phase", "float64", (N + 2 * N * 2 * np.pi) * np.abs(W).sum())
    assert np.abs(exact[:N] - K).max() <= exact_tol and np.abs(exact[N:] - K).max() <= exact_tol  # N-periodic
    assert np.abs(through_exp[:N] - K).max() <= exp_tol and np.abs(through_exp[N:] - K).max() <= exp_tol


@settings(deadline=None)
@given(gamma=st.floats(0.0, 1.0), theta=st.floats(-10.0, 10.0), k=st.integers(0, 500), seed=seeds)
def test_rotrnn_block_impulse_response_is_a_complex_mode(gamma, theta, k, seed):
    b, c = np.random.default_rng(seed).standard_normal((2, 2))
    real = impulse_response_real(gamma, theta, b, c, k)
    cplx = impulse_response_complex(gamma, theta, b, c, k)
    scale = (1 + k * abs(theta)) * gamma**k * np.abs(b).sum() * np.abs(c).sum()
    floor = np.finfo(np.float64).tiny  # gamma^k can be subnormal, where relative precision is lost
    assert abs(real - cplx) <= tolerance("kernel_phase", "float64", scale) + floor

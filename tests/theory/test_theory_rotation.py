"""R1 and R2: the derivations and the numeric helpers they use."""

import time

import numpy as np
import pytest
import scipy.linalg

from linrnn.theory.records import tolerance
from linrnn.theory.rotation import (
    block_power,
    block_rotation,
    derive_r1,
    derive_r2,
    random_rotation,
    rotation_blocks,
    rotation_from_skew,
    time_powers,
)


@pytest.fixture(scope="module")
def r1():
    return derive_r1(quick=True)


@pytest.fixture(scope="module")
def r2():
    return derive_r2(quick=True)


def test_r1_every_part_holds(r1):
    assert r1.claim == "R1" and r1.verdict == "proved"
    assert [f.verdict for f in r1.findings] == ["proved", "proved", "proved", "verified"]
    # Only the symbolic-n derivation is general; n = 2, 3 and the numeric check are cases.
    assert [f.general for f in r1.findings] == [True, False, False, False]
    assert r1.scope.endswith("proved for all n, all real M (symbolic; series handled termwise)")
    texts = [s.text for s in r1.steps]
    assert "Eq(Sum((-1)**i/(factorial(i)*factorial(N - i)), (i, 0, N)), 0)" in texts  # exp(-S) exp(S) = I
    assert "Eq(d, 1)" in texts  # det exp(S) = 1
    assert r1.witness["largest_n"] == 64
    assert r1.witness["worst_error_over_tolerance"] <= 1.0
    assert r1.witness["matrices_checked"] == 7 * 2  # quick: two matrices per size
    assert 0.0 < r1.witness["max_orthogonality_error"] and 0.0 < r1.witness["max_det_error"]


def test_r1_witness_matches_an_independent_check():
    rng = np.random.default_rng(0)
    for n in (2, 5, 64):
        M = rng.standard_normal((n, n))
        P = rotation_from_skew(M)
        tol = tolerance("expm_orthogonality", "float64", n * max(1.0, np.linalg.norm(M - M.T, 2)))
        assert np.abs(P.T @ P - np.eye(n)).max() <= tol
        assert abs(np.linalg.det(P) - 1.0) <= tol
    # A matrix that is not skew gives a non-orthogonal exponential: the check can fail.
    M = rng.standard_normal((4, 4))
    not_rotation = scipy.linalg.expm(M)
    assert np.abs(not_rotation.T @ not_rotation - np.eye(4)).max() > 1e6 * tolerance("expm_orthogonality", "float64", 4)


def test_r2_equality_and_operation_count_are_proved_in_general_and_the_timing_supports(r2):
    assert r2.claim == "R2"
    equality = [f for f in r2.findings if f.covers.startswith("A^k =")]
    assert [f.verdict for f in equality] == ["proved", "proved", "verified"]
    assert [f.general for f in equality] == [True, True, False]
    assert r2.witness["min_det_P"] == pytest.approx(1.0)
    assert r2.witness["worst_error_over_tolerance"] <= 1.0
    # "Cheaply" is an operation count, symbolic in N and k: one dense product against >= 2 for k >= 4.
    (cheap,) = [f for f in r2.findings if f.covers.startswith("A^k cheaply")]
    assert cheap.evidence == "sympy" and cheap.general and cheap.verdict == "proved"
    assert "N**2*(N - 2)" in cheap.condition
    # The timing supports it (covers no part) and is judged at the largest measured N only.
    (timing,) = [f for f in r2.findings if f.evidence == "timing"]
    assert timing.covers == ""
    ratios = {k: v for k, v in r2.witness.items() if k.startswith("ratio_matrix_power_over_block_")}
    assert len(ratios) == 2 * 3  # quick: N in (8, 128), k in (16, 1024, 2^20)
    assert all(r2.witness[k.replace("ratio_matrix_power_over_block_", "time_block_")] > 0 for k in ratios)
    slower_at_largest = any(v < 1.0 for k, v in ratios.items() if k.startswith("ratio_matrix_power_over_block_N128_"))
    assert timing.verdict == ("fails" if slower_at_largest else "verified")
    assert r2.verdict == ("fails" if slower_at_largest else "proved")


def test_time_powers_records_positive_times_and_ratios():
    timing = time_powers((8,), (2, 2**20), seed=0, budget_s=0.001, rounds=2)
    for key in ("N8_k2", "N8_k1048576"):
        assert timing[f"time_block_{key}"] > 0 and timing[f"time_matrix_power_{key}"] > 0
        assert timing[f"ratio_matrix_power_over_block_{key}"] == pytest.approx(
            timing[f"time_matrix_power_{key}"] / timing[f"time_block_{key}"])
    assert "time_repeated_N8_k2" in timing and "time_repeated_N8_k1048576" not in timing  # k N^3 > 2^26


@pytest.mark.parametrize("k", [0, 1, 7, 2**20])
def test_block_power_equals_the_dense_block_product(k):
    rng = np.random.default_rng(k)
    P, theta = random_rotation(6, rng), rng.uniform(-np.pi, np.pi, 3)
    dense = 0.9**k * P @ block_rotation(k * theta) @ P.T
    assert np.abs(block_power(P, theta, 0.9, k) - dense).max() <= tolerance("matrix_power", "float64", 6)
    assert np.abs(block_power(P, theta, 1.0, k) - P @ block_rotation(k * theta + 0.1) @ P.T).max() > 1e-3


def test_block_rotation_uses_interleaved_pairs():
    theta = np.array([0.3, -1.2])
    T = block_rotation(theta)
    assert T[0, 1] == pytest.approx(-np.sin(0.3)) and T[1, 0] == pytest.approx(np.sin(0.3))
    assert T[2, 2] == pytest.approx(np.cos(-1.2)) and T[0, 2] == 0.0
    z = (T @ np.array([1.0, 2.0, 0.0, 0.0]))[:2]  # pair 0 as a complex number times e^{i theta}
    assert z[0] + 1j * z[1] == pytest.approx((1 + 2j) * np.exp(0.3j))


def _seed_with_improper_schur(size):
    for seed in range(50):
        A = rotation_from_skew(np.random.default_rng(seed).standard_normal((size, size)))
        if np.linalg.det(scipy.linalg.schur(A, output="real")[1]) < 0:
            return A
    pytest.skip("no seed in 0..49 gives det Z = -1")


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_rotation_blocks_reconstructs_with_a_proper_rotation(size):
    A = _seed_with_improper_schur(size) if size > 2 else rotation_from_skew(np.array([[0.0, 0.7], [0.0, 0.0]]))
    P, theta = rotation_blocks(A)
    assert np.linalg.det(P) == pytest.approx(1.0)
    assert np.abs(P @ block_rotation(theta) @ P.T - A).max() <= tolerance("schur_reconstruction", "float64", size)
    defect = np.abs(A.T @ A - np.eye(size)).max()  # expm's rotation is orthogonal only to this
    for k in (0, 1, 5, 50):
        dense = np.linalg.matrix_power(0.97 * A, k)
        tol = (tolerance("matrix_power", "float64", size * (1 + k)) + k * defect) * 0.97**k
        assert np.abs(block_power(P, theta, 0.97, k) - dense).max() <= tol


def test_rotation_blocks_rejects_real_eigenvalues_and_odd_sizes():
    with pytest.raises(ValueError, match="real eigenvalues"):
        rotation_blocks(np.eye(4))
    with pytest.raises(ValueError, match="even"):
        rotation_blocks(np.eye(3))


def test_time_powers_times_cpu_time_with_blas_on_one_thread(monkeypatch):
    """R2's timing runs with NumPy's BLAS held to one thread and reads this process's CPU time: a multi-threaded
    BLAS timed in wall time flipped the finding on a loaded machine (docs/claims.md, R2)."""
    from threadpoolctl import threadpool_info

    from linrnn.theory import rotation

    seen, clocks = [], []
    real = rotation._interleaved_best

    def spy(fns, budget_s, rounds):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return real(fns, budget_s, rounds)

    monkeypatch.setattr(rotation, "_interleaved_best", spy)
    monkeypatch.setattr(rotation.time, "process_time", lambda real_clock=time.process_time: clocks.append(1)
                        or real_clock())
    time_powers((8,), (2,), seed=0, budget_s=0.001, rounds=2)
    assert seen and all(threads <= {1} for threads in seen)
    assert clocks                                   # the rounds read CPU time

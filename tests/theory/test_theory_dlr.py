"""D3 (periodic initialisation) and D2 (signal survival, the long kernel)."""

import math

import numpy as np
import pytest

from linrnn.theory.dlr_kernel import (
    derive_d3,
    dft_weights,
    dlr_kernel,
    dlr_kernel_roots_reference,
    roots_of_unity_log,
)
from linrnn.theory.dlr_memory import (
    derive_d2,
    init_delta,
    kernel_errors,
    log10_survival,
    max_delta_for_survival,
    survival_fraction,
)
from linrnn.theory.records import SURVIVAL_THRESHOLD, tolerance


@pytest.fixture(scope="module")
def d2():
    return derive_d2(quick=True)


def test_d3_every_part_holds():
    d3 = derive_d3(quick=True)
    assert d3.claim == "D3" and d3.verdict == "proved"
    assert [f.verdict for f in d3.findings] == ["proved", "proved", "proved", "verified"]
    # N = 2, 3, 4 alone would only verify D3: the symbolic-N geometric sum is what proves it.
    assert [f.general for f in d3.findings] == [False, True, True, False]
    assert "proved for all N >= 1, any real K (symbolic)" in d3.scope
    assert "EmptySet" in [s.text for s in d3.steps]  # no root of unity omega^d = 1 with 0 < |d| < N
    assert d3.witness["worst_error_over_tolerance"] <= 1.0


@pytest.mark.parametrize("N", [1, 2, 5, 64])
def test_dft_weights_reproduce_the_kernel_and_it_is_periodic(N):
    K = np.random.default_rng(N).standard_normal(N)
    W = dft_weights(K)
    direct = np.array([(W * np.exp(2j * np.pi * np.arange(N) * l / N)).sum().real for l in range(2 * N)])
    tol = tolerance("kernel_phase", "float64", (N + 2 * N * 2 * np.pi) * np.abs(W).sum())
    assert np.abs(direct[:N] - K).max() <= tol and np.abs(direct[N:] - K).max() <= tol
    assert np.abs(dlr_kernel(roots_of_unity_log(N), W, 2 * N) - direct).max() <= tol
    assert np.abs(dlr_kernel_roots_reference(np.zeros(N), W, 2 * N) - direct).max() <= tol


def test_kernel_with_decay_is_damped_periodic_and_chunking_does_not_matter():
    N, delta = 8, 0.01
    W = dft_weights(np.random.default_rng(0).standard_normal(N))
    K = dlr_kernel(roots_of_unity_log(N, delta), W, 5 * N, chunk=7)
    tol = tolerance("kernel_phase", "float64", (N + 5 * N * 2 * np.pi) * np.abs(W).sum())
    assert np.abs(K[N:] - math.exp(-delta * N / 2) * K[:-N]).max() <= tol
    assert np.abs(K - dlr_kernel(roots_of_unity_log(N, delta), W, 5 * N, chunk=3)).max() <= tol
    many = dlr_kernel(roots_of_unity_log(N, delta), np.stack([W, 2 * W]), 5 * N)
    assert many.shape == (2, 5 * N) and np.allclose(many[1], 2 * K)


def test_kernel_overflow_raises_and_float32_is_float32():
    with pytest.raises(FloatingPointError):
        dlr_kernel(np.array([1.0 + 0.0j]), np.array([1.0 + 0.0j]), 1000)
    k32 = dlr_kernel(roots_of_unity_log(4, 1e-3), np.ones(4, dtype=complex), 10, dtype="float32")
    assert k32.dtype == np.float32


def test_survival_formulas():
    assert survival_fraction(1e-5, 2**20) == pytest.approx(math.exp(-1e-5 * 2**20 / 2))
    assert log10_survival(0.1, 2**20) == pytest.approx(-0.1 * 2**20 / 2 / math.log(10))
    d_star = max_delta_for_survival(2**20)
    assert survival_fraction(d_star, 2**20) == pytest.approx(SURVIVAL_THRESHOLD)
    delta = init_delta(1000, 1e-4, 1e-1, np.random.default_rng(0))
    assert delta.min() >= 1e-4 and delta.max() <= 1e-1


def test_d2_holds_at_the_claims_initialisation_and_the_default_one_is_a_side_finding(d2):
    """The claim speaks of eigenvalues near the unit circle (the synthetic-task initialisation, Delta = 1e-5): that
    decides it. The default initialisation (Delta >= 1e-4) carries no signal over 2^20 steps: shown, not deciding."""
    assert d2.claim == "D2" and d2.verdict == "verified" and not d2.partly
    by_statement = {f.statement.split(" initialisation")[0]: f for f in d2.findings}
    assert by_statement["synthetic"].verdict == "verified" and not by_statement["synthetic"].side
    default = by_statement["default"]
    assert default.verdict == "fails" and default.side and default.covers == ""
    assert default not in d2.deciding and "3.04e-05" in default.condition and d2.condition == ""
    assert d2.witness["L"] == 2**20
    assert d2.witness["synthetic_best_survival"] == pytest.approx(math.exp(-1e-5 * 2**20 / 2))
    assert d2.witness["default_log10_best_survival"] == pytest.approx(log10_survival(1e-4, 2**20))
    assert d2.witness["kernel_synthetic_float32_finite"] == 1.0
    assert d2.witness["kernel_synthetic_float64_rel_error"] < d2.witness["kernel_synthetic_float32_rel_error"]


def test_kernel_errors_grow_with_length_in_float32():
    rng = np.random.default_rng(3)
    W = (rng.standard_normal(16) + 1j * rng.standard_normal(16)) / 16
    delta = np.full(16, 1e-5)
    short, long = kernel_errors(delta, W, 2**10), kernel_errors(delta, W, 2**15)
    assert long["float32_tail_rel_error"] > 4 * short["float32_tail_rel_error"]
    assert long["float64_error_over_model"] <= 4.0 and long["float32_error_over_model"] <= 4.0

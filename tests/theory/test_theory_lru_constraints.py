"""R9: the LRU check functions on valid, invalid, paired and drifted parameters."""

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.theory.records import tolerance
from linrnn.theory.lru_constraints import (
    check_lru_constraints,
    conjugate_completion,
    conjugate_pairing_distance,
    derive_r9,
    gamma_log_drift,
    imaginary_output_fraction,
    lru_eigenvalues,
    lru_ring_init,
    stationary_ratio,
    validate_lru_params,
)


@pytest.fixture()
def params():
    return lru_ring_init(8, 3, r_min=0.5, r_max=0.99, max_phase=2 * np.pi, seed=0)


def test_r9_every_part_holds():
    r9 = derive_r9(quick=True)
    assert r9.claim == "R9" and r9.verdict == "proved"
    assert [f.verdict for f in r9.findings] == ["proved", "proved", "proved", "verified", "verified"]
    assert [f.general for f in r9.findings] == [True, True, True, False, False] and len(r9.parts) == 3
    assert r9.witness["pairing_distance_init"] > 0.01
    assert r9.witness["conjugate_completion_pairing_distance"] <= tolerance("conjugate_pairing", "float64", 2 * 16)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda p: p.pop("gamma_log"), "missing key"),
        (lambda p: p.update(extra=np.zeros(1)), "unknown key"),
        (lambda p: p.update(B_im=np.zeros((8, 4))), "'B_im' must have shape"),
        (lambda p: p.update(D=np.full(3, np.nan)), "'D' has non-finite"),
    ],
)
def test_validation_names_the_key(params, edit, match):
    edit(params)
    with pytest.raises(LinrnnError, match=match):
        validate_lru_params(params)


def test_ring_init_measurements(params):
    lam = lru_eigenvalues(params)
    tol = tolerance("conjugate_pairing", "float64", 8)  # rounding of exp(-exp(nu_log)), N = 8
    assert np.all((np.abs(lam) >= 0.5 - tol) & (np.abs(lam) <= 0.99 + tol))
    assert np.abs(gamma_log_drift(params)).max() <= tol
    assert np.allclose(stationary_ratio(params), 1.0)
    report = check_lru_constraints(params, np.random.default_rng(0).standard_normal((32, 3)))
    assert not report.conjugate_pairs and report.pairing_distance > 0.01
    assert report.imaginary_output_fraction > 0.01
    assert report.stationary_total == pytest.approx(report.b_frobenius_sq)
    assert report.to_dict()["n_modes"] == 8


def test_pairing_distance_is_zero_only_for_conjugate_closed_spectra():
    lam = np.array([0.9 * np.exp(0.4j), 0.5 + 0j, 0.9 * np.exp(-0.4j)])
    distance, partner = conjugate_pairing_distance(lam)
    assert distance == 0.0 and list(partner) == [2, 1, 0]
    assert conjugate_pairing_distance(lam[:2])[0] > 0.5


def test_conjugate_completion_is_paired_and_real(params):
    paired = conjugate_completion(params)
    u = np.random.default_rng(1).standard_normal((40, 3))
    report = check_lru_constraints(paired, u)
    assert report.conjugate_pairs
    assert report.imaginary_output_fraction <= tolerance("recurrence_equality", "float64", 40 * 16)
    assert imaginary_output_fraction(params, u) > 0.01


def test_drift_moves_the_stationary_ratio_by_exp_two_delta(params):
    delta = np.linspace(-0.5, 0.5, 8)
    drifted = dict(params, gamma_log=params["gamma_log"] + delta)
    assert np.allclose(gamma_log_drift(drifted), delta)
    assert np.allclose(stationary_ratio(drifted), np.exp(2 * delta))
    assert check_lru_constraints(drifted).max_gamma_log_drift == pytest.approx(0.5)

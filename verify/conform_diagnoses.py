"""`linrnn conform`'s diagnoses that read measurements only (the probes that ask the target more questions are the
battery's): the float32 level of a float64 run, a constant factor of the recurrent part, and which way a state
hand-over fails.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.tolerance import tolerance
from linrnn.verify.conform_reference import fit_factor, rel_error
from linrnn.verify.conform_results import Diagnosis


def float32_level(dtype: str, rel: float, length: int, radius: float, row: str = "forward",
                  output_dtype=None) -> Diagnosis | None:
    """'computes in float32 only' when a float64 run's error is at the float32 level (within its tolerance)."""
    tol32 = tolerance(row, "float32", length, radius).rtol
    if dtype != "float64" or not (tolerance(row, "float64", length, radius).rtol < rel <= tol32):
        return None
    seen = f"; its output has dtype {output_dtype}" if output_dtype == np.float32 else ""
    return Diagnosis("float32_only", f"computes in float32 only: a float64 run's error {rel:.2e} is at the "
                                     f"float32 level (float32 tolerance {tol32:.2e}){seen}")


def factor_diagnosis(ref: np.ndarray, got: np.ndarray, tol: float, fit_tol: float, what: str,
                     name: str) -> tuple[Diagnosis, float] | None:
    """(the finding, the fit's error) when `got` is c x `ref` for some c != 1, within `fit_tol`; else None."""
    c, fit = fit_factor(ref, got)
    if fit > fit_tol or abs(c - 1.0) <= fit_tol:
        return None
    measured = f"{what} is {c:.6g} x the contract's {name} (fit error {fit:.2e}, tolerance {tol:.2e})"
    if abs(c - 0.5) <= fit_tol:
        return Diagnosis("factor_missing", f"the output is missing the factor 2 of conjugate symmetry: {measured}"), fit
    if abs(c - 2.0) <= 2 * fit_tol:
        return Diagnosis("factor_doubled", f"the output doubles the factor 2 of conjugate symmetry: {measured}"), fit
    return Diagnosis("factor", f"the output is off by a constant factor: {measured}"), fit


def explain_state(whole: np.ndarray, second: np.ndarray, zero: np.ndarray, tol: float,
                  probe_tol: float) -> list[Diagnosis]:
    """The second call against the single call (state carried) and against a zero start, row by row; rows match
    within `probe_tol` (the float32 level in a float64 run, whose rounding the output checks name)."""
    if rel_error(whole, zero) <= probe_tol:
        return []     # the state does not change this output measurably: nothing to tell apart
    carried = [rel_error(whole[b], second[b]) <= probe_tol for b in range(len(whole))]
    dropped = [rel_error(zero[b], second[b]) <= probe_tol for b in range(len(whole))]
    err = rel_error(whole, second)
    if all(dropped):
        return [Diagnosis("state_not_carried", f"the state is not carried between calls: the second call equals a "
                                               f"start from zero (error against the single call {err:.2e}, "
                                               f"tolerance {tol:.2e})")]
    if carried[0] and all(dropped[1:]):
        return [Diagnosis("state_batch0", f"the state is applied to batch element 0 only: rows 1.. of the second "
                                          f"call start from zero (error {err:.2e}, tolerance {tol:.2e})")]
    return [Diagnosis("state_wrong", f"the state carried between calls is wrong: the second call errs by {err:.2e} "
                                     f"against the single call (tolerance {tol:.2e})")]

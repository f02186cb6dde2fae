"""`linrnn conform`'s diagnoses that read measurements only (the probes that ask the target more questions are the
battery's): the float32 level of a float64 run, a constant factor of the recurrent part, and which way a state
hand-over fails.
"""

from __future__ import annotations

import numpy as np

from linrnn.base.tolerance import tolerance
from linrnn.verify.conform_reference import fit_factor, rel_error
from linrnn.verify.conform_results import Diagnosis


# The least error a float64 run must have to be named "computes in float32 only": a float32 computation rounds its
# operands or its output at the unit roundoff eps(float32)/2 = 6.0e-8, and the output's error is a part of that as
# large as the part of the output the rounded operand feeds (measured: the published float32 routes err by 3.3e-9 to
# 8e-7 in a float64 run; the least, s5-pytorch as an LRU at radius 0.9999, where D u is most of the output). A
# sixty-fourth of eps(float32), 1.9e-9, is above 1e-9 and far above float64's rounding: a smaller error is never
# called float32 arithmetic ("float64_excess": too small to name its cause).
FLOAT32_FLOOR = float(np.finfo(np.float32).eps) / 64


def float32_level(dtype: str, rel: float, length: int, radius: float, row: str = "forward",
                  output_dtype=None) -> Diagnosis | None:
    """The level of a float64 run's error above the float64 tolerance: 'computes in float32 only' when it is of
    float32's size (at least `FLOAT32_FLOOR`, within the float32 tolerance); 'float64_excess' when it is below that
    floor (float64 arithmetic that rounds more than the table allows); None otherwise (another dtype, or an error
    above the float32 tolerance)."""
    tol32 = tolerance(row, "float32", length, radius).rtol
    tol64 = tolerance(row, "float64", length, radius).rtol
    if dtype != "float64" or not tol64 < rel <= tol32:
        return None
    if rel < FLOAT32_FLOOR:
        return Diagnosis("float64_excess", f"rounding beyond the float64 table: a float64 run's error {rel:.2e} is "
                                           f"{rel / tol64:.3g} x the float64 tolerance {tol64:.2e} and under "
                                           f"{FLOAT32_FLOOR:.1e}, too small to be named float32 arithmetic: more "
                                           f"rounding than the table's bound allows (a difference that cancels, an "
                                           f"error growing faster than L eps, or float32 in a small part of the "
                                           f"output)")
    seen = f"; its output has dtype {output_dtype}" if output_dtype == np.float32 else ""
    return Diagnosis("float32_only", f"computes in float32 only: a float64 run's error {rel:.2e} is at the "
                                     f"float32 level (at least {FLOAT32_FLOOR:.1e}, within the float32 tolerance "
                                     f"{tol32:.2e}){seen}")


def follows(check: str, base: str, probe: str) -> Diagnosis:
    """A check whose probe's precondition fails (the output it builds on deviates already): it names no cause of its
    own. key: '<check>_follows_output' ('padding', 'packing', 'very_long', 'short_lengths', 'steps', 'step', ...)."""
    slug = ("short_lengths" if check.startswith("lengths ") else "steps" if check.startswith("steps ")
            else check.split(" L=")[0].replace(" ", "_"))
    return Diagnosis(f"{slug}_follows_output", f"the {check} check follows the output's deviation ({base} fails "
                                               f"too): its own probe ({probe}) does not apply")


def factor_diagnosis(ref: np.ndarray, got: np.ndarray, tol: float, fit_tol: float, what: str,
                     name: str) -> tuple[Diagnosis, float] | None:
    """(the finding, the fit's error) when `got` is c x `ref` for some c != 1, within `fit_tol`; else None. The factor
    2 of conjugate symmetry is named only for a read-out that has it (`name` '2 Re(...)': S4D, S5)."""
    c, fit = fit_factor(ref, got)
    if fit > fit_tol or abs(c - 1.0) <= fit_tol:
        return None
    measured = f"{what} is {c:.6g} x the contract's {name} (fit error {fit:.2e}, tolerance {tol:.2e})"
    if not name.startswith("2 Re("):
        return Diagnosis("factor", f"the output is off by a constant factor: {measured}"), fit
    if abs(c - 0.5) <= fit_tol:
        return Diagnosis("factor_missing", f"the output is missing the factor 2 of conjugate symmetry: {measured}"), fit
    if abs(c - 2.0) <= 2 * fit_tol:
        return Diagnosis("factor_doubled", f"the output doubles the factor 2 of conjugate symmetry: {measured}"), fit
    return Diagnosis("factor", f"the output is off by a constant factor: {measured}"), fit


def explain_state(whole: np.ndarray, second: np.ndarray, zero, tol: float,
                  probe_tol: float) -> list[Diagnosis]:
    """The second call against the single call (state carried) and against a zero start, row by row; rows match
    within `probe_tol` (the float32 level in a float64 run, whose rounding the output checks name). `zero`: the output
    from zero, or a tuple of them (no state, a zero state: `StateChecks.from_zero`), a row dropped if it is any."""
    zeros = zero if isinstance(zero, tuple) else (zero,)
    if rel_error(whole, zeros[0]) <= probe_tol:
        return []     # the state does not change this output measurably: nothing to tell apart
    carried = [rel_error(whole[b], second[b]) <= probe_tol for b in range(len(whole))]
    dropped = [any(rel_error(z[b], second[b]) <= probe_tol for z in zeros) for b in range(len(whole))]
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

"""`linrnn conform`'s step check (`Battery`'s part, `linrnn.verify.conform_battery`): the protocol's optional `step`,
one position at a time with its state passed on, against the reference, explained against the target's own forward.

    call.step(u_t, state) -> (y_t, state)    u_t (B H) float64 NumPy; state None at the start, then as returned
"""

from __future__ import annotations

import numpy as np

from linrnn.verify.conform_bundles import BATCH, H
from linrnn.verify.conform_diagnoses import follows
from linrnn.verify.conform_reference import reference, rel_error
from linrnn.verify.conform_results import Check, Diagnosis


class StepChecks:
    """The step check of `Battery`."""

    def step_mode(self, L: int) -> Check:
        name = "step"
        if self.layer.step is None:
            return Check(name, self.dtype, "n/a", detail="the callable has no step (the protocol's optional "
                                                         "step(u_t, state) -> (y_t, state))")
        if getattr(self.cfg, "bidirectional", False) or getattr(self.cfg, "max_kernel_length", None):
            return Check(name, self.dtype, "n/a", detail="a bidirectional layer, or a truncated DLR kernel, has no "
                                                         "step (docs/models.md)")
        u = self.rng(name).standard_normal((BATCH, L, H))
        stepped, _ = self.layer.stepped(u, name)
        ref = reference(self.cfg, self.params, u)
        tol = self.tol(L)
        c = self.check(name, rel_error(ref, stepped), tol, f"L = {L}, B = {BATCH}, one position at a time, each "
                                                            f"state passed on, against the reference")
        if c.status == "fail":
            c.diagnoses = self.explain_step(u, ref, stepped, c.rel, tol)
        return c

    def explain_step(self, u: np.ndarray, ref: np.ndarray, stepped: np.ndarray, rel: float,
                     tol: float) -> list[Diagnosis]:
        """The level; the recurrent part one position late (the output read before the state's update); the
        forward's own deviation; else the first position where the steps leave the target's own forward."""
        L = u.shape[1]
        level = self.level(self.cfg, rel, L, self.radius)
        if level:
            return level
        skip = self.params["D"] * u if "D" in self.params else np.zeros_like(u)                 # (B L H)
        late = skip + np.concatenate([np.zeros_like(u[:, :1]), (ref - skip)[:, :-1]], axis=1)
        late_error = rel_error(late, stepped)
        if late_error <= self.fit_tol(L, self.radius):
            return [Diagnosis("step_reads_before_update", f"step reads the output before it updates the state: its "
                                                          f"output at t is C x_(t-1) + D u_t, the recurrent part one "
                                                          f"position late (fit error {late_error:.2e}; against the "
                                                          f"contract {rel:.2e}, tolerance {tol:.2e})")]
        forward = self.layer(u, "step: the whole-sequence forward")[0]
        if rel_error(ref, forward) > tol:
            return [follows("step", "the whole-sequence forward on the same input", "where step leaves it")]
        per_t = np.max(np.abs(stepped - forward), axis=(0, 2)) / float(np.max(np.abs(forward)))
        t = int(np.argmax(per_t > tol))
        return [Diagnosis("step_departs", f"step departs from the whole-sequence forward from position t = {t} of "
                                          f"L = {L} (error {rel:.2e}, tolerance {tol:.2e}), the forward conforming")]

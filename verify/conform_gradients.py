"""`linrnn conform`'s gradient checks (`Battery`'s part, `linrnn.verify.conform_battery`): the input gradient of
<w, y> by the target's own autodiff against the reference's exact J^T w.
"""

from __future__ import annotations

import numpy as np

from linrnn.impls.errors import LinrnnError
from linrnn.verify.conform_bundles import BATCH, H
from linrnn.verify.conform_layer import input_gradient
from linrnn.verify.conform_reference import reference_gradient, rel_error
from linrnn.verify.conform_results import Check, Diagnosis


class GradientChecks:
    """The gradient checks of `Battery`."""

    # -- gradients --------------------------------------------------------------------------------

    def gradient(self, L: int) -> Check:
        name = "gradient"
        rng = self.rng(name)
        u = rng.standard_normal((BATCH, L, H))
        w = rng.standard_normal((BATCH, L, H))
        grad, how = input_gradient(self.layer, u, w)
        if grad is None:
            return Check(name, self.dtype, "n/a", detail=f"not differentiable here: {how}")
        if np.shape(grad) != u.shape:
            raise LinrnnError(f"target {self.name}: gradient: expected d<w, y>/du of shape {u.shape}, "
                              f"found {np.shape(grad)}")
        tol = self.tol(L, row="gradient")
        c = self.check(name, rel_error(reference_gradient(self.cfg, self.params, w, u), grad), tol,
                       f"input gradient of <w, y> by {how}, L = {L}, against the reference's J^T w")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, L, self.radius, row="gradient")
            if level:
                c.diagnoses = level
            elif self.one(f"random L={L}").status == "fail":
                c.diagnoses = [Diagnosis("gradient_follows_output", f"the input gradient follows the output's "
                                                                    f"deviation (the random L={L} check fails)")]
            else:
                c.diagnoses = [Diagnosis(
                    "gradient_not_adjoint", f"the input gradient is not the adjoint of the output: the output "
                                            f"conforms at L = {L}, its gradient errs by {c.rel:.2e} (tolerance "
                                            f"{tol:.2e})")]
        return c

"""`linrnn conform`'s gradient checks (`Battery`'s part, `linrnn.verify.conform_battery`): the input gradient of
<w, y> by the target's own autodiff against the reference's exact J^T w; the state's gradients (through `state=`)
against the target's own forward, linear in u and the state; the parameter gradients (through the protocol's optional
`params=`) against the reference's central differences, as `torch.autograd.gradcheck` compares.
"""

from __future__ import annotations

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import tolerance
from linrnn.verify.conform_bundles import BATCH, H
from linrnn.verify.conform_diagnoses import follows
from linrnn.verify.conform_layer import input_gradient, parameter_gradient, state_array, state_gradient, state_like
from linrnn.verify.conform_reference import linear_in_u, reference, reference_gradient, rel_error
from linrnn.verify.conform_results import Check, Diagnosis


DIRECTIONS = 3       # random directions of each state gradient's part
FD_STEP = 1e-3       # the parameter gradient's central differences: steps h and h/2 along a direction of unit rms


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

    # -- the state's gradients (through state=) -------------------------------------------------------

    def state_gradient(self, L: int) -> Check:
        """The gradients of <w, y> + <v, state out> by the target's autodiff, with respect to the state passed in
        and to u, against the target's own forward: linear in (u, state), so the difference of two calls along a
        direction is that direction's derivative, exactly but for rounding (`DIRECTIONS` random directions each). A
        contract not linear in u (the RG-LRU; `conform_reference.linear_in_u`) is linear in the state alone: its state
        part is checked here, its input part by `gradient`, against the reference's exact J^T w."""
        name = "state gradient"
        if na := self.stateless(name):
            return na
        rng = self.rng(name)
        u0, u, w = (rng.standard_normal((BATCH, n, H)) for n in (max(L // 2, 1), L, L))
        _, state = self.layer(u0, f"{name}: a state to pass in")
        if state is None:
            return Check(name, self.dtype, "n/a", detail="the callable returns no state to pass in")
        s = state_array(state)
        v = random_like(rng, s)
        grads, how = state_gradient(self.layer, u, state, w, v)
        if grads is None:
            return Check(name, self.dtype, "n/a", detail=f"not differentiable here: {how}")
        if np.shape(grads["state"]) != s.shape:
            raise LinrnnError(f"target {self.name}: {name}: expected a gradient of the state's shape {s.shape}, "
                              f"found {np.shape(grads['state'])}")

        def loss(uu, ss) -> float:
            """<w, y> + <v, state out> of the target's own call from the state ss."""
            y, out = self.layer(uu, f"{name}: a direction", state_like(state, ss))
            out = np.zeros_like(v) if out is None else state_array(out)
            return float(np.sum(w * y) + np.sum(v.real * out.real) + np.sum(v.imag * np.imag(out)))

        base = loss(u, s)
        errors = {}
        parts = (("state passed in", grads["state"], lambda d: (u, s + d)),
                 ("input, through the returned state", grads["input"], lambda d: (u + d, s)))
        for part, grad, moves in parts[:None if linear_in_u(self.kind) else 1]:   # a layer not linear in u: its
                                                                                    # input part is `gradient`'s
            like = s if part == "state passed in" else u
            scale = float(np.max(np.abs(like))) or 1.0
            deltas = [scale * random_like(rng, like) for _ in range(DIRECTIONS)]
            moved = [loss(*moves(d)) - base for d in deltas]
            dot = [float(np.sum(grad.real * d.real + np.imag(grad) * np.imag(d))) for d in deltas]
            errors[part] = max(abs(g - m) for g, m in zip(dot, moved)) / (max(map(abs, moved)) or 1.0)
        tol = self.tol(L, row="gradient")
        c = self.check(name, max(errors.values()), tol, f"by {how}, L = {L}, {DIRECTIONS} directions each, against "
                                                        f"the target's own forward; errors: "
                                                        + ", ".join(f"{k} {e:.2e}" for k, e in errors.items()))
        if c.status == "fail":
            c.diagnoses = (self.level(self.cfg, c.rel, L, self.radius, row="gradient")     # a float32 state
                           or self.explain_state_gradient(errors, tol))
        return c

    def explain_state_gradient(self, errors: dict[str, float], tol: float) -> list[Diagnosis]:
        if self.one("state").status == "fail":
            return [follows("state gradient", "the state check", "the state's gradient")]
        out = []
        if errors["state passed in"] > tol:
            out.append(Diagnosis("state_gradient_in", f"the gradient with respect to the state passed in (state=) is "
                                                      f"wrong: its directional derivatives err by "
                                                      f"{errors['state passed in']:.2e} against the target's own "
                                                      f"forward (tolerance {tol:.2e})"))
        if errors.get("input, through the returned state", 0.0) > tol:
            out.append(Diagnosis("state_gradient_out", f"the gradient flowing back from the returned state is wrong: "
                                                       f"the input gradient of <v, state> errs by "
                                                       f"{errors['input, through the returned state']:.2e} against the "
                                                       f"target's own forward (tolerance {tol:.2e})"))
        return out

    # -- the parameter gradients (through params=) -------------------------------------------------------

    def parameter_gradient(self, L: int) -> Check:
        """d<w, y>/d key for every key of the bundle, by the target's autodiff through `params=`, against the
        contract's derivative: central differences of the float64 reference along one random direction per key
        (5 points at steps h and h/2, `FD_STEP`). The tolerance is the table's gradient row plus the differences'
        own error: ten times the two steps' disagreement, and the reference's rounding (the table's float64 forward
        bound) divided by the step."""
        name = "parameter gradient"
        if not self.layer.takes_params:
            return Check(name, self.dtype, "n/a", detail="the callable takes no params= (the protocol's optional "
                                                         "bundle, for the parameter gradients)")
        rng = self.rng(name)
        u, w = rng.standard_normal((BATCH, L, H)), rng.standard_normal((BATCH, L, H))
        grads, how = parameter_gradient(self.layer, u, self.params, w)
        if grads is None:
            return Check(name, self.dtype, "n/a", detail=f"not differentiable here: {how}")
        table = self.tol(L, row="gradient")
        ref = reference(self.cfg, self.params, u)
        rounding = tolerance("forward", "float64", L, self.radius).rtol * float(np.sum(np.abs(w * ref)))
        found = {}
        for key, value in self.params.items():
            delta = rng.standard_normal(np.shape(value)) * max(float(np.sqrt(np.mean(np.square(value)))), 0.1)
            f = lambda t: float(np.sum(w * reference(self.cfg, {**self.params, key: value + t * delta}, u)))  # noqa
            coarse, fine = stencil(f, FD_STEP), stencil(f, FD_STEP / 2)
            g = grads.get(key)
            # the differences' own error: ten times the two steps' disagreement (truncation) and the reference's
            # rounding (the table's forward bound on each evaluation) through the stencil's weights, 3 / h at h/2
            spread = 10 * abs(coarse - fine) + 3 * rounding / (FD_STEP / 2)
            found[key] = (None if g is None else float(np.sum(np.asarray(g) * delta)), fine, spread)
        top = max(abs(d) for _, d, _ in found.values()) or 1.0
        errors = {}
        for key, (dot, exact, spread) in found.items():
            denom = max(abs(exact), 1e-3 * top)
            errors[key] = (np.inf if dot is None else abs(dot - exact) / denom, table + spread / denom)
        worst = max(errors, key=lambda k: errors[k][0] / errors[k][1])
        c = self.check(name, *errors[worst], f"by {how}, L = {L}, one direction per key against the reference's "
                                             f"central differences; the worst, {worst}; errors: "
                                             + ", ".join(f"{k} {e:.1e}" for k, (e, _) in errors.items()))
        if c.status == "fail":
            c.diagnoses = (self.level(self.cfg, c.rel, L, self.radius, row="gradient")       # float32 arithmetic
                           or self.explain_parameter_gradient(L, errors, found))
        return c

    def explain_parameter_gradient(self, L: int, errors: dict, found: dict) -> list[Diagnosis]:
        if self.one(f"random L={L}").status == "fail":
            return [follows("parameter gradient", f"random L={L}", "each key's gradient")]
        wrong = [k for k, (e, t) in errors.items() if e > t]
        words = [f"no gradient reaches {k}" if found[k][0] is None else
                 f"d<w, y>/d {k} is wrong (along one direction: autodiff {found[k][0]:.6g}, the contract's "
                 f"derivative {found[k][1]:.6g}; error {errors[k][0]:.2e}, tolerance {errors[k][1]:.2e})"
                 for k in wrong]
        right = [k for k in errors if k not in wrong]
        return [Diagnosis("parameter_gradient", f"the parameter gradient is wrong: {'; '.join(words)}; the other "
                                                f"keys conform ({', '.join(right) or 'none'})")]


def random_like(rng: np.random.Generator, like: np.ndarray) -> np.ndarray:
    """A standard normal array of `like`'s shape, complex where it is complex."""
    out = rng.standard_normal(np.shape(like))
    return out + 1j * rng.standard_normal(np.shape(like)) if np.iscomplexobj(like) else out


def stencil(f, h: float) -> float:
    """f'(0) by the five-point central difference at step h (error O(h^4))."""
    return (f(-2 * h) - 8 * f(-h) + 8 * f(h) - f(2 * h)) / (12 * h)

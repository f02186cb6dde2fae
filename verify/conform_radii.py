"""`linrnn conform`'s checks at the edges of the decays (`Battery`'s part, `linrnn.verify.conform_battery`): the radius
checks (near 1 a sweep of radii toward 1, small one fast decay, and the long check at `LONG_RADIUS`) and, for a
discretised kind, the small-steps check (every step Delta from 1e-1 down to 1e-6, where the zero-order hold's
exp(Delta Lambda) - 1 cancels).

A failed radius sweep is explained by the probes of its worst radius's impulse responses and by the sweep's own
signature: an error that grows like eps / (1 - r^2) (`conform_hypotheses.radius_cancellation`). A failed small-steps
check is explained by the zero-order hold's signature (`conform_spectrum.cancellation`, "use expm1").
"""

from __future__ import annotations

import numpy as np

from linrnn.impls import specs
from linrnn.impls.reference import spectral_radius
from linrnn.verify import conform_hypotheses as hypotheses
from linrnn.verify import conform_spectrum as spectrum
from linrnn.verify.conform_bundles import BATCH, LONG_RADIUS, RADII, STEPS_NAME, H, at_radius
from linrnn.verify.conform_diagnoses import follows
from linrnn.verify.conform_layer import Layer
from linrnn.verify.conform_reference import impulses, reference, rel_error
from linrnn.verify.conform_results import Check, Diagnosis

# what the sweep's signature explains in place of its measurements: the error's level and the constant factor a
# cancelled normalisation leaves (the same for every head at one radius)
SIGNATURE_REPLACES = ("float32_only", "float64_excess", "factor")


class RadiusChecks:
    """The radius and small-steps checks of `Battery`."""

    def radius_bundle(self, label: str, r: float) -> tuple[dict | None, str]:
        """The base bundle of the radius check `label` (`RADII`) at radius r, and its words; or None and why there is
        none.

        A model with a discretisation first takes the label's steps (its spec's `discretisation.step_key`: small
        near 1, where a discretisation's cancellation shows); then the model's `with_radius` sets every decay's
        modulus to r. Where that cannot place this config's decays (a bilinear S5), the steps alone set them (about
        the radius: Re Lambda = -1/2 at initialisation)."""
        steps = RADII[label][1]
        params, words = dict(self.params), []
        discretisation = specs.spec(self.kind).discretisation
        if discretisation is not None:
            key = discretisation.step_key
            params[key] = self.rng(f"radius {label} steps").uniform(*np.log(steps), np.shape(params[key]))
            words.append(f"steps Delta log-uniform in [{steps[0]:g}, {steps[1]:g}]")
        placed, why = at_radius(self.cfg, params, r)
        if placed is not None:
            return placed, ", ".join(words + [f"every |lambda| = {r:g} (with_radius)"])
        if words:
            return params, ", ".join(words + [f"the decays as these steps leave them ({why})"])
        return None, why

    def radii(self, label: str, L: int, name: str | None = None) -> Check:
        """The radius check: at each radius of the label (the long check, `name`: `LONG_RADIUS` at its own length),
        the impulse responses and one random input; the worst against its tolerance is the check's error."""
        name = name or f"radius {label}"
        u_random = self.rng(name).standard_normal((BATCH, L, H))
        runs = []
        for r in (RADII[label][0] if name == f"radius {label}" else (LONG_RADIUS,)):
            params, words = self.radius_bundle(label, r)
            if params is None:
                return Check(name, self.dtype, "n/a", detail=words)
            try:
                layer = Layer(self.name, self.build, self.cfg, params, self.dtype)
            except NotImplementedError as err:
                return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
            radius = spectral_radius(self.cfg, params)
            parts, data = self.impulse_parts(name, self.cfg, params, layer, L, u_random)
            runs.append((r, params, words, radius, layer, parts, data, self.tol(L, radius)))
            if "with_radius" not in words:              # the steps alone place the decays: one bundle
                break
        worst = max(runs, key=lambda run: max(run[5].values()) / run[7])
        r, params, words, radius, layer, parts, (u, ref, y), tol = worst
        sweep = "; ".join(f"r = {run[0]:g}: {max(run[5].values()):.2e} (tolerance {run[7]:.2e})" for run in runs)
        worst_of = ", the worst of the sweep" if len(runs) > 1 else ""
        c = self.check(name, max(parts.values()), tol, f"{words}: r = {radius:.6g}, L = {L}{worst_of}; errors: "
                       + ", ".join(f"{k} {v:.2e}" for k, v in parts.items())
                       + (f"; every radius: {sweep}" if len(runs) > 1 else ""))
        if c.status == "fail":
            c.diagnoses = self.explain_impulse(self.cfg, params, radius, u, ref, y, tol, layer.output_dtype)
            c.diagnoses = self.explain_sweep(runs, c.diagnoses)
        return c

    def explain_sweep(self, runs: list, found: list[Diagnosis]) -> list[Diagnosis]:
        """The sweep's signature (`radius_cancellation`) over the recurrent part's errors (lags >= 1), in place of the
        level and factor it explains; nothing new where the zero-order hold's cancellation is named already."""
        if any(d.key == "expm1" for d in found) or any("lags >= 1" not in run[5] for run in runs):
            return found
        signature = hypotheses.radius_cancellation(self.kind, self.dtype, tuple(run[0] for run in runs),
                                                   [run[5]["lags >= 1"] for run in runs], [run[7] for run in runs])
        if signature is None:
            return found
        return [Diagnosis(*signature)] + [d for d in found if d.key not in SIGNATURE_REPLACES]

    def small_steps(self) -> Check:
        """A discretised kind's impulse responses (lags >= 1: the recurrent part) at every step Delta of
        `conform_spectrum.DELTAS`, 1e-1 down to 1e-6; the worst against its tolerance is the check's error."""
        name, cfg, L = STEPS_NAME, self.cfg, spectrum.PROBE_LENGTH
        if cfg.kind not in spectrum.DISCRETISED:
            return Check(name, self.dtype, "n/a", detail=f"a {cfg.kind} layer has no discretisation (no step Delta)")
        u = impulses(L)
        found = {}
        for delta in spectrum.DELTAS:
            q = spectrum.with_steps(cfg, self.params, delta)
            try:
                y = self.respond(cfg, q, u, f"{name}: Delta = {delta:g}")
            except NotImplementedError as err:
                return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
            found[delta] = (rel_error(reference(cfg, q, u)[:, 1:], y[:, 1:]), self.tol(L, spectral_radius(cfg, q)))
        worst = max(found, key=lambda d: found[d][0] / found[d][1])
        c = self.check(name, *found[worst], f"impulse responses at lags >= 1, L = {L}, every step Delta set to each "
                                            f"value; the worst at Delta = {worst:g}; errors: "
                                            + ", ".join(f"{e:.1e} at {d:g}" for d, (e, _) in found.items()))
        if c.status == "fail":
            c.diagnoses = self.explain_steps(cfg, c.rel)
        return c

    def explain_steps(self, cfg, rel: float) -> list[Diagnosis]:
        """The zero-order hold's cancellation where its signature shows; else the level of a float64 run's error
        (`rel`, the worst step's); else, where the impulse check fails too, the output's deviation; else the
        discretisation probes' findings."""
        try:
            cancel = spectrum.cancellation(cfg, self.params, self.respond, self.dtype)
        except NotImplementedError:
            cancel = []
        if cancel:
            return [Diagnosis(f.key, f.words) for f in cancel]
        level = self.level(cfg, rel, spectrum.PROBE_LENGTH, 1.0)
        if level:
            return level
        if self.one("impulse").status == "fail":
            return [follows(STEPS_NAME, "impulse", "the zero-order hold's cancellation")]
        return [d for d in self.discretisation(cfg) if d.key != "expm1"]

"""`linrnn conform`'s output checks: the impulse responses (lag 0 and lags >= 1 each on its own scale), random inputs
at each length, the radius checks, the contract's variants, every length 1-8 and the very long check, each failure
explained by the probes of the impulse responses (`Battery`'s part, `linrnn.verify.conform_battery`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from linrnn.impls import specs
from linrnn.impls.config import MixerConfig
from linrnn.impls.reference import spectral_radius
from linrnn.verify.conform_bundles import (BATCH, COMPLEX_READOUTS, H, LAG0_DOMINANCE, RADII, SHORT_LENGTHS, SHORT_NAME,
                                           at_radius, bundle_for, make_config, variant_name)
from linrnn.verify.conform_diagnoses import factor_diagnosis
from linrnn.verify.conform_layer import Layer, describe
from linrnn.verify.conform_reference import (fit_factor, imaginary_readout, impulses, readout, reference,
                                             rel_error)
from linrnn.verify.conform_results import Check, Diagnosis


class OutputChecks:
    """The output checks of `Battery` (which holds the target, its config, bundle and tolerances)."""

    # -- impulse responses --------------------------------------------------------------------

    def impulse(self, L: int) -> Check:
        return self.impulse_check("impulse", self.cfg, self.params, self.radius, self.layer, L,
                                  f"one impulse per input channel, L = {L}, r = {self.radius:.6g}")

    def impulse_check(self, name: str, cfg: MixerConfig, params: Mapping[str, np.ndarray], radius: float,
                      layer: Layer, L: int, detail: str, u_random: np.ndarray | None = None) -> Check:
        """The impulse responses at lag 0 (the skip and the first step) and at lags >= 1 (the recurrence), each
        on its own scale, so that a large skip D u cannot hide the recurrence; and a random input, if given."""
        u = impulses(L)
        y, _ = layer(u, name)
        ref = reference(cfg, params, u)
        parts = {"lag 0": rel_error(ref[:, :1], y[:, :1])}
        if L > 1:
            parts["lags >= 1"] = rel_error(ref[:, 1:], y[:, 1:])
        if u_random is not None:
            parts["random input"] = rel_error(reference(cfg, params, u_random), layer(u_random, name)[0])
        tol = self.tol(L, radius)
        c = self.check(name, max(parts.values()), tol,
                       f"{detail}; errors: " + ", ".join(f"{k} {v:.2e}" for k, v in parts.items()))
        if c.status == "fail":
            c.diagnoses = self.explain_impulse(cfg, params, radius, u, ref, y, tol, layer.output_dtype)
        return c

    def explain_impulse(self, cfg: MixerConfig, params: Mapping[str, np.ndarray], radius: float, u: np.ndarray,
                        ref: np.ndarray, y: np.ndarray, tol: float, output_dtype) -> list[Diagnosis]:
        """Probes of the impulse responses (H_in L H_out): the lag-0 error (the skip), then fits of the recurrent
        part (lags >= 1) to the contract's output times a factor and to its imaginary part.

        In a float64 run a fit that leaves an error at the float32 level is accepted too, and the float32
        rounding is named beside it (a target can both drop a factor and compute in float32)."""
        found = []
        L = u.shape[1]
        lag0 = (y[:, 0, :] - ref[:, 0, :]) / float(np.max(np.abs(ref[:, 0, :])))     # (H_in H_out)
        off = float(np.max(np.abs(lag0 - np.diag(np.diag(lag0)))))
        diag = float(np.max(np.abs(np.diag(lag0))))
        rest = rel_error(ref[:, 1:], y[:, 1:]) if L > 1 else 0.0
        if max(off, diag) > tol and max(off, diag) > LAG0_DOMINANCE * rest:
            if off > tol:
                found.append(Diagnosis("dense_D", f"D is applied as a dense matrix, not elementwise: the impulse "
                                                  f"responses at lag 0 err off the diagonal by {off:.2e} (tolerance "
                                                  f"{tol:.2e}), at lags >= 1 by {rest:.2e}"))
            else:
                found.append(Diagnosis("skip_D", f"the skip D u is wrong: the impulse responses err at lag 0 on the "
                                                 f"diagonal by {diag:.2e} (tolerance {tol:.2e}), at lags >= 1 by "
                                                 f"{rest:.2e}"))
        if rest <= tol:
            return found
        fit_tol = self.fit_tol(L, radius)
        residual = rest                                                 # what no finding explains
        factor = factor_diagnosis(ref[:, 1:], y[:, 1:], tol, fit_tol, "its recurrent part", readout(cfg.kind))
        if factor:
            found.append(factor[0])
            residual = factor[1]
        if cfg.kind in COMPLEX_READOUTS:
            matrix, pairs, _ = COMPLEX_READOUTS[cfg.kind]
            imag = reference(cfg, imaginary_readout(params, pairs), u)
            c, fit = fit_factor(imag[:, 1:], y[:, 1:])
            if fit <= fit_tol:
                residual = fit
                found.append(Diagnosis("imaginary", f"the output is not the real part of {matrix} x: its recurrent "
                                                    f"part is {c:.6g} x the imaginary part "
                                                    f"{readout(cfg.kind).replace('Re(', 'Im(')} (fit error {fit:.2e}, "
                                                    f"tolerance {tol:.2e}; against the real part {rest:.2e})"))
        probes = self.discretisation(cfg)
        if any(d.key == "expm1" for d in probes):      # its cancellation, not float32 arithmetic, is the rounding
            return found + probes
        return found + probes + self.level(cfg, residual, L, radius, output_dtype=output_dtype)

    # -- random inputs, radii -------------------------------------------------------------------

    def random(self, L: int) -> Check:
        u = self.rng(f"random L={L}").standard_normal((BATCH, L, H))
        y, _ = self.layer(u, f"random L={L}")
        ref = reference(self.cfg, self.params, u)
        c = self.check(f"random L={L}", rel_error(ref, y), self.tol(L), f"B = {BATCH}, r = {self.radius:.6g}")
        if c.status == "fail":
            c.diagnoses = self.level(self.cfg, c.rel, L, self.radius, output_dtype=self.layer.output_dtype)
        return c

    def radius_bundle(self, label: str) -> tuple[dict | None, str]:
        """The base bundle of the radius check `label` (`RADII`) and its words; or None and why there is none.

        A model with a discretisation first takes the label's steps (its spec's `discretisation.step_key`: small
        near 1, where a discretisation's cancellation shows); then the model's `with_radius` sets every decay's
        modulus to the radius. Where that cannot place this config's decays (a bilinear S5), the steps alone set
        them (about the radius: Re Lambda = -1/2 at initialisation)."""
        r, steps = RADII[label]
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
        """The radius check's bundle (`radius_bundle`): impulse responses and a random input (the long check: near 1
        at its own length)."""
        name = name or f"radius {label}"
        params, words = self.radius_bundle(label)
        if params is None:
            return Check(name, self.dtype, "n/a", detail=words)
        radius = spectral_radius(self.cfg, params)
        try:
            layer = Layer(self.name, self.build, self.cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        return self.impulse_check(name, self.cfg, params, radius, layer, L, f"{words}: r = {radius:.6g}, L = {L}",
                                  self.rng(name).standard_normal((BATCH, L, H)))

    def variant(self, fields: Mapping[str, Any], L: int) -> Check:
        """One variant of the contract (`VARIANTS`): its impulse responses and a random input."""
        name = variant_name(fields)
        cfg = make_config(self.kind, **{**self.pins, **fields})
        if getattr(cfg, "bidirectional", False):
            return self.bidirectional_check(name, cfg, L)
        params = bundle_for(cfg, self.seed)
        radius = spectral_radius(cfg, params)
        try:
            layer = Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        return self.impulse_check(name, cfg, params, radius, layer, L, f"{describe(cfg)}, r = {radius:.6g}, L = {L}",
                                  self.rng(name).standard_normal((BATCH, L, H)))

    def short(self) -> Check:
        """Random inputs at every length 1..8 (where chunked routes have failed) against the reference."""
        rng = self.rng(SHORT_NAME)
        found = {}
        for n in SHORT_LENGTHS:
            u = rng.standard_normal((BATCH, n, H))
            found[n] = (rel_error(reference(self.cfg, self.params, u), self.layer(u, f"{SHORT_NAME}: L={n}")[0]),
                        self.tol(n))
        worst = max(found, key=lambda n: found[n][0] / found[n][1])
        bad = [n for n, (e, t) in found.items() if e > t]
        c = self.check(SHORT_NAME, *found[worst], f"B = {BATCH}, r = {self.radius:.6g}; the worst against its "
                                                  f"tolerance at L = {worst}; failing lengths: "
                                                  f"{' '.join(map(str, bad)) or 'none'}")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, worst, self.radius, output_dtype=self.layer.output_dtype)
            if level:
                c.diagnoses = level
            elif len(bad) < len(found):
                good = [n for n in found if n not in bad]
                c.diagnoses = [Diagnosis("short_lengths", f"the output is wrong at L = {', '.join(map(str, bad))} and "
                                                          f"conforms at L = {', '.join(map(str, good))} (error "
                                                          f"{c.rel:.2e} at L = {worst}, tolerance {c.rtol:.2e})")]
        return c

    def very_long(self) -> Check:
        """One random row at the very long length, past 2^16, with the radius-near-1 bundle: a chunked route's every
        chunk, its tail included; a failure names the first position that departs."""
        L = self.very_long_length
        name = f"very long L={L}"
        cfg, near_one = self.cfg, self.radius_bundle("near 1")[0]
        params = self.params if near_one is None else near_one
        radius = spectral_radius(cfg, params)
        try:
            layer = self.layer if near_one is None else Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        u = self.rng(name).standard_normal((1, L, H))
        ref, y = reference(cfg, params, u), layer(u, name)[0]
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(ref, y), tol, f"one row, r = {radius:.6g}")
        if c.status == "fail":
            level = self.level(cfg, c.rel, L, radius, output_dtype=layer.output_dtype)
            per_t = np.max(np.abs(y - ref), axis=(0, 2)) / float(np.max(np.abs(ref)))
            t = int(np.argmax(per_t > tol))
            c.diagnoses = level or ([Diagnosis("long_tail", f"the output departs from the reference from position "
                                                            f"t = {t} of L = {L} on, conforming before it (error "
                                                            f"{c.rel:.2e}, tolerance {tol:.2e}): a chunk past it is "
                                                            f"lost or wrong")] if t > 0 else [])
        return c

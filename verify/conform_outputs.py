"""`linrnn conform`'s output checks: the impulse responses (lag 0 and lags >= 1 each on its own scale), random inputs
at each length (the whole output and its recurrent part, the bundle with D = 0, each on its own scale), the contract's
variants, every length 1-8 and the very long check, each failure explained by the probes of the impulse responses
(`Battery`'s part, `linrnn.verify.conform_battery`; the radius and small-steps checks are in `conform_radii.py`).

A probe whose precondition fails names no cause of its own: "follows the output's deviation" (`follows`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from linrnn.impls.config import MixerConfig
from linrnn.impls.reference import spectral_radius
from linrnn.base.tolerance import tolerance
from linrnn.verify import conform_hypotheses as hypotheses
from linrnn.verify.conform_bundles import (BATCH, COMPLEX_READOUTS, H, LAG0_DOMINANCE, LONG_RADIUS, LOW,
                                           SHORT_LENGTHS, SHORT_NAME, bundle_for, make_config, variant_name)
from linrnn.verify.conform_diagnoses import factor_diagnosis, follows
from linrnn.verify.conform_layer import Layer, describe
from linrnn.verify.conform_reference import (fit_factor, imaginary_readout, impulses, readout, reference,
                                             rel_error)
from linrnn.verify.conform_results import Check, Diagnosis


JUMP = 100.0      # a lost chunk: the error at its first position is this many times the largest before it


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
        parts, (u, ref, y) = self.impulse_parts(name, cfg, params, layer, L, u_random)
        tol = self.tol(L, radius)
        c = self.check(name, max(parts.values()), tol,
                       f"{detail}; errors: " + ", ".join(f"{k} {v:.2e}" for k, v in parts.items()))
        if c.status == "fail":
            c.diagnoses = self.explain_impulse(cfg, params, radius, u, ref, y, tol, layer.output_dtype)
        return c

    def impulse_parts(self, name: str, cfg: MixerConfig, params: Mapping[str, np.ndarray], layer: Layer, L: int,
                      u_random: np.ndarray | None = None) -> tuple[dict[str, float], tuple]:
        """{part: error} of the impulse responses (lag 0, lags >= 1) and the random input, with (u, ref, y) of the
        impulses.     u, ref, y (H_in L H_out)"""
        u = impulses(L)
        y, _ = layer(u, name)
        ref = reference(cfg, params, u)
        parts = {"lag 0": rel_error(ref[:, :1], y[:, :1])}
        if L > 1:
            parts["lags >= 1"] = rel_error(ref[:, 1:], y[:, 1:])
        if u_random is not None:
            parts["random input"] = rel_error(reference(cfg, params, u_random), layer(u_random, name)[0])
        return parts, (u, ref, y)

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
        if self.dtype in LOW:                        # the fits below are blurred by the low dtype's rounding
            return found + self.explain_low(cfg, params, radius, u, ref, rest, tol)
        fit_tol = self.fit_tol(L, radius)
        named = hypotheses.matching(cfg, params, u, y, fit_tol, rel_error(ref, y), reference, rel_error)
        if named:                       # what published layers compute instead: the bundle that computes it fits
            hypothesis, fit = named[0]
            return found + [Diagnosis(hypothesis.key, hypotheses.words(hypothesis, fit, tol, rest))] + \
                self.level(cfg, fit, L, radius, output_dtype=output_dtype)
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

    def explain_low(self, cfg: MixerConfig, params: Mapping[str, np.ndarray], radius: float, u: np.ndarray,
                    ref: np.ndarray, rest: float, tol: float) -> list[Diagnosis]:
        """A low dtype's recurrent part (lags >= 1) beyond the policy's bound, where the target's float32 run of the
        same bundle conforms: the recurrence itself rounds in the low dtype (the policy keeps it in float32)."""
        try:
            y32 = Layer(self.name, self.build, cfg, params, "float32")(u, "the same impulses in float32")[0]
        except NotImplementedError:
            return []
        L = u.shape[1]
        e32, tol32 = rel_error(ref[:, 1:], y32[:, 1:]), tolerance("forward", "float32", L, radius).rtol
        if e32 > tol32:
            return []                                # the float32 run's own deviation, named by its checks
        return [Diagnosis("low_precision_recurrence", f"the recurrence computes in {self.dtype}: its impulse "
                                                      f"responses at lags >= 1 err by {rest:.2e}, beyond the "
                                                      f"mixed-precision bound {tol:.2e} (the recurrence in float32, "
                                                      f"docs/precision.md), where its float32 run errs by {e32:.2e}")]

    # -- random inputs, radii -------------------------------------------------------------------

    def random(self, L: int) -> Check:
        """Random inputs at length L: the whole output, and its recurrent part on its own scale (the bundle with
        D = 0, whose output is y - D u: a large D u cannot hide the recurrence's error)."""
        name = f"random L={L}"
        u = self.rng(name).standard_normal((BATCH, L, H))
        y, _ = self.layer(u, name)
        parts = {"whole output": rel_error(reference(self.cfg, self.params, u), y)}
        if "D" in self.params:
            no_skip = {**self.params, "D": np.zeros_like(self.params["D"])}
            parts["recurrent part (D = 0)"] = rel_error(reference(self.cfg, no_skip, u),
                                                        self.respond(self.cfg, no_skip, u, f"{name}, D = 0"))
        c = self.check(name, max(parts.values()), self.tol(L), f"B = {BATCH}, r = {self.radius:.6g}; errors: "
                                                               + ", ".join(f"{k} {v:.2e}" for k, v in parts.items()))
        if c.status == "fail":
            c.diagnoses = self.level(self.cfg, c.rel, L, self.radius, output_dtype=self.layer.output_dtype)
        return c

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
        longest = f"random L={max(self.lengths)}"
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, worst, self.radius, output_dtype=self.layer.output_dtype)
            if level:
                c.diagnoses = level
            elif max(self.lengths) > SHORT_LENGTHS[-1] and self.one(longest).status == "fail":
                c.diagnoses = [follows(SHORT_NAME, longest, "wrong at short lengths only")]
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
        cfg, near_one = self.cfg, self.radius_bundle("near 1", LONG_RADIUS)[0]
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
            c.diagnoses = self.explain_very_long(cfg, ref, y, c.rel, tol, radius, layer.output_dtype)
        return c

    def explain_very_long(self, cfg: MixerConfig, ref: np.ndarray, y: np.ndarray, rel: float, tol: float,
                          radius: float, output_dtype) -> list[Diagnosis]:
        """A lost or wrong chunk where the error is localised (within the tolerance before a position t, and at t
        `JUMP` times or more the largest error before it), the rounding before t named by its level; else the
        level of the whole, else "follows the output's deviation" where the output fails at the battery's lengths."""
        L = y.shape[1]
        per_t = np.max(np.abs(y - ref), axis=(0, 2)) / float(np.max(np.abs(ref)))      # (L,)
        t = int(np.argmax(per_t > tol))
        before = float(np.max(per_t[:t])) if t > 0 else np.inf
        if t > 0 and per_t[t] >= JUMP * before:
            tail = Diagnosis("long_tail", f"the output departs from the reference from position t = {t} of L = {L} "
                                          f"on, conforming before it (error {per_t[t]:.2e} at t, {before:.2e} at most "
                                          f"before it; tolerance {tol:.2e}): a chunk past it is lost or wrong")
            return [tail] + self.level(cfg, rel_error(ref[:, :t], y[:, :t]), L, radius, output_dtype=output_dtype)
        level = self.level(cfg, rel, L, radius, output_dtype=output_dtype)
        longest = f"random L={max(self.lengths)}"
        if level or self.one(longest).status != "fail":
            return level
        return [follows(f"very long L={L}", longest, "a lost or wrong chunk")]

"""`linrnn conform`'s bidirectional check, and the probe of the backward part when it fails (`Battery`'s part,
`linrnn.verify.conform_battery`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from linrnn.impls.bundle import mixer_shapes
from linrnn.impls.config import MixerConfig
from linrnn.impls.reference import spectral_radius
from linrnn.verify import conform_hypotheses as hypotheses
from linrnn.verify.conform_bundles import BATCH, H, bundle_for, make_config
from linrnn.verify.conform_diagnoses import factor_diagnosis
from linrnn.verify.conform_layer import Layer, describe
from linrnn.verify.conform_reference import impulses, readout, reference, rel_error
from linrnn.verify.conform_results import Check, Diagnosis


class BidirectionalChecks:
    """The bidirectional check of `Battery`."""

    # -- bidirectional --------------------------------------------------------------------------

    def bidirectional(self, L: int) -> Check:
        name = "bidirectional"
        if not hasattr(self.cfg, "bidirectional"):
            return Check(name, self.dtype, "n/a", detail=f"a {self.kind} layer has no bidirectional form")
        if "bidirectional" in self.pins:
            return Check(name, self.dtype, "n/a", detail="bidirectional pinned by --set")
        return self.bidirectional_check(name, make_config(self.kind, **{**self.pins, "bidirectional": True}), L)

    def bidirectional_check(self, name: str, cfg: MixerConfig, L: int) -> Check:
        """A random input through the bidirectional layer of `cfg`; a failure explained by its backward part."""
        params = bundle_for(cfg, self.seed)
        try:
            layer = Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        u = self.rng(name).standard_normal((BATCH, L, H))
        y, _ = layer(u, name)
        radius = spectral_radius(cfg, params)
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(reference(cfg, params, u), y), tol, f"{describe(cfg)}, L = {L}, r = {radius:.6g}")
        if c.status == "fail":
            named = hypotheses.matching(cfg, params, u, y, self.fit_tol(L, radius), c.rel, reference, rel_error)
            if named:                   # what published layers compute instead: the bundle that computes it fits
                hypothesis, fit = named[0]
                c.diagnoses = [Diagnosis(hypothesis.key, hypotheses.words(hypothesis, fit, tol, c.rel))] + \
                    self.level(cfg, fit, L, radius)
            else:
                level = self.level(cfg, c.rel, L, radius)
                c.diagnoses = level or (self.explain_backward(layer, cfg, params, L, tol) if L > 1 else [])
        return c

    def explain_backward(self, layer: Layer, cfg: MixerConfig, params: dict, L: int, tol: float) -> list[Diagnosis]:
        """The backward part, the target's bidirectional output less its own forward-only layer's, on an impulse
        in the middle of the sequence: missing, responding after the input (not anti-causal), or off by a factor.

        Errors are relative to the larger of the backward part and the whole output (the difference of two
        outputs rounds on the outputs' scale); the structural probes accept the float32 level in a float64 run
        (`fit_tol`), where that rounding is named by the output checks."""
        forward_cfg = dataclasses.replace(cfg, bidirectional=False)
        forward_params = {k: v for k, v in params.items() if k in mixer_shapes(forward_cfg)}
        at = L // 2
        u = impulses(L, at)
        whole = reference(cfg, params, u)
        ref = whole - reference(forward_cfg, forward_params, u)
        got = layer(u, "bidirectional, impulse at L/2")[0]
        got = got - Layer(self.name, self.build, forward_cfg, forward_params, self.dtype)(u, "forward-only")[0]
        scale = max(float(np.max(np.abs(ref))), float(np.max(np.abs(whole))))
        probe_tol = self.fit_tol(L, spectral_radius(cfg, params))
        size = float(np.max(np.abs(got))) / scale
        if size <= probe_tol:
            return [Diagnosis("backward_missing", f"the backward direction is missing: the bidirectional output "
                                                  f"equals the forward-only one (difference {size:.2e}, tolerance "
                                                  f"{tol:.2e}; the reference's backward part "
                                                  f"{float(np.max(np.abs(ref))) / scale:.2e})")]
        after = float(np.max(np.abs(got[:, at + 1:]))) / scale
        if after > probe_tol:
            return [Diagnosis("backward_not_anticausal", f"the backward direction is not anti-causal: it responds "
                                                         f"after the input (error {after:.2e} at positions after an "
                                                         f"impulse, tolerance {tol:.2e})")]
        err = rel_error(ref, got, scale)
        if err <= probe_tol:
            return []          # the backward part conforms: the deviation is the forward part's, named by its checks
        factor = factor_diagnosis(ref, got, tol, probe_tol, "the backward part", readout(cfg.kind, backward=True))
        if factor:
            return [factor[0]]
        return [Diagnosis("backward_wrong", f"the backward direction is anti-causal but wrong: error {err:.2e} "
                                            f"(tolerance {tol:.2e})")]

"""`linrnn conform`'s checks of what a call carries or takes besides u: the state handed from one call to the next
(split in two, token by token), packed sequences (`segments=`) and padded rows (`lengths=`) (`Battery`'s part,
`linrnn.verify.conform_battery`).
"""

from __future__ import annotations

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.impls.reference import spectral_radius
from linrnn.verify.conform_bundles import BATCH, H, bundle_for, make_config
from linrnn.verify.conform_diagnoses import explain_state, follows
from linrnn.verify.conform_layer import Layer, describe, state_array, state_like
from linrnn.verify.conform_reference import reference, rel_error
from linrnn.verify.conform_results import Check, Diagnosis


class StateChecks:
    """The state, packing and padding checks of `Battery`."""

    # -- the state --------------------------------------------------------------------------------

    def state(self, L: int) -> Check:
        name = "state"
        if not self.layer.takes_state:
            return Check(name, self.dtype, "n/a", detail="the callable takes no state=")
        if getattr(self.cfg, "bidirectional", False) or getattr(self.cfg, "max_kernel_length", None):
            return Check(name, self.dtype, "n/a", detail="a bidirectional layer, or a truncated DLR kernel, has no "
                                                         "state (docs/models.md)")
        if L < 2:
            return Check(name, self.dtype, "n/a", detail="needs a length >= 2 to split")
        k = L // 2
        u = self.rng(name).standard_normal((BATCH, L, H))
        whole, _ = self.layer(u, "state: one call")
        first, carried = self.layer(u[:, :k], "state: first call")
        second, _ = self.layer(u[:, k:], "state: second call", carried)
        tol = self.tol(L)
        split = np.concatenate([first, second], axis=1)
        c = self.check(name, rel_error(whole, split), tol,
                       f"L = {L} split {k} + {L - k}, B = {BATCH}, against the target's own single call")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, L, self.radius)
            c.diagnoses = level or explain_state(whole[:, k:], second, self.from_zero(u[:, k:], carried, name), tol,
                                                 self.fit_tol(L, self.radius))
        return c

    def from_zero(self, u: np.ndarray, carried, what: str) -> tuple[np.ndarray, ...]:
        """The target's output on u started from zero: without a state, and from a zero state of the carried state's
        type where one can be made. The two agree for a contract whose first input enters as any other; not for the
        RG-LRU's, whose first input without a state enters unnormalised (docs/models.md), so a state dropped to zeros
        is told from a state not passed."""
        out = [self.layer(u, f"{what}: the second part from no state")[0]]
        try:
            zeros = state_like(carried, np.zeros_like(state_array(carried)))
        except Exception:                # an opaque state of the target's own that no zero can be made of
            return tuple(out)
        out.append(self.layer(u, f"{what}: the second part from a zero state", zeros)[0])
        return tuple(out)

    def stateless(self, name: str) -> Check | None:
        """The "n/a" of a check that passes states, where the target or the layer has none; else None."""
        if not self.layer.takes_state:
            return Check(name, self.dtype, "n/a", detail="the callable takes no state=")
        if getattr(self.cfg, "bidirectional", False) or getattr(self.cfg, "max_kernel_length", None):
            return Check(name, self.dtype, "n/a", detail="a bidirectional layer, or a truncated DLR kernel, has no "
                                                         "state (docs/models.md)")
        return None

    def handover(self, L: int) -> Check:
        """The sequence split in two calls at several points (1, L/2, L - 1) and run one token at a time, each state
        passed on, against the target's own single call."""
        name = "state hand-over"
        if (na := self.stateless(name)) or L < 2:
            return na or Check(name, self.dtype, "n/a", detail="needs a length >= 2 to split")
        u = self.rng(name).standard_normal((BATCH, L, H))
        whole, _ = self.layer(u, f"{name}: one call")
        runs: dict[str, np.ndarray] = {}
        for k in sorted({1, L // 2, L - 1}):
            first, carried = self.layer(u[:, :k], f"{name}: the first {k} positions")
            runs[f"split {k} + {L - k}"] = np.concatenate(
                [first, self.layer(u[:, k:], f"{name}: the positions after {k}", carried)[0]], axis=1)
        carried, steps = None, []
        for t in range(L):
            y, carried = self.layer(u[:, t:t + 1], f"{name}: position {t} alone", carried)
            steps.append(y)
        runs["token by token"] = np.concatenate(steps, axis=1)
        errors = {what: rel_error(whole, y) for what, y in runs.items()}
        tol = self.tol(L)
        c = self.check(name, max(errors.values()), tol, f"L = {L}, B = {BATCH}, against the target's own single "
                                                        f"call; errors: " + ", ".join(f"{k} {v:.2e}"
                                                                                      for k, v in errors.items()))
        if c.status == "fail":
            c.diagnoses = self.level(self.cfg, c.rel, L, self.radius) or self.explain_handover(u, whole, runs, errors,
                                                                                                 tol)
        return c

    def explain_handover(self, u, whole, runs, errors, tol) -> list[Diagnosis]:
        """Which hand-over fails: one token at a time only (from which position), or a split (named as `state`)."""
        probe_tol = self.fit_tol(u.shape[1], self.radius)
        splits = {what: e for what, e in errors.items() if what != "token by token"}
        if all(e <= tol for e in splits.values()):
            scale = float(np.max(np.abs(whole)))
            per_t = np.max(np.abs(runs["token by token"] - whole), axis=(0, 2)) / scale
            t = int(np.argmax(per_t > tol))
            return [Diagnosis("handover_tokens", f"the state hand-over fails one token at a time: its outputs depart "
                                                 f"from the single call at position t = {t} (error "
                                                 f"{errors['token by token']:.2e}, tolerance {tol:.2e}), while every "
                                                 f"split in two calls conforms")]
        what = next(w for w, e in splits.items() if e > tol)
        k = int(what.split()[1])
        _, carried = self.layer(u[:, :k], "state hand-over: the first part again")
        return explain_state(whole[:, k:], runs[what][:, k:], self.from_zero(u[:, k:], carried, "state hand-over"), tol,
                             probe_tol)

    def packing(self, L: int) -> Check:
        """Packed sequences (segment ids, where the callable takes `segments=`): each computed as if alone, the state
        reset where one begins. Row 0 has one boundary at L/2, row 1 none, row 2 several, its ids alternating so that
        an id returns after another (a new sequence: the contract resets wherever the id changes)."""
        name = "packing"
        if not self.layer.takes_segments:
            return Check(name, self.dtype, "n/a", detail="the callable takes no segments= (packed sequences)")
        if L < 2:
            return Check(name, self.dtype, "n/a", detail="needs a length >= 2 to pack two sequences")
        rng = self.rng(name)
        u = rng.standard_normal((BATCH, L, H))
        starts = rng.random((BATCH, L - 1)) < 0.3
        starts[0, L // 2 - 1] = True                          # row 0 has a boundary, row 1 none
        starts[1] = False
        starts[2, [max(L // 4 - 1, 0), L // 2 - 1]] = True    # row 2: at least three sequences where L >= 4
        segments = np.concatenate([np.zeros((BATCH, 1), np.int64), np.cumsum(starts, axis=1) % 2], axis=1)
        try:
            ref = reference(self.cfg, self.params, u, segments=segments)
        except LinrnnError as err:              # a registered model whose reference has no packed sequences
            return Check(name, self.dtype, "n/a", detail=f"the {self.kind} reference takes no packed sequences: {err}")
        y, _ = self.layer(u, name, segments=segments)
        tol = self.tol(L)
        c = self.check(name, rel_error(ref, y), tol, f"L = {L}, B = {BATCH}, segments (id x length) "
                                                     f"{[segment_runs(r) for r in segments]}")
        if c.status == "fail":
            c.diagnoses = self.explain_packing(u, segments, y, c.rel, tol)
        return c

    def explain_packing(self, u, segments, y, rel: float, tol: float) -> list[Diagnosis]:
        """The level; the unpacked output's own deviation; each row run as one sequence (no reset); the positions of
        each id run as one sequence (grouped by id, an id that returns joined to its earlier run)."""
        L, fit_tol = u.shape[1], self.fit_tol(u.shape[1], self.radius)
        level = self.level(self.cfg, rel, L, self.radius)
        if level:
            return level
        whole = reference(self.cfg, self.params, u)
        unpacked = rel_error(whole, self.layer(u, "packing: the rows unpacked")[0])
        if unpacked > tol:
            return [follows("packing", f"the same rows unpacked (error {unpacked:.2e})", "the state's reset")]
        if rel_error(whole, y) <= fit_tol:
            return [Diagnosis("packing_no_reset", f"the state does not reset where a packed sequence begins: the "
                                                  f"output is each row's run as one sequence (error against the "
                                                  f"sequences alone {rel:.2e}, tolerance {tol:.2e})")]
        if rel_error(grouped_by_id(self.cfg, self.params, u, segments), y) <= fit_tol:
            return [Diagnosis("packing_grouped_by_id", f"packed sequences are grouped by segment id: an id that "
                                                       f"returns after another is joined to its earlier run, where "
                                                       f"the contract starts a new sequence wherever the id changes "
                                                       f"(error against the sequences alone {rel:.2e}, tolerance "
                                                       f"{tol:.2e})")]
        return []

    def padding(self, L: int) -> Check:
        """Padded rows (valid lengths, where the callable takes `lengths=`), in the bidirectional form where the kind
        has one (its backward scan starts in the padding): each row's valid part as if alone, 0 at the padding."""
        name = "padding"
        if not self.layer.takes_lengths:
            return Check(name, self.dtype, "n/a", detail="the callable takes no lengths= (padded rows)")
        cfg, params, layer = self.cfg, self.params, self.layer
        if hasattr(cfg, "bidirectional") and "bidirectional" not in self.pins:
            both = make_config(self.kind, **{**self.pins, "bidirectional": True})
            try:
                layer = Layer(self.name, self.build, both, bundle_for(both, self.seed), self.dtype)
                cfg, params = both, bundle_for(both, self.seed)
            except NotImplementedError:
                pass                                             # the forward-only layer's padding, then
        rng = self.rng(name)
        lengths = np.array([L, max(1, (L + 1) // 2), 1][:BATCH], np.int64)
        u = rng.standard_normal((BATCH, L, H))
        mask = np.arange(L)[None, :] < lengths[:, None]
        u = np.where(mask[..., None], u, 10.0 * rng.standard_normal((BATCH, L, H)))    # loud padding
        try:
            ref = reference(cfg, params, u, lengths=lengths)
        except LinrnnError as err:              # a registered model whose reference has no padded rows
            return Check(name, self.dtype, "n/a", detail=f"the {self.kind} reference takes no padded rows: {err}")
        y, _ = layer(u, name, lengths=lengths)
        radius = spectral_radius(cfg, params)
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(ref, y), tol, f"{describe(cfg)}, L = {L}, valid lengths "
                                                     f"{' '.join(map(str, lengths))}, padding 10 x the inputs")
        if c.status == "fail":
            level = self.level(cfg, c.rel, L, radius)
            scale = float(np.max(np.abs(ref)))
            valid = float(np.max(np.abs(np.where(mask[..., None], y - ref, 0.0)))) / scale
            unpadded = rel_error(reference(cfg, params, u), layer(u, "padding: the rows unpadded")[0])
            if level:
                c.diagnoses = level
            elif unpadded > tol:
                c.diagnoses = [follows("padding", f"the same rows unpadded (error {unpadded:.2e})", "the padding's "
                                                                                                "leak or its zeros")]
            elif valid <= self.fit_tol(L, radius):
                c.diagnoses = [Diagnosis("padding_not_zero", f"the output at the padded positions is not 0 (error "
                                                             f"{c.rel:.2e}, tolerance {tol:.2e}); the valid positions "
                                                             f"conform")]
            else:
                c.diagnoses = [Diagnosis("padding_leaks", f"the padding reaches the valid positions: they err by "
                                                          f"{valid:.2e} against each row alone (tolerance {tol:.2e})")]
        return c


def segment_runs(row: np.ndarray) -> list[tuple[int, int]]:
    """One row's segments as (id, length), in order.     (L,) -> [(id, length), ...]"""
    edges = np.flatnonzero(np.diff(row)) + 1
    return [(int(part[0]), len(part)) for part in np.split(row, edges)]


def grouped_by_id(cfg, params, u: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """What a layer that groups packed positions by id computes: the positions of each id of a row run as one
    sequence, in order, wherever they are.     u (B L H), segments (B L) -> (B L H)"""
    out = np.zeros_like(u)
    for b, row in enumerate(segments):
        for i in np.unique(row):
            where = np.flatnonzero(row == i)
            out[b, where] = reference(cfg, params, u[b:b + 1, where])[0]
    return out

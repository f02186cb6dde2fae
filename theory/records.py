"""Result records for the derivations, and the one zero-test SymPy uses.

Numeric checks use the project's one tolerance table (`linrnn.base.tolerance`, its `SCALED` part).

A derivation returns a `ClaimResult`: the claim id from docs/claims.md, the assumptions, the steps of the
derivation (each a SymPy expression rendered once to LaTeX, presentation MathML and plain text), the
findings (one verdict per part of the claim: a claim can be partly proved and partly failing), and a
witness dict of floats. Each `derive_*` is a short list of named lemmas, functions that each return a
`Lemma` (the findings, steps and witness numbers it contributes), joined in order by `claim_from_lemmas`.
Nothing in here decides a verdict by itself: a `Finding` is built from a computed boolean (`symbolic_finding`,
`numeric_finding`), never from a literal.

Verdicts of one finding: "proved" (SymPy identity holds), "verified" (numeric check on random
instances holds), "fails" (the computation came out otherwise; `condition` states exactly when). Each
finding also states its `scope` (the cases its verdict covers), whether it is `general` (derived for
every case the claim covers, not for sampled sizes or instances) and which part of the claim it
`covers` ("" for a supporting lemma).

Verdict of a claim: "fails" if any finding fails; "proved" only when every part of the claim (the
distinct `covers` values) has a finding that is proved in general; otherwise "verified" (the claim
holds on the cases checked: symbolic small cases and numeric instances), with `ClaimResult.scope`
saying which. A symbolic derivation for n = 2, 3 is therefore never enough for "proved".
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
import time
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy as sp
from sympy.printing.mathml import mathml

from linrnn.base.tolerance import SCALED as TOLERANCES  # noqa: F401  (re-exported: the project's one table)
from linrnn.base.tolerance import scaled_tolerance as tolerance  # noqa: F401  (re-exported)

VERDICTS = ("proved", "verified", "fails")

_MATHML_OPEN = '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">'


# Signal smaller than this (relative to the lag-0 response) cannot change a float32 sum; used as the
# threshold for "a signal survives L steps" in D2.
SURVIVAL_THRESHOLD = float(np.finfo(np.float32).eps)


# ---------------------------------------------------------------------------------------------
# SymPy helpers
# ---------------------------------------------------------------------------------------------


def is_zero(expr: Any) -> bool:
    """True when SymPy reduces `expr` (scalar or matrix) to exactly 0.

    Tries, in order, `simplify`, `expand_complex` + `simplify`, and the trig/power rewrites; any entry
    that stays non-zero makes the answer False. This is a sufficient test (SymPy cannot always
    recognise zero), so False means "not shown to be zero", which the derivations report as a failure.
    """
    if isinstance(expr, (sp.MatrixBase,)):
        return all(is_zero(entry) for entry in expr)
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    for transform in (
        sp.simplify,
        lambda e: sp.simplify(sp.expand_complex(e)),
        lambda e: sp.simplify(sp.expand_trig(sp.expand(e))),
        lambda e: sp.simplify(sp.powsimp(sp.expand(e), force=True).rewrite(sp.cos)),
    ):
        if transform(expr) == 0:
            return True
    return False


def render_latex(expr: Any) -> str:
    return sp.latex(expr)


_XML_ENTITIES = ("lt", "gt", "amp", "quot", "apos")


def _named_entity_to_char(match: re.Match) -> str:
    if match.group(1) in _XML_ENTITIES:
        return match.group(0)
    char = html.unescape(match.group(0))
    return match.group(0) if char == match.group(0) else char


def _escape_token(match: re.Match) -> str:
    return f"<{match.group(1)}>{match.group(2).replace('<', '&lt;').replace('>', '&gt;')}</{match.group(1)}>"


def render_mathml(expr: Any) -> str:
    """Presentation MathML, wrapped in a <math> element so a browser renders it with no network.

    Made well-formed XML: SymPy 1.14 writes relations' '<' and '>' unescaped in <mo>, and some
    numeric references without the closing ';' (the zero matrix: '&#x1D7D8'); named entities such
    as '&InvisibleTimes;' are undefined in XML, so they are replaced by the characters themselves.
    """
    body = mathml(expr, printer="presentation")
    body = re.sub(r"<(mi|mn|mo|mtext)>([^<]*?[<>][^<]*?|[<>])</\1>", _escape_token, body)  # raw '<' in <mo>
    body = re.sub(r"&#x([0-9A-Fa-f]+)(?![0-9A-Fa-f;])", r"&#x\1;", body)
    body = re.sub(r"&([A-Za-z][A-Za-z0-9]*);", _named_entity_to_char, body)
    return f"{_MATHML_OPEN}{body}</math>"


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Step:
    """One line of a derivation: a label and a SymPy expression (or equation), rendered three ways."""

    label: str
    latex: str
    mathml: str
    text: str

    @classmethod
    def of(cls, label: str, expr: Any) -> "Step":
        return cls(label=label, latex=render_latex(expr), mathml=render_mathml(expr), text=sp.sstr(expr))

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


EVIDENCE = ("sympy", "numeric", "monte carlo", "timing")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One part of a claim (or a lemma it rests on) and its verdict, with the cases the verdict covers.

    The claim-level verdict reads `general` and `covers`, so a finding proved for small n cannot make
    its claim "proved"; see `ClaimResult.verdict`.
    """

    statement: str  # what this finding settles, in words
    verdict: str  # "proved", "verified" or "fails", for `statement` on `scope`
    condition: str  # "fails": exactly when it fails; otherwise when it holds (may be empty)
    evidence: str  # one of EVIDENCE
    scope: str  # the cases the verdict covers: "all n (symbolic)", "n = 2, 3 (symbolic)", "random M, n <= 64 (numeric)"
    general: bool = False  # derived for every case the claim covers (symbolic; no sampled sizes or instances)
    covers: str = ""  # the part of the claim this finding states; "" for a supporting lemma or a side result
    side: bool = False  # about another setting than the claim speaks of: shown beside it, never in its verdict

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, found {self.verdict!r}")
        if self.evidence not in EVIDENCE:
            raise ValueError(f"evidence must be one of {EVIDENCE}, found {self.evidence!r}")
        if not self.scope.strip():
            raise ValueError(f"finding {self.statement[:40]!r}: a scope is required (the cases the verdict covers)")
        if self.general and self.evidence != "sympy":
            raise ValueError(f"finding {self.statement[:40]!r}: only a symbolic derivation can be general, "
                             f"found evidence {self.evidence!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def symbolic_finding(statement: str, holds: bool, *, scope: str, general: bool = False, covers: str = "",
                     holds_when: str = "", fails_when: str) -> Finding:
    """A SymPy part: "proved" (on `scope`) when the computed `holds` is True, else "fails" with `fails_when`.

    `general=True` only when the derivation is symbolic in everything the claim quantifies over (any n,
    any k, any parameters), never for a list of small sizes.
    """
    if holds:
        return Finding(statement, "proved", holds_when, "sympy", scope, general, covers)
    return Finding(statement, "fails", fails_when, "sympy", scope, general, covers)


def numeric_finding(statement: str, holds: bool, *, scope: str, covers: str = "", holds_when: str = "",
                    fails_when: str, evidence: str = "numeric", side: bool = False) -> Finding:
    """A numeric part: "verified" (on `scope`) when the computed `holds` is True, else "fails" with `fails_when`.

    Never general: it checks instances. `side`: a finding about another setting than the claim's (shown, not
    counted in the claim's verdict; it covers no part of the claim).
    """
    if side and covers:
        raise ValueError(f"finding {statement[:40]!r}: a side finding covers no part of the claim")
    if holds:
        return Finding(statement, "verified", holds_when, evidence, scope, False, covers, side)
    return Finding(statement, "fails", fails_when, evidence, scope, False, covers, side)


def _as_float(name: str, value: Any) -> float:
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"witness {name!r} is not finite ({out}); store a log or a count instead")
    return out


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """The outcome of one derivation (one claim of docs/claims.md)."""

    claim: str  # id in docs/claims.md, e.g. "R3"
    title: str  # one line: what was derived
    assumptions: tuple[str, ...]  # what the derivation takes as given, in words
    steps: tuple[Step, ...]  # the derivation, one SymPy expression per step
    findings: tuple[Finding, ...]  # one verdict per part of the claim or lemma; at least one covers the claim
    witness: Mapping[str, float]  # named numbers backing the findings (all finite floats)
    seconds: float = 0.0  # wall time of the derivation
    conclusion: str = ""  # what the derivation concludes, built from its results; "" = generated from the findings

    def __post_init__(self) -> None:
        if not self.findings:
            raise ValueError(f"{self.claim}: a result needs at least one finding")
        if not any(f.covers for f in self.findings):
            raise ValueError(f"{self.claim}: no finding covers a part of the claim (set `covers`)")
        frozen = {str(k): _as_float(str(k), v) for k, v in self.witness.items()}
        object.__setattr__(self, "witness", types.MappingProxyType(frozen))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "findings", tuple(self.findings))
        if not self.conclusion:
            object.__setattr__(self, "conclusion", self._generated_conclusion())

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts of the claim the findings state (distinct `covers` values, in order)."""
        return tuple(dict.fromkeys(f.covers for f in self.findings if f.covers))

    def _general_proof(self, part: str) -> Finding | None:
        return next((f for f in self.findings if f.covers == part and f.verdict == "proved" and f.general), None)

    @property
    def deciding(self) -> tuple[Finding, ...]:
        """The findings the claim's verdict reads: every finding but the side ones."""
        return tuple(f for f in self.findings if not f.side)

    @property
    def verdict(self) -> str:
        """"fails" if any deciding finding fails; "proved" if every part of the claim has a finding proved in
        general; else "verified" (holds on the cases checked). Side findings are shown, never counted."""
        if any(f.verdict == "fails" for f in self.deciding):
            return "fails"
        return "proved" if all(self._general_proof(p) for p in self.parts) else "verified"

    @property
    def partly(self) -> bool:
        """True when some deciding findings fail and others hold."""
        return self.verdict == "fails" and any(f.verdict != "fails" for f in self.deciding)

    @property
    def condition(self) -> str:
        """The exact conditions of the failing deciding findings, joined; empty when nothing fails."""
        return "; ".join(f.condition for f in self.deciding if f.verdict == "fails")

    def part_scope(self, part: str) -> str:
        """What the verdict of one part covers: the general proof's scope if there is one, else the failing
        findings' scopes, else every scope checked for that part."""
        proofs = [f.scope for f in self.findings if f.covers == part and f.verdict == "proved" and f.general]
        if proofs and not any(f.covers == part and f.verdict == "fails" for f in self.findings):
            return "proved for " + " and ".join(dict.fromkeys(proofs))
        failing = [f.scope for f in self.findings if f.covers == part and f.verdict == "fails"]
        if failing:
            return "fails on " + " and ".join(failing)
        return "holds on " + " + ".join(f.scope for f in self.findings if f.covers == part)

    @property
    def scope(self) -> str:
        """One line: what the claim's verdict covers, part by part."""
        return "; ".join(f"{part}: {self.part_scope(part)}" for part in self.parts)

    def _generated_conclusion(self) -> str:
        verdict = self.verdict
        if verdict == "proved":
            return f"{self.claim} is proved in general ({self.scope})."
        if verdict == "verified":
            open_parts = [p for p in self.parts if self._general_proof(p) is None]
            return (f"{self.claim} holds on the cases checked but is not derived in general "
                    f"(not in general: {', '.join(open_parts)}); {self.scope}.")
        return f"{self.claim} fails{' in part' if self.partly else ''}: {self.condition}. Scope: {self.scope}."

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "title": self.title,
            "verdict": self.verdict,
            "partly": self.partly,
            "condition": self.condition,
            "scope": self.scope,
            "conclusion": self.conclusion,
            "parts": list(self.parts),
            "assumptions": list(self.assumptions),
            "steps": [s.to_dict() for s in self.steps],
            "findings": [f.to_dict() for f in self.findings],
            "witness": dict(self.witness),
            "seconds": self.seconds,
        }


def steps_of(pairs: Sequence[tuple[str, Any]]) -> tuple[Step, ...]:
    return tuple(Step.of(label, expr) for label, expr in pairs)


# ---------------------------------------------------------------------------------------------
# Derivations in named steps
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Lemma:
    """One named step of a derivation, as its function returns it: the findings it settles, the steps it shows
    (label, SymPy expression), the witness numbers it measures, and `value`, what later lemmas build on.

    A `derive_*` function is a short list of lemmas; `claim_from_lemmas` joins their findings, steps and witness
    numbers in that order into the claim's `ClaimResult`.
    """

    findings: tuple[Finding, ...] = ()
    steps: tuple[tuple[str, Any], ...] = ()
    witness: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    value: Any = None


def claim_from_lemmas(claim: str, *, title: str, assumptions: Sequence[str], lemmas: Sequence[Lemma],
                      start: float, conclusion: str = "", keep_witness=None) -> ClaimResult:
    """The `ClaimResult` of a derivation made of `lemmas` (in order), timed from `start` (`time.perf_counter()`).

    `keep_witness(value) -> bool`: which witness values are kept (default: all; each must then be finite). Two
    lemmas that name the same witness number are an error (the second would silently replace the first)."""
    witness: dict[str, Any] = {}
    for lemma in lemmas:
        repeated = sorted(set(witness) & set(lemma.witness))
        if repeated:
            raise ValueError(f"{claim}: witness number(s) {repeated} given by two lemmas")
        witness.update(lemma.witness)
    if keep_witness is not None:
        witness = {k: v for k, v in witness.items() if keep_witness(v)}
    return ClaimResult(
        claim=claim,
        title=title,
        assumptions=tuple(assumptions),
        steps=steps_of([step for lemma in lemmas for step in lemma.steps]),
        findings=tuple(f for lemma in lemmas for f in lemma.findings),
        witness=witness,
        seconds=time.perf_counter() - start,
        conclusion=conclusion,
    )

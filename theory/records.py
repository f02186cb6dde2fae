"""Result records for the derivations, and the one zero-test SymPy uses.

Numeric checks use the project's one tolerance table (`linrnn.impls.tolerance`, its `SCALED` part).

A derivation returns a `ClaimResult`: the claim id from docs/claims.md, the assumptions, the steps of the
derivation (each a SymPy expression rendered once to LaTeX, presentation MathML and plain text), the
findings (one verdict per part of the claim: a claim can be partly proved and partly failing), and a
witness dict of floats. Nothing in here decides a verdict by itself: a `Finding` is built from a
computed boolean (`symbolic_finding`, `numeric_finding`), never from a literal.

Verdicts of one finding: "proved" (SymPy identity holds), "verified" (numeric check on random
instances holds), "fails" (the computation came out otherwise; `condition` states exactly when).
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy as sp
from sympy.printing.mathml import mathml

from linrnn.impls.tolerance import SCALED as TOLERANCES  # noqa: F401  (re-exported: the project's one table)
from linrnn.impls.tolerance import scaled_tolerance as tolerance  # noqa: F401  (re-exported)

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


@dataclasses.dataclass(frozen=True)
class Finding:
    """One part of a claim and its verdict.

    `condition`: for "fails", the exact condition under which this part fails; for "proved" or
    "verified", the condition under which it holds (may be empty when it holds unconditionally).
    `evidence`: "sympy", "numeric" or "monte carlo".
    """

    statement: str
    verdict: str
    condition: str
    evidence: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, found {self.verdict!r}")

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def symbolic_finding(statement: str, holds: bool, *, holds_when: str = "", fails_when: str) -> Finding:
    """A SymPy part: "proved" when the computed `holds` is True, else "fails" with `fails_when`."""
    if holds:
        return Finding(statement, "proved", holds_when, "sympy")
    return Finding(statement, "fails", fails_when, "sympy")


def numeric_finding(
    statement: str, holds: bool, *, holds_when: str = "", fails_when: str, evidence: str = "numeric"
) -> Finding:
    """A numeric part: "verified" when the computed `holds` is True, else "fails" with `fails_when`."""
    if holds:
        return Finding(statement, "verified", holds_when, evidence)
    return Finding(statement, "fails", fails_when, evidence)


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
    assumptions: tuple[str, ...]
    steps: tuple[Step, ...]
    findings: tuple[Finding, ...]
    witness: Mapping[str, float]  # named numbers backing the findings (all finite floats)
    seconds: float = 0.0  # wall time of the derivation

    def __post_init__(self) -> None:
        if not self.findings:
            raise ValueError(f"{self.claim}: a result needs at least one finding")
        frozen = {str(k): _as_float(str(k), v) for k, v in self.witness.items()}
        object.__setattr__(self, "witness", types.MappingProxyType(frozen))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "findings", tuple(self.findings))

    @property
    def verdict(self) -> str:
        """"fails" if any part fails; else "proved" if any part is proved in SymPy; else "verified"."""
        verdicts = {f.verdict for f in self.findings}
        if "fails" in verdicts:
            return "fails"
        return "proved" if "proved" in verdicts else "verified"

    @property
    def partly(self) -> bool:
        """True when some parts fail and others hold."""
        return self.verdict == "fails" and any(f.verdict != "fails" for f in self.findings)

    @property
    def condition(self) -> str:
        """The exact conditions of the failing parts, joined; empty when nothing fails."""
        return "; ".join(f.condition for f in self.findings if f.verdict == "fails")

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "title": self.title,
            "verdict": self.verdict,
            "partly": self.partly,
            "condition": self.condition,
            "assumptions": list(self.assumptions),
            "steps": [s.to_dict() for s in self.steps],
            "findings": [f.to_dict() for f in self.findings],
            "witness": dict(self.witness),
            "seconds": self.seconds,
        }


def steps_of(pairs: Sequence[tuple[str, Any]]) -> tuple[Step, ...]:
    return tuple(Step.of(label, expr) for label, expr in pairs)

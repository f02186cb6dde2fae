"""The claims ledger (docs/claims.md): every claim of the two seed papers with its verdict.

Verdicts: proved (a symbolic derivation holds), verified (property tests and numeric checks hold on
random instances), reproduced (an experiment here shows the effect, at the scale named), contradicted
(an experiment or derivation here shows otherwise, with the exact condition), not run here (needs
data or compute this machine lacks). A verdict is computed from the saved results at render time, so
`linrnn report --from` rebuilds it; a row whose evidence is missing says so and claims nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

Records = dict[str, list[dict[str, Any]]]   # section name -> its results records


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    text: str
    settle: Callable[[Records], dict[str, str]]


def row(verdict: str, evidence: str, scale: str = "", command: str = "") -> dict[str, str]:
    return {"verdict": verdict, "evidence": evidence, "scale": scale, "command": command}


def missing(section: str) -> dict[str, str]:
    return row("not run here", f"the {section} section has no results in this report (see the skipped files)",
               command="linrnn report")


def _data(records: Records, section: str) -> dict | None:
    recs = records.get(section) or []
    return recs[0]["data"] if recs else None


def _theory(claim_id: str, extra: Callable[[Records], str] | None = None):
    """A claim settled by its derivation in `theory/` (and, optionally, more evidence from other sections)."""
    def settle(records: Records) -> dict[str, str]:
        data = _data(records, "theory")
        if data is None:
            return missing("theory")
        claim = next((c for c in data["claims"] if c["claim"] == claim_id), None)
        if claim is None:
            return row("not run here", f"no derivation of {claim_id} in the theory results")
        counts = {v: sum(f["verdict"] == v for f in claim["findings"]) for v in ("proved", "verified", "fails")}
        if claim["verdict"] == "fails":
            verdict = "contradicted (in part)" if claim["partly"] else "contradicted"
            holding = [f["statement"] for f in claim["findings"] if f["verdict"] != "fails"][:2]
            evidence = (f"holds: {'; '.join(holding)}. " if holding else "") + f"Fails when: {claim['condition']}"
        else:
            verdict = claim["verdict"]
            evidence = "; ".join(f["statement"] for f in claim["findings"][:3])
        evidence += (f" [{counts['proved']} part(s) proved, {counts['verified']} verified, "
                     f"{counts['fails']} failing]")
        if extra:
            evidence += " " + extra(records)
        return row(verdict, evidence, "SymPy (symbolic) and SciPy/NumPy (random instances)")
    return settle


def _section_claim(section: str, claim_id: str):
    """A claim whose verdict a section computed from its own measurements (data['claims'][id])."""
    def settle(records: Records) -> dict[str, str]:
        data = _data(records, section)
        if data is None:
            return missing(section)
        entry = (data.get("claims") or {}).get(claim_id)
        if not entry:
            return row("not run here", f"the {section} section did not settle {claim_id}")
        return row(entry["verdict"], entry["evidence"], entry.get("scale", ""))
    return settle


def _norms_extra(claim_id: str) -> Callable[[Records], str]:
    def extra(records: Records) -> str:
        data = _data(records, "norms")
        entry = ((data or {}).get("claims") or {}).get(claim_id)
        return f"In training: {entry['verdict']}, {entry['evidence']}" if entry else ""
    return extra


def _param_count(records: Records) -> dict[str, str]:
    data = _data(records, "reference")
    if data is None:
        return missing("reference")
    if "param_counts" not in data:
        return row("not run here", "these reference results have no parameter-count check (made by older code)",
                   command="linrnn report")
    checks = data["param_counts"]
    ok = all(c["ok"] for c in checks)
    text = "; ".join(f"{c['config']}: {c['count']} = {c['formula']}" for c in checks)
    return row("verified" if ok else "contradicted", f"independent A, B, gamma per head, one C mixing the "
               f"concatenated heads; parameter counts equal the formula: {text}", "bundle shapes")


def _equivalence_extra(records: Records) -> str:
    data = _data(records, "reference")
    conv = (data or {}).get("converters")
    if not conv:
        return ""
    worst = max(c["rel"] / c["rtol"] for c in conv)
    return (f"Converters RotRNN <-> LRU on {len(conv)} random bundles: outputs agree, worst error / tolerance "
            f"{worst:.3f} ({'within' if worst <= 1 else 'EXCEEDS'} the table).")


def _step_constant(records: Records) -> dict[str, str]:
    data = _data(records, "speed")
    if data is None:
        return missing("speed")
    ratios = []
    for backend in ("torch", "jax"):
        for kind in ("rotrnn", "lru", "dlr"):
            pts = sorted((r["L"], r["us_per_position"]) for r in data["rows"] if r["mode"] == "step"
                         and r["backend"] == backend and r["mixer"] == kind and r["ms"] is not None)
            if len(pts) >= 2:
                ratios.append((pts[-1][1] / pts[0][1], f"{backend} {kind}", pts[0][0], pts[-1][0]))
    if not ratios:
        return row("not run here", "no step-mode timings at two lengths")
    worst = max(ratios)
    verdict = "verified" if worst[0] <= 2.0 else "contradicted"
    return row(verdict, f"streaming step mode: time per position from L = {worst[2]} to {worst[3]} changes by "
               f"at most x{worst[0]:.2f} ({worst[1]}); O(1) state per position by construction "
               f"(threshold: x2)", "one layer, B, H, N as in the speed section")


def _not_here(need: str, command: str) -> Callable[[Records], dict[str, str]]:
    return lambda records: row("not run here", need, "", command)


CLAIMS: tuple[Claim, ...] = (
    Claim("R1", "RotRNN", "A = exp(M - M^T) is a rotation (orthogonal, det +1) for every M, so A stays valid "
          "all through training", _theory("R1", _norms_extra("R1"))),
    Claim("R2", "RotRNN", "A = P Theta P^T with 2x2 blocks gives A^k cheaply, without dense matrix powers",
          _theory("R2")),
    Claim("R3", "RotRNN", "the normalisation keeps E||x_t||^2 constant for all t (LRU's only as t -> infinity)",
          _theory("R3")),
    Claim("R4", "RotRNN", "multi-head: independent A, B, gamma per head, outputs concatenated and mixed linearly",
          _param_count),
    Claim("R5", "RotRNN", "an LRU whose eigenvalues come in conjugate pairs is equivalent to a multi-head RotRNN",
          _theory("R5", _equivalence_extra)),
    Claim("R6", "RotRNN", "LRA: competitive with S4, S5, LRU; best on ListOps, Text, Retrieval",
          _not_here("needs the Long Range Arena data and a GPU; this project has no LRA loaders yet, so no "
                    "command can settle it today", "")),
    Claim("R7", "RotRNN", "Speech Commands 35: 95.2%, as a reproduced LRU at similar parameter count",
          _not_here("needs the Speech Commands data and a GPU; no loader in this project yet", "")),
    Claim("R8", "RotRNN", "hidden-state norm stays almost constant over training, across depth and seeds; "
          "LRU's fluctuates and settles slowly", _section_claim("norms", "R8")),
    Claim("R9", "RotRNN", "LRU does not enforce conjugate pairs, real outputs, or a normalisation that keeps the "
          "state's magnitude coherent", _theory("R9", _norms_extra("R9"))),
    Claim("D1", "DLR", "without discretisation, DLR matches S4/S4D on LRA (incl. Path-X and ListOps)",
          _not_here("needs the LRA data and a GPU; no LRA loaders in this project yet", "")),
    Claim("D2", "DLR", "eigenvalues near the unit circle propagate signal over a million steps and more",
          _theory("D2")),
    Claim("D3", "DLR", "periodic initialisation: a size-N DLR expresses any length-N kernel", _theory("D3")),
    Claim("D4", "DLR", "synthetic tasks: near-perfect where few kernels suffice (Shift), poor where "
          "context-dependent shifts are needed (ContextShift fails)", _section_claim("tasks", "D4")),
    Claim("D5", "DLR", "strong on ListOpsSubTrees and PathfinderSegmentation, better than local attention",
          _not_here("the ListOpsSubTrees and PathfinderSegmentation generators are not built yet", "")),
    Claim("D6", "DLR", "Speech Commands 10 (raw): 97.1% with O(L) decoding",
          _not_here("needs the Speech Commands data and a GPU; no loader yet (the O(1)-per-token step mode is "
                    "checked under D9)", "")),
    Claim("D7", "DLR", "PG-19 language modelling at 1.2B parameters: loss comparable to a Transformer",
          _not_here("out of reach of this project's machines (1.2B parameters); no number is given", "")),
    Claim("D8", "DLR", "more robust to the position of layer norm than Transformers",
          _not_here("no attention baseline in this project yet, so the comparison the claim makes cannot run; "
                    "DLR alone, pre- vs post-norm on the synthetic tasks:",
                    "linrnn tasks grid --tasks all --models dlr --length 256 --steps 1000 --out pre && "
                    "linrnn tasks grid --tasks all --models dlr --length 256 --steps 1000 --set prenorm=false "
                    "--out post")),
    Claim("D9", "DLR", "O(L) inference", _step_constant),
)


def build(records: Records) -> list[dict[str, str]]:
    """One row per claim of docs/claims.md, in order."""
    rows = []
    for claim in CLAIMS:
        try:
            settled = claim.settle(records)
        except (KeyError, TypeError, ValueError, IndexError) as err:   # a malformed results file
            settled = row("not run here", f"its results could not be read ({type(err).__name__}: {err})")
        rows.append({"id": claim.id, "paper": claim.paper, "claim": claim.text, **settled})
    return rows

"""The ordered registry of derivations, `run_all`, and the JSON payload the report renders from.

    DERIVATIONS   claim id -> derivation(quick: bool) -> ClaimResult, in the order of docs/claims.md
    run_all(quick=False, claims=None) -> list[ClaimResult]
    results_payload(results, quick) -> dict   (JSON-serialisable: config, code version, machine, claims)
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.theory.dlr_kernel import derive_d3
from linrnn.theory.dlr_memory import derive_d2
from linrnn.theory.equivalence import derive_r5
from linrnn.theory.lru_constraints import derive_r9
from linrnn.theory.normalisation import derive_r3
from linrnn.theory.records import TOLERANCES, ClaimResult
from linrnn.theory.rotation import derive_r1, derive_r2

SCHEMA = "linrnn.theory/1"

DERIVATIONS: dict[str, Callable[..., ClaimResult]] = {
    "R1": derive_r1,  # exp(M - M^T) is a rotation
    "R2": derive_r2,  # powers through 2x2 blocks
    "R3": derive_r3,  # the normalisation and E||x_t||^2
    "R5": derive_r5,  # RotRNN block <-> complex mode + Re
    "R9": derive_r9,  # what the LRU does not enforce
    "D2": derive_d2,  # signal survival, the 2^20 kernel
    "D3": derive_d3,  # periodic initialisation (DFT)
}


def run_all(quick: bool = False, claims: Sequence[str] | None = None) -> list[ClaimResult]:
    """Run the derivations (all, or the named claim ids, in registry order)."""
    wanted = list(DERIVATIONS) if claims is None else [c.upper() for c in claims]
    unknown = [c for c in wanted if c not in DERIVATIONS]
    if unknown:
        raise LinrnnError(f"unknown claim id(s) {unknown}; known: {', '.join(DERIVATIONS)}")
    return [derive(quick=quick) for claim, derive in DERIVATIONS.items() if claim in wanted]


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def results_payload(results: Sequence[ClaimResult], quick: bool) -> dict:
    """Everything a report needs to render the theory section, plus where and how it was computed."""
    import numpy
    import scipy
    import sympy

    try:
        version = importlib.metadata.version("linrnn")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {
        "schema": SCHEMA,
        "config": {"quick": quick, "claims": [r.claim for r in results]},
        "code_version": {"linrnn": version, "git_commit": _git_commit()},
        "machine": {"node": platform.node(), "platform": platform.platform(), "python": sys.version.split()[0],
                    "cpus": os.cpu_count(), "numpy": numpy.__version__, "scipy": scipy.__version__,
                    "sympy": sympy.__version__},
        "tolerances": {f"{kind}/{dtype}": {"factor": t.factor, "reason": t.reason}
                       for (kind, dtype), t in TOLERANCES.items()},
        "claims": [r.to_dict() for r in results],
    }

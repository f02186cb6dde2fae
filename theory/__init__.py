"""Theory: SymPy/SciPy derivations of the claims in docs/claims.md (no torch, no jax).

One module per topic, each ending in `derive_<claim>(quick=False) -> ClaimResult`:

    records.py          ClaimResult / Finding / Step, the SymPy zero test, the tolerance table
    rotation.py         R1 (exp(M - M^T) in SO(N)), R2 (A^k through 2x2 blocks)
    normalisation.py    R3 (E||x_t||^2 closed forms, Monte Carlo helper)
    equivalence.py      R5 (RotRNN block <-> complex mode read out by Re)
    lru_constraints.py  R9 (what the LRU does not enforce, as checks on a parameter mapping)
    dlr_kernel.py       D3 (periodic initialisation) and the chunked DLR kernel
    dlr_memory.py       D2 (signal survival, the 2^20 kernel)
    registry.py         DERIVATIONS, run_all, the JSON payload
    cli.py              `linrnn theory`

`DERIVATIONS`, `run_all` and `ClaimResult` are importable from here; they load on first use so that
`linrnn --help` does not pay for SymPy.
"""

from __future__ import annotations

_LAZY = {"DERIVATIONS": "linrnn.theory.registry", "run_all": "linrnn.theory.registry",
         "ClaimResult": "linrnn.theory.records"}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        from linrnn.base.extras import require
        require("sympy", "linrnn.theory")     # where SymPy is missing: one line naming linrnn[theory]
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'linrnn.theory' has no attribute {name!r}")

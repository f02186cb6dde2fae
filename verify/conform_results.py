"""`linrnn conform`'s results: a named deviation (`Diagnosis`), one check (`Check`), a whole run (`Result`) and the text
`linrnn conform` prints (`format_result`). `Result.to_dict()` is what `--json` stores (a `conform` record,
`linrnn.impls.results.ConformRecord`) and what the report reads.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from linrnn.verify.conform_bundles import LONG_LENGTH, VERY_LONG_LENGTH


@dataclass(frozen=True)
class Diagnosis:
    key: str      # stable name of the deviation (tests and the report match on it)
    words: str    # what was found, with the measured error against the tolerance


@dataclass
class Check:
    name: str                   # 'impulse', 'random L=7', 'radius near 1', 'bidirectional', 'state', 'gradient'
    dtype: str
    status: str                 # 'pass', 'fail' or 'n/a'
    rel: float | None = None    # the normwise relative error (linrnn.impls.tolerance)
    rtol: float | None = None   # its tolerance
    detail: str = ""            # what was compared, or why the check does not apply
    diagnoses: list[Diagnosis] = field(default_factory=list)

    def line(self) -> str:
        head = f"{self.status.upper() if self.status == 'fail' else self.status:<4} {self.name} ({self.dtype})"
        if self.rel is None:
            return f"{head}: {self.detail}"
        verdict = "<=" if self.status == "pass" else ">"
        return f"{head}: relative error {self.rel:.2e} {verdict} tolerance {self.rtol:.2e}; {self.detail}"


@dataclass
class Result:
    target: str
    model: str
    dtypes: tuple[str, ...]
    lengths: tuple[int, ...]
    seed: int
    checks: list[Check]
    pins: dict = field(default_factory=dict)     # the fields `--set` pins
    long_length: int = LONG_LENGTH
    very_long_length: int = VERY_LONG_LENGTH

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def diagnoses(self) -> list[Diagnosis]:
        """Each deviation once (its first measurement), in the order the checks found them."""
        seen: dict[str, Diagnosis] = {}
        for check in self.checks:
            for d in check.diagnoses:
                seen.setdefault(d.key, d)
        return list(seen.values())

    def __str__(self) -> str:
        return format_result(self)

    def to_dict(self) -> dict:
        return {"target": self.target, "model": self.model, "dtypes": list(self.dtypes),
                "lengths": list(self.lengths), "seed": self.seed, "sets": dict(self.pins),
                "long_length": self.long_length, "very_long_length": self.very_long_length, "conforms": self.ok,
                "checks": [dataclasses.asdict(c) for c in self.checks],
                "diagnoses": [dataclasses.asdict(d) for d in self.diagnoses()]}


def format_result(result: Result) -> str:
    pinned = "".join(f" --set {k}={json.dumps(v)}" for k, v in result.pins.items())
    lines = [f"linrnn conform {result.target} --model {result.model}{pinned}: seed {result.seed}, "
             f"lengths {' '.join(map(str, result.lengths))}, long check L={result.long_length}, very long check "
             f"L={result.very_long_length}"]
    lines += ["  " + c.line() for c in result.checks]
    failed = sum(c.status == "fail" for c in result.checks)
    if result.ok:
        lines.append(f"conforms: every applicable check within the tolerance table "
                     f"({sum(c.status == 'n/a' for c in result.checks)} not applicable)")
    else:
        lines.append(f"deviates: {failed} of {len(result.checks)} checks exceed the tolerance table")
        lines += [f"  - {d.words}" for d in result.diagnoses()]
    return "\n".join(lines)

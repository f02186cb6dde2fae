"""`linrnn conform`'s results: a named deviation (`Diagnosis`), one check (`Check`), a whole run (`Result`), its verdict
(`judge`) and the text `linrnn conform` prints (`format_result`). `Result.to_dict()` is what `--json` stores (a
`conform` record, `linrnn.base.results.ConformRecord`) and what the report reads.

The verdict is one of three (`VERDICTS`), decided from the checks alone, so that a stored record is judged as a run is:

    conforms                  every check that applies is within the tolerance table
    conforms (float32 only)   right, but not in float64: every float32 check passes, and the float64 checks either do
                              not apply (the target refuses float64) or fail at a rounding level only: each named
                              "computes in float32 only" or, an error too small to name so, "rounding beyond the
                              float64 table", and nothing else ("computes in float32 only" at least once)
    deviates                  the maths differs: any other failing check
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from linrnn.verify.conform_bundles import LONG_LENGTH, VERY_LONG_LENGTH


CONFORMS, FLOAT32_ONLY, DEVIATES = "conforms", "conforms (float32 only)", "deviates"
VERDICTS = (CONFORMS, FLOAT32_ONLY, DEVIATES)
# a float64 check's findings that are only its error's level: a run whose failures are all so, "computes in float32
# only" among them, and whose float32 checks pass, is right but not in float64
ROUNDING = {"float32_only", "float64_excess"}
# Findings that answer one question in exclusive ways: a run that finds two of a group (in different checks or
# configurations) shows them as one finding, each part with the check that found it (`Result.diagnoses`)
EXCLUSIVE = {"backward": ("backward_missing", "backward_not_anticausal", "backward_wrong"),
             "state": ("state_not_carried", "state_batch0", "state_wrong"),
             "factor": ("factor_missing", "factor_doubled", "factor"),
             "discretisation": ("discretisation", "discretisation_unknown")}
GROUP_WORDS = {"backward": "the backward direction", "state": "the state carried between calls",
               "factor": "the recurrent part's constant factor", "discretisation": "the discretisation"}


@dataclass(frozen=True)
class Diagnosis:
    key: str      # stable name of the deviation (tests and the report match on it)
    words: str    # what was found, with the measured error against the tolerance


@dataclass
class Check:
    name: str                   # 'impulse', 'random L=7', 'radius near 1', 'bidirectional', 'state', 'gradient'
    dtype: str
    status: str                 # 'pass', 'fail' or 'n/a'
    rel: float | None = None    # the normwise relative error (linrnn.base.tolerance)
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

    @property
    def verdict(self) -> str:
        return judge([dataclasses.asdict(c) for c in self.checks])[0]

    def diagnoses(self) -> list[Diagnosis]:
        """Each deviation once (its first measurement), in the order the checks found them; two findings of one
        `EXCLUSIVE` group become one, each part with the check that found it."""
        return merged([(c.name, c.dtype, d) for c in self.checks for d in c.diagnoses])

    def __str__(self) -> str:
        return format_result(self)

    def to_dict(self) -> dict:
        return {"target": self.target, "model": self.model, "dtypes": list(self.dtypes),
                "lengths": list(self.lengths), "seed": self.seed, "sets": dict(self.pins),
                "long_length": self.long_length, "very_long_length": self.very_long_length, "conforms": self.ok,
                **dict(zip(("verdict", "verdict_why"), judge([dataclasses.asdict(c) for c in self.checks]))),
                "checks": [dataclasses.asdict(c) for c in self.checks],
                "diagnoses": [dataclasses.asdict(d) for d in self.diagnoses()]}


def format_result(result: Result) -> str:
    pinned = "".join(f" --set {k}={json.dumps(v)}" for k, v in result.pins.items())
    lines = [f"linrnn conform {result.target} --model {result.model}{pinned}: seed {result.seed}, "
             f"lengths {' '.join(map(str, result.lengths))}, long check L={result.long_length}, very long check "
             f"L={result.very_long_length}"]
    lines += ["  " + c.line() for c in result.checks]
    verdict, why = judge([dataclasses.asdict(c) for c in result.checks])
    lines.append(f"{verdict}: {why}")
    lines += [f"  - {d.words}" for d in result.diagnoses()]
    return "\n".join(lines)


def merged(found: list[tuple[str, str, Diagnosis]]) -> list[Diagnosis]:
    """(check, dtype, finding) in order -> each key once (its first), the keys of one `EXCLUSIVE` group as one."""
    first: dict[str, tuple[str, str, Diagnosis]] = {}
    for name, dtype, d in found:
        first.setdefault(d.key, (name, dtype, d))
    group_of = {key: group for group, keys in EXCLUSIVE.items() for key in keys}
    out: dict[str, Diagnosis] = {}
    for key, (name, dtype, d) in first.items():
        group = group_of.get(key)
        rivals = [first[k] for k in EXCLUSIVE.get(group, ()) if k in first]
        if len(rivals) < 2:
            out[key] = d
        elif f"{group}_varies" not in out:
            parts = "; ".join(f"in {n} ({t}): {r.words}" for n, t, r in rivals)
            out[f"{group}_varies"] = Diagnosis(f"{group}_varies", f"{GROUP_WORDS[group]} deviates differently "
                                                                   f"from one check to another: {parts}")
    return list(out.values())


def judge(checks: list[dict]) -> tuple[str, str]:
    """(the verdict, the checks behind it in words) of a run's checks, each a dict with "name", "dtype", "status"
    and "diagnoses" (`Check` as `dataclasses.asdict` gives it, or as a stored record holds it)."""
    checks = [{"name": "", "dtype": "", "status": "", "detail": "", **c, "diagnoses": c.get("diagnoses") or []}
              for c in checks]                                   # a record may leave a field out: read it as empty
    failed = [c for c in checks if c["status"] == "fail"]
    ran = {dtype: [c for c in checks if c["dtype"] == dtype and c["status"] != "n/a"]
           for dtype in dict.fromkeys(c["dtype"] for c in checks)}
    na = sum(c["status"] == "n/a" for c in checks)
    names = lambda cs: ", ".join(f"{c['name']} ({c['dtype']})" for c in cs)         # noqa: E731
    float32_right = bool(ran.get("float32")) and not any(c["dtype"] == "float32" for c in failed)
    if not failed:
        if "float64" in ran and not ran["float64"] and float32_right:
            why = next(c["detail"] for c in checks if c["dtype"] == "float64")
            return FLOAT32_ONLY, (f"every applicable check within the tolerance table ({na} not applicable); no "
                                  f"float64 check applies ({why})")
        return CONFORMS, f"every applicable check within the tolerance table ({na} not applicable)"
    level_only = all(c["dtype"] == "float64" and c["diagnoses"] and {d["key"] for d in c["diagnoses"]} <= ROUNDING
                     for c in failed)
    named = any("float32_only" in {d["key"] for d in c["diagnoses"]} for c in failed)
    if level_only and named and float32_right:
        return FLOAT32_ONLY, (f"every float32 check within the tolerance table; {len(failed)} float64 checks fail at "
                              f"a rounding level only, computing in float32 ({names(failed)})")
    # the checks that decide it first; float64 checks that fail at a rounding level only are said after them, apart,
    # so a reader is not sent to them for what deviates (e.g. a low dtype's failure beside float32-level float64 ones)
    rounding = [c for c in failed if c["dtype"] == "float64" and c["diagnoses"]
                and {d["key"] for d in c["diagnoses"]} <= ROUNDING]
    deciding = [c for c in failed if c not in rounding] or failed
    why = f"{len(deciding)} of {len(checks)} checks exceed the tolerance table ({names(deciding)})"
    if deciding is not failed and rounding:
        why += (f"; besides, {len(rounding)} float64 check{'s' if len(rounding) > 1 else ''} fail at a rounding level "
                f"only, computing in float32 ({names(rounding)})")
    return DEVIATES, why

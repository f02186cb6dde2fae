"""Once: rewrite the stored results of schema 1 (reports/results/) in the one envelope of `linrnn.base.results`.

    python tools/migrate_results.py [DIR ...]          (default: reports/results and reports/results/sections)

A DIR given is searched below (e.g. the run directories of `linrnn experiment`, DATA/runs, whose results.json
and norms.json are then reused again rather than refused).

Only the envelope changes; every value is carried over as it was, and the script checks that: each file is read
back through `linrnn.base.results.read` and its fields compared, value for value, with the old file's. What a
schema-1 file did not record is said so ('not recorded (schema 1)' for the code version; no command for the
report's sections and the grids; no date for the grids). pytest-benchmark's own JSON (bench_cpu.json) is not a
record of this project and is left alone; a file already at schema 2 is left alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from linrnn.base import results

NOT_RECORDED = "not recorded (schema 1)"


def envelope(old: dict, date_key: str = "date", container: dict | None = None) -> results.Envelope:
    source = old if container is None else container
    return results.Envelope(date=source.get(date_key) or NOT_RECORDED, machine=source["machine"],
                            libraries=source["libraries"], command=old.get("command"),
                            code_version=source.get("code_version") or NOT_RECORDED)


def upgrade(name: str, old: dict) -> tuple[results.Record, dict]:
    """The schema-2 record of a schema-1 file, and the old values each of its fields must equal."""
    if "section" in old and "meta" in old:                                    # the report's sections
        meta = old["meta"]
        payload = {"section": old["section"], "device": meta["device"], "config": meta["config"],
                   "data": old["data"]}
        return results.SectionRecord(**payload, envelope=envelope(old, "created", meta)), payload
    if name.startswith("experiment-"):
        payload = {k: old[k] for k in ("experiment", "claims", "title", "question", "scale", "brief", "factor",
                                        "note", "quick", "seconds", "training_seconds", "complete", "controls",
                                        "runs")}
        return results.ExperimentRecord(**payload, envelope=envelope(old)), payload
    if old.get("kind") == "training_speed":
        payload = {"sweep": old["sweep"]}
        return results.TrainingSpeedRecord(**payload, envelope=envelope(old, "created")), payload
    if old.get("experiment") == "reduced_training":
        payload = {"runs": old["runs"]}
        return results.ReducedTrainingRecord(**payload, envelope=envelope(old)), payload
    if "rows" in old and "defaults" in old:                                   # linrnn tasks grid --json
        payload = {"defaults": old["defaults"], "rows": old["rows"]}
        return results.GridRecord(**payload, envelope=envelope(old)), payload
    if name == results.RUN_RESULTS and "bundle_sha256" in old:                # a run directory's results.json
        payload = {k: old[k] for k in ("config", "bundle_sha256", "steps", "seconds_per_step", "final", "best",
                                        "train_loss", "evaluations")}
        payload["stopped_early"] = old.get("stopped_early", False)           # absent from the oldest runs
        return results.RunRecord(**payload, envelope=envelope(old)), payload
    if name == results.NORM_RUN and "norm" in old and "config" in old:      # a norm-study run's kept measurement
        payload = {"config": old["config"], "run": {k: v for k, v in old.items() if k != "config"}}
        env = results.Envelope(date=NOT_RECORDED, machine={}, libraries={}, command=None, code_version=NOT_RECORDED)
        return results.NormRunRecord(**payload, envelope=env), payload
    return None


def main(argv: list[str]) -> int:
    """The default folders' *.json; a folder given: every *.json below it (run directories included)."""
    files = ([p for a in argv for p in sorted(Path(a).rglob("*.json"))] if argv else
             [p for d in (results.STORED_DIR, results.SECTIONS_DIR) for p in sorted(d.glob("*.json"))])
    for path in files:
        old = json.loads(path.read_text())
        if "benchmarks" in old and "machine_info" in old:
            print(f"{path}: pytest-benchmark's own JSON, left alone")
            continue
        if old.get("schema_version") == results.SCHEMA_VERSION and "kind" in old:
            print(f"{path}: already schema {results.SCHEMA_VERSION}")
            continue
        upgraded = upgrade(path.name, old)
        if upgraded is None:
            print(f"{path}: not a schema-1 record this script knows, left alone")
            continue
        record, payload = upgraded
        results.write(path, record)
        back = results.read(path, type(record))
        for key, value in payload.items():       # the values, compared as JSON (NaN as 'nan')
            if json.dumps(getattr(back, key), sort_keys=True) != json.dumps(results.plain(value), sort_keys=True):
                raise SystemExit(f"{path}: {key} changed in the migration")
        print(f"{path}: {record.TYPE}, {len(payload)} field(s) carried over unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Versioned results files: what every part of the report computes is saved as JSON, then rendered.

One file per section, `<DIR>/<section>.json`:

    {"schema_version": 1, "section": NAME, "meta": {...}, "data": {...}}

`meta` records what a reader needs to trust or reproduce a number: the code version, the package
versions, the machine and device, the time, and the section's resolved config. Reading never stops at
one bad file: a missing, unreadable or malformed file is reported as skipped, with the reason, and
the rest still renders.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from linrnn.experiments import STORED_DIR   # noqa: F401  (re-exported: reports/results/ in a checkout)
from linrnn.impls.errors import LinrnnError
from linrnn.impls.provenance import code_version, library_versions, machine

RESULTS_SCHEMA_VERSION = 1
REPORT_FILES = frozenset({"ledger"})      # JSON the report itself writes beside the results (ledger.json): not skipped


def meta(config: dict[str, Any], device: str = "cpu") -> dict[str, Any]:
    return {
        "code_version": code_version(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "device": device,
        "libraries": library_versions(),
        "config": config,
    }


def _json_ready(value: Any) -> Any:
    """Plain JSON: NaN and infinities become strings ('nan', 'inf') instead of invalid JSON tokens."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # NumPy scalars
        return _json_ready(value.item())
    return value


def write_result(directory: str | os.PathLike, section: str, data: dict[str, Any], config: dict[str, Any],
                 device: str = "cpu") -> Path:
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{section}.json"
        tmp = path.with_suffix(".json.tmp")  # write then rename: an interrupted run leaves no half file
        record = {"schema_version": RESULTS_SCHEMA_VERSION, "section": section, "meta": meta(config, device),
                  "data": data}
        tmp.write_text(json.dumps(_json_ready(record), indent=1, allow_nan=False))
        tmp.replace(path)
    except OSError as err:
        raise LinrnnError(f"cannot write results to {directory}: {err.strerror or err}") from None
    return path


@dataclass
class Loaded:
    results: list[dict[str, Any]] = field(default_factory=list)   # valid records, each with 'path'
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def read_results(directories: list[str | os.PathLike], sections: list[str]) -> Loaded:
    """Every `<section>.json` of every directory; bad or missing files go to `skipped` with a reason."""
    loaded = Loaded()
    for directory in directories:
        directory = Path(directory)
        if not directory.is_dir():
            raise LinrnnError(f"--from: {directory} is not a directory")
        found = {p.stem: p for p in sorted(directory.glob("*.json"))}
        for name in sections:
            path = found.pop(name, None)
            if path is None:
                loaded.skipped.append((str(directory / f"{name}.json"), "missing"))
                continue
            try:
                record = json.loads(path.read_text())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
                loaded.skipped.append((str(path), f"unreadable JSON ({err})"))
                continue
            problem = _check_record(record, name)
            if problem:
                loaded.skipped.append((str(path), problem))
                continue
            record["path"] = str(path)
            loaded.results.append(record)
        for stem, path in found.items():
            if stem not in REPORT_FILES:
                loaded.skipped.append((str(path), f"not a section of this report ({stem})"))
    return loaded


def _check_record(record: Any, name: str) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("schema_version") != RESULTS_SCHEMA_VERSION:
        return f"schema_version: expected {RESULTS_SCHEMA_VERSION}, found {record.get('schema_version')!r}"
    if record.get("section") != name:
        return f"section: expected {name!r}, found {record.get('section')!r}"
    for key in ("meta", "data"):
        if not isinstance(record.get(key), dict):
            return f"{key}: expected a JSON object"
    if not isinstance(record["meta"].get("machine"), dict):
        return "meta.machine: expected a JSON object"
    return None


def read_stored(directory: str | os.PathLike, pattern: str,
                check: Callable[[Any], str | None]) -> tuple[list[tuple[Path, dict]], list[list[str]]]:
    """The stored experiment files `directory/pattern` (e.g. reports/results/training_speed*.json) that
    parse and pass `check` (which returns the first problem, or None), in name order, and [file, reason]
    for each of the others."""
    good, skipped = [], []
    for path in sorted(Path(directory).glob(pattern)):
        try:
            record = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            skipped.append([path.name, f"unreadable JSON ({err})"])
            continue
        problem = check(record)
        if problem:
            skipped.append([path.name, problem])
            continue
        good.append((path, record))
    return good, skipped

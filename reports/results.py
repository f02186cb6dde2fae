"""The report's reader of the stored results (`linrnn.base.results`: the envelope, the writer, the kinds).

One file per section, `<DIR>/<section>.json`, a `section` record. The report works on a view of each
(`view`): `{"section": NAME, "meta": {...}, "data": {...}, "path": FILE}`, where `meta` holds what a reader
needs to trust or reproduce a number: the code version, the date, the machine and device, the libraries, the
command and the section's resolved config. Reading never stops at one bad file: a missing, unreadable or
malformed file is reported as skipped, with the reason (the one line of `ResultsError`), and the rest still
renders.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linrnn.base import results
from linrnn.base.errors import LinrnnError
from linrnn.base.results import SECTIONS_DIR, STORED_DIR, ResultsError  # noqa: F401  (re-exported)

REPORT_FILES = frozenset({"ledger"})      # JSON the report itself writes beside the results (ledger.json): not skipped


def write_result(directory: str | os.PathLike, section: str, data: dict[str, Any], config: dict[str, Any],
                 device: str = "cpu", command: str | None = None) -> Path:
    """DIR/<section>.json: the section's record, written atomically."""
    return results.write(Path(directory) / f"{section}.json",
                         results.SectionRecord(section, device, config, data, results.Envelope.here(command)))


def view(record: results.SectionRecord, path: str | os.PathLike) -> dict[str, Any]:
    """The report's view of a section record (what the ledger, the sections and the templates read)."""
    env = record.envelope
    meta = {"code_version": env.code_version, "date": env.date, "machine": env.machine, "device": record.device,
            "libraries": env.libraries, "command": env.command, "config": record.config}
    return {"section": record.section, "meta": meta, "data": record.data, "path": str(path)}


def read_section(path: str | os.PathLike, name: str | None = None) -> dict[str, Any]:
    """The view of one section file (of section `name` when given); a bad file is one ResultsError line."""
    record = results.read(path, results.SectionRecord)
    if name is not None and record.section != name:
        raise ResultsError(f"{path}: section: expected {name!r}, found {record.section!r}")
    return view(record, path)


@dataclass
class Loaded:
    results: list[dict[str, Any]] = field(default_factory=list)   # views of the valid records, each with 'path'
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
                loaded.results.append(read_section(path, name))
            except ResultsError as err:
                loaded.skipped.append((str(path), _reason(err, path)))
        for stem, path in found.items():
            if stem not in REPORT_FILES:
                loaded.skipped.append((str(path), f"not a section of this report ({stem})"))
    return loaded


def _reason(err: ResultsError, path: Path) -> str:
    """The error's line without the file name it starts with (the skipped list names the file)."""
    text = str(err)
    return text[len(str(path)) + 2:] if text.startswith(f"{path}: ") else text


def read_stored(directory: str | os.PathLike, pattern: str, record_type: type[results.Record],
                check: Callable[[dict], str | None] | None = None) -> tuple[list[tuple[Path, dict]], list[list[str]]]:
    """The stored records `directory/pattern` (e.g. reports/results/training_speed*.json) of `record_type` that read
    (every field checked by `linrnn.base.results.read`) and pass `check` (which returns the first problem of the
    record's content, or None), in name order, each as its stored dict; and [file, reason] for each of the others."""
    good, skipped = [], []
    for path in sorted(Path(directory).glob(pattern)):
        try:
            record = results.to_dict(results.read(path, record_type))
        except ResultsError as err:
            skipped.append([path.name, _reason(err, path)])
            continue
        problem = check(record) if check is not None else None
        if problem:
            skipped.append([path.name, problem])
            continue
        good.append((path, record))
    return good, skipped


# -- the shape of a record's data: what a reader of it (a settle function of the ledger) needs --------------

class Number:
    """Shape: a finite or non-finite number (results files store NaN as the string 'nan')."""


def conforms(value: Any, shape: Any, path: str = "data") -> str | None:
    """None when `value` has `shape`, else where it does not.

    Shapes: a type (`str`, `bool`, `int`, `Number`, `dict`, `list`), a frozenset of allowed values,
    a dict {key: shape} (those keys required, others allowed), a one-element list [shape] (a list whose
    every element has it), `None` (anything), or a callable value -> problem or None.
    """
    if shape is None:
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{path}: expected an object"
        for key, sub in shape.items():
            if key not in value:
                return f"{path}.{key}: missing"
            problem = conforms(value[key], sub, f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{path}: expected a list"
        for i, item in enumerate(value):
            problem = conforms(item, shape[0], f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(shape, frozenset):
        return None if value in shape else f"{path}: expected one of {sorted(shape)}, found {value!r}"
    if shape is Number:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in ("nan", "inf", "-inf")
        return None if ok else f"{path}: expected a number"
    if isinstance(shape, type):
        ok = isinstance(value, shape) and not (shape is int and isinstance(value, bool))
        return None if ok else f"{path}: expected {shape.__name__}"
    return shape(value)

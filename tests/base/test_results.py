"""The one results module (`linrnn.base.results`): every record type written and read back, a bad file as one
line naming the file and the field, the atomic writer, and the committed records of reports/results/."""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import numpy as np
import pytest

from linrnn.base import results
from linrnn.base.results import Envelope, ResultsError

SAMPLE = {str: "text", int: 3, float: 0.25, bool: True, dict: {"a": [1, 2.5, None]}, list: [{"b": "c"}, 4]}
ENVELOPE = Envelope(date="2026-12-03T00:00:00+00:00", machine={"label": "box", "cpus": 2}, libraries={"numpy": "2"},
                    command="linrnn test --sample", code_version="0.2.0+gtest")


def value_of(hint):
    """A value of `hint` (of a union: of its first type)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return [value_of(args[0])]
    if origin is dict:
        return {"k": value_of(args[1])}
    return value_of(args[0]) if args else SAMPLE[hint]


def sample(record_type: type[results.Record]) -> results.Record:
    """A record of `record_type` with a value of its type in every field."""
    hints = typing.get_type_hints(record_type)
    values = {f.name: value_of(hints[f.name]) for f in dataclasses.fields(record_type) if f.name != "envelope"}
    return record_type(**values, envelope=ENVELOPE)


@pytest.mark.parametrize("name", sorted(results.RECORD_TYPES))
def test_every_record_type_reads_back_as_it_was_written(tmp_path, name):
    record_type = results.RECORD_TYPES[name]
    record = sample(record_type)
    path = results.write(tmp_path / f"{name}.json", record)
    raw = json.loads(path.read_text())
    assert list(raw)[:7] == ["schema_version", "kind", "date", "machine", "libraries", "command", "code_version"]
    assert raw["kind"] == name and raw["schema_version"] == results.SCHEMA_VERSION
    assert results.read(path, record_type) == record   # by its type
    assert results.read(path) == record                # by the type the file names
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.json"]        # no temporary file left


def test_a_record_without_an_envelope_gets_this_process_s(tmp_path):
    path = results.write(tmp_path / "grid.json", results.GridRecord(defaults={}, rows=[]))
    envelope = results.read(path, results.GridRecord).envelope
    assert envelope.command is None and envelope.machine["cpus"] >= 1 and "numpy" in envelope.libraries
    assert envelope.code_version.startswith("0.") and envelope.date.endswith("+00:00")


def test_numpy_values_and_non_finite_numbers_are_stored_as_strict_json(tmp_path):
    record = results.RunRecord(config={"x": np.float32(0.5)}, bundle_sha256="0" * 64, steps=np.int64(3),
                               stopped_early=False, seconds_per_step=math.nan, final={"r2": -math.inf},
                               best=None, train_loss=list(np.array([1.0, 0.5])), evaluations=[],
                               envelope=ENVELOPE)
    path = results.write(tmp_path / "results.json", record)
    back = results.read(path, results.RunRecord)
    assert back.seconds_per_step == "nan" and back.final == {"r2": "-inf"} and back.steps == 3
    assert results.number(back.seconds_per_step) != results.number(back.seconds_per_step)       # NaN again
    assert results.number(back.final["r2"]) == -math.inf and back.train_loss == [1.0, 0.5]
    json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard JSON token {c}"))


def broken(tmp_path, change) -> str:
    raw = json.loads(results.dumps(sample(results.ExperimentRecord)))
    change(raw)
    path = tmp_path / "experiment-x.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ResultsError) as err:
        results.read(path, results.ExperimentRecord)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    return message[len(str(path)) + 2:]


def test_a_missing_or_wrong_field_is_one_line_naming_the_file_and_the_field(tmp_path):
    assert broken(tmp_path, lambda r: r.pop("runs")) == "runs: missing"
    assert broken(tmp_path, lambda r: r.pop("machine")) == "machine: missing"
    assert broken(tmp_path, lambda r: r.update(quick="no")) == "quick: expected true or false, found 'no'"
    assert broken(tmp_path, lambda r: r.update(seconds=True)) == "seconds: expected a number, found True"
    assert broken(tmp_path, lambda r: r.update(claims=["D2", 3])) == "claims: expected a list of text, found ['D2', 3]"
    assert broken(tmp_path, lambda r: r.update(command=3)) == "command: expected text or null, found 3"
    assert broken(tmp_path, lambda r: r.update(schema_version=1)) == "schema_version: expected 2, found 1"
    assert broken(tmp_path, lambda r: r.update(kind="grid")) == "kind: expected 'experiment', found 'grid'"
    assert broken(tmp_path, lambda r: r.update(created="x")) == "created: not a field of a experiment record"


def test_a_partial_or_absent_file_is_one_line(tmp_path):
    path = results.write(tmp_path / "grid.json", sample(results.GridRecord))
    path.write_text(path.read_text()[:40])                     # cut short, as a killed writer without rename would
    with pytest.raises(ResultsError, match=r"^.*grid\.json: unreadable JSON \(.*\)$"):
        results.read(path)
    path.write_text("[1, 2]")
    with pytest.raises(ResultsError, match=r"grid\.json: expected a JSON object, found list$"):
        results.read(path)
    with pytest.raises(ResultsError, match=r"absent\.json: no such file$"):
        results.read(tmp_path / "absent.json")
    path.write_text(json.dumps({"schema_version": 2, "kind": "nothing"}))
    with pytest.raises(ResultsError, match=r"kind: expected one of section, .*, found 'nothing'$"):
        results.read(path)


def test_a_record_that_does_not_serialise_leaves_the_previous_file_and_no_other(tmp_path):
    path = results.write(tmp_path / "training_speed_x.json", sample(results.TrainingSpeedRecord))
    before = path.read_bytes()
    bad = results.TrainingSpeedRecord(sweep={"rows": [object()]}, envelope=ENVELOPE)
    with pytest.raises(ResultsError, match=r"training_speed_x\.json: cannot serialise the training_speed record"):
        results.write(path, bad)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    with pytest.raises(ResultsError, match="cannot serialise"):
        results.write(tmp_path / "new.json", bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]       # nothing half-written, no temp file


def test_only_the_record_types_of_the_module_are_written(tmp_path):
    with pytest.raises(ResultsError, match="expected a record of a type of linrnn.base.results, found dict"):
        results.write(tmp_path / "x.json", {"schema_version": 2})


def stored_files():
    files = sorted(results.STORED_DIR.glob("*.json")) + sorted(results.SECTIONS_DIR.glob("*.json"))
    return [p for p in files if p.name != "bench_cpu.json"]          # pytest-benchmark's own JSON, not a record


@pytest.mark.skipif(not stored_files(), reason="no stored results (an installed package without a checkout)")
def test_every_committed_record_reads_through_the_module():
    types = {p.name: results.read(p).TYPE for p in stored_files()}
    assert types["training_speed_cpu.json"] == "training_speed" and types["tasks.json"] == "section"
    assert {k for n, k in types.items() if n.startswith("experiment-")} == {"experiment"}
    assert types["training_reduced_cpu.json"] == "reduced_training" and types["synthetic_grid_cpu.json"] == "grid"


def test_a_failed_rename_keeps_the_previous_record_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = results.write(tmp_path / "grid.json", sample(results.GridRecord))
    before = path.read_bytes()

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results.os, "replace", full_disk)
    with pytest.raises(ResultsError, match=r"^cannot write .*grid\.json: No space left on device$"):
        results.write(path, results.GridRecord(defaults={}, rows=[1], envelope=ENVELOPE))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["grid.json"]

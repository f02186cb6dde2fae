"""Every results record the project writes or reads: one envelope, one atomic writer, one dataclass per record type.

A record on disk is one JSON object, the envelope's keys first, then its type's own fields, all at the top level
(the type is stored under the key "kind", the class's `TYPE`):

    {"schema_version": 2, "kind": TYPE, "date": ..., "machine": {...}, "libraries": {...},
     "command": ..., "code_version": ..., <the fields of TYPE's dataclass>}

The record types (`RECORD_TYPES`, each a dataclass below, shared by the writer and the reader):

    section          one section of `linrnn report` (and `linrnn gpucheck`'s DIR/gpucheck.json): DIR/<section>.json
    experiment       one empirical experiment (`linrnn experiment NAME`): reports/results/experiment-NAME.json
    training_speed   one training-speed sweep: reports/results/training_speed_<machine>.json
    reduced_training the papers' data tasks at reduced scale: reports/results/training_reduced_<machine>.json
    grid             a `linrnn tasks grid` table (`--json`): e.g. reports/results/synthetic_grid_cpu.json
    run              one training run's results, RUN_DIR/results.json (`linrnn tasks train`)
    norm_run         one norm-study run kept for reuse, RUN_DIR/norms.json (`linrnn experiment norms-listops`)
    job              one job of a sweep (`linrnn.tasks.sweep`: an experiment's run, a grid's, a reduced-scale one), what
                     it returned, where and how it ran: JOB_DIR/job.json
    crosscheck       `linrnn crosscheck --json FILE`
    conform          `linrnn conform ... --json FILE`
    theory           `linrnn theory --json FILE`

`write(path, record)` serialises the whole record first (NumPy scalars to Python, NaN and infinities to the
strings 'nan', 'inf', '-inf': strict JSON) and only then writes a temporary file beside `path` and renames it
over `path`: a reader sees the previous record or the new one, never half of one, and a record that does not
serialise leaves nothing behind. `read(path, Type)` checks the envelope and every field of the type (present,
of its type, no field the type does not have): a bad file is one `ResultsError` line naming the file and the
field. This module sits in the lowest layer (impls, framework-neutral), so that every area reads and writes
through it; it owns the stored-results folder `STORED_DIR` (reports/results/ in a checkout) and the names of
the files in a run directory.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Union

from linrnn.base.errors import LinrnnError
from linrnn.base.provenance import code_version, library_versions, machine

SCHEMA_VERSION = 2
# where a checkout keeps its stored results (experiment records, sweeps, the report's training sections)
STORED_DIR = Path(__file__).resolve().parents[1] / "reports" / "results"
SECTIONS_DIR = STORED_DIR / "sections"       # the report's stored training sections (`linrnn report`)
RUN_RESULTS = "results.json"                 # a run directory's results record (type 'run')
NORM_RUN = "norms.json"                      # a norm-study run directory's kept measurement (type 'norm_run')
JOB_RESULT = "job.json"                      # a sweep job's directory: what the job returned (type 'job')
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ResultsError(LinrnnError):
    """A results file that cannot be written or read: one line naming the file and, when it is one, the field."""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Envelope:
    """What a reader needs to trust or reproduce a record: when, where, with what, by which command, which code."""

    date: str
    machine: dict
    libraries: dict
    command: str | None
    code_version: str

    @classmethod
    def here(cls, command: str | None = None, extra_libraries: tuple[str, ...] = ()) -> Envelope:
        """This process's envelope; `extra_libraries`: more distributions to record beside the usual ones."""
        from importlib import metadata

        libraries = library_versions()
        for name in extra_libraries:
            try:
                libraries[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                libraries[name] = "not installed"
        return cls(date=now(), machine=machine(), libraries=libraries, command=command, code_version=code_version())


ENVELOPE_KEYS = tuple(f.name for f in fields(Envelope))


@dataclass
class Record:
    """A record type's fields, then its envelope (None until written: `write` fills in this process's)."""

    TYPE: ClassVar[str] = ""


@dataclass
class SectionRecord(Record):
    TYPE: ClassVar[str] = "section"
    section: str
    device: str
    config: dict
    data: dict
    envelope: Envelope | None = None


@dataclass
class ExperimentRecord(Record):
    TYPE: ClassVar[str] = "experiment"
    experiment: str
    claims: list[str]
    title: str
    question: str
    scale: str
    brief: str
    factor: str
    note: str
    quick: bool
    seconds: float
    training_seconds: float
    complete: bool
    controls: list
    runs: list
    # the best trivial predictor of each task, length and data set of the runs (`linrnn.tasks.trivial`): the bar
    # an arm must clear to have learned; empty in records written before it was measured
    trivial: list = field(default_factory=list)
    # what was fixed before the runs it covers, and every look taken in between (`Experiment.design`): a claim's
    # confirmatory run (its runs, rule, margin, seeds and budget, registered before any of them trained) and the
    # interim looks of earlier runs (what was seen and what changed after); empty in records without one
    design: list = field(default_factory=list)
    envelope: Envelope | None = None


@dataclass
class TrainingSpeedRecord(Record):
    TYPE: ClassVar[str] = "training_speed"
    sweep: dict
    envelope: Envelope | None = None


@dataclass
class ReducedTrainingRecord(Record):
    TYPE: ClassVar[str] = "reduced_training"
    runs: list
    envelope: Envelope | None = None


@dataclass
class GridRecord(Record):
    TYPE: ClassVar[str] = "grid"
    defaults: dict
    rows: list
    envelope: Envelope | None = None


@dataclass
class RunRecord(Record):
    TYPE: ClassVar[str] = "run"
    config: dict
    bundle_sha256: str
    steps: int
    stopped_early: bool
    seconds_per_step: float | None
    final: dict | None
    best: dict | None
    train_loss: list
    evaluations: list
    envelope: Envelope | None = None


@dataclass
class NormRunRecord(Record):
    TYPE: ClassVar[str] = "norm_run"
    config: dict             # the run's TrainConfig (to_dict): the key a rerun reuses it by
    run: dict                # `linrnn.experiments.normstudy.run`'s measurement
    envelope: Envelope | None = None


@dataclass
class JobRecord(Record):
    TYPE: ClassVar[str] = "job"
    name: str                # the job's name in its sweep
    key: dict                # the job's inputs (its config, labels, data): a record with another key is not this job's
    result: list | dict      # what the job returned: an experiment's rows, a grid's or a reduced-scale run's row
    executor: str            # "serial", "local" or "slurm"
    threads: int             # the intra-op threads it ran with (PyTorch's, OpenMP's): fixed per job, not per machine
    slurm_job_id: str | None  # SLURM's id (ARRAY_TASK form for an array), None elsewhere
    restarts: int            # times SLURM requeued it (preemption), 0 elsewhere
    seconds: float           # wall time of the job's last attempt
    envelope: Envelope | None = None


@dataclass
class CrosscheckRecord(Record):
    TYPE: ClassVar[str] = "crosscheck"
    result: dict             # `linrnn.verify.crosscheck.run`'s result: selection, entries, summary, ok
    envelope: Envelope | None = None


@dataclass
class ConformRecord(Record):
    TYPE: ClassVar[str] = "conform"
    result: dict             # `linrnn.verify.conform.run(...).to_dict()`: every check and the deviations
    envelope: Envelope | None = None


@dataclass
class TheoryRecord(Record):
    TYPE: ClassVar[str] = "theory"
    result: dict             # `linrnn.theory.registry.results_payload`: every claim's derivation
    envelope: Envelope | None = None


RECORD_TYPES: dict[str, type[Record]] = {k.TYPE: k for k in (
    SectionRecord, ExperimentRecord, TrainingSpeedRecord, ReducedTrainingRecord, GridRecord, RunRecord, NormRunRecord,
    JobRecord, CrosscheckRecord, ConformRecord, TheoryRecord)}


def command_line(args: Any) -> str | None:
    """The command a `linrnn` sub-command was given (`linrnn.cli.main` keeps its argv on `args`), or None."""
    argv = getattr(args, "argv", None)
    return None if argv is None else " ".join(["linrnn", *map(str, argv)])


# -- writing ------------------------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """JSON-ready: NumPy scalars and arrays to Python, tuples to lists, NaN and infinities to strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):           # NumPy scalars and arrays
        return plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def to_dict(record: Record) -> dict:
    """The record as it is stored (envelope first); a record without an envelope gets this process's."""
    envelope = record.envelope if record.envelope is not None else Envelope.here()
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": record.TYPE}
    out.update({k: getattr(envelope, k) for k in ENVELOPE_KEYS})
    out.update({f.name: getattr(record, f.name) for f in fields(record) if f.name != "envelope"})
    return out


def dumps(record: Record) -> str:
    return json.dumps(plain(to_dict(record)), indent=1, allow_nan=False) + "\n"


def write(path: str | os.PathLike, record: Record) -> Path:
    """`record` to `path`, atomically: serialised in full first, then a temporary file renamed over `path`."""
    path = Path(path)
    if not isinstance(record, Record) or type(record) not in RECORD_TYPES.values():
        raise ResultsError(f"{path}: expected a record of a type of linrnn.base.results, found "
                           f"{type(record).__name__}")
    try:
        text = dumps(record)
    except (TypeError, ValueError) as err:          # an object JSON cannot hold: nothing is written
        raise ResultsError(f"{path}: cannot serialise the {record.TYPE} record: {err}") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise ResultsError(f"cannot write {path}: {err.strerror or err}") from None
    return path


# -- reading ------------------------------------------------------------------------------------------

def _type_name(hint: Any) -> str:
    names = {str: "text", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
             list: "a list", type(None): "null"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is list:
        return f"a list of {_type_name(args[0])}"
    if origin is dict:
        return f"an object of {_type_name(args[1])}"
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _fits(value: Any, hint: Any) -> bool:
    """Whether `value` is of type `hint`: str, int, float, bool, dict, list, Any, `X | None`, list[X], dict[str, X]."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(v, args[1]) for v in value.values())
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in NON_FINITE
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _check(raw: dict, cls: type, where: str, skip: tuple[str, ...] = ()) -> dict:
    """The fields of dataclass `cls` from `raw` (each present unless it has a default, and of its type)."""
    out = {}
    for f in fields(cls):
        if f.name in skip:
            continue
        if f.name not in raw:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ResultsError(f"{where}: {f.name}: missing")
            continue
        hint = _field_types(cls)[f.name]
        if not _fits(raw[f.name], hint):
            found = repr(raw[f.name])
            raise ResultsError(f"{where}: {f.name}: expected {_type_name(hint)}, found "
                               f"{found if len(found) <= 60 else found[:57] + '...'}")
        out[f.name] = raw[f.name]
    return out


def from_dict(raw: Any, record_type: type[Record] | None = None, where: str = "record") -> Record:
    """A stored record back as its dataclass (`record_type`, or the type its `"kind"` names), every field checked."""
    if not isinstance(raw, dict):
        raise ResultsError(f"{where}: expected a JSON object, found {type(raw).__name__}")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsError(f"{where}: schema_version: expected {SCHEMA_VERSION}, found {version!r}")
    named = raw.get("kind")                       # the stored key of the record's type
    if record_type is None:
        if named not in RECORD_TYPES:
            raise ResultsError(f"{where}: kind: expected one of {', '.join(RECORD_TYPES)}, found {named!r}")
        record_type = RECORD_TYPES[named]
    elif named != record_type.TYPE:
        raise ResultsError(f"{where}: kind: expected {record_type.TYPE!r}, found {named!r}")
    own = {f.name for f in fields(record_type)} - {"envelope"}
    extra = [k for k in raw if k not in own and k not in ENVELOPE_KEYS and k not in ("schema_version", "kind")]
    if extra:
        raise ResultsError(f"{where}: {extra[0]}: not a field of a {record_type.TYPE} record")
    envelope = Envelope(**_check(raw, Envelope, where))
    return record_type(**_check(raw, record_type, where, skip=("envelope",)), envelope=envelope)


def read(path: str | os.PathLike, record_type: type[Record] | None = None) -> Record:
    """The record at `path` (of `record_type`, or of whichever type it names); a bad file is one ResultsError line."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultsError(f"{path}: unreadable JSON ({err})") from None
    return from_dict(raw, record_type, where=str(path))


def number(value: Any) -> Any:
    """A stored number back as a float where it was written as 'nan', 'inf' or '-inf'; anything else as it is."""
    return NON_FINITE[value] if isinstance(value, str) and value in NON_FINITE else value

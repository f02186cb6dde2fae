"""What every loader shares: the `Dataset` recipe, the loaded `Split`, and the generic load/check/info.

A loader module subclasses `Dataset` (where its data is, what a split is built from, how it is
parsed into arrays) and gets loading through the cache, checking and describing from here:

    load_split(ds, split)  -> Split       trusted cache entry mapped, built first if needed
    check(ds)              -> CheckReport  statistics per split + every problem, one line each
    describe(ds)           -> list[str]    the folder, the source files, the cache state (no parsing)

Parsing reports trouble through `Problems`: when loading, the first problem is a `LinrnnError`
(one line, nothing written); when checking, every problem is collected, the bad item skipped, and the
split's cache is not written (a split is cached only after a clean parse).
"""

from __future__ import annotations

import abc
import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod

SPLITS = ("train", "val", "test")
MAX_PROBLEMS = 50  # problems listed per split before the rest are only counted


class Problems:
    """Where a parser reports bad input: raise at once (`strict`, for loading) or collect (checking)."""

    def __init__(self, strict: bool):
        self.strict = strict
        self.lines: list[str] = []
        self.count = 0

    def add(self, message: str) -> None:
        if self.strict:
            raise LinrnnError(message)
        self.count += 1
        if len(self.lines) < MAX_PROBLEMS:
            self.lines.append(message)

    def summary(self) -> list[str]:
        more = self.count - len(self.lines)
        return self.lines + ([f"... and {more} more problems"] if more > 0 else [])


class _Abandon(Exception):
    """Raised inside a checking build that found problems, so that nothing is cached."""


@dataclasses.dataclass(frozen=True)
class SequenceSpec:
    """One sequence array of a split and how batches pad it.

    A *ragged* sequence is stored flat as `<name>` with `<name>_lengths` (int32, one per example);
    a *dense* one as `<name>` of shape (n L) or (n L C), all of length L.
    """

    name: str  # the array's name
    pad: int | float  # value written into padding positions (the pad id for tokens)
    max_length: int  # the task's L: no example is longer
    role: str = "input"  # "input" or "target" (per-token targets pad with their ignore index)


@dataclasses.dataclass(frozen=True)
class Split:
    """One loaded split: read-only memory-mapped arrays plus what they mean."""

    task: str  # registry task name, e.g. "listops"
    split: str  # "train", "val" or "test"
    source: Path  # the data folder the loader used
    cache: Path  # the cache entry the arrays are mapped from
    arrays: Mapping[str, np.ndarray]  # name -> array; ragged sequences also get `<name>_offsets` (n+1,)
    sequences: tuple[SequenceSpec, ...]  # which arrays are sequences, how to pad them
    labels: str | None  # name of the per-example label array (None: targets are sequences)
    num_classes: int | None  # labels lie in [0, num_classes)
    manifest: Mapping[str, Any]  # the cache manifest (key, sources, arrays, extra)
    built: bool  # whether this load built the cache (False: mapped an existing entry)
    seconds: float  # time of this load (build + map, or validate + map)

    def __len__(self) -> int:
        return int(self.manifest["extra"]["n"])

    def lengths(self, name: str) -> np.ndarray:
        """(n,) true lengths of sequence `name`."""
        spec = next(s for s in self.sequences if s.name == name)
        if f"{name}_lengths" in self.arrays:
            return self.arrays[f"{name}_lengths"]
        return np.full(len(self), self.arrays[spec.name].shape[1], dtype=np.int32)

    def row(self, name: str, i: int) -> np.ndarray:
        """Example i of sequence `name`, unpadded."""
        if f"{name}_offsets" in self.arrays:
            offsets = self.arrays[f"{name}_offsets"]
            return self.arrays[name][offsets[i]:offsets[i + 1]]
        return self.arrays[name][i]


class Dataset(abc.ABC):
    """A dataset found on disk, with its options: what each split is built from and how.

    Subclasses set the class attributes and implement `sources` and `parse`; `key_extra` adds what a
    split depends on beyond its own files (e.g. a vocabulary built from train).
    """

    task: str = ""  # registry task name
    format_version: int = 1  # bump when the arrays a parse writes change meaning
    splits: tuple[str, ...] = SPLITS
    sequences: tuple[SequenceSpec, ...] = ()
    labels: str | None = "labels"
    num_classes: int | None = None

    def __init__(self, folder: Path, options: Any, name: str, cache: Any = None):
        self.folder = Path(folder)  # the data folder found by layout.find
        self.options = options  # the loader's frozen Options dataclass
        self.name = name  # the cache name, unique per dataset variant
        self.cache = cachemod.cache_root(self.folder, name, cache)  # folder of this dataset's entries

    @abc.abstractmethod
    def sources(self, split: str) -> cachemod.Sources:
        """The files split `split` is built from (missing ones: a LinrnnError naming them)."""

    @abc.abstractmethod
    def parse(self, split: str, writer: cachemod.Writer, problems: Problems) -> dict:
        """Write the split's arrays; return JSON-able extras, including "n" (the example count)."""

    def key_extra(self, split: str, problems: Problems) -> dict:
        return {}

    def stored(self, split: str) -> str:
        """The cache entry holding `split`: splits with the same data share one (IMDB's val is its test)."""
        return split

    def key(self, split: str, problems: Problems) -> dict:
        from linrnn import __version__

        return {"task": self.task, "name": self.name, "split": split, "format_version": self.format_version,
                "code_version": __version__, "options": dataclasses.asdict(self.options),
                **self.key_extra(split, problems)}

    def check_split(self, split: Split, problems: Problems) -> None:
        """Problems visible only in the parsed arrays (counts, balance); default none."""


def _check_split_name(ds: Dataset, split: str) -> None:
    if split not in ds.splits:
        raise LinrnnError(f"{ds.task}: unknown split {split!r}: expected one of {', '.join(ds.splits)}")


def _open(ds: Dataset, split: str, problems: Problems) -> Split:
    _check_split_name(ds, split)
    start = time.perf_counter()
    stored = ds.stored(split)
    key = ds.key(stored, problems)
    sources = ds.sources(stored)

    def build(writer):
        extra = ds.parse(stored, writer, problems)
        if problems.count:
            raise _Abandon()
        return extra

    entry = cachemod.open_or_build(ds.cache / stored, key, sources, build)
    arrays = dict(entry.arrays)
    for spec in ds.sequences:
        if f"{spec.name}_lengths" in arrays:
            lengths = arrays[f"{spec.name}_lengths"]
            arrays[f"{spec.name}_offsets"] = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    return Split(ds.task, split, ds.folder, entry.folder, arrays, ds.sequences, ds.labels, ds.num_classes,
                 entry.manifest, entry.built, time.perf_counter() - start)


def load_split(ds: Dataset, split: str) -> Split:
    """Split `split` of `ds`, from its trusted cache entry (built first if missing or stale)."""
    return _open(ds, split, Problems(strict=True))


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """What `check` found."""

    lines: list[str]  # one line of statistics per split (and the folder used)
    problems: list[str]  # one line per problem; empty when the dataset is fine


def statistics(split: Split) -> str:
    """One line: count, label balance, lengths, vocabulary size, load time."""
    parts = [f"{split.split}: {len(split)} examples"]
    if split.labels is not None and len(split):
        values, counts = np.unique(np.asarray(split.arrays[split.labels]), return_counts=True)
        parts.append("labels " + " ".join(f"{v}:{c}" for v, c in zip(values.tolist(), counts.tolist())))
    for spec in split.sequences:
        lengths = np.asarray(split.lengths(spec.name))
        if len(lengths):
            parts.append(f"{spec.name} length min {lengths.min()} mean {lengths.mean():.1f} max {lengths.max()}"
                         f" (L {spec.max_length})")
    extra = split.manifest.get("extra", {})
    if "vocabulary" in extra:
        parts.append(f"vocabulary {len(extra['vocabulary'])}")
    for name in ("truncated", "skipped_empty", "unknown_tokens", "padded", "dropped_short"):
        if extra.get(name):
            parts.append(f"{name.replace('_', ' ')} {extra[name]}")
    how = "built" if split.built else "mapped"
    parts.append(f"{how} in {split.seconds:.2f} s")
    return ", ".join(parts)


def check(ds: Dataset) -> CheckReport:
    """Parse (or map) every split, collecting every problem instead of stopping at the first."""
    lines = [f"{ds.task}: data folder {ds.folder}", f"{ds.task}: cache {ds.cache}"]
    problems_all: list[str] = []
    for split in ds.splits:
        problems = Problems(strict=False)
        try:
            loaded = _open(ds, split, problems)
        except _Abandon:
            loaded = None
        except LinrnnError as err:
            problems.add(str(err))
            loaded = None
        if loaded is not None:
            ds.check_split(loaded, problems)
            lines.append(statistics(loaded))
            if loaded.labels is not None and loaded.num_classes is not None and len(loaded):
                labels = np.asarray(loaded.arrays[loaded.labels])
                missing = sorted(set(range(loaded.num_classes)) - set(np.unique(labels).tolist()))
                if missing and len(loaded) >= 10 * loaded.num_classes:
                    problems.add(f"{split}: no example of class(es) {missing}")
        else:
            lines.append(f"{split}: not loaded ({problems.count} problems)")
        problems_all += [p if p.startswith(f"{split}:") else f"{split}: {p}" for p in problems.summary()]
    return CheckReport(lines, problems_all)


def describe(ds: Dataset) -> list[str]:
    """What the loader sees, without parsing: folder, options, each split's sources and cache state."""
    lines = [f"task {ds.task}", f"data folder {ds.folder}", f"options {dataclasses.asdict(ds.options)}",
             f"cache {ds.cache}"]
    for split in ds.splits:
        try:
            sources = ds.sources(ds.stored(split))
        except LinrnnError as err:
            lines.append(f"{split}: {err}")
            continue
        files = [f"{f} ({(sources.folder / f).stat().st_size} bytes)" for f in sources.files]
        trees = [f"{t}/ ({sum(1 for _ in cachemod._walk(sources.folder / t))} files)" for t in sources.trees]
        manifest = cachemod.read_manifest(ds.cache / ds.stored(split))
        if manifest is None:
            state = "not built"
        else:
            state = f"built ({manifest.get('extra', {}).get('n', '?')} examples, {manifest.get('build_seconds')} s)"
        lines.append(f"{split}: from {', '.join(files + trees)}; cache {state}")
    return lines


def entry_points(make: Callable[..., Dataset]):
    """A loader module's `load`, `check` and `info` (the interface of linrnn.tasks.data), from its
    `dataset(root, cache=None, **options)`: each locates the folder and checks the options first."""

    def load(root, split, cache=None, **options) -> Split:
        return load_split(make(root, cache, **options), split)

    def check_(root, cache=None, **options) -> list[str]:
        return check(make(root, cache, **options)).problems

    def info(root, cache=None, **options) -> list[str]:
        return describe(make(root, cache, **options))

    check_.__name__ = "check"
    return load, check_, info


def make_options(cls, task: str, given: Mapping[str, Any]):
    """`cls(**given)` with values given as text (from the command line) converted to the type of each
    field's default; an unknown name or a bad value is a one-line `LinrnnError`."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise LinrnnError(f"{task}: unknown option(s) {', '.join(unknown)}: expected {', '.join(fields) or 'none'}")
    values = {}
    for name, value in given.items():
        default = fields[name].default
        if isinstance(value, str) and not isinstance(default, str) and default is not None:
            try:
                if isinstance(default, bool):
                    if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError(value)
                    value = value.lower() in ("true", "1", "yes")
                else:
                    value = type(default)(value)
            except ValueError:
                raise LinrnnError(f"{task}: option {name} expects a value of type {type(default).__name__}, got {value!r}") from None
        values[name] = value
    return cls(**values)

"""The preprocessed cache: one folder of memory-mapped `.npy` arrays plus `manifest.json` per split.

Why: parsing a dataset (tokenising 50k reviews, decoding 200k PNGs) takes minutes; mapping its arrays
takes milliseconds. So a split is parsed once, written as arrays, and later loads only map them
(`np.load(mmap_mode="r")`): the pages are read when a batch touches them.

When a cache entry is trusted. Its manifest records the key (task, split, options, per-task format
version, the code version `linrnn.__version__`, and whatever the split depends on, e.g. the
vocabulary) and the sources' fingerprint; an entry is used only if both equal what they are now and
every array it names is there with its recorded dtype and shape. Otherwise it is rebuilt.

Fingerprints. Large files (TSVs, CIFAR batches, metadata): path, size and sha256 of the content. To
keep loads cheap, a file whose size and mtime_ns equal the manifest's is not hashed again (the
stored sha256 is taken, as `git status` trusts its stat cache); a file whose mtime changed is hashed,
so touching a file does not force a rebuild but editing it does. Folders of many small files (PNGs,
IMDB reviews): the sha256 of the sorted list of (relative path, size, mtime_ns) of every file, plus
the sha256 of the contents of a deterministic sample of them (`SAMPLE` files evenly spaced in sorted
order). Copying such a folder (new mtimes) therefore rebuilds its cache.

Atomic builds. An entry is written into a fresh temporary folder next to it (`.tmp-<split>-*`), the
manifest last, and renamed into place; the old entry is renamed away first and deleted after. A build
that raises removes its temporary folder; a build that is killed leaves only a `.tmp-*` folder, which
no load ever reads and the next build of that split deletes. A lock file (`fcntl.flock`) keeps two
processes from building the same entry at once; the second one then finds the first one's entry.

Where. `cache_root`: the `cache` argument (`--cache DIR`), else the environment variable
`LINRNN_CACHE`, else `.linrnn-cache/` inside the data folder (next to the data), else, when that
folder cannot be written, the user cache folder (`$XDG_CACHE_HOME/linrnn/data`, default
`~/.cache/linrnn/data`). Outside the data folder, entries are named with a hash of the data folder's
absolute path, so two copies of a dataset never share an entry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from linrnn.base.errors import LinrnnError

MANIFEST = "manifest.json"
LOCAL = ".linrnn-cache"  # the cache folder inside a data folder; never part of a fingerprint
SAMPLE = 32  # files of a many-small-files folder whose contents are hashed
CHUNK = 1 << 20  # bytes per read when hashing


# ------------------------------------------------------------------------------------ locations


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def user_cache() -> Path:
    """The per-user cache folder, used when the data folder is read-only."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "linrnn" / "data"


def cache_root(folder: Path, name: str, cache: str | os.PathLike | None = None) -> Path:
    """The folder of one dataset's cache entries (one sub-folder per split); see the module docstring.

    Args:
        folder  the dataset's data folder (as found by `layout.find`)
        name    the dataset's cache name, e.g. "listops" or "pathfinder32-curv_contour_length_14"
        cache   an explicit cache folder (`--cache`), or None
    """
    tag = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:10]
    explicit = cache if cache is not None else os.environ.get("LINRNN_CACHE") or None
    if explicit is not None:
        return Path(explicit).expanduser() / f"{name}-{tag}"
    local = Path(folder) / LOCAL
    if (local / name).is_dir() or _writable(local):
        return local / name
    return user_cache() / f"{name}-{tag}"


# ---------------------------------------------------------------------------------- fingerprints


@dataclasses.dataclass(frozen=True)
class Sources:
    """What a split is built from, relative to `folder`."""

    folder: Path  # the dataset's data folder
    files: tuple[str, ...] = ()  # large files, each fingerprinted by size and sha256
    trees: tuple[str, ...] = ()  # folders of many small files, fingerprinted by listing + a sample


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _walk(folder: Path) -> Iterator[os.DirEntry]:
    """Every regular file under `folder`, skipping the cache folder and hidden temporary folders."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=True):
                if entry.name != LOCAL:
                    yield from _walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=True):
                yield entry


def _file_record(sources: Sources, relative: str, known: Mapping[str, dict]) -> dict:
    path = sources.folder / relative
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise LinrnnError(f"missing file {path}") from None
    old = known.get(relative)
    if old and old.get("size") == stat.st_size and old.get("mtime_ns") == stat.st_mtime_ns:
        sha = old["sha256"]
    else:
        sha = sha256_file(path)
    return {"path": relative, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha}


def _tree_record(sources: Sources, relative: str) -> dict:
    folder = sources.folder / relative
    if not folder.is_dir():
        raise LinrnnError(f"missing folder {folder}")
    rows = sorted((os.path.relpath(e.path, folder), e.stat().st_size, e.stat().st_mtime_ns) for e in _walk(folder))
    listing = hashlib.sha256("\n".join(f"{p}\t{s}\t{m}" for p, s, m in rows).encode()).hexdigest()
    picks = sorted({round(i * (len(rows) - 1) / max(SAMPLE - 1, 1)) for i in range(SAMPLE)}) if rows else []
    content = hashlib.sha256()
    for i in picks:
        content.update(rows[i][0].encode() + b"\0" + sha256_file(folder / rows[i][0]).encode())
    return {"path": relative, "files": len(rows), "bytes": sum(r[1] for r in rows),
            "listing_sha256": listing, "sample_files": len(picks), "sample_sha256": content.hexdigest()}


def fingerprint(sources: Sources, known: Mapping[str, Any] | None = None) -> dict:
    """The sources' fingerprint (see the module docstring); `known` is a previous fingerprint whose
    sha256 values are reused for files with unchanged size and mtime."""
    old = {r["path"]: r for r in (known or {}).get("files", [])}
    return {"files": [_file_record(sources, f, old) for f in sources.files],
            "trees": [_tree_record(sources, t) for t in sources.trees]}


def _same_sources(a: Mapping, b: Mapping) -> bool:
    """Equal up to the files' mtimes (content decides for large files; for trees mtimes are in the listing)."""
    def strip(fp):
        return ([(r["path"], r["size"], r["sha256"]) for r in fp.get("files", [])], fp.get("trees", []))
    return strip(a) == strip(b)


# --------------------------------------------------------------------------------------- writing


class _Ragged:
    """Appends variable-length 1-D rows to a raw file; `close` turns it into `<name>.npy` (flat) and
    `<name>_lengths.npy` (int32), so memory stays bounded by one row however large the split."""

    def __init__(self, folder: Path, name: str, dtype):
        self.folder, self.name, self.dtype = folder, name, np.dtype(dtype)
        self.raw = open(folder / f"{name}.raw", "wb")
        self.lengths: list[int] = []

    def append(self, row: np.ndarray) -> None:
        row = np.asarray(row)
        if row.ndim != 1:
            raise ValueError(f"{self.name}: a ragged row must be 1-D, got shape {row.shape}")
        self.raw.write(np.ascontiguousarray(row, dtype=self.dtype).tobytes())
        self.lengths.append(len(row))

    def close(self) -> None:
        self.raw.close()
        total = sum(self.lengths)
        raw_path = self.folder / f"{self.name}.raw"
        out = np.lib.format.open_memmap(self.folder / f"{self.name}.npy", mode="w+", dtype=self.dtype, shape=(total,))
        if total:
            source = np.memmap(raw_path, dtype=self.dtype, mode="r", shape=(total,))
            step = CHUNK * 16
            for start in range(0, total, step):
                out[start:start + step] = source[start:start + step]
            del source
        out.flush()
        del out
        raw_path.unlink()
        np.save(self.folder / f"{self.name}_lengths.npy", np.asarray(self.lengths, dtype=np.int32))


class Writer:
    """Writes the arrays of one cache entry into its temporary folder.

    put(name, array)                 a whole array
    dense(name, shape, dtype)        a writable memmap to fill row by row (e.g. (n L) pixels)
    ragged(name, dtype)              rows of varying length: `<name>` (flat) + `<name>_lengths`
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self._open: list[Any] = []

    def put(self, name: str, array: np.ndarray) -> None:
        np.save(self.folder / f"{name}.npy", np.asarray(array), allow_pickle=False)

    def dense(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        out = np.lib.format.open_memmap(self.folder / f"{name}.npy", mode="w+", dtype=np.dtype(dtype), shape=shape)
        self._open.append(out)
        return out

    def ragged(self, name: str, dtype) -> _Ragged:
        writer = _Ragged(self.folder, name, dtype)
        self._open.append(writer)
        return writer

    def close(self) -> None:
        for item in self._open:
            if isinstance(item, _Ragged):
                item.close()
            else:
                item.flush()
        self._open.clear()


# --------------------------------------------------------------------------------------- entries


@dataclasses.dataclass(frozen=True)
class Entry:
    """One trusted cache entry, mapped."""

    folder: Path  # the entry's folder
    arrays: Mapping[str, np.ndarray]  # name -> read-only memory-mapped array
    manifest: Mapping[str, Any]  # the parsed manifest.json
    built: bool  # whether this call built it (False: reused)
    seconds: float  # time of this call: build + map, or validate + map


def _map(folder: Path, manifest: Mapping) -> dict[str, np.ndarray] | None:
    """The entry's arrays mapped read-only, or None if one is missing or differs from the manifest."""
    arrays = {}
    for name, spec in manifest.get("arrays", {}).items():
        path = folder / f"{name}.npy"
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False) if np.prod(spec["shape"]) else np.load(path)
        except (OSError, ValueError):
            return None
        if str(array.dtype) != spec["dtype"] or list(array.shape) != list(spec["shape"]):
            return None
        arrays[name] = array
    return arrays


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def lookup(folder: Path, key: Mapping, sources: Sources) -> Entry | None:
    """The entry at `folder` if its key and sources equal these and its arrays are intact, else None."""
    start = time.perf_counter()
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("key") != json.loads(json.dumps(key)):
        return None
    try:
        now = fingerprint(sources, manifest.get("sources"))
    except LinrnnError:
        return None
    if not _same_sources(now, manifest.get("sources", {})):
        return None
    arrays = _map(folder, manifest)
    if arrays is None:
        return None
    return Entry(folder, arrays, manifest, built=False, seconds=time.perf_counter() - start)


@contextlib.contextmanager
def _locked(path: Path):
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_or_build(folder: Path, key: Mapping, sources: Sources, build: Callable[[Writer], dict]) -> Entry:
    """The trusted entry at `folder`, built first if missing or stale.

    Args:
        folder   the entry's folder, e.g. <cache root>/train
        key      what the entry must have been built with (JSON-serialisable)
        sources  the files it is built from
        build    writer -> extra manifest fields (JSON-serialisable: counts, vocabulary, statistics);
                 it writes the arrays through the writer and raises to abandon the build
    """
    found = lookup(folder, key, sources)
    if found is not None:
        return found
    with _locked(folder.parent / f".{folder.name}.lock"):
        found = lookup(folder, key, sources)  # built by another process while we waited
        if found is not None:
            return found
        return _build(folder, key, sources, build)


def _build(folder: Path, key: Mapping, sources: Sources, build: Callable[[Writer], dict]) -> Entry:
    from linrnn import __version__

    start = time.perf_counter()
    for stale in folder.parent.glob(f".tmp-{folder.name}-*"):  # left by a killed build; we hold the lock
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=folder.parent))
    try:
        sources_fp = fingerprint(sources)
        writer = Writer(tmp)
        try:
            extra = build(writer)
        finally:
            writer.close()
        arrays = {}
        for path in sorted(tmp.glob("*.npy")):
            array = np.load(path, mmap_mode="r", allow_pickle=False)
            arrays[path.stem] = {"dtype": str(array.dtype), "shape": list(array.shape)}
            del array
        manifest = {
            "format": "linrnn-data-cache",
            "key": json.loads(json.dumps(key)),
            "code_version": __version__,
            "sources": sources_fp,
            "arrays": arrays,
            "extra": extra,
            "build_seconds": round(time.perf_counter() - start, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        old = None
        if folder.exists():
            old = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-old-", dir=folder.parent))
            os.replace(folder, old / "entry")
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    arrays = _map(folder, manifest)
    if arrays is None:  # pragma: no cover - we just wrote it
        raise LinrnnError(f"cache entry {folder} cannot be read back")
    return Entry(folder, arrays, manifest, built=True, seconds=time.perf_counter() - start)

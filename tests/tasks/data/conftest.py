"""Small datasets written in the exact on-disk formats of the public archives.

Each writer makes the files the way the original producer did: ListOps with Python's `csv.writer`
(CRLF line ends, header `Source\tTarget`), AAN as plain tab-joined lines with no header and literal
quotes, IMDB as one UTF-8 file per review, CIFAR binary records and `pickle.dump` of the batch dict,
Pathfinder PNGs via Pillow with text metadata lines in `.npy`-named files.
"""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import numpy as np
import pytest


def write_listops(folder: Path, sizes=(("train", 40), ("val", 10), ("test", 10)), seed=0) -> Path:
    """`folder/basic_{split}.tsv`; row i has answer i % 10, so every class is present."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        with open(folder / f"basic_{split}.tsv", "w", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t")
            writer.writerow(["Source", "Target"])
            for i in range(n):
                digits = rng.integers(0, 10, size=2 + i % 3)  # LRA's form: ( ( ( [MAX 2 ) 9 ) ] )
                op = ["[MAX", "[MIN", "[MED", "[SM"][i % 4]
                closed = " ".join(f"{d} )" for d in digits)
                writer.writerow(["( " * (len(digits) + 1) + f"{op} {closed} ] )", i % 10])
    return folder


def write_imdb(folder: Path, n_per_label=3, extra_chars="") -> Path:
    """`folder/{train,test}/{pos,neg}/<id>_<rating>.txt`, plus an `unsup` folder the loader ignores."""
    for split in ("train", "test"):
        for label, rating in (("neg", 2), ("pos", 9)):
            d = folder / split / label
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n_per_label):
                text = f"{label} review {i} of {split}: a film.<br /><br />Ok \"quoted\" caf\u00e9 {extra_chars}"
                (d / f"{i * 7}_{rating}.txt").write_text(text, encoding="utf-8")
    (folder / "train" / "unsup").mkdir(exist_ok=True)
    (folder / "train" / "unsup" / "0_0.txt").write_text("unlabelled", encoding="utf-8")
    (folder / "imdb.vocab").write_text("the\nfilm\n", encoding="utf-8")
    return folder


def write_aan(folder: Path, sizes=(("train", 8), ("eval", 4), ("test", 4))) -> Path:
    """`folder/new_aan_pairs.{split}.tsv`: label, id1, id2, text1, text2, tab-joined, no header."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = []
        for i in range(n):
            label = "1" if i % 2 else "0"
            lines.append("\t".join([label, f"acl-{i}", f"acl-{i + 100}", f'paper "{i}" on parsing', f"cites {i * 3} works"]))
        (folder / f"new_aan_pairs.{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def cifar_arrays(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 10, size=n).astype(np.uint8), rng.integers(0, 256, size=(n, 3072)).astype(np.uint8)


def write_cifar_bin(folder: Path, n_per_batch=20) -> Path:
    """`folder/data_batch_{1..5}.bin`, `test_batch.bin`: records of 1 label byte + 3072 pixel bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        labels, pixels = cifar_arrays(n_per_batch, k)
        records = np.concatenate([labels[:, None], pixels], axis=1)
        (folder / f"{name}.bin").write_bytes(records.tobytes())
    return folder


def write_cifar_py(folder: Path, n_per_batch=20, protocol=2) -> Path:
    """`folder/data_batch_{1..5}`, `test_batch`: `pickle.dump` of the cifar-10-batches-py dict."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        labels, pixels = cifar_arrays(n_per_batch, k)
        batch = {b"batch_label": f"batch {k}".encode(), b"labels": labels.tolist(), b"data": pixels,
                 b"filenames": [f"img_{k}_{i}.png".encode() for i in range(n_per_batch)]}
        with open(folder / name, "wb") as handle:
            pickle.dump(batch, handle, protocol=protocol)
    return folder


def write_pathfinder(folder: Path, resolution=32, difficulty="curv_contour_length_14", batches=2, per_batch=10,
                     empty=()) -> Path:
    """`folder/<difficulty>/imgs/<k>/sample_<i>.png` and `metadata/<k>.npy` as text lines; the PNG of
    (batch, i) in `empty` is written as a 0-byte file, like Pathfinder-32's known empty image."""
    from PIL import Image

    base = folder / difficulty
    rng = np.random.default_rng(resolution)
    for k in range(batches):
        (base / "imgs" / str(k)).mkdir(parents=True, exist_ok=True)
        (base / "metadata").mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(per_batch):
            label = (k * per_batch + i) % 2
            path = base / "imgs" / str(k) / f"sample_{i}.png"
            if (k, i) in empty:
                path.write_bytes(b"")
            else:
                Image.fromarray(rng.integers(0, 256, size=(resolution, resolution)).astype(np.uint8), "L").save(path)
            lines.append(f"imgs/{k} sample_{i}.png {i} {label} 1.8 14 4 2 1 1 1")
        (base / "metadata" / f"{k}.npy").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def cache_env(monkeypatch, tmp_path):
    """No LINRNN_CACHE from the environment; the user cache inside tmp_path."""
    monkeypatch.delenv("LINRNN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return tmp_path


@pytest.fixture
def writers():
    """The format writers, as a namespace (conftest modules cannot be imported by tests)."""
    import types

    return types.SimpleNamespace(listops=write_listops, imdb=write_imdb, aan=write_aan, cifar_bin=write_cifar_bin,
                                 cifar_py=write_cifar_py, cifar_arrays=cifar_arrays, pathfinder=write_pathfinder)

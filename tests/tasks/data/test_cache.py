"""The preprocessed cache: reuse without parsing, rebuild on a changed source or option, atomic builds,
and where the cache lives. Driven through the ListOps loader (the smallest real format)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import listops


def _forbid_parsing(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("parsed although a trusted cache entry exists")
    monkeypatch.setattr(listops, "read_tsv", boom)


def test_second_load_maps_the_cache_without_parsing(tmp_path, cache_env, writers, monkeypatch):
    folder = writers.listops(tmp_path / "listops-1000")
    first = listops.load(tmp_path, "train")
    assert first.built and first.cache == folder / ".linrnn-cache" / "listops" / "train"
    _forbid_parsing(monkeypatch)
    second = listops.load(tmp_path, "train")
    assert not second.built
    assert isinstance(second.arrays["tokens"], np.memmap)
    np.testing.assert_array_equal(second.arrays["tokens"], first.arrays["tokens"])
    np.testing.assert_array_equal(second.arrays["labels"], first.arrays["labels"])


def test_manifest_records_sources_options_and_versions(tmp_path, cache_env, writers):
    import hashlib

    from linrnn import __version__

    folder = writers.listops(tmp_path)
    split = listops.load(tmp_path, "val", max_length=100)
    manifest = json.loads((split.cache / "manifest.json").read_text())
    record = manifest["sources"]["files"][0]
    assert record["path"] == "basic_val.tsv"
    assert record["sha256"] == hashlib.sha256((folder / "basic_val.tsv").read_bytes()).hexdigest()
    assert manifest["key"]["options"] == {"max_length": 100, "append_eos": True}
    assert manifest["key"]["code_version"] == __version__ and manifest["key"]["format_version"] == 1
    assert manifest["arrays"]["tokens"]["dtype"] == "uint8" and manifest["extra"]["vocabulary"][:3] == ["<pad>", "<unk>", "<eos>"]


def test_a_changed_source_file_rebuilds(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    before = listops.load(tmp_path, "test")
    path = tmp_path / "basic_test.tsv"
    path.write_bytes(path.read_bytes().replace(b"\t0\r\n", b"\t1\r\n", 1))  # same size, new content
    after = listops.load(tmp_path, "test")
    assert after.built
    assert int(after.arrays["labels"][0]) == 1 and int(before.manifest["extra"]["n"]) == len(after)


def test_touching_a_source_without_changing_it_does_not_rebuild(tmp_path, cache_env, writers, monkeypatch):
    writers.listops(tmp_path)
    listops.load(tmp_path, "test")
    path = tmp_path / "basic_test.tsv"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    _forbid_parsing(monkeypatch)
    assert not listops.load(tmp_path, "test").built


def test_a_changed_option_rebuilds(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    long = listops.load(tmp_path, "train")
    short = listops.load(tmp_path, "train", max_length=4)
    assert short.built and int(short.lengths("tokens").max()) == 4 and int(long.lengths("tokens").max()) > 4
    assert short.manifest["extra"]["truncated"] > 0


def test_a_build_that_raises_midway_leaves_nothing_trusted_and_the_next_load_rebuilds(tmp_path, cache_env, writers,
                                                                                       monkeypatch):
    writers.listops(tmp_path)
    listops.load(tmp_path, "train")  # an older, valid entry that the interrupted rebuild must not damage
    path = tmp_path / "basic_train.tsv"
    path.write_bytes(path.read_bytes().replace(b"\t1\r\n", b"\t2\r\n"))
    real_put = cachemod.Writer.put

    def put_then_die(self, name, array):  # the tokens are written, then the build dies
        real_put(self, name, array)
        raise KeyboardInterrupt("killed while writing the labels")

    monkeypatch.setattr(cachemod.Writer, "put", put_then_die)
    with pytest.raises(KeyboardInterrupt):
        listops.load(tmp_path, "train")
    root = tmp_path / ".linrnn-cache" / "listops"
    assert sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock")) == ["train"]  # no temporary left
    monkeypatch.setattr(cachemod.Writer, "put", real_put)
    rebuilt = listops.load(tmp_path, "train")
    assert rebuilt.built and 2 in np.asarray(rebuilt.arrays["labels"]) and 1 not in np.asarray(rebuilt.arrays["labels"])


def test_a_killed_build_leaves_only_an_untrusted_temporary_that_the_next_build_removes(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    root = tmp_path / ".linrnn-cache" / "listops"
    killed = root / ".tmp-train-killed"  # what a SIGKILL during a build leaves: arrays, no manifest
    killed.mkdir(parents=True)
    np.save(killed / "tokens.npy", np.zeros(3, np.uint8))
    half = root / "train"  # and a folder without a manifest at the final name is never trusted either
    half.mkdir()
    np.save(half / "labels.npy", np.zeros(3, np.int32))
    split = listops.load(tmp_path, "train")
    assert split.built and len(split) == 40
    assert not killed.exists()


def test_an_entry_whose_array_differs_from_its_manifest_is_rebuilt(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    first = listops.load(tmp_path, "train")
    np.save(first.cache / "labels.npy", np.zeros(3, np.int32))  # damaged after the build
    again = listops.load(tmp_path, "train")
    assert again.built and len(np.asarray(again.arrays["labels"])) == 40


def test_cache_location_explicit_environment_and_read_only_fallback(tmp_path, cache_env, writers, monkeypatch):
    folder = writers.listops(tmp_path / "data")
    explicit = listops.load(folder, "val", cache=tmp_path / "mine")
    assert explicit.cache.parent.parent == tmp_path / "mine" and explicit.cache.parent.name.startswith("listops-")
    monkeypatch.setenv("LINRNN_CACHE", str(tmp_path / "env"))
    assert listops.load(folder, "val").cache.parent.parent == tmp_path / "env"
    monkeypatch.delenv("LINRNN_CACHE")
    monkeypatch.setattr(cachemod, "_writable", lambda folder: False)  # a read-only data folder
    fallback = listops.load(folder, "val")
    assert fallback.cache.parent.parent == tmp_path / "user-cache" / "linrnn" / "data"


def test_a_many_small_files_fingerprint_sees_a_changed_file(tmp_path):
    tree = tmp_path / "imgs"
    tree.mkdir()
    for i in range(5):
        (tree / f"{i}.png").write_bytes(bytes([i]) * 10)
    sources = cachemod.Sources(tmp_path, trees=("imgs",))
    before = cachemod.fingerprint(sources)
    assert before["trees"][0]["files"] == 5 and before["trees"][0]["sample_files"] == 5
    (tree / "3.png").write_bytes(b"x" * 10)
    assert cachemod.fingerprint(sources) != before


def test_missing_source_file_is_one_line_error(tmp_path, cache_env, writers):
    writers.listops(tmp_path, sizes=(("train", 5),))
    with pytest.raises(LinrnnError, match=r"missing split val: .*basic_val.tsv does not exist"):
        listops.load(tmp_path, "val")
    assert not (tmp_path / ".linrnn-cache" / "listops" / "val").exists()

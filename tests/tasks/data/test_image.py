"""Image (CIFAR-10) loader: binary records read directly, pickles only through the restricted unpickler."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import image


def test_binary_records_give_pil_luma_pixels_and_labels(tmp_path, cache_env, writers):
    from PIL import Image

    writers.cifar_bin(tmp_path / "cifar-10-batches-bin")
    split = image.load(tmp_path, "test")
    labels, rgb = writers.cifar_arrays(20, 5)  # test_batch is batch index 5 in the writer
    np.testing.assert_array_equal(split.arrays["labels"], labels)
    for i in (0, 13):
        picture = Image.fromarray(rgb[i].reshape(3, 32, 32).transpose(1, 2, 0), "RGB")
        np.testing.assert_array_equal(split.arrays["pixels"][i], np.asarray(picture.convert("L")).reshape(-1))


def test_colour_keeps_the_three_channels_per_pixel(tmp_path, cache_env, writers):
    writers.cifar_bin(tmp_path)
    split = image.load(tmp_path, "test", grayscale=False)
    _, rgb = writers.cifar_arrays(20, 5)
    assert split.arrays["pixels"].shape == (20, 1024, 3)
    np.testing.assert_array_equal(split.arrays["pixels"][3][:, 1], rgb[3, 1024:2048])


def test_validation_split_is_seeded_and_disjoint(tmp_path, cache_env, writers):
    writers.cifar_bin(tmp_path)
    train, val = image.load(tmp_path, "train", val_size=10), image.load(tmp_path, "val", val_size=10)
    assert (len(train), len(val)) == (90, 10)
    all_rgb = np.concatenate([writers.cifar_arrays(20, k)[1] for k in range(5)])
    grey = image.to_pixels(all_rgb, True)
    chosen = np.sort(np.random.default_rng(42).permutation(100)[90:])
    np.testing.assert_array_equal(val.arrays["pixels"], grey[chosen])
    last = image.load(tmp_path, "val", val_size=10, val_split="last")
    np.testing.assert_array_equal(last.arrays["pixels"], grey[90:])


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL])
def test_pickle_batches_load_through_the_restricted_unpickler(tmp_path, cache_env, writers, protocol):
    writers.cifar_py(tmp_path / "cifar-10-batches-py", protocol=protocol)
    writers.cifar_bin(tmp_path / "bin" / "cifar-10-batches-bin")
    from_py = image.load(tmp_path / "cifar-10-batches-py", "train", val_size=10)
    from_bin = image.load(tmp_path / "bin", "train", val_size=10)
    assert from_py.manifest["extra"]["source_format"] == "pickle"
    np.testing.assert_array_equal(from_py.arrays["pixels"], from_bin.arrays["pixels"])
    np.testing.assert_array_equal(from_py.arrays["labels"], from_bin.arrays["labels"])


def test_a_python2_era_pickle_naming_numpy_core_loads(tmp_path):
    """The real files name `numpy.core.multiarray._reconstruct` (NumPy 2 moved it to numpy._core)."""
    data = pickle.dumps({b"data": np.arange(6, dtype=np.uint8).reshape(2, 3), b"labels": [1, 2]}, protocol=2)
    data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    (tmp_path / "b").write_bytes(data)
    loaded = image.load_pickle(tmp_path / "b")
    np.testing.assert_array_equal(loaded[b"data"], np.arange(6).reshape(2, 3))


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


class Thing:
    pass


@pytest.mark.parametrize("value, refused", [
    ({b"data": Payload()}, "refusing to load (posix|os).system"),
    ({b"data": Thing()}, "refusing to load .*Thing"),
    ({b"data": np.array([None, 1], dtype=object)}, "object array|refusing"),
])
def test_a_pickle_holding_anything_but_plain_data_is_refused(tmp_path, cache_env, value, refused):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / name).write_bytes(pickle.dumps(value, protocol=2))
    with pytest.raises(LinrnnError, match=f"test_batch: not a plain-data CIFAR pickle: .*({refused})"):
        image.load(tmp_path, "test")
    assert not (folder / ".linrnn-cache" / "image-gray" / "test").exists()


def test_truncated_record_file_and_label_out_of_range(tmp_path, cache_env, writers):
    folder = writers.cifar_bin(tmp_path)
    data = bytearray((folder / "test_batch.bin").read_bytes())
    data[3073 * 4] = 10  # record 4's label byte
    (folder / "test_batch.bin").write_bytes(bytes(data))
    with pytest.raises(LinrnnError, match="test_batch.bin: record 4: label 10 out of range 0-9"):
        image.load(tmp_path, "test")
    (folder / "data_batch_2.bin").write_bytes((folder / "data_batch_2.bin").read_bytes()[:-100])
    problems = image.check(tmp_path)
    assert "train: data_batch_2.bin: 61360 bytes is not a whole number of 3073-byte records (truncated?)" in problems
    assert "test: test_batch.bin: record 4: label 10 out of range 0-9" in problems


def test_missing_batch_is_one_line(tmp_path, cache_env, writers):
    (writers.cifar_bin(tmp_path) / "data_batch_3.bin").unlink()
    with pytest.raises(LinrnnError, match="missing split train: .*data_batch_3.bin not found"):
        image.load(tmp_path, "train")


def test_the_unpickler_allows_exactly_the_plain_data_globals():
    """The allow-list as a set, written out: NumPy's array rebuilders under both of their module names (1.x and
    2.x), ndarray, dtype and the latin-1 `_codecs.encode` of Python-3 byte pickles. One global more (getattr,
    eval, a class) would let a pickle call it."""
    assert set(image._allowed_globals()) == {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class Getattr:
    """Unpickles to getattr("text", "upper"): the first step of calling any method of any loaded object."""

    def __reduce__(self):
        return (getattr, ("text", "upper"))


@pytest.mark.parametrize("protocol", [3, pickle.HIGHEST_PROTOCOL])
def test_a_pickle_reaching_builtins_getattr_is_refused_in_one_line(tmp_path, protocol):
    data = pickle.dumps({b"data": Getattr()}, protocol=protocol)
    assert b"builtins" in data and b"getattr" in data
    (tmp_path / "batch").write_bytes(data)
    with pytest.raises(LinrnnError) as err:
        image.load_pickle(tmp_path / "batch")
    assert str(err.value) == ("batch: not a plain-data CIFAR pickle: refusing to load builtins.getattr: only plain "
                              "data and NumPy arrays are allowed")

"""Pathfinder loader: text metadata lines in `.npy` files, grayscale PNGs, the empty PNG, the splits."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import pathfinder


def test_pixels_and_labels_follow_the_metadata_lines(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path / "lra_release" / "lra_release" / "pathfinder32")
    split = pathfinder.load(tmp_path, "test", split_rule="ordered")  # the official LRA rule: by order
    assert split.source == tmp_path / "lra_release" / "lra_release" / "pathfinder32" and len(split) == 2
    base = split.source / "curv_contour_length_14"
    for row, (k, i) in enumerate([(1, 8), (1, 9)]):  # the last 10 % of 20 images in metadata order
        png = np.asarray(Image.open(base / "imgs" / str(k) / f"sample_{i}.png").convert("L")).reshape(-1)
        np.testing.assert_array_equal(split.arrays["pixels"][row], png)
        assert split.arrays["labels"][row] == (k * 10 + i) % 2


def test_random_split_is_80_10_10_seeded_and_disjoint(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path / "pathfinder32", batches=3)
    parts = {s: pathfinder.load(tmp_path, s) for s in ("train", "val", "test")}
    assert {s: len(p) for s, p in parts.items()} == {"train": 24, "val": 3, "test": 3}
    rows = np.concatenate([np.asarray(p.arrays["pixels"]) for p in parts.values()])
    assert len({r.tobytes() for r in rows}) == 30  # every image once
    other = pathfinder.load(tmp_path, "val", seed=7)
    assert not np.array_equal(other.arrays["pixels"], parts["val"].arrays["pixels"])


def test_the_empty_png_is_skipped_and_counted(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path, difficulty="curv_baseline", empty={(0, 7)})
    split = pathfinder.load(tmp_path, "train", difficulty="curv_baseline", split_rule="ordered")
    assert split.manifest["extra"]["skipped_empty"] == 1 and split.manifest["extra"]["total_images"] == 20
    assert len(split) == 19 - 2 * 1  # 19 images, 1 each for val and test
    assert pathfinder.check(tmp_path, difficulty="curv_baseline") == []


def test_a_truncated_png_is_a_one_line_error_naming_it(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path)
    path = tmp_path / "curv_contour_length_14" / "imgs" / "0" / "sample_3.png"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(LinrnnError, match=r"sample_3.png: not a readable PNG") as err:
        pathfinder.load(tmp_path, "train", split_rule="ordered")
    assert "\n" not in str(err.value)
    problems = pathfinder.check(tmp_path)
    assert sum("sample_3.png: not a readable PNG" in p for p in problems) == 1


def test_wrong_resolution_bad_label_and_short_line(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path / "pathfinder64", resolution=32)
    with pytest.raises(LinrnnError, match="expected 64 x 64 pixels, found 32 x 32"):
        pathfinder.load(tmp_path, "test", resolution=64)
    meta = tmp_path / "pathfinder64" / "curv_contour_length_14" / "metadata" / "1.npy"
    meta.write_text(meta.read_text() + "imgs/1 sample_0.png 0 2 1\nimgs/1 sample_1.png\n")
    problems = pathfinder.check(tmp_path, resolution=64)
    assert "train: metadata/1.npy: line 11: label '2' out of range (expected 0 or 1)" in problems
    assert "train: metadata/1.npy: line 12: expected at least 4 columns (folder, file, index, label), found 2" in problems


def test_the_difficulty_folder_itself_and_a_bad_option(tmp_path, cache_env, writers):
    writers.pathfinder(tmp_path, difficulty="curv_contour_length_9")
    split = pathfinder.load(tmp_path / "curv_contour_length_9", "val", difficulty="curv_contour_length_9")
    assert len(split) == 2
    with pytest.raises(LinrnnError, match="resolution must be one of 32, 64, 128, 256, got 48"):
        pathfinder.load(tmp_path, "val", resolution=48)
    with pytest.raises(LinrnnError, match=r"Pathfinder-32: no folder with curv_contour_length_14/metadata/"):
        pathfinder.load(tmp_path, "val")

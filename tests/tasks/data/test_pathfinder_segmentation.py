"""The PathfinderSegmentation loader on a hand-made folder in DLR's format: classes from the record,
the nested archive path, and one-line errors for a missing record folder or a label that disagrees."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from PIL import Image

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import pathfinder_segmentation as loader


def make(root, label=1, markers=(1, 1)):
    folder = root / "pathfinder32_segmentation"
    for sub in ("imgs/0", "paths/0", "metadata"):
        (folder / sub).mkdir(parents=True)
    for i in range(10):
        Image.fromarray(np.full((32, 32), i, dtype=np.uint8)).save(folder / "imgs" / "0" / f"sample_{i}.png")
        record = {"segs": [(np.array([1, 2], np.uint8), np.array([3, 4], np.uint8)),
                           (np.array([2, 5], np.uint8), np.array([4, 6], np.uint8))],
                  "origin_tips": [[1, 3], [2, 4]], "terminal_tips": [[2, 4], [5, 6]],
                  "marker_indices": list(markers), "image_size": [32, 32]}
        with open(folder / "paths" / "0" / f"sample_{i}.pkl", "wb") as handle:
            pickle.dump(record, handle, protocol=4)
    rows = [["imgs/0", f"sample_{i}.png", str(i), str(label), "1.8", "14", "4", "5", "1.5", "2", "1"] for i in range(10)]
    np.save(folder / "metadata" / "0.npy", np.array(rows))
    return folder


def test_classes_take_the_larger_label_where_targets_overlap(tmp_path):
    make(tmp_path / "lra_release")
    split = loader.load(tmp_path, "train", cache=tmp_path / "c", resolution=32)
    assert len(split) == 8
    targets = np.asarray(split.arrays["targets"][0]).reshape(32, 32)
    assert targets[1, 3] == 1 and targets[2, 4] == 2 and targets[5, 6] == 2  # target 1 connects; (2, 4) overlaps
    assert np.count_nonzero(targets) == 3


def test_missing_record_folder_and_label_disagreement_are_one_line_errors(tmp_path):
    import shutil

    folder = make(tmp_path / "a", label=0)
    with pytest.raises(LinrnnError, match="disagree with label 0"):
        loader.load(tmp_path / "a", "train", cache=tmp_path / "c", resolution=32)
    shutil.rmtree(folder / "paths")
    with pytest.raises(LinrnnError, match="has no paths/ folder"):
        loader.load(tmp_path / "a", "train", cache=tmp_path / "c", resolution=32)

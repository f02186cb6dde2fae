"""The PathfinderSegmentation generator: DLR's layout read back by its loader, the class counts, and
the connecting class joining the two markers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import ndimage

from linrnn.tasks.data import pathfinder_segmentation as loader
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate import pathfinder_segmentation as gen
from linrnn.tasks.data.generate.snakes import disc


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("segmentation")
    GENERATORS["pathfinder-segmentation"](out, n_train=8, n_val=1, n_test=1, seed=1, resolution=32, workers=1,
                                          images_per_batch=5)
    return out


def records(out):
    folder = out / "pathfinder32_segmentation"
    for batch in (0, 1):
        for row in np.load(folder / "metadata" / f"{batch}.npy").tolist():
            with open(folder / "paths" / str(batch) / row[1].replace(".png", ".pkl"), "rb") as handle:
                yield int(row[3]), loader.RestrictedUnpickler(handle).load()


def test_layout_and_the_loader_reads_every_image_with_its_classes(small, tmp_path):
    folder = small / "pathfinder32_segmentation"
    assert sorted(p.name for p in folder.iterdir()) == ["imgs", "metadata", "paths"]
    table = np.load(folder / "metadata" / "0.npy", allow_pickle=False)
    assert table.dtype.kind == "U" and table.shape == (5, 11) and table[0, :2].tolist() == ["imgs/0", "sample_0.png"]
    split = loader.load(small, "train", cache=tmp_path, resolution=32)
    assert len(split) == 8 and split.arrays["targets"].shape == (8, 1024)
    assert set(np.unique(split.arrays["targets"]).tolist()) <= {0, 1, 2}


def test_class_counts_follow_the_label(small):
    seen = set()
    for label, record in records(small):
        classes = gen.pixel_classes(record["segs"], record["marker_indices"], record["image_size"])
        counts = np.bincount(classes.reshape(-1), minlength=3)
        assert counts[0] > counts[1] + counts[2]  # mostly background
        if label == 1:
            assert counts[2] > 0 and counts[1] > 0  # the connecting target and the other one
        else:
            assert counts[2] == 0 and counts[1] > 0
        seen.add(label)
    assert seen == {0, 1}


def test_the_connecting_class_joins_the_two_markers(small):
    """Paddles are dashes 2 m apart (m = 1 here), so the class-2 pixels, dilated by m + 1, form one
    8-connected piece that holds both markers' tips."""
    checked = 0
    for label, record in records(small):
        if label != 1:
            continue
        classes = gen.pixel_classes(record["segs"], record["marker_indices"], record["image_size"])
        grown = ndimage.binary_dilation(classes == 2, structure=disc(2))
        pieces, _ = ndimage.label(grown, structure=np.ones((3, 3)))
        k = record["marker_indices"][0]
        origin, terminal = record["origin_tips"][k], record["terminal_tips"][k]
        assert pieces[tuple(origin)] != 0 and pieces[tuple(origin)] == pieces[tuple(terminal)]
        checked += 1
    assert checked >= 1


def test_a_pickle_with_an_object_is_refused(small, tmp_path):
    import shutil

    copy = tmp_path / "pathfinder32_segmentation"
    shutil.copytree(small / "pathfinder32_segmentation", copy)
    with open(copy / "paths" / "0" / "sample_0.pkl", "wb") as handle:
        pickle.dump({"segs": [], "marker_indices": [0, 0], "image_size": [32, 32], "x": np.random.default_rng(0)},
                    handle)
    problems = loader.check(tmp_path, cache=tmp_path / "c", resolution=32)
    assert any("sample_0.pkl: not a plain-data record: refusing to load" in p for p in problems), problems

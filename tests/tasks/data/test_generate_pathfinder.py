"""The Pathfinder generator: LRA's layout read back by the Pathfinder loader, label balance, markers
on one contour for label 1 and on the two targets for label 0, and same seed -> same bytes."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import pathfinder as loader
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate import pathfinder as gen
from linrnn.tasks.data.generate.snakes import render

PARAMS = gen.lra_params(32)


def digest(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("pathfinder")
    summary = GENERATORS["pathfinder"](out, n_train=8, n_val=1, n_test=1, seed=4, resolution=32, workers=1,
                                       images_per_batch=4)
    return out, summary


def test_layout_metadata_text_and_the_pathfinder_loader_reads_it(small, tmp_path):
    out, summary = small
    folder = out / "pathfinder32" / "curv_contour_length_14"
    assert sorted(p.name for p in (folder / "metadata").iterdir()) == ["0.npy", "1.npy", "2.npy"]
    lines = (folder / "metadata" / "1.npy").read_text().splitlines()
    assert lines[0].split() == ["imgs/1", "sample_0.png", "0", lines[0].split()[3], "1.0", "14", "4", "2", "0.5", "1", "1"]
    labels = [int(line.split()[3]) for k in range(3) for line in (folder / "metadata" / f"{k}.npy").read_text().splitlines()]
    assert labels == [gen.image_rng(4, PARAMS, i).integers(0, 2) for i in range(10)]  # the first draw of image i
    assert summary["statistics"]["label_counts"] == np.bincount(labels, minlength=2).tolist()
    loaded = {s: loader.load(out, s, cache=tmp_path, split_rule="ordered") for s in ("train", "val", "test")}
    assert [len(loaded[s]) for s in ("train", "val", "test")] == [8, 1, 1]
    assert np.asarray(loaded["train"].arrays["labels"]).tolist() == labels[:8]
    from PIL import Image
    first = np.asarray(Image.open(folder / "imgs" / "0" / "sample_0.png"))
    assert first.dtype == np.uint8 and first.shape == (32, 32) and first.max() == 255
    assert np.asarray(loaded["train"].arrays["pixels"][0]).tolist() == first.reshape(-1).tolist()


def test_labels_are_balanced():
    """label ~ randint(0, 2) per image: over 4000 images within 4 standard deviations (0.032) of 1/2."""
    labels = [int(gen.image_rng(0, PARAMS, i).integers(0, 2)) for i in range(4000)]
    assert abs(np.mean(labels) - 0.5) < 4 * 0.5 / math.sqrt(4000)


def first_index_with_label(label):
    return next(i for i in range(100) if gen.image_rng(9, PARAMS, i).integers(0, 2) == label)


@pytest.mark.parametrize("label", [0, 1])
def test_markers_lie_on_one_contour_for_label_1_and_on_the_two_targets_for_label_0(label):
    rendered = render(PARAMS, gen.image_rng(9, PARAMS, first_index_with_label(label)))
    assert rendered.label == label
    origin, terminal = rendered.marker_indices
    assert (origin == terminal) == (label == 1)
    spacing = PARAMS.paddle_length + 2 * rendered.margin  # pivots are this far apart; heads within rounding
    for contour in rendered.targets:
        assert len(contour.tips) == PARAMS.contour_length  # the first tail, then the head of each later paddle
        steps = [math.dist(a, b) for a, b in zip(contour.tips[1:], contour.tips[2:])]
        assert all(1 <= s <= spacing + 2 for s in steps), steps
    assert rendered.origin_tips[origin] == rendered.targets[origin].tips[0]
    assert rendered.terminal_tips[terminal] == rendered.targets[terminal].tips[-1]
    for y, x in (rendered.origin_tips[origin], rendered.terminal_tips[terminal]):  # a marker disc is drawn there
        assert rendered.image[y, x] >= 100, (y, x, rendered.image[y, x])


def test_the_pictures_agree_with_their_labels():
    """Read from the pixels alone: the two markers share a connected component of the drawn paths (dashes
    closed by a one-pixel dilation) far more often in label-1 images than in label-0 ones. A generator whose
    labels were drawn apart from its pictures would give the same rate for both. (At the easiest difficulty:
    with LRA's 14-paddle paths the clutter joins almost every pair of markers, whatever the label.)"""
    from scipy import ndimage

    params = gen.lra_params(32, "curv_baseline")
    joined = {0: [], 1: []}
    for i in range(300):
        rendered = render(params, gen.image_rng(0, params, i))
        paths, _ = ndimage.label(ndimage.binary_dilation(rendered.image > 20), structure=np.ones((3, 3)))
        origin, terminal = rendered.marker_indices
        a, b = rendered.origin_tips[origin], rendered.terminal_tips[terminal]
        joined[rendered.label].append(paths[a] == paths[b])
    rate = {label: np.mean(v) for label, v in joined.items()}
    assert rate[1] > 0.97 and rate[1] - rate[0] > 0.05, rate


def test_same_seed_same_bytes_any_worker_count_other_seed_differs(small, tmp_path):
    out, _ = small
    GENERATORS["pathfinder"](tmp_path / "b", n_train=8, n_val=1, n_test=1, seed=4, resolution=32, workers=2,
                             images_per_batch=4)
    assert digest(out / "pathfinder32") == digest(tmp_path / "b" / "pathfinder32")
    GENERATORS["pathfinder"](tmp_path / "c", n_train=1, n_val=0, n_test=0, seed=5, resolution=32, workers=1,
                             images_per_batch=4)
    assert (digest(tmp_path / "c" / "pathfinder32")["curv_contour_length_14/imgs/0/sample_0.png"]
            != digest(out / "pathfinder32")["curv_contour_length_14/imgs/0/sample_0.png"])


def test_parameter_sets_and_bad_options():
    assert [gen.lra_params(32, d).num_distractor_snakes for d in gen.DIFFICULTIES] == [10, 6, 5]
    assert [gen.lra_params(64, d).num_distractor_snakes for d in gen.DIFFICULTIES] == [11, 7, 5]
    assert [gen.lra_params(128, d).num_distractor_snakes for d in gen.DIFFICULTIES] == [17, 11, 8]
    with pytest.raises(LinrnnError, match="--resolution expected one of 32, 64, 128"):
        gen.lra_params(48)
    with pytest.raises(LinrnnError, match="--difficulty expected one of"):
        gen.lra_params(32, "curv_contour_length_12")


@pytest.mark.bench
def test_pathfinder32_20k_generation_time(tmp_path, record_property):
    """20,000 Pathfinder-32 images on every core (docs/data.md records the time)."""
    summary = GENERATORS["pathfinder"](tmp_path, n_train=16_000, n_val=2_000, n_test=2_000, seed=0, resolution=32)
    record_property("benchmark", {"task": "pathfinder32", "seconds": summary["seconds"], "workers": summary["workers"]})
    print(summary["seconds"], summary["statistics"])
    assert summary["statistics"]["images"] == 20_000


def test_distractors_replace_the_difficultys_count_and_zero_draws_the_two_contours_alone(tmp_path):
    summary = GENERATORS["pathfinder"](tmp_path / "bare", n_train=6, n_val=1, n_test=1, seed=2, resolution=32,
                                       difficulty="curv_baseline", distractors=0, workers=1)
    assert summary["params"]["num_distractor_snakes"] == 0 and summary["statistics"]["distractors_mean"] == 0
    assert summary["params"]["contour_length"] == 6
    loaded = loader.load(tmp_path / "bare", "train", cache=tmp_path / "cache", difficulty="curv_baseline")
    assert len(loaded) > 0 and np.asarray(loaded.arrays["pixels"]).shape[1] == 32 * 32     # the loader reads them
    for bad in (-1, 1.5, True):
        with pytest.raises(LinrnnError, match="distractors: expected an integer >= 0"):
            GENERATORS["pathfinder"](tmp_path / "bad", n_train=2, n_val=1, n_test=1, distractors=bad)

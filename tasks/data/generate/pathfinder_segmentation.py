"""DLR's PathfinderSegmentation generator (`src/dataloaders/prepare/pathfinder/snakes2*.py`).

The images are Pathfinder images (generate/snakes.py) with DLR's two edits: every distractor gets a
marker disc at its start (`mark_distractors`), so the markers alone do not tell the targets apart, and
each image also saves the pixels of its two target contours. Layout (DLR's loader):

    DIR/pathfinder{R}_segmentation/imgs/<batch>/sample_<i>.png    grayscale PNG, R x R
    DIR/pathfinder{R}_segmentation/paths/<batch>/sample_<i>.pkl   the target contours (below)
    DIR/pathfinder{R}_segmentation/metadata/<batch>.npy           NumPy array of strings (np.save)

Unlike LRA's text metadata, DLR's metadata files are real `.npy` files (`np.save` of the rows, all
strings; DLR reads them with `np.load(...).tolist()`), one row per image as in Pathfinder:
`imgs/<batch>, sample_<i>.png, i, label, continuity, contour_length, distractor_length, paddle_length,
paddle_thickness, margin, 1`. The pickle (protocol 4) is a dict of plain data:

    segs            [(rows, cols), (rows, cols)]  pixels of target 0 and 1 (uint8, uint16 above 256)
    origin_tips     [[y, x], [y, x]]              first tail of each target
    terminal_tips   [[y, x], [y, x]]              last head of each target
    marker_indices  [k, j]                        markers at origin_tips[k] and terminal_tips[j]
    image_size      [R, R]

A target's pixels are those where its own drawing is non-zero after the image's 8-bit scaling (DLR's
`to_ubyte` with the marked image's min and max). Per-pixel classes (DLR's `prepare_target`): 0 off
both targets, 1 on a target that does not connect the markers, 2 on the target that does (only when
label = 1, k = j); where the targets overlap, the larger class.

Parameter sets (DLR's `snakes2_wrapper.py`; generator defaults otherwise: padding 1, paddle contrast
[1], retrials 4 / 2, no single paddles):

    R     margin  seed dist.  marker  contour  thickness  aa  continuity  paddle  distractors     contrast
    128   [2, 3]  22          2.1     14       1.5        2   1.8         5       64 / 4 = 16 x 4  [0.9]
    256   [4]     27          4.2     16       2          2   2.2         8       16 x 5           [1.0]
    512   [7]     40          9       12       6          3   2.5         22      18 x 4           [1.0]

32 and 64 (ours, for small experiments and the on-the-fly registry task) use LRA's Pathfinder-32/-64
sets at contour length 14 with `mark_distractors`. DLR generated 40 batches of 2,500 images (100,000
per resolution) and splits them 80/10/10 at load time with seed 42.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from pathlib import Path

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.generate import check_counts, check_seed, staged, worker_count
from linrnn.tasks.data.generate.pathfinder import batch_of, lra_params, render_all, statistics
from linrnn.tasks.data.generate.snakes import Rendered, SnakeParams, bytescale

IMAGES_PER_BATCH = 2500  # DLR: 40 workers x 2,500 images
DLR = {
    128: SnakeParams(window_size=128, padding=1, paddle_margin_list=(2, 3), seed_distance=22, marker_radius=2.1,
                     contour_length=14, paddle_thickness=1.5, antialias_scale=2, continuity=1.8, paddle_length=5,
                     distractor_length=14 // 3, num_distractor_snakes=64 // (14 // 3), snake_contrast_list=(0.9,),
                     use_single_paddles=False, mark_distractors=True),
    256: SnakeParams(window_size=256, padding=1, paddle_margin_list=(4,), seed_distance=27, marker_radius=4.2,
                     contour_length=16, paddle_thickness=2.0, antialias_scale=2, continuity=2.2, paddle_length=8,
                     distractor_length=16 // 3, num_distractor_snakes=16, snake_contrast_list=(1.0,),
                     use_single_paddles=False, mark_distractors=True),
    512: SnakeParams(window_size=512, padding=1, paddle_margin_list=(7,), seed_distance=40, marker_radius=9.0,
                     contour_length=12, paddle_thickness=6.0, antialias_scale=3, continuity=2.5, paddle_length=22,
                     distractor_length=12 // 3, num_distractor_snakes=18, snake_contrast_list=(1.0,),
                     use_single_paddles=False, mark_distractors=True),
}
RESOLUTIONS = (32, 64, 128, 256, 512)
CLASSES = 3  # background, non-connecting target, connecting target


def params_for(resolution: int) -> SnakeParams:
    """DLR's set at 128/256/512; LRA's Pathfinder set with marked distractors at 32/64 (ours)."""
    if resolution in DLR:
        return DLR[resolution]
    if resolution in (32, 64):
        return dataclasses.replace(lra_params(resolution), mark_distractors=True)
    raise LinrnnError(f"pathfinder-segmentation: --resolution expected one of {', '.join(map(str, RESOLUTIONS))}, "
                      f"found {resolution!r}")


def segments(rendered: Rendered) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, cols) of each target's pixels: non-zero after the image's own 8-bit scaling."""
    low, high = rendered.scale
    dtype = np.uint8 if rendered.image.shape[0] <= 256 else np.uint16
    return [tuple(ix.astype(dtype) for ix in np.nonzero(bytescale(drawing, low, high)))
            for drawing in rendered.target_images]


def record(rendered: Rendered) -> dict:
    """The content of `paths/<batch>/sample_<i>.pkl` (plain data only)."""
    return {"segs": segments(rendered),
            "origin_tips": [[int(v) for v in tip] for tip in rendered.origin_tips],
            "terminal_tips": [[int(v) for v in tip] for tip in rendered.terminal_tips],
            "marker_indices": [int(i) for i in rendered.marker_indices],
            "image_size": [int(n) for n in rendered.image.shape]}


def pixel_classes(segs, marker_indices, size) -> np.ndarray:
    """DLR's `prepare_target`: int64 (R R) classes 0 / 1 / 2 from a record's segs and markers."""
    origin, terminal = marker_indices
    classes = np.zeros(tuple(size), dtype=np.int64)
    for i, (rows, cols) in enumerate(segs):
        path = np.zeros(tuple(size), dtype=np.int64)
        path[np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)] = 1 + int(origin == terminal == i)
        np.maximum(classes, path, out=classes)
    return classes


def _save_record(folder: Path, batch: int, i: int, rendered: Rendered, params: SnakeParams) -> None:
    with open(folder / "paths" / str(batch) / f"sample_{i}.pkl", "wb") as handle:
        pickle.dump(record(rendered), handle, protocol=4)


def generate(out, n_train: int = 80_000, n_val: int = 10_000, n_test: int = 10_000, seed: int = 0,
             resolution=128, difficulty=None, workers=None, progress=None,
             images_per_batch: int = IMAGES_PER_BATCH) -> dict:
    """Write `out/pathfinder{R}_segmentation/` (see the module docstring); 100,000 images is DLR's size."""
    if difficulty is not None:
        raise LinrnnError("pathfinder-segmentation: --difficulty does not apply (the contour length is fixed per R)")
    counts = check_counts(n_train, n_val, n_test)
    seed, workers = check_seed(seed), worker_count(workers)
    resolution = 128 if resolution is None else resolution
    params = params_for(resolution)
    if isinstance(images_per_batch, bool) or not isinstance(images_per_batch, int) or images_per_batch < 1:
        raise LinrnnError(f"images_per_batch: expected a positive integer, found {images_per_batch!r}")
    total = sum(counts)
    start = time.perf_counter()
    final = Path(out) / f"pathfinder{resolution}_segmentation"
    with staged(final) as tmp:
        for batch in range(batch_of(total - 1, images_per_batch)[0] + 1):
            (tmp / "paths" / str(batch)).mkdir(parents=True)
        rows = render_all(tmp, params, seed, total, images_per_batch, workers, progress, extra=_save_record)
        (tmp / "metadata").mkdir()
        for batch in range(batch_of(total - 1, images_per_batch)[0] + 1):
            table = [[f"imgs/{batch}", f"sample_{batch_of(index, images_per_batch)[1]}.png",
                      batch_of(index, images_per_batch)[1], label, params.continuity, params.contour_length,
                      params.distractor_length, params.paddle_length, params.paddle_thickness, margin,
                      len(params.paddle_contrast_list)]
                     for index, label, margin, *_ in rows[batch * images_per_batch:(batch + 1) * images_per_batch]]
            np.save(tmp / "metadata" / f"{batch}.npy", np.array([[str(v) for v in row] for row in table]))
    seconds = time.perf_counter() - start
    return {"task": "pathfinder-segmentation", "folder": str(final), "resolution": resolution,
            "counts": dict(zip(("train", "val", "test"), counts)), "seed": seed, "workers": workers,
            "seconds": round(seconds, 3), "params": dataclasses.asdict(params), "statistics": statistics(rows, seconds)}

"""The LRA Pathfinder generator: contour images (generate/snakes.py) in the release's folder layout.

    DIR/pathfinder{R}/{difficulty}/imgs/<batch>/sample_<i>.png    grayscale PNG, R x R
    DIR/pathfinder{R}/{difficulty}/metadata/<batch>.npy           text, one line per image

A metadata line is `imgs/<batch> sample_<i>.png <i> <label> <continuity> <contour_length>
<distractor_length> <paddle_length> <paddle_thickness> <paddle_margin> <number of paddle contrasts>`,
space-separated (the original's `accumulate_meta`; LRA's and S4's loaders read the `.npy` files as
text lines and use columns 0, 1 and 3). `<i>` restarts at 0 in every batch, as in the original,
where one batch was one generator process.

Parameter sets (LRA's TFDS builder docstrings, everything else at the generator's defaults):

    R     margin  padding  paddle  thickness  marker  seed dist.  continuity  snake c.  paddle c.  distractors
    32    [1]     1        2       0.5        1.5     7           1.0         [2]       [0.75]     20 // d
    64    [1]     1        5       1          2.5     12          1.8         [0.8]     [1]        22 // d
    128   [2, 3]  1        5       1.5        3       20          1.8         [0.9]     [1]        35 // d

with antialias_scale 2 and, per difficulty, contour_length 6 (`curv_baseline`), 9
(`curv_contour_length_9`) or 14 (`curv_contour_length_14`), distractor length d = contour_length // 3
and the number of distractors as in the last column (the Python 2 wrapper's `/` on ints floors).
Single-paddle distractors are off (the wrapper's `use_single_paddles = False`; UNCONFIRMED for LRA).

Image i draws from `SeedSequence(seed, spawn_key=(R, contour_length, i))`, so the data do not
depend on the number of worker processes, and two difficulties or resolutions never share a stream.
Splits: the release has none (loaders split the images 80/10/10); n_train + n_val + n_test images
are written, in order.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.generate import check_counts, check_seed, staged, worker_count
from linrnn.tasks.data.generate.snakes import Rendered, SnakeParams, render

DIFFICULTIES = {"curv_baseline": 6, "curv_contour_length_9": 9, "curv_contour_length_14": 14}
DEFAULT_DIFFICULTY = "curv_contour_length_14"  # the only one S4, S5 and minimal-LRU train on
IMAGES_PER_BATCH = 1000  # images per imgs/<batch> folder; the release's count is UNCONFIRMED
JOB = 50  # images per worker task

# resolution -> (SnakeParams fields, distractor paddle budget): LRA's TFDS builder docstrings
LRA = {
    32: (dict(padding=1, antialias_scale=2, seed_distance=7, marker_radius=1.5, paddle_length=2,
              paddle_thickness=0.5, continuity=1.0, snake_contrast_list=(2.0,), paddle_contrast_list=(0.75,),
              paddle_margin_list=(1,)), 20),
    64: (dict(padding=1, antialias_scale=2, seed_distance=12, marker_radius=2.5, paddle_thickness=1.0,
              continuity=1.8, snake_contrast_list=(0.8,), paddle_margin_list=(1,)), 22),
    128: (dict(padding=1, antialias_scale=2, seed_distance=20, marker_radius=3.0, paddle_thickness=1.5,
               continuity=1.8, snake_contrast_list=(0.9,), paddle_margin_list=(2, 3)), 35),
}


def lra_params(resolution: int, difficulty: str = DEFAULT_DIFFICULTY) -> SnakeParams:
    """LRA's parameter set for Pathfinder-R at one difficulty (see the module docstring)."""
    if resolution not in LRA:
        raise LinrnnError(f"pathfinder: --resolution expected one of {', '.join(map(str, LRA))} (128 is Path-X), "
                          f"found {resolution!r}")
    if difficulty not in DIFFICULTIES:
        raise LinrnnError(f"pathfinder: --difficulty expected one of {', '.join(DIFFICULTIES)}, found {difficulty!r}")
    fields, budget = LRA[resolution]
    contour_length = DIFFICULTIES[difficulty]
    distractor_length = contour_length // 3
    return SnakeParams(window_size=resolution, contour_length=contour_length, distractor_length=distractor_length,
                       num_distractor_snakes=budget // distractor_length, use_single_paddles=False, **fields)


def image_rng(seed: int, params: SnakeParams, index: int) -> np.random.Generator:
    """The generator of image `index`: depends on (seed, R, contour length, index) only."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(params.window_size, params.contour_length,
                                                                           index)))


def metadata_line(batch: int, i: int, label: int, margin: int, params: SnakeParams) -> str:
    """One line of `metadata/<batch>.npy` (the original's `accumulate_meta`)."""
    return " ".join(map(str, (f"imgs/{batch}", f"sample_{i}.png", i, label, params.continuity, params.contour_length,
                              params.distractor_length, params.paddle_length, params.paddle_thickness, margin,
                              len(params.paddle_contrast_list))))


def save_png(path: Path, image: np.ndarray) -> None:
    Image.fromarray(image, mode="L").save(path, format="PNG")


def batch_of(index: int, per_batch: int) -> tuple[int, int]:
    """(batch, index within the batch) of image `index`."""
    return index // per_batch, index % per_batch


def _render_job(task: tuple) -> list[tuple[int, int, int]]:
    """Render and save images start .. start + count - 1; return (index, label, margin) of each."""
    params, seed, start, count, folder, per_batch, extra = task
    done = []
    for index in range(start, start + count):
        rendered = render(params, image_rng(seed, params, index))
        batch, i = batch_of(index, per_batch)
        save_png(Path(folder) / "imgs" / str(batch) / f"sample_{i}.png", rendered.image)
        if extra is not None:
            extra(Path(folder), batch, i, rendered, params)
        done.append((index, rendered.label, rendered.margin, rendered.attempts, rendered.distractors))
    return done


def render_all(folder: Path, params: SnakeParams, seed: int, total: int, per_batch: int, workers: int,
               progress=None, extra: Callable[[Path, int, int, Rendered, SnakeParams], None] | None = None) -> list:
    """Render `total` images into `folder` (imgs/<batch>/ made first), in worker processes; rows
    (index, label, margin, attempts, distractors) in index order."""
    for batch in range(batch_of(total - 1, per_batch)[0] + 1):
        (folder / "imgs" / str(batch)).mkdir(parents=True)
    tasks = [(params, seed, start, min(JOB, total - start), str(folder), per_batch, extra)
             for start in range(0, total, JOB)]
    rows: list = []
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for done in pool.map(_render_job, tasks):
                rows += done
                if progress is not None:
                    progress(len(rows), total)
    else:
        for task in tasks:
            rows += _render_job(task)
            if progress is not None:
                progress(len(rows), total)
    return rows


def statistics(rows: list, seconds: float) -> dict:
    labels = np.array([r[1] for r in rows])
    return {"images": len(rows), "label_counts": np.bincount(labels, minlength=2).tolist(),
            "margins": {int(m): int(c) for m, c in zip(*np.unique([r[2] for r in rows], return_counts=True))},
            "target_pair_attempts_mean": round(float(np.mean([r[3] for r in rows])), 2),
            "distractors_mean": round(float(np.mean([r[4] for r in rows])), 2),
            "images_per_second": round(len(rows) / seconds, 2) if seconds > 0 else None}


def generate(out, n_train: int = 160_000, n_val: int = 20_000, n_test: int = 20_000, seed: int = 0,
             resolution=32, difficulty=None, workers=None, progress=None, images_per_batch: int = IMAGES_PER_BATCH,
             params: SnakeParams | None = None, distractors: int | None = None) -> dict:
    """Write `out/pathfinder{R}/{difficulty}/` (see the module docstring); 200,000 images is LRA's size.

    params       a full parameter set instead of LRA's (for experiments; window_size must equal R)
    distractors  the number of distractor contours instead of the difficulty's (0: none, the two marked
                 contours alone; an easier task than any of LRA's, for a positive control)
    """
    counts = check_counts(n_train, n_val, n_test)
    seed, workers = check_seed(seed), worker_count(workers)
    resolution = 32 if resolution is None else resolution
    difficulty = DEFAULT_DIFFICULTY if difficulty is None else difficulty
    chosen = lra_params(resolution, difficulty)
    params = chosen if params is None else params
    if distractors is not None:
        if isinstance(distractors, bool) or not isinstance(distractors, int) or distractors < 0:
            raise LinrnnError(f"distractors: expected an integer >= 0, found {distractors!r}")
        params = dataclasses.replace(params, num_distractor_snakes=distractors)
    if params.window_size != resolution:
        raise LinrnnError(f"pathfinder: params.window_size {params.window_size} differs from --resolution {resolution}")
    if isinstance(images_per_batch, bool) or not isinstance(images_per_batch, int) or images_per_batch < 1:
        raise LinrnnError(f"images_per_batch: expected a positive integer, found {images_per_batch!r}")
    total = sum(counts)
    start = time.perf_counter()
    final = Path(out) / f"pathfinder{resolution}" / difficulty
    with staged(final) as tmp:
        rows = render_all(tmp, params, seed, total, images_per_batch, workers, progress)
        (tmp / "metadata").mkdir()
        for batch in range(batch_of(total - 1, images_per_batch)[0] + 1):
            lines = [metadata_line(batch, batch_of(index, images_per_batch)[1], label, margin, params)
                     for index, label, margin, *_ in rows[batch * images_per_batch:(batch + 1) * images_per_batch]]
            (tmp / "metadata" / f"{batch}.npy").write_text("".join(line + "\n" for line in lines))
    seconds = time.perf_counter() - start
    return {"task": "pathfinder", "folder": str(final), "resolution": resolution, "difficulty": difficulty,
            "counts": dict(zip(("train", "val", "test"), counts)), "seed": seed, "workers": workers,
            "seconds": round(seconds, 3), "params": dataclasses.asdict(params),
            "statistics": statistics(rows, seconds)}

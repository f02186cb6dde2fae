"""DLR's two higher-order synthetic tasks, drawn on the fly at reduced size for the task registry.

Both are classification tasks (the eleven atomic tasks are regression); their full-size datasets are
files made by `linrnn data generate` (tasks/data/generate/). Here the same generators' pure functions
draw each batch in memory from the registry's per-batch NumPy generator.

ListOpsSubTrees at length L: LRA ListOps trees with DLR's max_args 9 and max_depth 15, kept when
L/2 < length <= L (DLR's paper data: 7000 < length < 8180 at L = 8192), without parentheses, not
deduplicated (a stream has no memory). Inputs are token ids (B L 1), int64, `<pad>` = 0 after the
tree (the ListOpsSubTrees loader's vocabulary); targets (B L) int64 are the subtree values 0-9 at the
`]` positions and IGNORE_INDEX elsewhere. Metric: accuracy over the scored positions (DLR's
`accuracy_ignore_m100`).

PathfinderSegmentation at length L = R^2, R in 32, 64, 128, 256, 512: one contour image per sample
(DLR's parameter sets at 128-512, LRA's Pathfinder-32/-64 sets with marked distractors below).
Inputs are the pixels as DLR feeds them, (x / 255 - 0.5) / 0.5, float (B L 1); targets (B L) int64
are the per-pixel classes 0 / 1 / 2 (background, non-connecting target, connecting target). Metrics:
macro F1 (DLR's monitored one) and balanced accuracy (the mean per-class recall).
"""

from __future__ import annotations

import math
from random import Random

import numpy as np

from linrnn.tasks.data.generate.listops import TreeConfig, sample_trees, to_string
from linrnn.tasks.data.generate.listops_subtrees import subtrees
from linrnn.tasks.data.generate.pathfinder_segmentation import RESOLUTIONS, params_for, pixel_classes, record
from linrnn.tasks.data.generate.snakes import render
from linrnn.tasks.data.listops_subtrees import CLASSES as LISTOPS_CLASSES
from linrnn.tasks.data.listops_subtrees import IGNORE_INDEX, PAD, TOKEN_ID, tokenize

SEGMENTATION_CLASSES = 3
SEGMENTATION_LENGTHS = tuple(r * r for r in RESOLUTIONS)


def listops_config(length: int) -> TreeConfig:
    """Trees of L/2 < length <= L tokens with DLR's max_args and max_depth."""
    return TreeConfig(max_depth=15, max_args=9, min_length=length // 2, max_length=length + 1)


def listops_subtrees(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch: token ids int64 (B L 1), subtree targets int64 (B L) with IGNORE_INDEX off the `]`s."""
    rnd = Random(int(rng.integers(0, 2**63)))
    inputs = np.full((batch_size, length, 1), PAD, dtype=np.int64)  # (B L 1)
    targets = np.full((batch_size, length), IGNORE_INDEX, dtype=np.int64)  # (B L)
    for b, (tree, size) in enumerate(sample_trees(rnd, listops_config(length), batch_size)):
        inputs[b, :size, 0] = [TOKEN_ID[t] for t in tokenize(to_string(tree, parens=False))]
        nodes = subtrees(tree)
        targets[b, list(nodes.positions)] = nodes.values
    return inputs, targets


def pathfinder_segmentation(rng: np.random.Generator, length: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch: pixels float64 (B L 1) in [-1, 1], per-pixel classes int64 (B L)."""
    resolution = math.isqrt(length)
    params = params_for(resolution)
    inputs = np.empty((batch_size, length, 1))  # (B L 1)
    targets = np.empty((batch_size, length), dtype=np.int64)  # (B L)
    for b, child in enumerate(rng.spawn(batch_size)):
        rendered = render(params, child)
        inputs[b, :, 0] = (rendered.image.reshape(-1) / 255.0 - 0.5) / 0.5
        made = record(rendered)
        targets[b] = pixel_classes(made["segs"], made["marker_indices"], made["image_size"]).reshape(-1)
    return inputs, targets


__all__ = ["IGNORE_INDEX", "LISTOPS_CLASSES", "SEGMENTATION_CLASSES", "SEGMENTATION_LENGTHS", "listops_config",
           "listops_subtrees", "pathfinder_segmentation"]

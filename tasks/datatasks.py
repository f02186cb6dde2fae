"""The papers' data tasks as training tasks: what the model reads, what it predicts, how it is scored.

A training task names a loader of `linrnn.tasks.data` (and the options its name fixes: Path-X is
Pathfinder at 128 x 128) and one *objective*:

    classification  one label per sequence: pooled output (B C), cross-entropy, accuracy
    retrieval       one label per PAIR of documents (AAN): the two-tower head (docs/models.md),
                    the model sees the 2B documents stacked along the batch, cross-entropy, accuracy
    tokens          one class per position, IGNORE_INDEX where unscored (ListOpsSubTrees):
                    per-position cross-entropy over the scored positions, accuracy over them
    segmentation    one class per pixel (PathfinderSegmentation): cross-entropy weighted per batch
                    by 1 / (count of each class in the batch) (DLR), macro F1 (monitored),
                    balanced accuracy and accuracy

Inputs: token ids go to an embedding (vocabulary from the data); pixels are real features,
normalised on the model side as the reference code does (S4 Image: (x/255 - 122.6/255) / (61/255);
Pathfinder and PathfinderSegmentation: (x/255 - 0.5) / 0.5, S4/S5/DLR); Speech Commands samples or
MFCCs are already normalised by their loader. `NOMINAL` holds the published sizes that
`linrnn train --dry-run` reports without reading any data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks import metrics

IGNORE_INDEX = -100
OBJECTIVES = ("regression", "classification", "retrieval", "tokens", "segmentation")


@dataclasses.dataclass(frozen=True)
class DataTask:
    name: str                 # the training task's name (TrainConfig.task)
    loader: str               # the loader's registry name (linrnn.tasks.data.LOADERS)
    fixed: dict               # loader options the name fixes
    objective: str            # one of OBJECTIVES
    inputs: str               # "tokens", "pixels" or "signal" (already normalised reals)
    classes: int              # the model's output features
    monitor: str              # the validation metric that picks the best checkpoint (higher is better)
    nominal_length: int       # the default L (loader max_length / resolution^2 / 16000)
    nominal_train: int        # published size of the train split (dry-run)
    nominal_vocab: int | None  # token vocabulary size (dry-run; the data's own is used in training)
    pixel_norm: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # (mean, std) per channel, of x/255


_GREY = ((122.6 / 255,), (61.0 / 255,))
_COLOUR = ((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))   # S4's CIFAR colour statistics
_HALF = ((0.5,), (0.5,))

DATA_TASKS: dict[str, DataTask] = {t.name: t for t in (
    DataTask("listops", "listops", {}, "classification", "tokens", 10, "accuracy", 2048, 96_000, 18),
    DataTask("text", "text", {}, "classification", "tokens", 2, "accuracy", 4096, 25_000, 100),
    DataTask("retrieval", "retrieval", {}, "retrieval", "tokens", 2, "accuracy", 4000, 147_086, 98),
    DataTask("image", "image", {}, "classification", "pixels", 10, "accuracy", 1024, 45_000, None, _GREY),
    DataTask("pathfinder", "pathfinder", {}, "classification", "pixels", 2, "accuracy", 1024, 160_000, None, _HALF),
    DataTask("pathx", "pathfinder", {"resolution": 128}, "classification", "pixels", 2, "accuracy", 16384,
             160_000, None, _HALF),
    DataTask("sc35", "sc35", {}, "classification", "signal", 35, "accuracy", 16000, 84_843, None),
    DataTask("sc10", "sc10", {}, "classification", "signal", 10, "accuracy", 16000, 24_482, None),
    DataTask("listops-subtrees", "listops-subtrees", {}, "tokens", "tokens", 10, "accuracy", 8192, 96_000, 17),
    DataTask("pathfinder-segmentation", "pathfinder-segmentation", {}, "segmentation", "pixels", 3, "macro_f1",
             16384, 80_000, None, _HALF),
)}


def data_task(name: str) -> DataTask:
    if name not in DATA_TASKS:
        raise LinrnnError(f"unknown data task {name!r}: expected one of {', '.join(DATA_TASKS)}")
    return DATA_TASKS[name]


def loader_options(task: DataTask, options: dict[str, Any]) -> dict[str, Any]:
    """The options passed to the loader: the config's, then those the task name fixes (which win)."""
    clash = sorted(k for k in options if k in task.fixed and options[k] != task.fixed[k])
    if clash:
        raise LinrnnError(f"data_options: task {task.name} fixes {', '.join(f'{k}={task.fixed[k]!r}' for k in clash)}")
    return {**options, **task.fixed}


def nominal_length(task: DataTask, options: dict[str, Any]) -> int:
    """L from the options without reading data (a resolution or max_length given overrides the default)."""
    if "max_length" in options:
        return int(options["max_length"])
    if "resolution" in options:
        return int(options["resolution"]) ** 2
    if options.get("mfcc"):
        return 161
    return task.nominal_length


@dataclasses.dataclass(frozen=True)
class ModelBatch:
    """One batch as the model sees it, framework-neutral (NumPy).

    inputs   (B L) int32 token ids, or (B L C) reals in the run's dtype; retrieval: (2B L), the first
             documents then the second ones
    lengths  (B,) int64 true lengths ((2B,) for retrieval)
    targets  regression: (B L_out d) reals; classification/retrieval: (B,) int64 labels;
             tokens/segmentation: (B L) int64 classes with IGNORE_INDEX at unscored or padded positions
    mask     regression: (B L_out) bool scored entries; otherwise None
    """

    inputs: np.ndarray
    lengths: np.ndarray
    targets: np.ndarray
    mask: np.ndarray | None = None

    @property
    def examples(self) -> int:
        return len(self.targets)

    @property
    def tokens(self) -> int:
        return int(self.lengths.sum())


def bucket(length: int) -> int:
    """The padded length of a batch whose longest sequence is `length`: the smallest 2^k or 3 x 2^(k-1)
    at least as long (at most 1.5x, and few distinct shapes, so a compiled step is reused)."""
    if length <= 2:
        return length
    k = (length - 1).bit_length()
    return 3 << (k - 2) if k >= 2 and 3 << (k - 2) >= length else 1 << k


def model_batch(task: DataTask, batch, dtype: str) -> ModelBatch:
    """A data batch (linrnn.tasks.data.batches.Batch) -> the model's `ModelBatch`, padded along time to
    `bucket` of its longest sequence when the task's sequences are token sequences of varying length
    (the same for both frameworks; fixed-length pixels and audio are not padded)."""
    names = list(batch.inputs)
    if task.objective == "retrieval":
        a, b = names
        L = max(batch.inputs[a].shape[1], batch.inputs[b].shape[1])
        inputs = np.concatenate([_pad_to(batch.inputs[a], L), _pad_to(batch.inputs[b], L)])
        lengths = np.concatenate([batch.lengths[a], batch.lengths[b]])
    else:
        (name,) = names
        inputs, lengths = batch.inputs[name], batch.lengths[name]
    L = bucket(inputs.shape[1]) if task.inputs == "tokens" else inputs.shape[1]
    inputs = _features(task, _pad_to(inputs, L), dtype)
    if task.objective in ("tokens", "segmentation"):
        (target,) = batch.targets.values()
        targets = _pad_to(np.asarray(target, dtype=np.int64), L)
        targets = np.where(np.arange(L)[None, :] < lengths[:, None], targets, IGNORE_INDEX)
    else:
        targets = np.asarray(batch.labels, dtype=np.int64)
    return ModelBatch(inputs, np.asarray(lengths, dtype=np.int64), targets)


def _pad_to(tokens: np.ndarray, L: int) -> np.ndarray:
    if tokens.shape[1] == L:
        return tokens
    out = np.zeros((tokens.shape[0], L) + tokens.shape[2:], dtype=tokens.dtype)
    out[:, :tokens.shape[1]] = tokens
    return out


def _features(task: DataTask, x: np.ndarray, dtype: str) -> np.ndarray:
    if task.inputs == "tokens":
        return np.ascontiguousarray(x, dtype=np.int32)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        x = x[..., None]
    if task.inputs == "pixels":
        mean, std = task.pixel_norm
        if x.shape[-1] == 3 and len(mean) == 1:
            mean, std = _COLOUR
        x = (x / 255.0 - np.asarray(mean)) / np.asarray(std)
    return np.ascontiguousarray(x, dtype=dtype)


def input_features(split) -> int:
    """d_input of a non-token task (the channels of its sequence array)."""
    spec = next(s for s in split.sequences if s.role == "input")
    array = split.arrays[spec.name]
    return int(array.shape[-1]) if array.ndim == 3 else 1


def vocabulary_size(split) -> int:
    vocabulary = split.manifest.get("extra", {}).get("vocabulary")
    if not vocabulary:
        raise LinrnnError(f"{split.task}: the cache entry of {split.split} records no vocabulary")
    return len(vocabulary)


def class_weights(targets: np.ndarray, classes: int) -> np.ndarray:
    """Segmentation: the per-batch class weights 1 / count (0 for absent classes), (C,) float64."""
    counts = np.bincount(targets[targets != IGNORE_INDEX].ravel(), minlength=classes).astype(np.float64)
    return np.where(counts > 0, 1.0 / np.maximum(counts, 1.0), 0.0)


class Tally:
    """Evaluation statistics of an objective, summed over batches (and over ranks: `to_array` / `from_array`).

    The confusion matrix (true class x predicted class) over the scored positions gives accuracy,
    macro F1 and balanced accuracy exactly as `linrnn.tasks.metrics` computes them on the whole split;
    the cross-entropy is summed with its count.
    """

    def __init__(self, objective: str, classes: int):
        if objective not in OBJECTIVES[1:]:
            raise LinrnnError(f"objective: expected one of {', '.join(OBJECTIVES[1:])}, found {objective!r}")
        self.objective, self.classes = objective, classes
        self.confusion = np.zeros((classes, classes), dtype=np.int64)
        self.nll, self.count = 0.0, 0

    def add(self, logits: np.ndarray, targets: np.ndarray) -> None:
        """logits (B C) or (B L C); targets (B,) or (B L) with IGNORE_INDEX at unscored positions."""
        keep = targets != IGNORE_INDEX
        y, z = targets[keep], np.asarray(logits, dtype=np.float64)[keep]
        np.add.at(self.confusion, (y, np.argmax(z, axis=-1)), 1)
        if len(y):
            self.nll += cross_entropy(z, y) * len(y)
            self.count += len(y)

    def to_array(self) -> np.ndarray:
        return np.concatenate([self.confusion.ravel().astype(np.float64), [self.nll, self.count]])

    @classmethod
    def from_array(cls, objective: str, classes: int, array: np.ndarray) -> "Tally":
        tally = cls(objective, classes)
        tally.confusion = np.rint(array[:-2]).astype(np.int64).reshape(classes, classes)
        tally.nll, tally.count = float(array[-2]), int(round(array[-1]))
        return tally

    def summary(self) -> dict[str, float]:
        c = self.confusion
        out = {"accuracy": metrics.confusion_accuracy(c), "loss": self.nll / self.count if self.count else float("nan")}
        if self.objective == "segmentation":
            out = {"macro_f1": metrics.confusion_macro_f1(c),
                   "balanced_accuracy": metrics.confusion_balanced_accuracy(c), **out}
        return {**out, "examples": int(c.sum())}


def cross_entropy(logits: np.ndarray, targets: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean cross-entropy over the positions whose target is not IGNORE_INDEX, each weighted by the
    weight of its class (PyTorch's `cross_entropy(weight=w)`: sum w_y l / sum w_y), in float64."""
    keep = targets != IGNORE_INDEX
    z = np.asarray(logits, dtype=np.float64)[keep]
    y = targets[keep]
    if not len(y):
        return float("nan")
    z = z - z.max(axis=-1, keepdims=True)
    nll = np.log(np.exp(z).sum(axis=-1)) - z[np.arange(len(y)), y]
    w = np.ones(len(y)) if weights is None else weights[y]
    return float((w * nll).sum() / w.sum())

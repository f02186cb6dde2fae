"""Batches of a loaded split, reproducible from (seed, epoch, step), framework-neutral (NumPy).

Order: epoch e visits the examples in the permutation `np.random.default_rng([seed, e])` draws (or in
file order when `shuffle` is off); global batch `step` is the slice [step B, (step + 1) B) of it.
A batch is therefore a pure function of (split, seed, epoch, step): any number of workers can build
any batches in any order with no shared state, and a run resumes at (epoch, step) without replaying.
Data parallel: with `world_size` W, rank r takes the r-th of W near-equal contiguous parts of the
global batch, so the W ranks together see exactly the single-process batch.

Padding: every sequence of a batch is padded to one length, the longest sequence in the batch (over
all its sequence arrays, so Retrieval's two documents share one L as in S4) or a fixed `length`. Each
batch carries the true `lengths` and a boolean `mask` (True at real positions) per sequence, so a
consumer that respects the mask sees nothing of the pad value (a test changes the pad and checks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.dataset import Split


@dataclasses.dataclass(frozen=True)
class Batch:
    """One batch. b = the examples in it (B, or B / W on one rank; fewer in a last partial batch).

    Fields:
        indices  int64 (b,)           the examples' indices in the split
        inputs   name -> (b L) or (b L C)   input sequences, padded (integer arrays as int32)
        targets  name -> (b L)        per-token target sequences, padded with their ignore index
        lengths  name -> int32 (b,)   true length of each sequence (inputs and targets)
        mask     name -> bool (b L)   True at real positions, False at padding
        labels   int32 (b,) or None   per-example labels
    """

    indices: np.ndarray
    inputs: dict[str, np.ndarray]
    targets: dict[str, np.ndarray]
    lengths: dict[str, np.ndarray]
    mask: dict[str, np.ndarray]
    labels: np.ndarray | None


def _widen(array: np.ndarray) -> np.ndarray:
    return array.astype(np.int32) if array.dtype.kind in "iub" else array


@dataclasses.dataclass(frozen=True)
class Batches:
    """The batches of one split for one run."""

    split: Split  # the loaded split
    batch_size: int  # global batch size B, over all ranks
    seed: int = 0  # run seed; with the epoch it fixes the order
    shuffle: bool = True  # False: file order (evaluation)
    drop_last: bool = True  # drop a last partial batch (training); keep it for evaluation
    length: int | None = None  # pad to this fixed L; None: to the batch's longest sequence
    rank: int = 0  # this process's rank r in data parallel
    world_size: int = 1  # number of ranks W
    pads: tuple[tuple[str, float], ...] = ()  # (sequence, value) overriding a sequence's pad value

    def __post_init__(self):
        if self.batch_size < 1:
            raise LinrnnError(f"batch_size must be a positive integer, got {self.batch_size}")
        if not 0 <= self.rank < self.world_size:
            raise LinrnnError(f"rank must lie in [0, world_size = {self.world_size}), got {self.rank}")
        if self.drop_last and self.batch_size < self.world_size:
            raise LinrnnError(f"batch_size {self.batch_size} is smaller than world_size {self.world_size}")

    def steps_per_epoch(self) -> int:
        n = len(self.split)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """(n,) the example order of `epoch`."""
        n = len(self.split)
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([self.seed, epoch]).permutation(n)

    def indices(self, epoch: int, step: int) -> np.ndarray:
        """(b,) the examples of batch `step` of `epoch` on this rank."""
        if not 0 <= step < self.steps_per_epoch():
            raise LinrnnError(f"step {step} out of range: an epoch has {self.steps_per_epoch()} steps")
        full = self.order(epoch)[step * self.batch_size:(step + 1) * self.batch_size]
        return np.array_split(full, self.world_size)[self.rank].astype(np.int64)

    def batch(self, epoch: int, step: int) -> Batch:
        return assemble(self.split, self.indices(epoch, step), self.length, dict(self.pads))

    def epoch(self, epoch: int) -> Iterator[Batch]:
        for step in range(self.steps_per_epoch()):
            yield self.batch(epoch, step)


def assemble(split: Split, indices: np.ndarray, length: int | None = None, pads: dict | None = None) -> Batch:
    """The batch of `split` holding examples `indices`, padded to `length` (None: the longest)."""
    pads = pads or {}
    lengths = {s.name: np.asarray(split.lengths(s.name))[indices].astype(np.int32) for s in split.sequences}
    longest = max((int(v.max()) for v in lengths.values() if len(v)), default=0)
    L = longest if length is None else length
    if L < longest:
        raise LinrnnError(f"fixed length {L} is shorter than the batch's longest sequence ({longest})")
    inputs, targets, mask = {}, {}, {}
    for spec in split.sequences:
        array = split.arrays[spec.name]
        pad = pads.get(spec.name, spec.pad)
        if f"{spec.name}_offsets" in split.arrays:  # ragged: copy each row into a padded block
            offsets = split.arrays[f"{spec.name}_offsets"]
            dtype = np.int32 if array.dtype.kind in "iub" else array.dtype
            out = np.full((len(indices), L), pad, dtype=dtype)
            for row, i in enumerate(indices):
                out[row, :lengths[spec.name][row]] = array[offsets[i]:offsets[i + 1]]
        else:  # dense: every row has the full length
            rows = _widen(np.asarray(array[np.sort(indices)])[np.argsort(np.argsort(indices))])
            out = rows
            if L > rows.shape[1]:
                out = np.full((len(indices), L) + rows.shape[2:], pad, dtype=rows.dtype)
                out[:, :rows.shape[1]] = rows
        mask[spec.name] = np.arange(L)[None, :] < lengths[spec.name][:, None]
        (targets if spec.role == "target" else inputs)[spec.name] = out
    labels = None if split.labels is None else np.asarray(split.arrays[split.labels])[indices].astype(np.int32)
    return Batch(np.asarray(indices, dtype=np.int64), inputs, targets, lengths, mask, labels)

"""The registry of DLR's thirteen synthetic tasks, and their seeded batch streams.

`TASKS` holds the eleven atomic tasks (regression, what `linrnn train` and `tasks grid` train);
`HIGHER_ORDER_TASKS` the two classification tasks ListOpsSubTrees and PathfinderSegmentation, drawn
on the fly at reduced size (tasks/synthetic/higher_order.py; full-size files come from
`linrnn data generate`); `ALL_TASKS` all thirteen, which `make_task` and `tasks sample` accept.

A task is built from (name, length, seed, batch_size, dtype). Its batch k is a pure function of
(seed, k): the generator of batch k is the k-th child of `SeedSequence(seed)`, so a training run
resumes exactly at batch k without replaying the batches before it, and nothing is stored.

Reading the model's output (DLR's decoder mode `last`): a model maps the (B L_in d_in) inputs to a
(B L_in d_out) output sequence; its answer is the last L_out positions, `outputs[:, -L_out:]`
(see `last_outputs`), compared with `targets` (B L_out d_out) where `mask` (B L_out) is True. None of
these eleven tasks has unscored outputs (DLR's MSE covers every target, including the zero-filled
heads of Shift and ContextShift), so the mask is all True; it is there for tasks that do.

`length` means the task's L of docs/tasks.md; L_in, L_out, d_in and d_out follow from it:

    task                  L_in        L_out    d_in   d_out   minimum L
    listops_subtrees      L           L        1      10      8    (token ids; d_out = classes)
    pathfinder_segmentation L = R^2   L        1      3       L in {32^2, 64^2, 128^2, 256^2, 512^2}
    shift                 L           L        3      8       8
    cumsum, cummax        L           L        3      1       2
    reverse, sort         2L          L        3      1       2
    masked_select(_fixed) L + 64      32       4      1       2    (L noise tokens, M = 32)
    solve(_fixed)         L           N_s      3      1       3    (N_s = floor(sqrt(L+1) - 1))
    context_shift         L           L        3      1       4
    mips                  L           L        14     4       2
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.synthetic import atomic, masked_select, mips, solve

# A generator draws one float64 batch: (rng, L, B) -> (inputs (B L_in d_in), targets (B L_out d_out)).
Sampler = Callable[[np.random.Generator, int, int], tuple[np.ndarray, np.ndarray]]

DTYPES = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}


@dataclass(frozen=True)
class Batch:
    """One batch. The model's answer is its last L_out outputs (`last_outputs`).

    Fields:
        inputs    float (B L_in d_in)        (classification with tokens: int64 ids, d_in = 1)
        targets   float (B L_out d_out)      (classification: int64 (B L_out) class indices,
                                              IGNORE_INDEX where unscored)
        mask      bool  (B L_out)            True where an output is scored
    """

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray


@dataclass(frozen=True)
class TaskShape:
    """Sequence lengths and feature sizes of a task at one `length`."""

    L_in: int  # input length; the model's output has this length too
    L_out: int  # target length: the last L_out model outputs are scored
    d_in: int  # input features, the two positional channels included
    d_out: int  # target features


@dataclass(frozen=True)
class TaskSpec:
    """How one task is shaped and drawn."""

    name: str  # the registry key, snake_case as DLR's code names it
    d_in: int  # input features (positional channels included); the same at every length
    d_out: int  # target features
    input_length: Callable[[int], int]  # L -> L_in
    output_length: Callable[[int], int]  # L -> L_out
    min_length: int  # smallest valid L (DLR's asserts)
    sample: Sampler  # the generator, in float64
    objective: str = "regression"  # "regression" (MSE, R^2) or "classification" (int targets, cross-entropy)
    lengths: tuple[int, ...] | None = None  # the only valid L, where the task has a fixed set
    metrics: tuple[str, ...] = ("mse", "r2")  # names in linrnn.tasks.metrics, computed on (logits, labels)

    def shape(self, length: int) -> TaskShape:
        return TaskShape(self.input_length(length), self.output_length(length), self.d_in, self.d_out)


def _same(length: int) -> int:
    return length


def _double(length: int) -> int:
    return 2 * length


def _noise_and_copies(length: int) -> int:
    return masked_select.NUM_SELECTED + length + masked_select.NUM_SELECTED


def _copies(length: int) -> int:
    return masked_select.NUM_SELECTED


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("shift", 3, atomic.NUM_SHIFTS, _same, _same, atomic.NUM_SHIFTS, atomic.shift),
        TaskSpec("cumsum", 3, 1, _same, _same, 2, atomic.cumsum),
        TaskSpec("cummax", 3, 1, _same, _same, 2, atomic.cummax),
        TaskSpec("reverse", 3, 1, _double, _same, 2, atomic.reverse),
        TaskSpec("sort", 3, 1, _double, _same, 2, atomic.sort),
        TaskSpec("masked_select_fixed", 4, 1, _noise_and_copies, _copies, 2, masked_select.masked_select_fixed),
        TaskSpec("masked_select", 4, 1, _noise_and_copies, _copies, 2, masked_select.masked_select),
        TaskSpec("solve_fixed", 3, 1, _same, solve.system_size, 3, solve.solve_fixed),
        TaskSpec("solve", 3, 1, _same, solve.system_size, 3, solve.solve),
        TaskSpec("context_shift", 3, 1, _same, _same, 4, atomic.context_shift),
        TaskSpec("mips", 3 * mips.KEY_SIZE + 2, mips.KEY_SIZE, _same, _same, 2, mips.mips),
    )
}


IGNORE_INDEX = -100  # classification targets at unscored positions (DLR's ignore index)


def _listops_subtrees(rng: np.random.Generator, length: int, batch_size: int):
    from linrnn.tasks.synthetic import higher_order  # imported when drawn: it brings the data generators

    return higher_order.listops_subtrees(rng, length, batch_size)


def _pathfinder_segmentation(rng: np.random.Generator, length: int, batch_size: int):
    from linrnn.tasks.synthetic import higher_order

    return higher_order.pathfinder_segmentation(rng, length, batch_size)


HIGHER_ORDER_TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("listops_subtrees", 1, 10, _same, _same, 8, _listops_subtrees, objective="classification",
                 metrics=("accuracy",)),
        TaskSpec("pathfinder_segmentation", 1, 3, _same, _same, 32 * 32, _pathfinder_segmentation,
                 objective="classification", lengths=tuple(r * r for r in (32, 64, 128, 256, 512)),
                 metrics=("macro_f1", "balanced_accuracy")),
    )
}
ALL_TASKS: dict[str, TaskSpec] = TASKS | HIGHER_ORDER_TASKS


def last_outputs(outputs, length_out: int):
    """The scored part of a model's output: its last L_out positions (DLR decoder mode `last`).

    Args:
        outputs   (B L_in d_out), NumPy or any array type that slices the same way
    Returns:
        (B L_out d_out)
    """
    return outputs[:, outputs.shape[1] - length_out :]


@dataclass(frozen=True)
class SyntheticTask:
    """An endless, seeded stream of batches of one task; build it with `make_task`.

    `batch(k)` depends only on (seed, k); iterating yields batch(0), batch(1), ... and
    `stream(start=k)` resumes at batch k.
    """

    spec: TaskSpec
    length: int  # the task's L (docs/tasks.md), not always the input length
    seed: int  # root of the batch seeds; the fixed variants' draws do not depend on it
    batch_size: int
    dtype: np.dtype

    @property
    def shape(self) -> TaskShape:
        return self.spec.shape(self.length)

    def batch(self, index: int) -> Batch:
        """Batch number `index` (0-based) of this stream."""
        index = _check_integer("index", index, minimum=0)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(index,)))
        inputs, targets = self.spec.sample(rng, self.length, self.batch_size)
        if self.spec.objective == "classification":  # int targets stay int; token ids stay int
            inputs = inputs.astype(self.dtype, copy=False) if inputs.dtype.kind == "f" else inputs
            return Batch(inputs, targets, targets != IGNORE_INDEX)
        mask = np.ones(targets.shape[:2], dtype=bool)  # (B L_out)
        return Batch(inputs.astype(self.dtype, copy=False), targets.astype(self.dtype, copy=False), mask)

    def stream(self, start: int = 0) -> Iterator[Batch]:
        """batch(start), batch(start + 1), ... without end."""
        index = _check_integer("start", start, minimum=0)
        while True:
            yield self.batch(index)
            index += 1

    def __iter__(self) -> Iterator[Batch]:
        return self.stream()


def _check_integer(field: str, value, minimum: int, why: str = "") -> int:
    """Return `value` as an int, or raise LinrnnError naming the field, the bound and the value."""
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise LinrnnError(f"{field}: expected {expected}{why}, found {value!r} ({type(value).__name__})")
    if value < minimum:
        raise LinrnnError(f"{field}: expected {expected}{why}, found {value}")
    return int(value)


def task_spec(name: str) -> TaskSpec:
    """The registry entry for `name`, or a LinrnnError listing the valid names."""
    try:
        return ALL_TASKS[name]
    except (KeyError, TypeError):
        raise LinrnnError(f"task: expected one of {', '.join(ALL_TASKS)}, found {name!r}") from None


def resolve_dtype(dtype) -> np.dtype:
    """float32 or float64 (a name, a NumPy type or a dtype), else a LinrnnError."""
    try:
        resolved = None if dtype is None else np.dtype(dtype)  # np.dtype(None) would be float64
    except TypeError:
        resolved = None
    if resolved is None or resolved not in DTYPES.values():
        raise LinrnnError(f"dtype: expected one of {', '.join(DTYPES)}, found {dtype!r}")
    return resolved


def make_task(
    name: str, length: int, seed: int = 0, batch_size: int = 16, dtype="float32"
) -> SyntheticTask:
    """Validate the arguments and build the batch stream of task `name`.

    Args:
        name         one of ALL_TASKS
        length       the task's L, >= TASKS[name].min_length
        seed         >= 0; batch k is drawn from the k-th child of SeedSequence(seed)
        batch_size   B >= 1 (DLR uses 16 at L = 4096, 64 at L = 512, 4 for MIPS)
        dtype        float32 (default) or float64; values are drawn in float64 and rounded once
    Raises:
        LinrnnError  naming the bad field, what was expected and what was found
    """
    spec = task_spec(name)
    length = _check_integer("length", length, minimum=1)
    length = _check_integer("length", length, spec.min_length, why=f" for task {name!r}")
    if spec.lengths is not None and length not in spec.lengths:
        raise LinrnnError(f"length: expected one of {', '.join(map(str, spec.lengths))} for task {name!r}, found {length}")
    return SyntheticTask(
        spec=spec,
        length=length,
        seed=_check_integer("seed", seed, minimum=0),
        batch_size=_check_integer("batch_size", batch_size, minimum=1),
        dtype=resolve_dtype(dtype),
    )

"""The DLR paper's synthetic tasks: eleven atomic ones (seeded, vectorised NumPy generators) in
`TASKS`, and ListOpsSubTrees and PathfinderSegmentation in `HIGHER_ORDER_TASKS` (`ALL_TASKS`: all 13).

`make_task(name, length, seed, batch_size, dtype)` validates its arguments and returns a
`SyntheticTask`, an endless stream whose batch k depends only on (seed, k). `TASKS` lists the tasks
with their shapes; `registry.py` documents how a model's output is read (its last L_out positions).
"""

from linrnn.tasks.synthetic.registry import (
    ALL_TASKS,
    DTYPES,
    HIGHER_ORDER_TASKS,
    IGNORE_INDEX,
    TASKS,
    Batch,
    SyntheticTask,
    TaskShape,
    TaskSpec,
    last_outputs,
    make_task,
    resolve_dtype,
    task_spec,
)

__all__ = [
    "ALL_TASKS",
    "DTYPES",
    "HIGHER_ORDER_TASKS",
    "IGNORE_INDEX",
    "TASKS",
    "Batch",
    "SyntheticTask",
    "TaskShape",
    "TaskSpec",
    "last_outputs",
    "make_task",
    "resolve_dtype",
    "task_spec",
]

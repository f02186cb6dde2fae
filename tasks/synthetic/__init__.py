"""The DLR paper's eleven atomic synthetic tasks: seeded, vectorised NumPy generators.

`make_task(name, length, seed, batch_size, dtype)` validates its arguments and returns a
`SyntheticTask`, an endless stream whose batch k depends only on (seed, k). `TASKS` lists the tasks
with their shapes; `registry.py` documents how a model's output is read (its last L_out positions).
"""

from linrnn.tasks.synthetic.registry import (
    DTYPES,
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
    "DTYPES",
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

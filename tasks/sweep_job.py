"""One job of a sweep, wherever it runs (`linrnn.tasks.sweep`): what it is, how it runs, its record and its log.

A job (`SweepJob`) is a module-level function and its arguments, a directory of its own and a key (its inputs as
plain JSON). `execute` runs it with its intra-op threads fixed and writes what it returned as a `job` record to
JOB_DIR/job.json, atomically; `stored` reads a record back when it has the job's key, `gather` hands its result on,
and `tail` shows a failed job's log. The driver (`sweep.py`) and the two executors that leave the process
(`sweep_local.py`, `sweep_slurm.py`) all build on this module, which imports none of them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOB_LOG = "job.log"                 # a local worker's output while it runs the job (appended per attempt)
LOG_TAIL = 20                       # lines of a failed job's log shown


@dataclass(frozen=True)
class SweepJob:
    name: str                      # unique in its sweep
    folder: Path                   # its own directory: job.json, job.log (local), the run directory's files
    call: Callable[..., Any]       # a module-level function (pickled by reference): call(*args) -> JSON-ready result
    args: tuple
    key: dict                      # its inputs as plain JSON: a record with another key is not this job's


def _fix_threads(threads: int) -> int:
    """Intra-op threads for the job: OpenMP's and BLAS's (for libraries not loaded yet) and PyTorch's."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)
    return torch.get_num_threads()


def _slurm_ids() -> tuple[str | None, int]:
    env = os.environ
    job = env.get("SLURM_JOB_ID")
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        job = f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return job, int(env.get("SLURM_RESTART_COUNT", "0") or 0)


def execute(job: SweepJob, threads: int, executor: str, checkpoint_seconds: float | None) -> None:
    """Run `job` here with `threads` intra-op threads and write its record to JOB_DIR/job.json."""
    from linrnn.impls.results import JOB_RESULT, Envelope, JobRecord, plain, write
    from linrnn.tasks import train as training

    import torch

    before = torch.get_num_threads(), training.CHECKPOINT_SECONDS
    used = _fix_threads(threads)
    training.CHECKPOINT_SECONDS = checkpoint_seconds
    tic = time.perf_counter()
    try:
        result = job.call(*job.args)
    finally:
        torch.set_num_threads(before[0])
        training.CHECKPOINT_SECONDS = before[1]
    slurm_id, restarts = _slurm_ids()
    write(job.folder / JOB_RESULT, JobRecord(
        name=job.name, key=plain(job.key), result=plain(result), executor=executor, threads=used, slurm_job_id=slurm_id,
        restarts=restarts, seconds=round(time.perf_counter() - tic, 3),
        envelope=Envelope.here(f"linrnn sweep job {job.name} ({executor})")))


def _same_key(a: Any, b: Any) -> bool:
    from linrnn.impls.results import plain

    return json.dumps(plain(a), sort_keys=True) == json.dumps(plain(b), sort_keys=True)


def stored(job: SweepJob):
    """The job's record in its directory when it has the job's key (else None: absent, another job's, unreadable)."""
    from linrnn.impls.results import JOB_RESULT, JobRecord, ResultsError, read

    path = job.folder / JOB_RESULT
    if not path.exists():
        return None
    try:
        record = read(path, JobRecord)
    except ResultsError:
        return None
    return record if _same_key(record.key, job.key) else None


def tail(path: Path | None, lines: int = LOG_TAIL) -> str:
    if path is None or not path.exists():
        return "(no log)"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(empty log)"


def gather(job: SweepJob, on_result) -> bool:
    record = stored(job)
    if record is None:
        return False
    on_result(job, record.result, False)
    return True

"""One job of a sweep, wherever it runs (`linrnn.tasks.sweep`): what it is, how it runs, its record and its log.

A job (`SweepJob`) is a module-level function and its arguments, a directory of its own and a key (its inputs as
plain JSON). `execute` runs it with its intra-op threads fixed and writes what it returned as a `job` record to
JOB_DIR/job.json, atomically; `stored` reads a record back when it has the job's key, `gather` hands its result on,
and `tail` shows a failed job's log.

`execute` holds the job's directory (its lock, `linrnn.tasks.lock`) while it runs: a second process given the same
job (a second driver, a job resubmitted while the first still runs) waits for the first, says so in its log, and
then uses the first's record instead of training again. A `job.json` that is not a file (a directory in its place)
is set aside before the job runs. The driver (`sweep.py`) and the two executors that leave the process
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
    resources: dict | None = None  # slurm: what it asks for, from its plan ({"hours", "gpus", "mem_gb"}:
                                   # `linrnn.tasks.sweep_slurm_settings`); None: the sweep's settings


def stop(signum: int) -> None:
    """`checkpoint_on`'s action that ends the process (exit status 128 + the signal), its checkpoint saved."""
    raise SystemExit(128 + signum)


def checkpoint_on(number: int, action: Callable[[int], None], deadline: int | None = None) -> None:
    """On the signal `number`, the training loop running in this process saves its checkpoint at the end of the step
    it is in and then `action(number)` runs (at once where no loop runs: nothing to save). `deadline`: seconds after
    the signal at which the process ends whatever it is doing (SIGALRM's default action), so that a process told to
    stop never outlives that by long."""
    import signal
    import sys

    def handler(signum, frame):
        if deadline:
            signal.alarm(deadline)
        training = sys.modules.get("linrnn.tasks.train")      # not imported yet: no loop runs
        if training is None or not training.request_checkpoint(lambda: action(signum)):
            action(signum)

    signal.signal(number, handler)


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
    """Run `job` here with `threads` intra-op threads and write its record to JOB_DIR/job.json, holding its directory
    (another holder: waited for, and its record used where it wrote one)."""
    import sys

    from linrnn.tasks.lock import describe, hold, run_lock

    def waiting(info: dict) -> None:
        print(f"{job.name}: waiting for {describe(info)}, which holds {job.folder}", file=sys.stderr, flush=True)

    with hold(run_lock(job.folder), f"sweep job {job.name} ({executor})", wait=waiting):
        if stored(job) is not None:
            print(f"{job.name}: its record was written by another process meanwhile; nothing to run",
                  file=sys.stderr, flush=True)
            return
        _clear_record_place(job)
        _run(job, threads, executor, checkpoint_seconds)


def _clear_record_place(job: SweepJob) -> None:
    """A job.json that is not a file (a directory, ...) is set aside: the record is written in its place."""
    import sys

    from linrnn.base.results import JOB_RESULT
    from linrnn.tasks.resume import set_aside

    path = job.folder / JOB_RESULT
    if (path.exists() or path.is_symlink()) and not path.is_file():
        print(f"{path} is not a file; moved to {set_aside(path).name}", file=sys.stderr, flush=True)


def _run(job: SweepJob, threads: int, executor: str, checkpoint_seconds: float | None) -> None:
    from linrnn.base.results import JOB_RESULT, Envelope, JobRecord, plain, write
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
    from linrnn.base.results import plain

    return json.dumps(plain(a), sort_keys=True) == json.dumps(plain(b), sort_keys=True)


def stored(job: SweepJob):
    """The job's record in its directory when it has the job's key (else None: absent, another job's, unreadable)."""
    from linrnn.base.results import JOB_RESULT, JobRecord, ResultsError, read

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

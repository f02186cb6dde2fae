"""Sweeps: many training jobs through one executor seam, `--executor serial | local[:N] | slurm`.

Every command that runs many trainings (`linrnn experiment`, `linrnn tasks grid`, `linrnn reduced-training`) hands
its jobs to `run_jobs`:

    serial     one after another in this process
    local[:N]  at most N at once in a pool of spawned worker processes (default: the cores this process may use)
    slurm      a SLURM job array through submitit, the cluster's settings from `--cluster FILE` and flags

(the two executors that leave this process: `linrnn.tasks.sweep_local`, `linrnn.tasks.sweep_slurm`; one job, what
all three run: `linrnn.tasks.sweep_job`)

A job (`SweepJob`) is a module-level function and its arguments, a directory of its own and a key (its inputs as
plain JSON). Wherever it runs, `execute` runs it with its intra-op threads fixed (`threads`, default 1: PyTorch's and
OpenMP's; a result must not depend on the machine's core count) and writes what it returned as a `job` record
(`linrnn.impls.results.JobRecord`: the result, the executor, the threads, SLURM's job id and requeues, the machine)
to JOB_DIR/job.json, atomically. The driver gathers the records: a job whose directory already holds a record with
its key is not run again, so rerunning the command after a crash, a Ctrl-C or a failed job runs only what has no
record. The driver reads every result back from its record, whatever the executor, so the sweep's output is the
same bit for bit (apart from timing and machine fields) run serially, locally or on SLURM.

Jobs checkpoint: while a sweep runs, `linrnn.tasks.train` also saves a run's checkpoint every `checkpoint_seconds`
(default 10 minutes), and a job started again resumes from its run directory's checkpoint. A SLURM job is
`submitit.helpers.Checkpointable`: preempted or requeued, it starts again and resumes. A job that fails (an error,
a killed worker, a cancelled SLURM job) is run again up to `retries` times, then reported with its log's last lines;
the sweep goes on with the others and ends with one line naming the failed jobs.

Progress: a live count of the jobs pending, running, done and failed with the elapsed and estimated time left (one
line rewritten in place on a terminal, a line per change in a log).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linrnn.impls.errors import LinrnnError
from linrnn.tasks.sweep_job import LOG_TAIL, SweepJob, execute, gather, stored

EXECUTORS = ("serial", "local", "slurm")
DEFAULT_RETRIES = 1
DEFAULT_THREADS = 1
DEFAULT_CHECKPOINT_SECONDS = 600.0


class SweepFailed(LinrnnError):
    """Some jobs failed after their retries; the others' records are kept."""


@dataclass(frozen=True)
class Executor:
    name: str = "serial"                       # one of EXECUTORS
    workers: int = 1                           # local: jobs in flight
    retries: int = DEFAULT_RETRIES             # runs of a failed job after its first
    threads: int = DEFAULT_THREADS             # intra-op threads of every job
    checkpoint_seconds: float | None = DEFAULT_CHECKPOINT_SECONDS
    cluster: dict = field(default_factory=dict)   # slurm: `linrnn.tasks.sweep_slurm.cluster_settings`
    progress: bool = True                      # the live count on stderr


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:               # not Linux
        return os.cpu_count() or 1


def parse_executor(text: str) -> tuple[str, int]:
    """'serial' | 'local' | 'local:N' | 'slurm' -> (name, workers); anything else is a one-line error."""
    name, sep, count = text.strip().partition(":")
    if name not in EXECUTORS or (sep and name != "local"):
        raise LinrnnError(f"--executor: expected serial, local, local:N or slurm, found {text!r}")
    if name != "local":
        return name, 1
    if not sep:
        return name, available_cores()
    try:
        workers = int(count)
    except ValueError:
        workers = 0
    if workers < 1:
        raise LinrnnError(f"--executor: expected local:N with N a positive integer, found {text!r}")
    return name, workers


def add_arguments(parser: argparse.ArgumentParser, default: str = "local") -> None:
    """The executor's options, shared by every command that runs a sweep."""
    group = parser.add_argument_group("where the jobs run")
    group.add_argument("--executor", default=default, metavar="serial|local[:N]|slurm",
                       help=f"serial: one after another here; local[:N]: N worker processes (default N: the "
                            f"{available_cores()} cores here); slurm: a job array through submitit (default {default})")
    group.add_argument("--retries", type=int, default=DEFAULT_RETRIES,
                       help=f"runs of a failed job after its first (default {DEFAULT_RETRIES})")
    group.add_argument("--threads-per-job", type=int, default=DEFAULT_THREADS, dest="threads_per_job",
                       help=f"intra-op threads of each job, whatever the executor (default {DEFAULT_THREADS}; "
                            "results can differ in the last bits between thread counts)")
    group.add_argument("--checkpoint-minutes", type=float, default=DEFAULT_CHECKPOINT_SECONDS / 60,
                       help="a job also saves its checkpoint this often, so that a preempted or killed job resumes "
                            f"from at most that long ago (default {DEFAULT_CHECKPOINT_SECONDS / 60:g})")
    group.add_argument("--cluster", default=None, metavar="FILE",
                       help="slurm: a TOML file of the cluster's settings (docs/experiments.md, 'On a cluster')")
    for key in ("partition", "time", "gpus_per_job", "cpus_per_job", "mem", "account", "array_parallelism"):
        group.add_argument("--" + key.replace("_", "-"), dest="slurm_" + key, default=None,
                           help=f"slurm: {key} (over --cluster's)")
    group.add_argument("--sbatch", dest="slurm_sbatch", action="append", default=None, metavar="KEY=VALUE",
                       help="slurm: an extra sbatch option (repeatable), e.g. --sbatch qos=high")


def from_arguments(args: argparse.Namespace) -> Executor:
    """The executor that `add_arguments`' options describe (checked: one-line errors)."""
    name, workers = parse_executor(args.executor)
    if args.retries < 0:
        raise LinrnnError(f"--retries: expected 0 or more, found {args.retries}")
    if args.threads_per_job < 1:
        raise LinrnnError(f"--threads-per-job: expected 1 or more, found {args.threads_per_job}")
    if not args.checkpoint_minutes > 0:
        raise LinrnnError(f"--checkpoint-minutes: expected a positive number, found {args.checkpoint_minutes}")
    flags = {k[len("slurm_"):]: v for k, v in vars(args).items() if k.startswith("slurm_")}
    if name != "slurm" and (args.cluster or any(v is not None for v in flags.values())):
        raise LinrnnError(f"--cluster and the slurm flags need --executor slurm, found --executor {args.executor}")
    from linrnn.tasks.sweep_slurm import cluster_settings

    cluster = cluster_settings(args.cluster, flags) if name == "slurm" else {}
    return Executor(name, workers, args.retries, args.threads_per_job, 60.0 * args.checkpoint_minutes, cluster,
                    progress=not getattr(args, "quiet", False))


# -- one job, wherever it runs ----------------------------------------------------------------------------

# -- progress --------------------------------------------------------------------------------------------

def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Jobs pending, running, done and failed, the elapsed time and an estimate of the time left: one line rewritten
    in place on a terminal, a new line per change elsewhere (a log)."""

    def __init__(self, total: int, gathered: int, enabled: bool = True, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.total, self.gathered = total, gathered
        self.start = time.monotonic()
        self.last: tuple | None = None
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def line(self, pending: int, running: int, done: int, failed: int) -> str:
        elapsed = time.monotonic() - self.start
        ran = done - self.gathered
        left = (f", about {_clock(elapsed * (pending + running) / ran)} left" if ran > 0 and pending + running
                else "")
        return (f"jobs: {done}/{self.total} done ({self.gathered} already), {running} running, {pending} pending, "
                f"{failed} failed; {_clock(elapsed)} elapsed{left}")

    def update(self, pending: int, running: int, done: int, failed: int, force: bool = False) -> None:
        state = (pending, running, done, failed)
        if not self.enabled or (state == self.last and not (force and self.tty)):
            return
        self.last = state
        text = self.line(*state)
        if self.tty:
            self.stream.write("\r" + text + "\033[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.last is not None:
            self.stream.write("\n")
            self.stream.flush()


# -- the driver ------------------------------------------------------------------------------------------

def run_jobs(jobs: list[SweepJob], executor: Executor, on_result: Callable[[SweepJob, Any, bool], None],
             folder: Path | None = None) -> None:
    """Run every job that has no record, gathering each result (its record's) through `on_result(job, result,
    reused)`: first those already stored (reused: True, no time was spent on them now), then each as it finishes. `folder`: where the sweep keeps its SLURM logs (default:
    the first job's parent). Raises SweepFailed (one line) if jobs failed after their retries, after every other
    job has finished and been gathered."""
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise LinrnnError("sweep: two jobs share a name")
    todo = []
    for job in jobs:
        record = stored(job)
        if record is None:
            todo.append(job)
        else:
            on_result(job, record.result, True)
    progress = Progress(len(jobs), len(jobs) - len(todo), executor.progress)
    if not todo:
        return
    if executor.name == "local":
        from linrnn.tasks.sweep_local import run_local as runner
    elif executor.name == "slurm":
        from linrnn.tasks.sweep_slurm import run_slurm as runner
    else:
        runner = _run_serial
    failures: list[tuple[SweepJob, str, str]] = []
    try:
        runner(todo, executor, on_result, progress, failures, folder or todo[0].folder.parent)
    finally:
        progress.close()
    if failures:
        for job, reason, tail in failures:
            print(f"\n{job.name} failed after {executor.retries + 1} attempt(s): {reason}\n--- the last lines of its "
                  f"log ---\n{tail}", file=sys.stderr, flush=True)
        raise SweepFailed(f"{len(failures)} of {len(jobs)} jobs failed after {executor.retries + 1} attempt(s) each "
                          f"({', '.join(j.name for j, _, _ in failures)}); every other job's record is kept: run the "
                          "same command again to retry only these")


def _run_serial(todo, executor, on_result, progress, failures, folder) -> None:
    done = progress.gathered
    for i, job in enumerate(todo):
        attempt = 0
        while True:
            progress.update(len(todo) - i - 1, 1, done, len(failures))
            try:
                execute(job, executor.threads, "serial", executor.checkpoint_seconds)
                break
            except Exception as err:        # a KeyboardInterrupt stops the sweep; what finished is kept
                attempt += 1
                if attempt > executor.retries:
                    if executor.retries == 0:
                        raise                  # nothing to retry: the error as it is, with its traceback
                    failures.append((job, f"{type(err).__name__}: {err}", traceback.format_exc(limit=-LOG_TAIL)))
                    break
                print(f"{job.name}: {type(err).__name__}: {err}; retrying ({attempt}/{executor.retries})",
                      file=sys.stderr, flush=True)
        if gather(job, on_result):
            done += 1
    progress.update(0, 0, done, len(failures))

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
(`linrnn.base.results.JobRecord`: the result, the executor, the threads, SLURM's job id and requeues, the machine)
to JOB_DIR/job.json, atomically. The driver gathers the records: a job whose directory already holds a record with
its key is not run again, so rerunning the command after a crash, a Ctrl-C or a failed job runs only what has no
record. The driver reads every result back from its record, whatever the executor, so the sweep's output is the
same bit for bit (apart from timing and machine fields) run serially, locally or on SLURM.

Jobs checkpoint: while a sweep runs, `linrnn.tasks.train` also saves a run's checkpoint every `checkpoint_seconds`
(default 10 minutes), and a job started again resumes from its run directory's checkpoint. A SLURM job is
`submitit.helpers.Checkpointable`: preempted or requeued, it starts again and resumes. A job that fails (an error,
a killed worker, a SLURM job that failed or lost its node) is run again up to `retries` times, then reported with its
log's last lines; the sweep goes on with the others and ends with one line naming the failed jobs. A SLURM job that
a user cancelled (`scancel`) is not run again: the sweep ends once nothing else runs, naming it.

Locks (`linrnn.tasks.lock`): a driver holds its output (`lock`, default the sweep's folder: a second driver on the
same output is a one-line error naming the first), and each job holds its directory while it runs (a second process
given the same job waits, then uses its record).

Progress: a live count of the jobs pending, running, done and failed, the steps the running jobs have reached (read
from their metrics.jsonl), and the elapsed and estimated time left (one line rewritten in place on a terminal, a
line per change of the counts in a log).
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

from linrnn.base.errors import LinrnnError
from linrnn.tasks.sweep_job import LOG_TAIL, SweepJob, execute, gather, stored  # noqa: F401  (SweepJob: the API)

EXECUTORS = ("serial", "local", "slurm")
DEFAULT_RETRIES = 1
DEFAULT_THREADS = 1
DEFAULT_CHECKPOINT_SECONDS = 600.0


class SweepFailed(LinrnnError):
    """Some jobs failed after their retries (or were cancelled); the others' records are kept."""


class SweepCancelled(SweepFailed):
    """A user cancelled SLURM jobs of the sweep (`scancel`); the others' records are kept."""


@dataclass
class Outcome:
    """What did not finish, as the executors report it."""
    failures: list = field(default_factory=list)    # (job, reason, the last lines of its log, attempts)
    cancelled: list = field(default_factory=list)   # (job, reason): cancelled by a user, not retried


@dataclass(frozen=True)
class Executor:
    name: str = "serial"                       # one of EXECUTORS
    workers: int = 1                           # local: jobs in flight
    retries: int = DEFAULT_RETRIES             # runs of a failed job after its first
    threads: int = DEFAULT_THREADS             # intra-op threads of every job
    checkpoint_seconds: float | None = DEFAULT_CHECKPOINT_SECONDS
    cluster: dict = field(default_factory=dict)   # slurm: `linrnn.tasks.sweep_slurm_settings.cluster_settings`
    progress: bool = True                      # the live count on stderr
    max_timeouts: int | None = None            # slurm: requeues at the time limit per job (None: 3, or the plan's)


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
    group.add_argument("--max-timeouts", type=int, default=None, dest="max_timeouts",
                       help="slurm: times a job may reach its time limit and be requeued (resuming from the checkpoint "
                            "it saves on SLURM's signal) before it is given up (default 3; with --scale full, enough "
                            "for three times each run's planned time)")
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
    timeouts = getattr(args, "max_timeouts", None)
    if name != "slurm" and (args.cluster or timeouts is not None or any(v is not None for v in flags.values())):
        raise LinrnnError(f"--cluster and the slurm flags need --executor slurm, found --executor {args.executor}")
    if timeouts is not None and timeouts < 0:
        raise LinrnnError(f"--max-timeouts: expected 0 or more, found {timeouts}")
    from linrnn.tasks.sweep_slurm_settings import cluster_settings

    cluster = cluster_settings(args.cluster, flags) if name == "slurm" else {}
    return Executor(name, workers, args.retries, args.threads_per_job, 60.0 * args.checkpoint_minutes, cluster,
                    progress=not getattr(args, "quiet", False), max_timeouts=timeouts)


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

    def line(self, pending: int, running: int, done: int, failed: int, cancelled: int = 0,
             steps: tuple[int, int | None] | None = None) -> str:
        elapsed = time.monotonic() - self.start
        ran = done - self.gathered
        left = (f", about {_clock(elapsed * (pending + running) / ran)} left" if ran > 0 and pending + running
                else "")
        at = ""
        if steps and steps[0]:
            at = f" (at {steps[0]:,} of {steps[1]:,} steps)" if steps[1] else f" (at {steps[0]:,} steps)"
        return (f"jobs: {done}/{self.total} done ({self.gathered} already), {running} running{at}, {pending} pending, "
                f"{failed} failed{f', {cancelled} cancelled' if cancelled else ''}; {_clock(elapsed)} elapsed{left}")

    def update(self, pending: int, running: int, done: int, failed: int, force: bool = False,
               jobs: list | None = None, cancelled: int = 0) -> None:
        """The counts; `jobs`: the running jobs, whose steps so far the line adds (from their metrics.jsonl)."""
        state = (pending, running, done, failed, cancelled)
        if not self.enabled or (state == self.last and not (force and self.tty)):
            return
        self.last = state
        text = self.line(*state, steps=running_steps(jobs) if jobs else None)
        if self.tty:
            self.stream.write("\r" + text + "\033[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.last is not None:
            self.stream.write("\n")
            self.stream.flush()


def running_steps(jobs: list) -> tuple[int, int | None]:
    """(the steps the jobs' runs have reached, their planned steps: None where a run's total is not known from its
    config, a data task's epochs) from each job directory's metrics.jsonl and config.json."""
    import json

    from linrnn.tasks.runs import last_step

    reached, total = 0, 0
    for job in jobs:
        reached += last_step(job.folder / "metrics.jsonl")
        try:
            config = json.loads((job.folder / "config.json").read_text())
        except (OSError, ValueError):
            config = {}
        steps = config.get("steps") if not config.get("epochs") else None
        total = total + steps if isinstance(steps, int) and total is not None else None
    return reached, total


# -- the driver ------------------------------------------------------------------------------------------

def run_jobs(jobs: list[SweepJob], executor: Executor, on_result: Callable[[SweepJob, Any, bool], None],
             folder: Path | None = None, lock: Path | None = None) -> None:
    """Run every job that has no record, gathering each result (its record's) through `on_result(job, result,
    reused)`: first those already stored (reused: True, no time was spent on them now), then each as it finishes.
    `folder`: where the sweep keeps its SLURM logs (default: the first job's parent). `lock`: the driver's output
    (its --out; default `folder`), held while it runs: a second driver on it is a one-line error. Raises SweepFailed
    (one line) if jobs failed after their retries or were cancelled, after every other job has finished and been
    gathered."""
    from linrnn.tasks.lock import Locked, hold, output_lock

    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise LinrnnError("sweep: two jobs share a name")
    if not jobs:
        return
    folder = Path(folder) if folder is not None else jobs[0].folder.parent
    mine = Path(lock) if lock is not None else folder
    try:
        with hold(output_lock(mine), "linrnn " + " ".join(sys.argv[1:])):
            _drive(jobs, executor, on_result, folder)
    except Locked as err:
        raise LinrnnError(f"{mine}: another driver is running this sweep ({err}); wait for it to end (linrnn runs list "
                          f"{folder} shows where its jobs are), or stop it") from None


def _drive(jobs: list[SweepJob], executor: Executor, on_result, folder: Path) -> None:
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
    outcome = Outcome()
    try:
        runner(todo, executor, on_result, progress, outcome, folder)
    finally:
        progress.close()
    _report(outcome, len(jobs))


def _names(jobs: list) -> str:
    names = [j.name for j in jobs]
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def _report(outcome: Outcome, total: int) -> None:
    """Each failed job with its reason and log tail, then one line: what failed, what was cancelled."""
    for job, reason, tail, attempts in outcome.failures:
        print(f"\n{job.name} failed after {attempts} attempt(s): {reason}"
              + (f"\n--- the last lines of its log ---\n{tail}" if tail else ""), file=sys.stderr, flush=True)
    parts = []
    if outcome.failures:
        counts = sorted({a for _, _, _, a in outcome.failures})
        each = f" after {counts[0]} attempt(s) each" if len(counts) == 1 else ""
        parts.append(f"{len(outcome.failures)} of {total} jobs failed{each} "
                     f"({_names([j for j, _, _, _ in outcome.failures])})")
    if outcome.cancelled:
        parts.append(f"{len(outcome.cancelled)} of {total} jobs were cancelled (scancel) and not run again "
                     f"({_names([j for j, _ in outcome.cancelled])})")
    if parts:
        error = SweepFailed if outcome.failures else SweepCancelled
        raise error("; ".join(parts) + "; every other job's record is kept: run the same command again to run "
                    "only these (each resumes from its checkpoint)")


def _run_serial(todo, executor, on_result, progress, outcome, folder) -> None:
    done = progress.gathered
    for i, job in enumerate(todo):
        attempt = 0
        while True:
            progress.update(len(todo) - i - 1, 1, done, len(outcome.failures))
            try:
                execute(job, executor.threads, "serial", executor.checkpoint_seconds)
                break
            except Exception as err:        # a KeyboardInterrupt stops the sweep; what finished is kept
                attempt += 1
                if attempt > executor.retries:
                    if executor.retries == 0:
                        raise                  # nothing to retry: the error as it is, with its traceback
                    outcome.failures.append((job, f"{type(err).__name__}: {err}",
                                             traceback.format_exc(limit=-LOG_TAIL), attempt))
                    break
                print(f"{job.name}: {type(err).__name__}: {err}; retrying ({attempt}/{executor.retries})",
                      file=sys.stderr, flush=True)
        if gather(job, on_result):
            done += 1
    progress.update(0, 0, done, len(outcome.failures))

"""Sweeps: many training jobs through one executor seam, `--executor serial | local[:N] | slurm`.

Every command that runs many trainings (`linrnn experiment`, `linrnn tasks grid`, `linrnn reduced-training`) hands
its jobs to `run_jobs`:

    serial     one after another in this process
    local[:N]  at most N at once in a pool of spawned worker processes (default: the cores this process may use)
    slurm      a SLURM job array through submitit, the cluster's settings from `--cluster FILE` and flags

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
import collections
import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linrnn.impls.errors import LinrnnError

EXECUTORS = ("serial", "local", "slurm")
JOB_LOG = "job.log"                 # a local worker's output while it runs the job (appended per attempt)
DEFAULT_RETRIES = 1
DEFAULT_THREADS = 1
DEFAULT_CHECKPOINT_SECONDS = 600.0
LOG_TAIL = 20                       # lines of a failed job's log shown


class SweepFailed(LinrnnError):
    """Some jobs failed after their retries; the others' records are kept."""


@dataclass(frozen=True)
class SweepJob:
    name: str                      # unique in its sweep
    folder: Path                   # its own directory: job.json, job.log (local), the run directory's files
    call: Callable[..., Any]       # a module-level function (pickled by reference): call(*args) -> JSON-ready result
    args: tuple
    key: dict                      # its inputs as plain JSON: a record with another key is not this job's


@dataclass(frozen=True)
class Executor:
    kind: str = "serial"                       # one of EXECUTORS
    workers: int = 1                           # local: jobs in flight
    retries: int = DEFAULT_RETRIES             # runs of a failed job after its first
    threads: int = DEFAULT_THREADS             # intra-op threads of every job
    checkpoint_seconds: float | None = DEFAULT_CHECKPOINT_SECONDS
    cluster: dict = field(default_factory=dict)   # slurm: `cluster_settings`
    progress: bool = True                      # the live count on stderr

    def describe(self) -> str:
        return f"{self.kind}:{self.workers}" if self.kind == "local" else self.kind


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:               # not Linux
        return os.cpu_count() or 1


def parse_executor(text: str) -> tuple[str, int]:
    """'serial' | 'local' | 'local:N' | 'slurm' -> (kind, workers); anything else is a one-line error."""
    kind, sep, count = text.strip().partition(":")
    if kind not in EXECUTORS or (sep and kind != "local"):
        raise LinrnnError(f"--executor: expected serial, local, local:N or slurm, found {text!r}")
    if kind != "local":
        return kind, 1
    if not sep:
        return kind, available_cores()
    try:
        workers = int(count)
    except ValueError:
        workers = 0
    if workers < 1:
        raise LinrnnError(f"--executor: expected local:N with N a positive integer, found {text!r}")
    return kind, workers


# -- the cluster's settings -----------------------------------------------------------------------------

# cluster.toml's keys (the flags of the same names override them) and what submitit's SlurmExecutor calls them
CLUSTER_KEYS = {"partition": "partition", "time": "time", "gpus_per_job": "gpus_per_node",
                "cpus_per_job": "cpus_per_task", "mem": "mem", "account": "account", "qos": "qos",
                "constraint": "constraint", "array_parallelism": "array_parallelism", "setup": "setup",
                "sbatch": "additional_parameters", "python": "python"}
DEFAULT_MINUTES = 60


def _minutes(text: Any) -> int:
    """SLURM's time limit as minutes: an integer of minutes, "MM", "HH:MM:SS" or "D-HH:MM:SS"."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    value = str(text).strip()
    try:
        days, _, rest = value.rpartition("-")
        parts = [int(p) for p in rest.split(":")]
        if len(parts) == 1:
            minutes = parts[0]
        elif len(parts) == 2:                       # SLURM reads MM:SS
            minutes = parts[0] + (parts[1] > 0)
        elif len(parts) == 3:
            minutes = 60 * parts[0] + parts[1] + (parts[2] > 0)
        else:
            raise ValueError
        minutes += 1440 * int(days) if days else 0
    except ValueError:
        minutes = 0
    if minutes < 1:
        raise LinrnnError(f"time: expected minutes or D-HH:MM:SS, found {text!r}")
    return minutes


def cluster_settings(file: str | None = None, flags: dict | None = None) -> dict:
    """The SLURM settings of `--cluster FILE` (TOML) with the flags over them, checked: keys of CLUSTER_KEYS."""
    import tomllib

    values: dict[str, Any] = {}
    if file:
        try:
            values = tomllib.loads(Path(file).read_text())
        except FileNotFoundError:
            raise LinrnnError(f"--cluster: no such file {file}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise LinrnnError(f"--cluster: {file} is not a TOML file ({err})") from None
        unknown = [k for k in values if k not in CLUSTER_KEYS]
        if unknown:
            raise LinrnnError(f"--cluster: {file}: expected keys among {', '.join(CLUSTER_KEYS)}, found {unknown[0]!r}")
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    extra_flags = flags.pop("sbatch", None)
    values.update(flags)
    out: dict[str, Any] = {"time": _minutes(values.get("time", DEFAULT_MINUTES))}
    for key in ("gpus_per_job", "cpus_per_job", "array_parallelism"):
        if key in values:
            value = values[key]
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool) or value < (0 if key == "gpus_per_job" else 1):
                raise LinrnnError(f"{key}: expected a {'non-negative' if key == 'gpus_per_job' else 'positive'} "
                                  f"integer, found {values[key]!r}")
            out[key] = value
    for key in ("partition", "mem", "account", "qos", "constraint", "python"):
        if key in values:
            if not isinstance(values[key], str) or not values[key].strip():
                raise LinrnnError(f"{key}: expected text, found {values[key]!r}")
            out[key] = values[key].strip()
    if "setup" in values:
        setup = values["setup"]
        if not isinstance(setup, list) or not all(isinstance(line, str) for line in setup):
            raise LinrnnError(f"setup: expected a list of shell lines, found {setup!r}")
        out["setup"] = list(setup)
    extra = values.get("sbatch", {})
    if not isinstance(extra, dict):
        raise LinrnnError(f"sbatch: expected a table of sbatch options, found {extra!r}")
    for item in extra_flags or []:            # --sbatch KEY=VALUE, over the file's table
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise LinrnnError(f"--sbatch: expected KEY=VALUE, found {item!r}")
        extra = {**extra, k.strip().lstrip("-").replace("-", "_"): v.strip()}
    if extra:
        out["sbatch"] = extra
    return out


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
    kind, workers = parse_executor(args.executor)
    if args.retries < 0:
        raise LinrnnError(f"--retries: expected 0 or more, found {args.retries}")
    if args.threads_per_job < 1:
        raise LinrnnError(f"--threads-per-job: expected 1 or more, found {args.threads_per_job}")
    if not args.checkpoint_minutes > 0:
        raise LinrnnError(f"--checkpoint-minutes: expected a positive number, found {args.checkpoint_minutes}")
    flags = {k[len("slurm_"):]: v for k, v in vars(args).items() if k.startswith("slurm_")}
    if kind != "slurm" and (args.cluster or any(v is not None for v in flags.values())):
        raise LinrnnError(f"--cluster and the slurm flags need --executor slurm, found --executor {args.executor}")
    cluster = cluster_settings(args.cluster, flags) if kind == "slurm" else {}
    return Executor(kind, workers, args.retries, args.threads_per_job, 60.0 * args.checkpoint_minutes, cluster,
                    progress=not getattr(args, "quiet", False))


# -- one job, wherever it runs ----------------------------------------------------------------------------

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


def execute(job: SweepJob, threads: int, kind: str, checkpoint_seconds: float | None) -> None:
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
        name=job.name, key=plain(job.key), result=plain(result), executor=kind, threads=used, slurm_job_id=slurm_id,
        restarts=restarts, seconds=round(time.perf_counter() - tic, 3),
        envelope=Envelope.here(f"linrnn sweep job {job.name} ({kind})")))


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


def _tail(path: Path | None, lines: int = LOG_TAIL) -> str:
    if path is None or not path.exists():
        return "(no log)"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(empty log)"


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
    runner = {"serial": _run_serial, "local": _run_local, "slurm": _run_slurm}[executor.kind]
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


def _gather(job: SweepJob, on_result) -> bool:
    record = stored(job)
    if record is None:
        return False
    on_result(job, record.result, False)
    return True


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
        if _gather(job, on_result):
            done += 1
    progress.update(0, 0, done, len(failures))


# local: a pool of spawned workers, each with a pipe of its own, so the driver always knows which job a worker holds
# (a worker killed mid-job fails that job only; the driver starts another worker)

@contextlib.contextmanager
def _output_to(path: Path):
    """This process's stdout and stderr (file descriptors 1 and 2, so C libraries' output too) appended to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _worker(conn, threads: int) -> None:
    """A local worker: runs the jobs its pipe sends, one at a time, each job's output to JOB_DIR/job.log."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)       # Ctrl-C is the driver's to handle: it stops the workers
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        job, checkpoint_seconds = message
        with _output_to(job.folder / JOB_LOG):
            print(f"--- {job.name}: started {time.strftime('%Y-%m-%d %H:%M:%S')} in process {os.getpid()}",
                  flush=True)
            try:
                execute(job, threads, "local", checkpoint_seconds)
                status = ("ok", None)
            except BaseException as err:      # reported to the driver, which retries or gives up
                traceback.print_exc()
                status = ("failed", f"{type(err).__name__}: {err}")
        conn.send(status)


@dataclass
class _Slot:
    process: Any
    conn: Any
    job: SweepJob | None = None


def _run_local(todo, executor, on_result, progress, failures, folder) -> None:
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    pending = collections.deque(todo)
    attempts: collections.Counter = collections.Counter()
    slots: list[_Slot] = []
    done = progress.gathered

    def start_worker() -> _Slot:
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker, args=(theirs, executor.threads), daemon=True,
                                  name="linrnn-sweep-worker")
        process.start()
        theirs.close()
        return _Slot(process, ours)

    def finished(slot: _Slot, ok: bool, reason: str | None) -> None:
        nonlocal done
        job, slot.job = slot.job, None
        if ok and _gather(job, on_result):
            done += 1
            return
        attempts[job.name] += 1
        reason = reason or "it wrote no record"
        if attempts[job.name] > executor.retries:
            failures.append((job, reason, _tail(job.folder / JOB_LOG)))
        else:
            print(f"{job.name}: {reason}; retrying ({attempts[job.name]}/{executor.retries})", file=sys.stderr,
                  flush=True)
            pending.appendleft(job)

    try:
        while pending or any(s.job for s in slots):
            while len(slots) < min(executor.workers, len(pending) + sum(1 for s in slots if s.job)):
                slots.append(start_worker())
            for slot in slots:
                if slot.job is None and pending:
                    slot.job = pending.popleft()
                    slot.conn.send((slot.job, executor.checkpoint_seconds))
            progress.update(len(pending), sum(1 for s in slots if s.job), done, len(failures))
            wait([s.conn for s in slots if s.job] + [s.process.sentinel for s in slots], timeout=1.0)
            for slot in list(slots):
                if slot.job is not None and slot.conn.poll():
                    try:
                        status, reason = slot.conn.recv()
                    except (EOFError, OSError):
                        status, reason = "died", None
                    if status != "died":
                        finished(slot, status == "ok", reason)
                        continue
                if not slot.process.is_alive():
                    slot.process.join()
                    if slot.job is not None:
                        finished(slot, False, f"its worker process died (exit code {slot.process.exitcode})")
                    slot.conn.close()
                    slots.remove(slot)
        progress.update(0, 0, done, len(failures))
    finally:
        for slot in slots:                 # idle workers stop; busy ones (a Ctrl-C, an error) are ended
            if slot.job is None and slot.process.is_alive():
                with contextlib.suppress(OSError):
                    slot.conn.send(None)
            else:
                slot.process.terminate()
        for slot in slots:
            slot.process.join(timeout=10)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()


# slurm: a job array through submitit

class SlurmCall:
    """What a SLURM job runs: `execute` on its node. Checkpointable: preempted (or requeued at its time limit), the
    job is submitted again with the same arguments and resumes from its run directory's checkpoint."""

    def __call__(self, job: SweepJob, threads: int, checkpoint_seconds: float | None) -> str:
        execute(job, threads, "slurm", checkpoint_seconds)
        return job.name

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def slurm_executor(folder: Path, settings: dict, threads: int):
    """submitit's SlurmExecutor with the cluster's settings (`cluster_settings`), its logs under `folder`."""
    try:
        import submitit
    except ImportError:
        raise LinrnnError("--executor slurm: expected the submitit package (pip install submitit)") from None
    import shutil

    if shutil.which("sbatch") is None:
        raise LinrnnError("--executor slurm: expected SLURM's sbatch on PATH (run on the cluster's login node; on "
                          "one machine, tools/slurm-cluster.sh start)")
    kwargs = {"python": settings["python"]} if "python" in settings else {}
    executor = submitit.SlurmExecutor(folder=str(folder / "%j"), **kwargs)
    parameters = {CLUSTER_KEYS[k]: v for k, v in settings.items() if k not in ("python",)}
    parameters.setdefault("cpus_per_task", threads)
    parameters.setdefault("job_name", "linrnn")
    parameters["stderr_to_stdout"] = True
    executor.update_parameters(**parameters)
    return executor


def _slurm_log(sjob) -> Path:
    return Path(sjob.paths.stdout)


SUBMITTED = "submitted.json"        # the sweep's SLURM folder: {job name: SLURM job id} of every submission


def _live(job_id: str) -> bool:
    """Whether SLURM still holds the job (pending, running, requeued: `squeue` lists it)."""
    import subprocess

    try:
        found = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and bool(found.stdout.strip())


def _run_slurm(todo, executor, on_result, progress, failures, folder) -> None:
    import submitit

    folder = Path(folder) / "slurm"
    slurm = slurm_executor(folder, executor.cluster, executor.threads)
    call = SlurmCall()
    done = progress.gathered
    attempts: collections.Counter = collections.Counter()
    ledger = folder / SUBMITTED
    try:
        submitted = json.loads(ledger.read_text()) if ledger.exists() else {}
    except ValueError:
        submitted = {}

    def remember(jobs_ids: dict) -> None:
        submitted.update(jobs_ids)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = ledger.with_name(f".{ledger.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(submitted, indent=1))
        os.replace(tmp, ledger)

    def submit(jobs: list[SweepJob]) -> dict:
        with slurm.batch():
            handles = [slurm.submit(call, job, executor.threads, executor.checkpoint_seconds) for job in jobs]
        for job, handle in zip(jobs, handles):
            print(f"{job.name}: SLURM job {handle.job_id}, log {_slurm_log(handle)}", file=sys.stderr, flush=True)
        remember({job.name: handle.job_id for job, handle in zip(jobs, handles)})
        return {job.name: (job, handle) for job, handle in zip(jobs, handles)}

    # a job that an earlier driver submitted and SLURM still holds (the driver was stopped, the jobs went on) is
    # followed again, not submitted twice
    active, fresh = {}, []
    for job in todo:
        old = submitted.get(job.name)
        if old and _live(old):
            active[job.name] = (job, submitit.SlurmJob(folder=str(folder / "%j"), job_id=old))
            print(f"{job.name}: following SLURM job {old}, submitted before", file=sys.stderr, flush=True)
        else:
            fresh.append(job)
    if fresh:
        active.update(submit(fresh))
    last_check = 0.0
    draining: dict[str, tuple[SweepJob, str]] = {}
    try:
        while active or draining:
            now = time.monotonic()
            if active and now - last_check >= 5.0:     # one sacct call for every job of the sweep
                last_check = now
                next(iter(active.values()))[1].watcher.update()
            for name, (job, handle) in list(active.items()):
                if _gather(job, on_result):
                    done += 1
                    del active[name]
                    continue
                if not handle.done():
                    continue
                if _gather(job, on_result):          # it finished between the two looks
                    done += 1
                    del active[name]
                    continue
                del active[name]
                if handle.paths.result_pickle.exists():   # the job's Python ended: an error, or no record written
                    try:
                        handle.result()
                        reason = "it wrote no record"
                    except Exception as err:              # submitit's FailedJobError: the job's traceback
                        lines = [line for line in str(err).strip().splitlines() if line.strip()]
                        reason = f"{type(err).__name__}: {lines[-1] if lines else ''}"
                else:                                      # SLURM ended it: cancelled, out of time or memory, ...
                    reason = f"SLURM ended it ({handle.watcher.get_state(handle.job_id, mode='cache')})"
                attempts[name] += 1
                if attempts[name] > executor.retries:
                    failures.append((job, reason + f" (SLURM job {handle.job_id})", _tail(_slurm_log(handle))))
                else:
                    print(f"{name}: SLURM job {handle.job_id}: {reason}; retrying ({attempts[name]}/"
                          f"{executor.retries})", file=sys.stderr, flush=True)
                    # SLURM says CANCELLED at once, but the job's processes may run on until its KillWait: the job
                    # is submitted again only once squeue no longer lists it, never beside its own run directory
                    draining[name] = (job, handle.job_id)
            for name, (job, job_id) in list(draining.items()):
                if not _live(job_id):
                    del draining[name]
                    if _gather(job, on_result):        # it finished its work while it was being ended
                        done += 1
                    else:
                        active.update(submit([job]))
            states = [handle.watcher.get_state(handle.job_id, mode="cache") for _, handle in active.values()]
            running = sum(1 for s in states if s.startswith("RUNNING") or s.startswith("COMPLETING"))
            progress.update(len(active) + len(draining) - running, running, done, len(failures), force=True)
            if active or draining:
                time.sleep(1.0)
    except KeyboardInterrupt:
        for _, handle in active.values():        # (a draining job is being ended already)
            with contextlib.suppress(Exception):
                handle.cancel(check=False)
        print(f"\ncancelled the {len(active)} SLURM job(s) in flight; the finished jobs' records are kept, and the "
              "same command again submits only the rest (each resumes from its checkpoint)", file=sys.stderr)
        raise

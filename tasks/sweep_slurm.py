"""The `slurm` executor of `linrnn.tasks.sweep`: job arrays through submitit, and a driver that follows its jobs.

The cluster's settings and each job's request from its plan: `linrnn.tasks.sweep_slurm_settings`; what SLURM says of
the jobs: `linrnn.tasks.sweep_slurm_queue`. The driver

- checks that SLURM's controller answers (`scontrol ping`), else one line;
- submits the jobs as one array per distinct request (all of them, without a plan), named `linrnn-SWEEP`; each job
  names itself `linrnn-RUN` when it starts, so `squeue` shows the run; sbatch's refusal (a bad partition, an unknown
  option) is one line;
- keeps {job: SLURM id} in SLURM_DIR/submitted.json, under a lock: a driver started again, or a second driver over
  the same runs, follows the jobs SLURM still holds instead of submitting them twice;
- follows every job with one `squeue` call per poll (and `sacct` for jobs the controller has forgotten), and
  gathers each record as it appears;
- a job that failed (an error, a lost node, a killed process) is requeued in its own array (`scontrol requeue`, so
  the array's throttle holds), up to the retries; a user's `scancel` is not retried: the sweep ends when nothing else
  runs, with one line naming what was cancelled; a job out of memory, or at its time limit more often than
  `--max-timeouts` allows, is not retried either (the same request would end the same way);
- the reason it gives is SLURM's state and reason with the last error of the job's log.

Each job is a `SlurmCall`, checkpointable: requeued at its time limit (submitit, at most `--max-timeouts` times) or
preempted, it starts again and resumes from its run directory's checkpoint; SLURM's signal before the time limit
makes the training save its checkpoint at the end of the step it is in before submitit requeues the job, so a
requeue loses no step.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.tasks import sweep_slurm_queue as queue
from linrnn.tasks.lock import hold, output_lock
from linrnn.tasks.sweep_job import SweepJob, execute, gather, stored
from linrnn.tasks.sweep_slurm_settings import CLUSTER_KEYS, job_settings, misfit_lines
from linrnn.tasks.sweep_slurm_settings import DEFAULT_MINUTES, cluster_settings  # noqa: F401  (where they were)

SUBMITTED = "submitted.json"        # the sweep's SLURM folder: {job name: SLURM job id} of every submission


class SlurmCall:
    """What a SLURM job runs: `execute` on its node. Checkpointable: preempted (or requeued at its time limit), the
    job is submitted again with the same arguments and resumes from its run directory's checkpoint."""

    def __call__(self, job: SweepJob, threads: int, checkpoint_seconds: float | None) -> str:
        _name_job(job.name)
        _checkpoint_on_signal()
        env = os.environ
        print(f"--- {job.name}: started {time.strftime('%Y-%m-%d %H:%M:%S')} in process {os.getpid()} (SLURM job "
              f"{_own_id()}, restart {env.get('SLURM_RESTART_COUNT', '0')})", file=sys.stderr, flush=True)
        execute(job, threads, "slurm", checkpoint_seconds)
        return job.name

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def _own_id() -> str:
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID", "?")


def _name_job(name: str) -> None:
    """This job's SLURM name becomes `linrnn-RUN` (an array's tasks share the array's name until they start)."""
    import subprocess

    if os.environ.get("SLURM_JOB_ID"):
        try:
            subprocess.run(["scontrol", "update", f"JobId={_own_id()}", f"JobName=linrnn-{name}"],
                           capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _checkpoint_on_signal() -> None:
    """SLURM's signal before the time limit runs submitit's handler, which requeues the job and exits: first the
    training saves its checkpoint at the end of the step it is in. SLURM's SIGTERM (a `scancel`, a preemption, the
    time limit itself; SIGKILL follows after the cluster's KillWait) saves it too, and the job then exits: a
    cancelled job resumes from that step when the sweep runs again, a preempted one when SLURM requeues it (or the
    driver retries it)."""
    import signal

    from linrnn.tasks.sweep_job import checkpoint_on, stop

    submitit = import_submitit()
    number = submitit.JobEnvironment._usr_sig()
    original = signal.getsignal(number)
    if callable(original):
        checkpoint_on(number, lambda signum: original(signum, None))
    checkpoint_on(signal.SIGTERM, stop)


class _Stderr(logging.StreamHandler):
    """A handler on whatever sys.stderr is when it writes (not the stream it was made with)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def import_submitit():
    """submitit, imported without its logging set-up: on import it calls `logging.config.dictConfig`, which closes
    every logging handler of the process (`logging.shutdown`), and with them the streams they write to (absl's, set up
    by JAX's peers, writes to sys.stderr: the driver lost its stderr). Its own logger gets one handler on stderr here;
    in a job, on its node, submitit configures itself as usual."""
    if "submitit" in sys.modules:
        return sys.modules["submitit"]
    saved = os.environ.get("SUBMITIT_LOG_LEVEL")
    os.environ["SUBMITIT_LOG_LEVEL"] = "NOCONFIG"
    try:
        import submitit
    except ImportError:
        raise LinrnnError("--executor slurm: expected the submitit package (pip install submitit)") from None
    finally:
        if saved is None:
            del os.environ["SUBMITIT_LOG_LEVEL"]
        else:
            os.environ["SUBMITIT_LOG_LEVEL"] = saved
    logger = logging.getLogger("submitit")
    if not logger.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s (%(asctime)s) - %(message)s"))
        handler.setLevel(logging.WARNING)
        logger.addHandler(handler)
        logger.propagate = False
    return submitit


def check_cluster() -> None:
    """SLURM's commands are here and its controller answers; else one line."""
    import shutil

    if shutil.which("sbatch") is None:
        raise LinrnnError("--executor slurm: expected SLURM's sbatch on PATH (run on the cluster's login node; on "
                          "one machine, tools/slurm-cluster.sh start)")
    down = queue.ping()
    if down:
        raise LinrnnError(f"--executor slurm: SLURM's controller does not answer ({down})")


def slurm_executor(folder: Path, settings: dict, threads: int, max_timeouts: int, name: str = "linrnn"):
    """submitit's SlurmExecutor with `settings` (`job_settings`), its logs under `folder`."""
    submitit = import_submitit()
    kwargs = {"python": settings["python"]} if "python" in settings else {}
    executor = submitit.SlurmExecutor(folder=str(folder / "%j"), max_num_timeout=max_timeouts, **kwargs)
    parameters = {CLUSTER_KEYS.get(k, k): v for k, v in settings.items() if k != "python"}
    parameters.setdefault("cpus_per_task", threads)
    parameters["job_name"] = name
    parameters["stderr_to_stdout"] = True
    executor.update_parameters(**parameters)
    return executor


def _paths(folder: Path, job_id: str):
    from submitit.core.utils import JobPaths

    return JobPaths(str(folder / "%j"), job_id=job_id, task_id=0)


def _refusal(err: Exception, said: str) -> str:
    """sbatch's own complaint (what it printed, `said`, and submitit's error): its first line that says what is
    wrong."""
    lines = [line.strip() for line in (said + "\n" + str(err)).splitlines() if line.strip()]
    found = [line for line in lines if any(w in line.lower() for w in ("error", "unrecognized", "invalid"))]
    return (found or lines or [type(err).__name__])[0]


@dataclass
class _Tracked:
    job: SweepJob
    job_id: str
    attempts: int = 0          # failed runs so far
    unseen: int = 0            # polls in a row in which SLURM did not list it


class _Driver:
    """Submission and the ledger of one sweep's SLURM folder."""

    def __init__(self, executor, folder: Path):
        self.executor = executor
        self.folder = Path(folder) / "slurm"
        self.sweep = Path(folder).name
        self.ledger = self.folder / SUBMITTED
        self.call = SlurmCall()
        self.limits: dict[str | None, int | None] = {}

    def submitted(self) -> dict:
        try:
            found = json.loads(self.ledger.read_text()) if self.ledger.exists() else {}
        except (OSError, ValueError):
            found = {}
        return found if isinstance(found, dict) else {}

    def remember(self, ids: dict) -> None:
        merged = {**self.submitted(), **ids}
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.ledger.with_name(f".{self.ledger.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(merged, indent=1))
        os.replace(tmp, self.ledger)

    def _limit(self, partition: str | None) -> int | None:
        if partition not in self.limits:
            self.limits[partition] = queue.partition_minutes(partition)
        return self.limits[partition]

    def submit(self, jobs: list[SweepJob], warn: bool = True) -> dict[str, str]:
        """Submit `jobs`, one array per distinct request; {name: SLURM id} (remembered in the ledger)."""
        ex = self.executor
        groups: dict[str, list[SweepJob]] = collections.defaultdict(list)
        for job in jobs:
            groups[json.dumps(job.resources or {}, sort_keys=True)].append(job)
        misfits: dict[str, list] = collections.defaultdict(list)
        plans = []
        for text, members in groups.items():
            request = json.loads(text) or None
            limit = self._limit(ex.cluster.get("partition")) if request else None
            settings, timeouts, found = job_settings(ex.cluster, request, limit, ex.max_timeouts)
            for kind, what in found:
                misfits[kind] += [(job.name, request, what) for job in members]
            plans.append((members, settings, timeouts))
        if warn:
            for line in misfit_lines(misfits):
                print(line, file=sys.stderr, flush=True)
        ids: dict[str, str] = {}
        for members, settings, timeouts in plans:
            name = f"linrnn-{members[0].name}" if len(members) == 1 else f"linrnn-{self.sweep}"
            slurm = slurm_executor(self.folder, settings, ex.threads, timeouts, name)
            said = io.StringIO()          # what sbatch printed (submitit copies it to stderr when sbatch fails)
            try:
                with contextlib.redirect_stderr(said), slurm.batch():
                    handles = [slurm.submit(self.call, job, ex.threads, ex.checkpoint_seconds) for job in members]
            except Exception as err:        # sbatch refused: a bad partition, option, account, ...
                raise LinrnnError(f"--executor slurm: sbatch refused the jobs: {_refusal(err, said.getvalue())}"
                                  ) from None
            sys.stderr.write(said.getvalue())
            for job, handle in zip(members, handles):
                ids[job.name] = handle.job_id
                print(f"{job.name}: SLURM job {handle.job_id}, log {handle.paths.stdout}", file=sys.stderr,
                      flush=True)
        self.remember(ids)
        return ids

    def start(self, todo: list[SweepJob]) -> dict[str, _Tracked]:
        """Follow what an earlier driver submitted and SLURM still runs; submit the rest. Under the ledger's lock:
        two drivers never submit one job twice."""
        with hold(output_lock(self.ledger), f"submitting the SLURM jobs of {self.sweep}", wait=True):
            before = self.submitted()
            known = [before[j.name] for j in todo if j.name in before]
            states = queue.states(known) if known else {}
            tracked, fresh = {}, []
            for job in todo:
                if stored(job) is not None:
                    tracked[job.name] = _Tracked(job, before.get(job.name, "?"))   # gathered at the first look
                    continue
                old = before.get(job.name)
                state = (states or {}).get(old) if old else None
                if state is not None and not state.ended:
                    tracked[job.name] = _Tracked(job, old)
                    print(f"{job.name}: following SLURM job {old}, submitted before ({state.state})", file=sys.stderr,
                          flush=True)
                else:
                    fresh.append(job)
            if fresh:
                for name, job_id in self.submit(fresh).items():
                    tracked[name] = _Tracked(next(j for j in fresh if j.name == name), job_id)
        return tracked


def _outcome(driver: _Driver, t: _Tracked, state: queue.State | None) -> tuple[str, str]:
    """(what ended the job: "cancelled" | "timeouts" | "memory" | "failed", the reason in one line): SLURM's state
    and reason, and the last error of its log (or of its Python's traceback)."""
    import pickle

    paths = _paths(driver.folder, t.job_id)
    error = None
    try:
        with open(paths.result_pickle, "rb") as fh:
            kind, value = pickle.load(fh)
        if kind == "error":
            error = queue.last_error(str(value)) or str(value).strip().splitlines()[-1]
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, IndexError, AttributeError, ImportError):
        pass
    log = Path(paths.stdout)
    text = log.read_text(errors="replace") if log.exists() else ""
    error = error or queue.last_error(text[-20000:])
    said = state.describe() if state else "no longer known to SLURM"
    reason = f"SLURM: {said}" + (f"; last error: {error}" if error else "")
    if state is not None and state.state == "CANCELLED":
        return "cancelled", reason
    if "timed-out too many times" in text[-20000:] + (error or "") or (state is not None and state.state == "TIMEOUT"):
        return "timeouts", reason
    if state is not None and state.state == "OUT_OF_MEMORY":
        return "memory", reason
    return "failed", reason


def _step(job: SweepJob) -> str:
    from linrnn.tasks.runs import checkpoint_step

    found = checkpoint_step(job.folder)
    return f"its checkpoint (step {found:,}) is kept" if found else "it had saved no checkpoint yet"


def run_slurm(todo, executor, on_result, progress, outcome, folder) -> None:
    import_submitit()
    check_cluster()
    driver = _Driver(executor, folder)
    tracked = driver.start(todo)
    done = progress.gathered
    started = last_poll = time.monotonic()
    outage = False
    seen: dict = {}                 # the last states SLURM gave
    try:
        while tracked:
            for name, t in list(tracked.items()):
                if gather(t.job, on_result):
                    done += 1
                    del tracked[name]
            now = time.monotonic()
            interval = 2.0 if now - started < 120 else 10.0 if now - started < 1200 else 30.0
            states = None
            if tracked and now - last_poll >= interval:
                last_poll = now
                states = queue.states([t.job_id for t in tracked.values()])
                seen = states if states is not None else seen
                if states is None and not outage:
                    print("SLURM's controller does not answer; the driver waits for it (the jobs go on)",
                          file=sys.stderr, flush=True)
                outage = states is None
            for name, t in list(tracked.items()) if states is not None else ():
                state = states.get(t.job_id)
                if state is None:
                    t.unseen += 1
                    if t.unseen < 3:
                        continue
                elif not state.ended:
                    t.unseen = 0
                    continue
                if gather(t.job, on_result):             # it finished between the two looks
                    done += 1
                    del tracked[name]
                    continue
                kind, reason = _outcome(driver, t, state)
                t.attempts += 1
                if kind == "cancelled":
                    outcome.cancelled.append((t.job, reason + f" (SLURM job {t.job_id})"))
                    del tracked[name]
                elif kind == "timeouts":                  # the same request would end the same way: not retried
                    outcome.failures.append((t.job, f"reached its time limit once more than --max-timeouts allows "
                                                    f"(SLURM job {t.job_id}); {_step(t.job)}, and a larger "
                                                    "--max-timeouts or --time lets the same command finish it", "",
                                             t.attempts))
                    del tracked[name]
                elif kind == "memory" or t.attempts > executor.retries:
                    note = "; ask for more memory (--mem)" if kind == "memory" else ""
                    outcome.failures.append((t.job, f"{reason} (SLURM job {t.job_id}){note}",
                                             _log_tail(driver, t.job_id), t.attempts))
                    del tracked[name]
                else:
                    _retry(driver, t, reason)
            running = [t.job for t in tracked.values() if getattr(seen.get(t.job_id), "state", "") in
                       ("RUNNING", "COMPLETING")]
            progress.update(len(tracked) - len(running), len(running), done, len(outcome.failures), force=True,
                            jobs=running, cancelled=len(outcome.cancelled))
            if tracked:
                time.sleep(1.0)
    except KeyboardInterrupt:
        queue.cancel([t.job_id for t in tracked.values()])
        print(f"\ncancelled the {len(tracked)} SLURM job(s) in flight; the finished jobs' records are kept, and the "
              "same command again submits only the rest (each resumes from its checkpoint)", file=sys.stderr)
        raise


def _log_tail(driver: _Driver, job_id: str) -> str:
    from linrnn.tasks.sweep_job import tail

    return tail(Path(_paths(driver.folder, job_id).stdout))


def _retry(driver: _Driver, t: _Tracked, reason: str) -> None:
    """Run the job again: requeued as itself in its array (the array's throttle holds), or, where SLURM refuses
    (it has forgotten the job, or requeues are off), submitted anew."""
    paths = _paths(driver.folder, t.job_id)
    Path(paths.result_pickle).unlink(missing_ok=True)        # the failed attempt's outcome, not the next one's
    refused = queue.requeue(t.job_id)
    retries = driver.executor.retries
    if refused is None:
        print(f"{t.job.name}: {reason} (SLURM job {t.job_id}); requeued in its array ({t.attempts}/{retries})",
              file=sys.stderr, flush=True)
    else:
        print(f"{t.job.name}: {reason} (SLURM job {t.job_id}); SLURM would not requeue it ({refused}): submitted "
              f"anew ({t.attempts}/{retries})", file=sys.stderr, flush=True)
        with hold(output_lock(driver.ledger), f"submitting the SLURM jobs of {driver.sweep}", wait=True):
            t.job_id = driver.submit([t.job], warn=False)[t.job.name]
    t.unseen = 0

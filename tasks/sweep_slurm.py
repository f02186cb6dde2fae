"""The `slurm` executor of `linrnn.tasks.sweep`: a job array through submitit, the cluster's settings, and a driver
that follows its jobs.

    cluster.toml (`--cluster FILE`; the flags of the same names override it):
        partition = "gpu"            time = "1-00:00:00"     (minutes, or D-HH:MM:SS; default 60 minutes)
        gpus_per_job = 1             cpus_per_job = 4        (default: --threads-per-job)
        mem = "32G"                  account = "..."         qos, constraint
        array_parallelism = 64       python = "/path/to/.venv/bin/python" (the nodes' interpreter; default this one)
        setup = ["module load cuda"] (shell lines before the job)
        [sbatch]                     (any other sbatch option: --sbatch KEY=VALUE)
        exclude = "node3"

Each job is a `SlurmCall`, checkpointable: preempted, or requeued at its time limit, SLURM starts it again and it
resumes from its run directory's checkpoint. The driver submits the sweep as one array, prints each job's SLURM id
and log, keeps {job: SLURM id} in SLURM_DIR/submitted.json (a driver started again follows the jobs SLURM still
holds rather than submitting them twice), polls `sacct` every few seconds for the whole sweep, and submits a failed or
cancelled job again (up to the retries) only once `squeue` no longer lists it: SLURM marks a job CANCELLED at once,
but its processes may run on until the cluster's KillWait, and two jobs must never train into one run directory.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from linrnn.impls.errors import LinrnnError
from linrnn.tasks.sweep_job import SweepJob, execute, gather, tail

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


class SlurmCall:
    """What a SLURM job runs: `execute` on its node. Checkpointable: preempted (or requeued at its time limit), the
    job is submitted again with the same arguments and resumes from its run directory's checkpoint."""

    def __call__(self, job: SweepJob, threads: int, checkpoint_seconds: float | None) -> str:
        execute(job, threads, "slurm", checkpoint_seconds)
        return job.name

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


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


def slurm_executor(folder: Path, settings: dict, threads: int):
    """submitit's SlurmExecutor with the cluster's settings (`cluster_settings`), its logs under `folder`."""
    submitit = import_submitit()
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


def run_slurm(todo, executor, on_result, progress, failures, folder) -> None:
    submitit = import_submitit()

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
                if gather(job, on_result):
                    done += 1
                    del active[name]
                    continue
                if not handle.done():
                    continue
                if gather(job, on_result):          # it finished between the two looks
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
                    failures.append((job, reason + f" (SLURM job {handle.job_id})", tail(_slurm_log(handle))))
                else:
                    print(f"{name}: SLURM job {handle.job_id}: {reason}; retrying ({attempts[name]}/"
                          f"{executor.retries})", file=sys.stderr, flush=True)
                    # SLURM says CANCELLED at once, but the job's processes may run on until its KillWait: the job
                    # is submitted again only once squeue no longer lists it, never beside its own run directory
                    draining[name] = (job, handle.job_id)
            for name, (job, job_id) in list(draining.items()):
                if not _live(job_id):
                    del draining[name]
                    if gather(job, on_result):        # it finished its work while it was being ended
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

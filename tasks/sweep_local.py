"""The `local` executor of `linrnn.tasks.sweep`: a pool of spawned worker processes, at most N jobs in flight.

Each worker has a pipe of its own, so the driver always knows which job a worker holds: a worker killed mid-job
(kill -9, out of memory) fails that job only, and the driver starts another worker. A worker ignores Ctrl-C (the
driver's to handle: it ends the workers; the finished jobs' records are on disk), fixes its threads before any
library loads, and appends its output (file descriptors 1 and 2, C libraries' too) to the job's JOB_DIR/job.log.
A worker dies with its driver, however the driver ends (kill -9, the TERM of `timeout`): Linux's parent-death
signal, and a watchdog thread that sees its parent gone within a second elsewhere. A driver started again at once
never trains beside a dying worker: the job's directory is locked while a process trains it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linrnn.tasks.sweep_job import JOB_LOG, SweepJob, execute, gather, tail

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


STOP_SECONDS = 60          # a worker told to stop (SIGTERM) ends within this, whatever it is doing


def _die_with(driver: int) -> None:
    """End this worker when its driver (pid `driver`) dies, however it dies: SIGTERM from Linux's parent-death signal
    and from a thread that checks the parent every second. On SIGTERM (this, or the driver's Ctrl-C) the job's
    training saves its checkpoint at the end of its step, then the worker exits (within STOP_SECONDS at most)."""
    import signal
    import threading

    from linrnn.tasks.sweep_job import checkpoint_on, stop

    checkpoint_on(signal.SIGTERM, stop, deadline=STOP_SECONDS)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    if os.getppid() != driver:          # it died before the signal was set
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=watch, daemon=True, name="linrnn-driver-watch").start()


def _worker(conn, threads: int, driver: int | None = None) -> None:
    """A local worker: runs the jobs its pipe sends, one at a time, each job's output to JOB_DIR/job.log."""
    import signal

    if driver is not None:
        _die_with(driver)
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
            except SystemExit:                # told to stop (SIGTERM): its checkpoint is saved
                raise
            except BaseException as err:      # reported to the driver, which retries or gives up
                traceback.print_exc()
                status = ("failed", f"{type(err).__name__}: {err}")
        conn.send(status)


@dataclass
class _Slot:
    process: Any
    conn: Any
    job: SweepJob | None = None


def run_local(todo, executor, on_result, progress, outcome, folder) -> None:
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    pending = collections.deque(todo)
    attempts: collections.Counter = collections.Counter()
    slots: list[_Slot] = []
    done = progress.gathered

    def start_worker() -> _Slot:
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker, args=(theirs, executor.threads, os.getpid()), daemon=True,
                                  name="linrnn-sweep-worker")
        process.start()
        theirs.close()
        return _Slot(process, ours)

    def finished(slot: _Slot, ok: bool, reason: str | None) -> None:
        nonlocal done
        job, slot.job = slot.job, None
        if ok and gather(job, on_result):
            done += 1
            return
        attempts[job.name] += 1
        reason = reason or "it wrote no record"
        if attempts[job.name] > executor.retries:
            outcome.failures.append((job, reason, tail(job.folder / JOB_LOG), attempts[job.name]))
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
            progress.update(len(pending), sum(1 for s in slots if s.job), done, len(outcome.failures),
                            jobs=[s.job for s in slots if s.job])
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
        progress.update(0, 0, done, len(outcome.failures))
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

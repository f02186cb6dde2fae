"""Locks: one writer per run directory, one driver per sweep output.

    with hold(run_lock(run_dir), "linrnn train ..."):        # another holder: `Locked`, one line naming it
    with hold(run_lock(run_dir), "...", wait=announce):       # another holder: wait for it (announced once)
    with hold(output_lock(out), "linrnn experiment ..."):     # a driver's output (its --out)
    holder(run_lock(run_dir))                                 # who holds it now, or None

A lock is `flock` on a small file (a run directory's `.lock`; beside a sweep's output, `.NAME.lock`) that holds its
holder's description (pid, host, SLURM job, start time, command) for the message a second writer gets. The kernel
releases it when its holder dies, however it dies (kill -9, a node's out-of-memory killer): a dead holder leaves no
lock behind. The holder removes the file when it lets go; a file a dead holder left is just a file, taken by the
next writer (and checked after taking: a lock on a file that was removed meanwhile is retaken on the new one).

Locks are reentrant within one thread (a sweep job holds its run directory, and the training it calls takes the same
lock again); another thread of the same process is another writer. On a file system that cannot lock (some cluster
file systems mounted without flock) nothing is locked, and that is said once on stderr.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from linrnn.base.errors import LinrnnError

RUN_LOCK = ".lock"                   # a run directory's lock file
_held: dict[tuple[str, int], list] = {}   # (path, thread) -> [file descriptor, inode, depth]
_unsupported_said = False


class Locked(LinrnnError):
    """Another live process holds the lock."""


def run_lock(run_dir: Path) -> Path:
    """The lock of a run directory: DIR/.lock."""
    return Path(run_dir) / RUN_LOCK


def output_lock(output: Path) -> Path:
    """The lock of a driver's output (a record FILE or a sweep's DIR): .NAME.lock beside it."""
    output = Path(output)
    return output.with_name(f".{output.name}.lock")


def describe(info: dict | None) -> str:
    """`pid 123 on node7 (SLURM job 45_6) since 2025-01-02 10:11:12: linrnn tasks grid ...`"""
    if not info:
        return "another process (it wrote no description)"
    text = f"pid {info.get('pid')} on {info.get('host')}"
    if info.get("slurm_job"):
        text += f" (SLURM job {info['slurm_job']})"
    if info.get("since"):
        text += f" since {info['since']}"
    if info.get("command"):
        text += f": {info['command']}"
    return text


def _me(what: str) -> dict:
    env = os.environ
    job = env.get("SLURM_JOB_ID")
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        job = f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return {"pid": os.getpid(), "host": socket.gethostname(), "slurm_job": job,
            "since": time.strftime("%Y-%m-%d %H:%M:%S"), "command": what}


def holder(path: Path) -> dict | None:
    """The description of whoever holds the lock at `path` now; None when nobody does (or the file is absent)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or {}
        except OSError:              # the file system cannot lock: nobody is known to hold it
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read(fd: int) -> dict | None:
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace")
        found = json.loads(text)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _take(path: Path, what: str, wait: bool | Callable[[dict], None]) -> tuple[int, int] | None:
    """Lock `path` (a fresh file descriptor); None where the file system cannot lock."""
    global _unsupported_said
    announced = False
    tries = 0
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise LinrnnError(f"cannot lock {path}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read(fd)
            if not wait:
                os.close(fd)
                tries += 1
                if tries < 5:                   # perhaps a reader's brief look (`holder`): look again
                    time.sleep(0.05)
                    continue
                raise Locked(describe(info)) from None
            if callable(wait) and not announced:
                wait(info or {})
                announced = True
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            if not _unsupported_said:
                print(f"warning: cannot lock {path} ({err.strerror}): the file system does not support flock, so "
                      "two writers of one run directory are not prevented here", file=sys.stderr, flush=True)
                _unsupported_said = True
            return None
        if _same_file(fd, path):      # not a file its last holder removed while we waited
            break
        os.close(fd)
    text = json.dumps(_me(what)).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)
    return fd, os.fstat(fd).st_ino


@contextlib.contextmanager
def hold(path: Path, what: str, wait: bool | Callable[[dict], None] = False) -> Iterator[None]:
    """Hold the lock at `path` for the block. `what`: this holder's description (a command). `wait`: False raises
    `Locked` (one line: who holds it) when another process holds it; True waits; a function waits and is first
    called once with the holder's description."""
    path = Path(path)
    key = (str(path.absolute()), threading.get_ident())
    mine = _held.get(key)
    if mine is not None and _same_file(mine[0], path):
        mine[2] += 1
        try:
            yield
        finally:
            mine[2] -= 1
        return
    taken = _take(path, what, wait)
    if taken is None:
        yield
        return
    fd, inode = taken
    saved = _held.get(key)
    _held[key] = [fd, inode, 1]
    try:
        yield
    finally:
        if saved is None:
            _held.pop(key, None)
        else:
            _held[key] = saved
        with contextlib.suppress(OSError):
            if _same_file(fd, path):
                path.unlink()
        os.close(fd)

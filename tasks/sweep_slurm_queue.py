"""What SLURM says about a sweep's jobs, and what the SLURM driver (`linrnn.tasks.sweep_slurm`) asks of it.

    ping()                 None where the controller answers, else its one-line answer (`scontrol ping`)
    states(ids)            {job id: State} of every job SLURM still knows, straight from the controller
                           (`squeue -t all`, which lists finished jobs for the cluster's MinJobAge) and, for those
                           it has forgotten, from accounting (`sacct`, where the cluster has it); None where the
                           controller does not answer
    requeue(id)            the job back to pending in its own array (its throttle holds): None, or SLURM's refusal
    cancel(ids)            scancel
    last_error(text)       the last line of a job's log that names an error
    partition_minutes(p)   the partition's time limit in minutes (None: unlimited or unknown)

A State is SLURM's state word (CANCELLED for "CANCELLED by 1234"), its reason and exit code.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

# SLURM's states of a job that has ended; any other (PENDING, RUNNING, REQUEUED, COMPLETING, SUSPENDED, ...) is live
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
                   "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT"})
QUIET = {"", "None", "(null)"}


@dataclass(frozen=True)
class State:
    state: str               # SLURM's state word: RUNNING, CANCELLED, FAILED, OUT_OF_MEMORY, ...
    reason: str = ""         # SLURM's reason (NonZeroExitCode, JobArrayTaskLimit, ...; "" for none)
    exit_code: str = ""      # sacct's EXIT:SIGNAL where known

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def describe(self) -> str:
        """`FAILED (NonZeroExitCode, exit 1:0)` (the reason only where it says why the job ended: a cancelled job
        keeps the reason it was pending for)"""
        extra = [r for r in (self.reason,) if r and r not in QUIET and self.state not in ("CANCELLED", "COMPLETED")]
        if self.exit_code and self.exit_code not in ("0:0", ""):
            extra.append(f"exit {self.exit_code}")
        return self.state + (f" ({', '.join(extra)})" if extra else "")


def _run(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip() and not set(line.strip()) <= {"*"}]
    return lines[0] if lines else ""


def ping() -> str | None:
    """None where SLURM's controller answers, else what `scontrol ping` said (one line)."""
    found = _run(["scontrol", "ping"], timeout=30)
    if found is None:
        return "scontrol ping did not answer within 30 s"
    if found.returncode != 0 or "DOWN" in found.stdout:
        return _first_line(found.stdout + "\n" + found.stderr) or f"scontrol ping: exit status {found.returncode}"
    return None


def _word(state: str) -> str:
    return state.split()[0].rstrip("+") if state.strip() else "UNKNOWN"


def states(job_ids: list[str]) -> dict[str, State] | None:
    """{job id: State} of the jobs SLURM knows among `job_ids` (ARRAY_TASK ids or plain ones); None where the
    controller does not answer."""
    if not job_ids:
        return {}
    bases = sorted({j.split("_")[0] for j in job_ids})
    found = _run(["squeue", "-h", "-r", "-t", "all", "-j", ",".join(bases), "-o", "%i|%T|%r"])
    if found is None:
        return None
    out: dict[str, State] = {}
    if found.returncode != 0:
        if "Invalid job id" not in found.stderr:     # the controller is down or unreachable
            return None
    for line in found.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            out[parts[0]] = State(_word(parts[1]), parts[2])
    missing = [j for j in job_ids if j not in out]
    if missing:
        out.update(_accounting(missing))
    return out


def _accounting(job_ids: list[str]) -> dict[str, State]:
    """What accounting (`sacct`) says of jobs the controller has forgotten ({} where there is no accounting)."""
    found = _run(["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "-o", "JobID,State,ExitCode,Reason"])
    if found is None or found.returncode != 0:
        return {}
    out = {}
    for line in found.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4 and parts[0] in job_ids:
            out[parts[0]] = State(_word(parts[1]), parts[3], parts[2])
    return out


def requeue(job_id: str) -> str | None:
    """`scontrol requeue`: the job starts again as itself, in its array; None, or SLURM's refusal in one line."""
    found = _run(["scontrol", "requeue", job_id])
    if found is None:
        return "scontrol requeue did not answer"
    return None if found.returncode == 0 else (_first_line(found.stderr) or f"exit status {found.returncode}")


def cancel(job_ids: list[str]) -> None:
    if job_ids:
        _run(["scancel", *job_ids])


# the last line that names an error: a Python exception line, or SLURM's own (slurmstepd / srun), or the kernel's
_ERROR = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*"
                    r"|.*(slurmstepd|srun): error:.*|.*[Oo]ut [Oo]f [Mm]emory.*|.*oom[-_ ]kill.*|Killed.*)$")


def last_error(text: str) -> str | None:
    """The last line of `text` (a job's log) that names an error, stripped; None where none does."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and _ERROR.match(line):
            return line if len(line) <= 300 else line[:297] + "..."
    return None


def partition_minutes(partition: str | None) -> int | None:
    """The time limit of `partition` (default: the cluster's default partition) in minutes; None where it is
    unlimited or SLURM does not say."""
    found = _run(["sinfo", "-h", "-o", "%P|%l"] + (["-p", partition] if partition else []), timeout=30)
    if found is None or found.returncode != 0:
        return None
    for line in found.stdout.splitlines():
        name, _, limit = line.strip().partition("|")
        if partition is None and not name.endswith("*"):
            continue
        return _limit_minutes(limit)
    return None


def _limit_minutes(text: str) -> int | None:
    """sinfo's limit (`infinite`, `MM`, `HH:MM:SS`, `D-HH:MM:SS`, `D-HH`) in minutes."""
    text = text.strip()
    if not text or text in ("infinite", "UNLIMITED", "n/a"):
        return None
    days, _, rest = text.rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        if days:
            parts += [0] * (3 - len(parts))
            minutes = 1440 * int(days) + 60 * parts[0] + parts[1]
        elif len(parts) == 3:
            minutes = 60 * parts[0] + parts[1]
        elif len(parts) == 2:
            minutes = parts[0]
        else:
            minutes = parts[0]
    except ValueError:
        return None
    return minutes or None

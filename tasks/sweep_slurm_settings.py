"""The SLURM settings of a sweep (`--executor slurm`): the cluster's file and flags, each job's request from its plan,
and a one-line warning where what is asked cannot fit the plan.

    cluster.toml (`--cluster FILE`; the flags of the same names override it):
        partition = "gpu"            time = "1-00:00:00"     (minutes, or D-HH:MM:SS; default 60 minutes)
        gpus_per_job = 1             cpus_per_job = 4        (default: --threads-per-job)
        mem = "32G"                  account = "..."         qos, constraint
        array_parallelism = 64       python = "/path/to/.venv/bin/python" (the nodes' interpreter; default this one)
        setup = ["module load cuda"] (shell lines before the job)
        [sbatch]                     (any other sbatch option: --sbatch KEY=VALUE)
        exclude = "node3"

A job may carry a request from its plan (`SweepJob.resources`: `linrnn experiment NAME --scale full` gives each
run's `{"hours", "gpus", "mem_gb"}` from its dry-run plan). It becomes `--gres=gpu:G`, `--time` and `--mem`:

    time      the planned hours x 1.25 + 10 minutes, rounded up to 10 minutes, at most the partition's limit
    timeouts  requeues at the time limit a job may take (submitit's): enough for 3 x the plan (the plan's seconds per
              step are an estimate within a factor of a few), at least DEFAULT_MAX_TIMEOUTS
    mem       the plan's memory estimate (`--mem`, in GiB, rounded up)

What the user sets (the file, the flags, `--max-timeouts`, `--sbatch`, which sbatch reads last) wins over the plan;
where it cannot fit the plan (a time limit below a run's planned hours, too few timeouts to finish, less memory, no
GPU for a GPU run) the driver says so in one line per kind, before it submits.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from linrnn.base.errors import LinrnnError

# cluster.toml's keys (the flags of the same names override them) and what submitit's SlurmExecutor calls them
CLUSTER_KEYS = {"partition": "partition", "time": "time", "gpus_per_job": "gpus_per_node",
                "cpus_per_job": "cpus_per_task", "mem": "mem", "account": "account", "qos": "qos",
                "constraint": "constraint", "array_parallelism": "array_parallelism", "setup": "setup",
                "sbatch": "additional_parameters", "python": "python"}
DEFAULT_MINUTES = 60
DEFAULT_MAX_TIMEOUTS = 3            # submitit's: requeues at the time limit before a job is given up
PLAN_MARGIN = 1.25                  # the time asked: the planned time x this + 10 minutes
PLAN_FACTOR = 3                     # the timeouts allowed cover this many times the planned time


def minutes(text: Any) -> int:
    """SLURM's time limit as minutes: an integer of minutes, "MM", "HH:MM:SS" or "D-HH:MM:SS"."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    value = str(text).strip()
    try:
        days, _, rest = value.rpartition("-")
        parts = [int(p) for p in rest.split(":")]
        if len(parts) == 1:
            total = parts[0]
        elif len(parts) == 2:                       # SLURM reads MM:SS
            total = parts[0] + (parts[1] > 0)
        elif len(parts) == 3:
            total = 60 * parts[0] + parts[1] + (parts[2] > 0)
        else:
            raise ValueError
        total += 1440 * int(days) if days else 0
    except ValueError:
        total = 0
    if total < 1:
        raise LinrnnError(f"time: expected minutes or D-HH:MM:SS, found {text!r}")
    return total


def clock(total: int) -> str:
    """Minutes as SLURM's D-HH:MM:SS (HH:MM:SS under a day)."""
    days, rest = divmod(int(total), 1440)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{text}" if days else text


def cluster_settings(file: str | None = None, flags: dict | None = None) -> dict:
    """The SLURM settings of `--cluster FILE` (TOML) with the flags over them, checked: keys of CLUSTER_KEYS. Only
    what was given: a job's time is its plan's, else DEFAULT_MINUTES (`job_settings`)."""
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
    out: dict[str, Any] = {}
    if "time" in values:
        out["time"] = minutes(values["time"])
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


def _gib(mem: str) -> float | None:
    """SLURM's memory text (`32G`, `500M`, `1T`, a bare number of MB) in GiB; None where it does not read."""
    text = str(mem).strip().upper().rstrip("B")
    scale = {"K": 1 / 2**20, "M": 1 / 1024, "G": 1.0, "T": 1024.0}
    try:
        return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text) / 1024
    except (ValueError, IndexError):
        return None


def plan_minutes(request: dict) -> int:
    """A request's planned training time in minutes (its `hours`)."""
    return math.ceil(60 * float(request.get("hours") or 0))


def job_settings(cluster: dict, request: dict | None, partition_limit: int | None,
                 max_timeouts: int | None) -> tuple[dict, int, list[tuple[str, str]]]:
    """(the settings of a job with `request` from its plan, the timeouts it may take, its misfits): the user's
    `cluster` settings over the plan's; a misfit is (kind, what does not fit) for `misfit_lines`."""
    settings = dict(cluster)
    sbatch = dict(cluster.get("sbatch", {}))
    misfits: list[tuple[str, str]] = []
    if not request:
        settings.setdefault("time", DEFAULT_MINUTES)
        return settings, DEFAULT_MAX_TIMEOUTS if max_timeouts is None else max_timeouts, misfits
    planned = plan_minutes(request)
    asked = max(30, math.ceil((PLAN_MARGIN * planned + 10) / 10) * 10)
    if partition_limit is not None:
        asked = min(asked, partition_limit)
    time_limit = settings.setdefault("time", asked)
    if "time" in sbatch:
        try:
            time_limit = minutes(sbatch["time"])
        except LinrnnError:
            pass
    timeouts = max_timeouts if max_timeouts is not None else \
        max(DEFAULT_MAX_TIMEOUTS, math.ceil(PLAN_FACTOR * planned / time_limit) - 1)
    if planned > time_limit:
        where = "--time" if "time" in cluster or "time" in sbatch else "the partition's limit"
        misfits.append(("time", f"above the time limit {clock(time_limit)} ({where}): each is requeued at its limit "
                                f"about {math.ceil(planned / time_limit) - 1} time(s) and resumes from its checkpoint"))
    if (timeouts + 1) * time_limit < planned:
        misfits.append(("timeouts", f"more than {timeouts + 1} x {clock(time_limit)}, all that --max-timeouts "
                                    f"{timeouts} allows: raise --max-timeouts or --time"))
    gpus = int(request.get("gpus") or 0)
    if gpus and "gpus_per_job" not in cluster and "gres" not in sbatch and "gpus" not in sbatch:
        settings["gres"] = f"gpu:{gpus}"
    elif gpus and cluster.get("gpus_per_job") == 0:
        misfits.append(("gpu", "planned on a GPU, asked for none (--gpus-per-job 0): they run at the CPU's speed"))
    mem_gb = request.get("mem_gb")
    if mem_gb:
        if "mem" not in cluster and "mem" not in sbatch:
            settings["mem"] = f"{math.ceil(mem_gb)}G"
        else:
            given = _gib(sbatch.get("mem", cluster.get("mem", "")))
            if given is not None and given < mem_gb:
                misfits.append(("mem", f"planned at {math.ceil(mem_gb)} GiB of memory, asked for "
                                       f"{sbatch.get('mem', cluster.get('mem'))}: they may run out of memory"))
    return settings, timeouts, misfits


def misfit_lines(found: dict[str, list[tuple[str, dict, str]]]) -> list[str]:
    """One warning line per kind of misfit: {kind: [(job name, request, text)]} -> lines naming the runs."""
    lines = []
    order = ("time", "timeouts", "gpu", "mem")
    for kind, items in sorted(found.items(), key=lambda item: order.index(item[0]) if item[0] in order else 9):
        names = [name for name, _, _ in items]
        _, worst, text = max(items, key=lambda item: float(item[1].get("hours") or 0))   # said of the longest run
        hours = float(worst.get("hours") or 0)
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lead = f"{len(names)} run(s) ({shown})"
        if kind in ("time", "timeouts"):
            lead += f" need up to {hours:,.1f} h each by the plan,"
        lines.append(f"warning: {lead} {text}")
    return lines

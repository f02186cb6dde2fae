"""The papers' scale for the claims one machine cannot settle: the jobs, their GPU-hours, their submission.

    linrnn experiment NAME --scale full --dry-run [--seeds N] [--ledger ledger.json] [--step-times FILE]
    linrnn experiment NAME --scale full --data DIR --executor slurm --cluster cluster.toml      submits them
    linrnn experiment NAME --scale full --data DIR --measure-steps FILE --executor slurm       times each config

`FULL[NAME](seeds)` lists the runs an experiment needs at the papers' scale (R6 and D1: the six LRA tasks; R7 and
D6: Speech Commands 35 and 10; D5: ListOpsSubTrees and PathfinderSegmentation; D2: Shift from 2^14 to 2^20 steps
of memory), each one `linrnn train` run of a config in `tasks/configs/` (a baseline through `--set model=...` on the
DLR file, whose mixer table suits S4D and S5; local attention with its own table), or of `linrnn tasks grid` (D2,
the ledger's full-scale settings). Its GPU time is steps x seconds per step, the seconds from (best first):

    measured    `--step-times FILE`, written by `--measure-steps FILE` on the cluster itself: each config's own
                steps on its data, timed after a few warm-up steps (`measure_step`)
    published   S4's published epoch time for the task (its guide: ListOps 15 minutes an epoch on a T4, Path-X 56
                on an A100), over the config's steps per epoch: S4's model, not this one
    scaled      that ListOps time scaled by the work of a step, 6 x weights x positions (the weights applied at every
                position, forward and backward; the scans add little, the recurrence's own parameters, such as
                RotRNN's M, are not applied per position): an estimate within a factor of a few, no more

The seeds per arm: `--seeds` (default 3, the fewest the ledger decides on; the papers report 3). With `--ledger`
(the `ledger.json` that `linrnn report` writes) the plan also gives, per claim, the seeds its undecided parts need
for 80 % power at the spread of the stored reduced-scale records, and the GPU time at those seeds.

Submitted (`experiment`), each run asks the cluster for what its plan says (`requests`): its GPUs (the config's
devices), its planned hours (steps x the seconds per step above) and memory (the plan's estimate, a rough upper bound
per device, plus HOST_GIB for the process and its data, at least MIN_GIB); `linrnn.tasks.sweep_slurm_settings`
turns that into `--gres`, `--time` and `--mem` and warns where the user's settings cannot fit it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from linrnn.base.errors import LinrnnError

CONFIGS = Path(__file__).resolve().parents[2] / "tasks" / "configs"
LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder", "pathx")
DEFAULT_SEEDS = 3
# S4's published epoch times (docs/training.md): minutes per epoch and the GPU they were timed on
PUBLISHED_EPOCH = {"listops": (15.0, "T4"), "pathx": (56.0, "A100")}
# D2 at the papers' scale, the ledger's full-scale settings (reports/ledger.py, claim D2): Shift at these lengths,
# 24,000 steps of batch 4 at lr 1e-5 (12 epochs of 8,000 samples: this project's assumption), N = 4,096 modes
D2_LENGTHS = (16384, 65536, 262144, 1048576)
D2_VARIANTS = (("dlr", "synthetic", {"d_state": 4096}), ("dlr", "default", {"d_state": 4096, "dt_min": 1e-4,
                                                                            "dt_max": 1e-1}),
               ("lru", "", {"d_state": 4096}), ("rotrnn", "", {"d_state": 1024}))
# local attention at the DLR tasks' full lengths: the DLR code's window of 1,024 positions, 4 heads (an assumption
# for PathfinderSegmentation-128, whose attention baseline's setting was not retrieved)
ATTENTION = ("mixer={}", "mixer.heads=4", "mixer.window=1024")
HOST_GIB, MIN_GIB = 8, 16          # a run's memory request: its plan's estimate + HOST_GIB, at least MIN_GIB


@dataclass(frozen=True)
class FullJob:
    claims: tuple[str, ...]     # the claims this run is evidence for
    name: str                   # task-model[-variant]
    config: dict                # TrainConfig fields
    command: str                # the run as a user types it (seed 0)
    labels: dict                # the experiment's labels of its rows but the seed (task, model; D2: init, length)


def from_file(claims: tuple[str, ...], task: str, model: str, file_model: str | None = None,
              overrides: tuple[str, ...] = ()) -> FullJob:
    """A run of `tasks/configs/TASK-FILE_MODEL.toml` (default: the model's own) with `--set` overrides."""
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.overrides import apply_overrides

    path = CONFIGS / f"{task}-{file_model or model}.toml"
    sets = ((f"model={model}",) if file_model else ()) + overrides
    config = TrainConfig.from_dict(apply_overrides(TrainConfig.read(path), list(sets)), where=str(path))
    command = (f"linrnn train --config tasks/configs/{path.name} --data DIR"
               + "".join(f" --set '{s}'" for s in sets) + f" --out runs/{task}-{model}")
    return FullJob(claims, f"{task}-{model}", config.to_dict(), command, {"task": task, "model": model})


def lra() -> list[FullJob]:
    """R6 (RotRNN competitive with the LRU, S4D for S4, and S5; best on ListOps) and D1 (DLR matches S4D)."""
    jobs = []
    for task in LRA_TASKS:
        jobs += [from_file(("R6",), task, "rotrnn"), from_file(("R6",), task, "lru"),
                 from_file(("D1",), task, "dlr"), from_file(("R6", "D1"), task, "s4d", "dlr"),
                 from_file(("R6",), task, "s5", "dlr")]
    return jobs


def speech() -> list[FullJob]:
    """R7 (RotRNN as the LRU on SC35) and D6 (DLR comparable to S4D on SC10; the LRU and RotRNN beside)."""
    return [from_file(("R7",), "sc35", "rotrnn"), from_file(("R7",), "sc35", "lru"),
            from_file(("D6",), "sc10", "dlr"), from_file(("D6",), "sc10", "s4d", "dlr"),
            from_file(("D6",), "sc10", "lru"), from_file(("D6",), "sc10", "rotrnn")]


def subtrees_segmentation() -> list[FullJob]:
    """D5: DLR against local attention on ListOpsSubTrees (8K) and PathfinderSegmentation-128 (16K)."""
    jobs = []
    for task in ("listops-subtrees", "pathfinder-segmentation"):
        jobs += [from_file(("D5",), task, "dlr"), from_file(("D5",), task, "attention", "dlr", ATTENTION),
                 from_file(("D5",), task, "lru"), from_file(("D5",), task, "rotrnn")]
    return jobs


def long_shift() -> list[FullJob]:
    """D2: Shift at 16K to 1M steps of memory, DLR in both initialisations, the LRU and RotRNN."""
    from linrnn.tasks.grid import grid_config

    jobs = []
    for length in D2_LENGTHS:
        for model, init, mixer in D2_VARIANTS:
            config = grid_config("shift", model, "torch", length, 24000, 0, mixer=mixer, batch_size=4, lr=1e-5)
            sets = " ".join(f"--set {k}={v}" for k, v in mixer.items())
            jobs.append(FullJob(("D2",), f"shift-{model}{'-' + init if init else ''}-L{length}", config.to_dict(),
                                f"linrnn tasks grid --tasks shift --models {model} --length {length} --steps 24000 "
                                f"--set batch_size=4 --set lr=1e-5 {sets} --out runs/long-shift",
                                {"task": "shift", "model": model, "init": init or model, "length": length}))
    return jobs


FULL = {"lra-reduced": lra, "speech": speech, "subtrees-segmentation": subtrees_segmentation, "long-shift": long_shift}


# -- the time of a step -----------------------------------------------------------------------------------

def _work(config) -> tuple[int, int, int]:
    """(the weights applied at every position, positions per step, total steps) of a run, from its dry-run plan
    (`linrnn.tasks.plan`): a step costs about 6 x weights x positions (the dense layers' forward and backward)."""
    from linrnn.tasks.plan import plan

    found = plan(config)
    return found.token_parameters, found.tokens_per_step, found.total_steps


def step_seconds(job: FullJob, measured: dict) -> tuple[float, str]:
    """(seconds per step on one GPU, where that number comes from) for `job`."""
    from linrnn.tasks.config import TrainConfig

    if job.name in measured:
        entry = measured[job.name]
        return float(entry["seconds_per_step"]), f"measured ({entry.get('device', '?')})"
    config = TrainConfig(**job.config)
    params, tokens, _ = _work(config)
    task = config.task
    if task in PUBLISHED_EPOCH and config.is_data_task:
        minutes, gpu = PUBLISHED_EPOCH[task]
        per_epoch = config.data_task.nominal_train // config.batch_size
        return 60 * minutes / per_epoch, f"S4's published {task} epoch ({gpu})"
    anchor = TrainConfig(**from_file((), "listops", config.model if (CONFIGS / f"listops-{config.model}.toml").exists()
                                     else "lru").config)
    a_params, a_tokens, _ = _work(anchor)
    a_seconds = 60 * PUBLISHED_EPOCH["listops"][0] / (anchor.data_task.nominal_train // anchor.batch_size)
    return a_seconds * (params * tokens) / (a_params * a_tokens), "scaled from S4's ListOps epoch (T4) by weights x positions"


def read_step_times(path: str | None) -> dict:
    if not path:
        return {}
    try:
        found = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise LinrnnError(f"--step-times: no such file {path}") from None
    except (OSError, ValueError) as err:
        raise LinrnnError(f"--step-times: {path} is not a JSON file ({err})") from None
    entries = found.get("step_times") if isinstance(found, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(e, dict) and isinstance(e.get("seconds_per_step"),
                                                                                   (int, float))
                                                for e in entries.values()):
        raise LinrnnError(f"--step-times: {path}: expected {{\"step_times\": {{RUN: {{\"seconds_per_step\", "
                          "\"device\"}}}}}} as --measure-steps writes it")
    return entries


def power_seeds(path: str | None, claims: set[str]) -> dict[str, int]:
    """Per claim, the most seeds per arm any undecided part of `ledger.json` asks for (80 % power); {} without."""
    if not path:
        return {}
    try:
        ledger = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise LinrnnError(f"--ledger: no such file {path} (linrnn report writes DIR/ledger.json)") from None
    except (OSError, ValueError) as err:
        raise LinrnnError(f"--ledger: {path} is not a JSON file ({err})") from None
    if not isinstance(ledger, list) or not all(isinstance(c, dict) and "claim" in c for c in ledger):
        raise LinrnnError(f"--ledger: {path}: expected the list of claims linrnn report writes as ledger.json")
    out = {}
    for claim in ledger:
        if claim["claim"] in claims:
            needs = [p["power"]["seeds_per_arm"] for p in claim.get("parts", [])
                     if isinstance(p.get("power"), dict) and isinstance(p["power"].get("seeds_per_arm"), int)]
            if needs:
                out[claim["claim"]] = max(needs)
    return out


# -- the plan -----------------------------------------------------------------------------------------------

def plan_lines(name: str, seeds: int, step_times: str | None = None, ledger: str | None = None) -> list[str]:
    """The full-scale plan of experiment `name` as text: one line per run, the total per claim and overall."""
    if name not in FULL:
        raise LinrnnError(f"--scale full: expected one of {', '.join(FULL)} (the claims that need a cluster), "
                          f"found {name!r}")
    from linrnn.tasks.config import TrainConfig

    measured = read_step_times(step_times)
    jobs = FULL[name]()
    claims = sorted({c for j in jobs for c in j.claims})
    needs = power_seeds(ledger, set(claims))
    lines = [f"{name} at the papers' scale: {len(jobs)} runs x {seeds} seeds = {len(jobs) * seeds} jobs "
             f"(claims {', '.join(claims)})",
             f"{'run':38s} {'claims':8s} {'steps':>10s} {'s/step':>8s} {'GPU-h/seed':>10s}  source of s/step"]
    hours: dict[str, float] = {}
    per_job = {}
    total = 0.0
    for job in jobs:
        seconds, source = step_seconds(job, measured)
        steps = _work(TrainConfig(**job.config))[2]
        gpu_hours = steps * seconds / 3600
        per_job[job.name] = gpu_hours
        total += seeds * gpu_hours
        for claim in job.claims:
            hours[claim] = hours.get(claim, 0.0) + seeds * gpu_hours
        lines.append(f"{job.name:38s} {','.join(job.claims):8s} {steps:>10,} {seconds:>8.3f} {gpu_hours:>10.1f}  "
                     f"{source}")
    lines.append("")
    for claim in claims:
        text = f"{claim}: {hours[claim]:,.0f} GPU-hours at {seeds} seeds per arm"
        if claim in needs:
            at = sum(needs[claim] * per_job[j.name] for j in jobs if claim in j.claims)
            text += (f"; {needs[claim]} seeds per arm for 80 % power at the stored reduced-scale spread (--ledger): "
                     f"{at:,.0f} GPU-hours")
        lines.append(text)
    lines.append(f"total: {total:,.0f} GPU-hours ({total / 24:,.1f} GPU-days) for {len(jobs) * seeds} jobs (a run that "
                 "serves two claims is in both claims' lines, once here)")
    lines.append("every run: " + jobs[0].command + " (and --set seed=S); the others alike")
    return lines


def requests(runs: list[FullJob], measured: dict | None = None) -> dict[str, dict]:
    """{run name: {"hours", "gpus", "mem_gb"}}: what each run asks a cluster for, from its dry-run plan."""
    import math

    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.plan import plan

    out = {}
    for job in runs:
        config = TrainConfig(**job.config)
        found = plan(config)
        seconds, _ = step_seconds(job, measured or {})
        out[job.name] = {"hours": round(found.total_steps * seconds / 3600, 3), "gpus": config.devices,
                         "mem_gb": max(MIN_GIB, math.ceil(found.memory_bytes / 2**30 + HOST_GIB))}
    return out


def experiment(name: str, seeds: int, reduced: Mapping):
    """The reduced-scale experiment `name` (from `reduced`, the command's registry `claims.EXPERIMENTS`, which
    imports this module) at the papers' scale, as an `Experiment` that `runner.run` runs like any
    other: its claims and labels, the full-scale runs x `seeds` on the papers' own data under --data (`REAL`), the
    controls that are its own arms (a control with runs of its own is a reduced-scale setting and is left out).
    Its record is the same kind, so the ledger settles it beside the reduced one (docs/experiments.md)."""
    from dataclasses import replace

    from linrnn.tasks.datasets import REAL, DataSet
    from linrnn.experiments.claims.runner import Job

    if name not in FULL:
        raise LinrnnError(f"--scale full: expected one of {', '.join(FULL)} (the claims that need a cluster), "
                          f"found {name!r}")
    base = reduced[name]
    real = DataSet("papers-data", REAL, {})
    runs = FULL[name]()

    def jobs(quick: bool) -> list[Job]:
        from linrnn.tasks.config import TrainConfig

        return [Job({**job.labels, "seed": seed}, {**job.config, "seed": seed},
                    real if TrainConfig(**job.config).is_data_task else None)
                for seed in range(seeds) for job in runs]

    def controls(quick: bool):
        return [c for c in base.controls(False) if not c.jobs]

    asks = {json.dumps(job.labels, sort_keys=True): request for job, request in zip(runs, requests(runs).values())}

    def request(job: Job) -> dict | None:
        return asks.get(json.dumps({k: v for k, v in job.labels.items() if k != "seed"}, sort_keys=True))

    brief = f"the papers' scale: {len(runs)} runs x {seeds} seeds on the papers' data"
    return replace(base, title=base.title + " (the papers' scale)", jobs=jobs, controls=controls, run_job=None,
                   requests=request,
                   scale=lambda quick: f"{brief}; each run one tasks/configs/ file or the ledger's full-scale grid, as "
                                       f"`linrnn experiment {name} --scale full --dry-run` lists them",
                   brief=brief)


def measure(name: str, data: Path, runs_root: Path, out: Path, executor) -> dict:
    """Time a few steps of every run of the plan where `executor` puts them (the cluster's GPUs) and write
    `out` ({"step_times": {RUN: {"seconds_per_step", "device", "steps", "date"}}}) for `--step-times`."""
    import os

    from linrnn.tasks.datasets import REAL, DataSet, ensure_data
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.sweep import SweepJob, run_jobs

    if name not in FULL:
        raise LinrnnError(f"--scale full: expected one of {', '.join(FULL)}, found {name!r}")
    runs = FULL[name]()
    if any(TrainConfig(**j.config).is_data_task for j in runs):
        ensure_data(data, DataSet("papers-data", REAL, {}))
    found: dict[str, dict] = {}
    folder = runs_root / f"{name}-step-times"
    jobs = [SweepJob(j.name, folder / j.name, measure_step, (j.config, str(data), str(folder / j.name / "run")),
                     {"measure": j.config}) for j in runs]
    run_jobs(jobs, executor, lambda job, entry, reused: found.__setitem__(job.name, entry), folder=folder)
    text = json.dumps({"experiment": name, "step_times": {j.name: found[j.name] for j in runs if j.name in found}},
                      indent=1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, out)
    return found


def measure_step(values: dict, data: str, run_dir: str, warmup: int = 3, timed: int = 10) -> dict:
    """Seconds per step of a config on this machine's device: `warmup` steps, then `timed` more, on its data."""
    import shutil

    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.plan import plan
    from linrnn.tasks.train import train

    config = TrainConfig(**values)
    out = Path(run_dir)
    shutil.rmtree(out, ignore_errors=True)
    kwargs = dict(data=data if config.is_data_task else None, progress=False)
    train(config, out, stop_after=warmup, **kwargs)
    tic = time.perf_counter()
    result = train(config, out, resume=True, stop_after=timed, **kwargs)
    seconds = result.seconds_per_step or (time.perf_counter() - tic) / timed
    return {"seconds_per_step": seconds, "device": plan(config).device, "steps": timed,
            "date": time.strftime("%Y-%m-%d")}


# -- what the ledger says of the papers' scale (linrnn.reports.ledger's `Claim.full_scale` and `Claim.paper_scale`)

def commands(tasks: tuple[str, ...], models: tuple[str, ...]) -> str:
    """The exact full-scale commands, one per (task, model), with their configs in tasks/configs/ (docs/training.md)."""
    return " ; ".join(f"linrnn train --config tasks/configs/{t}-{m}.toml --data DIR --out runs/{t}-{m}"
                      for t in tasks for m in models)


def paper_scale(tasks: tuple[str, ...], models: tuple[str, ...], seeds: int = DEFAULT_SEEDS) -> str:
    """What the paper's scale costs, in words: the runs (tasks x models x seeds of tasks/configs/), and the GPU time
    of those whose epoch time is published (the configs' epochs x S4's published minutes per epoch, `PUBLISHED_EPOCH`)."""
    import tomllib

    hours, known, unknown = 0.0, [], []
    for task in tasks:
        if task not in PUBLISHED_EPOCH:
            unknown.append(task)
            continue
        minutes, gpu = PUBLISHED_EPOCH[task]
        for model in models:
            config = CONFIGS / f"{task}-{model}.toml"
            if config.exists():
                epochs = tomllib.loads(config.read_text())["epochs"]
                hours += seeds * epochs * minutes / 60
                known.append(f"{task}-{model} {epochs} epochs x {minutes:g} min ({gpu})")
    runs = len(tasks) * len(models) * seeds
    text = f"the paper's scale: {runs} runs ({len(tasks)} task(s) x {len(models)} models x {seeds} seeds, tasks/configs/)"
    if known:
        text += (f"; of them {', '.join(sorted({k.split()[0].split('-')[0] for k in known}))} alone about "
                 f"{hours / 24:.0f} GPU-days at S4's published epoch times ({'; '.join(known)})")
    if unknown:
        text += f"; no published epoch time for {', '.join(unknown)}"
    return text

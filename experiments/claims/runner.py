"""How an experiment runs: its jobs, its positive controls, the training of each job, and the record it writes.

An experiment (`Experiment`: one module of `linrnn.experiments.claims` each, registered in its `EXPERIMENTS`) is
a fixed list of training runs (`Job`s) of the one training loop (`linrnn.tasks.train.train`): synthetic streams, or
data sets the project's generators write in the real on-disk formats (generated under --data when missing, seeded,
so the same data every time). `run` writes one JSON record (default `reports/results/experiment-NAME.json`,
`--quick`: `...-quick.json`) with every run's labels (task, model, the factor the experiment varies, seed),
resolved config, parameter count, steps, time per step, final metric, baseline (data tasks) and curve, the best
trivial predictor of each task, length and data set (`trivial`), plus the command, date, machine, library versions
and total time. The record is rewritten after every run, so an interrupted experiment loses nothing; run it again
and the finished runs are reused (a run directory whose results.json has the same config is not retrained).

Measurements only: what a record means for a claim is decided by each experiment's settle functions with the
rules of `linrnn.experiments.decide.evidence`, which the ledger (`linrnn.reports.ledger`) calls when the report renders,
so `linrnn report --from` re-settles it.

`--quick` runs each experiment at toy sizes (seconds to a minute): it checks that the pipeline works, and its record
says `"quick": true`; the ledger never settles a claim from a quick record.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from linrnn.tasks.datasets import DataSet, baseline, ensure_data
from linrnn.base.errors import LinrnnError
from linrnn.base.results import (RUN_RESULTS, STORED_DIR, Envelope, ExperimentRecord, ResultsError, RunRecord, number,
                                  read, to_dict, write)

CURVE_POINTS = 100


@dataclass(frozen=True)
class Job:
    labels: dict                   # what the tables group by: task, model, the varied factor, seed
    config: dict                   # TrainConfig fields (the model's mixer fields in "mixer")
    data: DataSet | None = None    # None: a synthetic task
    options: dict = field(default_factory=dict)   # what a custom `run_job` needs besides the config (not a label)

    @property
    def name(self) -> str:
        return "-".join(str(v) for v in self.labels.values())


@dataclass(frozen=True)
class Control:
    """A positive control for one task of an experiment: a setting this pipeline should learn at this machine's
    scale, so that arms which all stay at chance (or all fail) can be told from a pipeline that cannot learn the
    task at all. The ledger decides whether it learned (`linrnn.reports.ledger`); a verdict on `task` whose
    control did not learn is inconclusive.

    Either the control has its own runs (`jobs`, whose labels carry `"control": name`), or it is the
    experiment's own arm selected by `arm` (where the arms themselves already leave chance, e.g. speech)."""

    name: str                          # its label in the record
    task: str                          # the arms' task it vouches for
    setting: str                       # what it runs and why it should learn, in words
    jobs: tuple[Job, ...] = ()
    arm: dict = field(default_factory=dict)   # labels of the experiment's own runs that serve as the control
    bar: float | None = None           # regression: learned when R^2 is above this bar; classification: None,
                                       # learned when above chance (the best constant or no-information answer)

    def spec(self) -> dict:
        """What the record keeps of it (its runs are rows of the record like any other)."""
        return {"name": self.name, "task": self.task, "setting": self.setting, "bar": self.bar,
                "select": dict(self.arm) if self.arm else {"control": self.name}}


def _no_controls(quick: bool) -> list[Control]:
    return []


def _no_design(quick: bool) -> list[dict]:
    return []


@dataclass(frozen=True)
class Settles:
    """A claim an experiment settles, declared once, in the experiment's module: the ledger's wiring is derived from
    these (`linrnn.reports.ledger.EXPERIMENT_SOURCES`)."""

    claim: str                                 # the claim's id (docs/claims.md)
    settle: Callable[[dict], list]             # one stored record of the experiment -> the claim's parts (`Part`s)
    # the labels of the runs the claim reads, in an experiment of two claims (e.g. {"task": "sc35"}): the claim is
    # decided once those runs of the plan are in the record, whatever the other claim's; None: every run of the plan
    only: dict | None = None


@dataclass(frozen=True)
class Experiment:
    name: str
    settles: tuple[Settles, ...]               # the claims it settles and how; () for a question of the project's own
    title: str
    question: str                              # what it measures, in a sentence
    jobs: Callable[[bool], list[Job]]          # quick -> the runs
    scale: Callable[[bool], str]               # quick -> the scale in words
    factor: str = "model"                      # the label the experiment varies besides task and seed
    note: str = ""                             # what the reader must know (e.g. synthetic speech)
    extra: dict = field(default_factory=dict)
    # (job, data_root, runs_root, progress) -> the job's rows; None: one training run of `linrnn.tasks.train`
    run_job: Callable[[Job, Path, Path, bool], list[dict]] | None = None
    controls: Callable[[bool], list[Control]] = _no_controls   # quick -> the positive controls
    brief: str = ""                    # the full-size scale in a few words (seeds, length, steps, data)
    # job -> what it asks a cluster for, from its plan ({"hours", "gpus", "mem_gb"}: `--scale full`,
    # linrnn.tasks.sweep_slurm_settings); None: the sweep's settings
    requests: Callable[[Job], dict | None] | None = None
    # quick -> what was fixed before the runs it covers (a confirmatory design: {"claim", "stage": "confirmatory",
    # "registered", "select" (the labels of its runs), "arms", "seeds", "rule", "margin", "alpha", "plan"}) and the
    # interim looks of earlier runs ({"claim", "stage": "exploratory", "select", "looks": [...]}); the record keeps it
    design: Callable[[bool], list[dict]] = _no_design

    def __post_init__(self) -> None:
        wrong = [s for s in self.settles if not isinstance(s, Settles)]
        if not isinstance(self.settles, tuple) or wrong:
            raise TypeError(f"Experiment {self.name!r}: settles expected a tuple of Settles(claim, settle), found "
                            f"{self.settles!r}")

    @property
    def claims(self) -> tuple[str, ...]:
        """The ids of the claims it settles, in their order."""
        return tuple(s.claim for s in self.settles)

    def all_jobs(self, quick: bool) -> list[Job]:
        """The arms' runs, then the controls' own runs."""
        return self.jobs(quick) + [job for control in self.controls(quick) for job in control.jobs]



# -- running ------------------------------------------------------------------------------------------

def _thin(values: list[float]) -> dict[str, list]:
    from linrnn.tasks.grid import thin

    return thin(values, CURVE_POINTS)


def parameter_count(run_dir: Path) -> int:
    from linrnn.tasks import checkpoint as ckpt_io

    bundle = ckpt_io.load(run_dir / "checkpoint.npz").bundle
    return int(sum(int(v.size) for v in bundle.params.values()))


def _one_run(job: Job, data_root: Path, runs_root: Path, progress: bool) -> list[dict]:
    return [run_job(job, data_root, runs_root, progress)]


def _data_spec(job: Job) -> dict | None:
    return None if job.data is None else {"generator": job.data.generator, "options": job.data.options}


def stored_rows(job: Job, previous: list[dict]) -> list[dict]:
    """The rows of `job` in a previous record of the same experiment: finished rows whose config reads back equal
    to the job's (a field added later takes its default) on the same data. They are reused as they are, relabelled
    with the job's labels (a label added later, such as `seed`, then appears), so adding seeds or controls to an
    experiment trains only the new runs even where the run directories are gone."""
    from linrnn.tasks.config import TrainConfig

    wanted = TrainConfig(**job.config)
    found = []
    for row in previous:
        try:
            same = (row.get("status") == "ok" and row.get("data") == _data_spec(job)
                    and TrainConfig.from_stored(row.get("config")) == wanted)
        except LinrnnError:           # a config of older code that no longer reads: not this job's
            same = False
        if same:
            found.append({**row, **job.labels, "name": row["name"] if row["name"].startswith(job.name) else job.name,
                          "wall_seconds": None})          # reused: no time was spent on it here
    return found


def _set_aside_another_config(out: Path, config) -> None:
    """A run directory left by another config of the same job (the experiment's definition changed) is renamed
    `NAME.replaced-N`, kept whole, and the job trains afresh; an unfinished run of the same config resumes."""
    from linrnn.tasks.config import TrainConfig

    saved = out / "config.json"
    if not saved.exists():
        return
    try:
        same = TrainConfig.from_stored(json.loads(saved.read_text())) == config
    except (ValueError, LinrnnError):        # unreadable, or a config of older code: not this job's
        same = False
    if same:
        return
    n = 1
    while out.with_name(f"{out.name}.replaced-{n}").exists():
        n += 1
    aside = out.with_name(f"{out.name}.replaced-{n}")
    out.rename(aside)
    print(f"{out.name}: the run directory holds another config; moved it to {aside.name} and training afresh",
          flush=True)


def run_job(job: Job, data_root: Path, runs_root: Path, progress: bool) -> dict:
    """Train `job` (or reuse its finished run directory) and return its row."""
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.train import TrainingDiverged, train

    config = TrainConfig(**job.config)
    folder = ensure_data(data_root, job.data) if job.data is not None else None
    out = runs_root / job.name
    results = out / RUN_RESULTS
    try:
        reused = results.exists() and TrainConfig.from_stored(read(results, RunRecord).config) == config
    except (ResultsError, LinrnnError):         # unreadable (damaged, or older code's): `train` writes it again
        reused = False
    row = {"name": job.name, **job.labels, "config": config.to_dict(), "data": _data_spec(job)}
    tic = time.perf_counter()
    if not reused:
        _set_aside_another_config(out, config)
        try:
            train(config, out, data=folder, progress=progress, resume=(out / "checkpoint.npz").exists())
        except TrainingDiverged as err:
            return {**row, "status": "diverged", "error": str(err), "metric": None, "value": None,
                    "wall_seconds": round(time.perf_counter() - tic, 1)}
    record = to_dict(read(results, RunRecord))
    row.update(status="ok", error=None, steps=record["steps"], seconds_per_step=record["seconds_per_step"],
               stopped_early=record.get("stopped_early", False),
               wall_seconds=None if reused else round(time.perf_counter() - tic, 1),
               parameters=parameter_count(out), train_loss=_thin(record["train_loss"]),
               evaluations=record["evaluations"], code_version=record["code_version"])
    if config.is_data_task:
        metric = config.data_task.monitor
        best = record["best"]
        base = baseline(config, folder)
        row.update(metric=metric, value=number(best["test"][metric]) if best else None,
                   val=best["val"][metric] if best else None, best_step=best["step"] if best else None,
                   examples=base.pop("examples"), baseline=base, scored="best validation")
        if job.options.get("score") == "final" and record["evaluations"]:
            # a fixed budget: the test metric of the last evaluation, no model selection on the validation split
            last = record["evaluations"][-1]
            row.update(value=number(last["test"][metric]), val=last["val"][metric], scored="last epoch")
            final = record.get("final") or {}
            if final.get("predictions") and final.get("step") == last["step"]:
                row["predictions"] = final["predictions"]     # per-example test predictions of the last epoch
        if best and best.get("predictions") and row["scored"] == "best validation":
            row["predictions"] = best["predictions"]    # per-example test predictions of the best validation
    else:
        final = record["final"]
        row.update(metric="r2", value=number(final["r2"]), mse=number(final["mse"]))
    if row["value"] is not None and not math.isfinite(row["value"]):
        row.update(status="diverged", error=f"final {row['metric']} is {row['value']}", value=None)
    return row


def previous_record(path: Path, experiment: Experiment, quick: bool) -> ExperimentRecord | None:
    """The record at `path` when it is one of `experiment` at the same size (else None)."""
    if not path.exists():
        return None
    try:
        record = read(path, ExperimentRecord)
    except ResultsError as err:
        raise LinrnnError(f"--out: cannot read the previous record ({err}); move it away to start afresh") from None
    if record.experiment != experiment.name or record.quick != quick:
        return None
    return record


def trivial_key(job: Job) -> dict:
    """What a task's trivial predictor depends on: the task and its data set (data tasks) or its length and the
    evaluation batches (synthetic tasks, scored on the validation batches `linrnn train` evaluates)."""
    c = job.config
    if job.data is not None:
        return {"task": c["task"], "data": _data_spec(job), "data_options": c.get("data_options") or {}}
    return {"task": c["task"], "length": c["length"], "eval_batches": c.get("eval_batches") or 1,
            "batch_size": c["batch_size"]}


def trivial_entry(key: dict, config: dict, data: DataSet | None, data_root: Path) -> dict:
    """The best trivial predictor (`linrnn.tasks.trivial`) of one task, length and data set (`trivial_key`): a job of
    the sweep like the training runs, so that the driver measures nothing itself (at the papers' lengths the
    measurement needs a node's memory: Shift at L = 2^20 took 15 GB)."""
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.trivial import data_task_baseline, synthetic_baseline

    tic = time.perf_counter()
    if data is not None:
        found = data_task_baseline(TrainConfig(**config), ensure_data(data_root, data))
    else:
        found = synthetic_baseline(key["task"], key["length"], 0, key["eval_batches"], key["batch_size"])
    return {**key, **found, "seconds": round(time.perf_counter() - tic, 1)}


def trivial_jobs(jobs: list[Job], chosen: set[str], data_root: Path, runs_dir: Path, previous: list[dict],
                 requests: Callable[[Job], dict | None] | None = None) -> tuple[dict[str, dict], dict[str, dict], list]:
    """The trivial baselines of the tasks, lengths and data sets of `jobs`: ({key: the key}, in the jobs' order;
    {key: entry} kept from the previous record (the same key and predictor family); the sweep jobs that measure the
    others that the `chosen` jobs need, each asking for the most memory of the runs it serves and no GPU)."""
    import hashlib

    from linrnn.tasks.sweep import SweepJob
    from linrnn.tasks.trivial import FAMILY_VERSION

    keys: dict[str, dict] = {}
    kept: dict[str, dict] = {}
    needed: dict[str, Job] = {}
    memory: dict[str, float] = {}
    for job in jobs:
        if job.config.get("task") is None:
            continue
        key = trivial_key(job)
        text = json.dumps(key, sort_keys=True)
        keys.setdefault(text, key)
        found = next((e for e in previous if {k: e.get(k) for k in key} == key
                      and e.get("family_version") == FAMILY_VERSION), None)   # another family's: measured again
        if found is not None:
            kept.setdefault(text, found)
        elif job.name in chosen:
            needed.setdefault(text, job)
        request = requests(job) if requests else None
        if request and request.get("mem_gb"):
            memory[text] = max(memory.get(text, 0.0), float(request["mem_gb"]))
    sweep = []
    for text, job in needed.items():
        key = keys[text]
        where = f"L{key['length']}" if "length" in key else job.data.name
        name = f"trivial-{key['task']}-{where}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"
        resources = {"hours": 0.25, "gpus": 0, "mem_gb": memory[text]} if text in memory else None
        sweep.append(SweepJob(name, runs_dir / name, trivial_entry, (key, job.config, job.data, data_root),
                              {"trivial": key, "family_version": FAMILY_VERSION}, resources))
    return keys, kept, sweep


def select(jobs: list[Job], only: list[str]) -> list[Job]:
    """The jobs whose labels match every LABEL=VALUE of `only` (values compared as text)."""
    wanted = []
    for item in only:
        label, sep, value = item.partition("=")
        if not sep or not label:
            raise LinrnnError(f"--only: expected LABEL=VALUE, found {item!r}")
        wanted.append((label.strip(), value.strip()))
    labels = sorted({k for j in jobs for k in j.labels})
    for label, _ in wanted:
        if label not in labels:
            raise LinrnnError(f"--only: expected a label of this experiment's runs ({', '.join(labels)}), "
                              f"found {label!r}")
    chosen = [j for j in jobs if all(str(j.labels.get(k)) == v for k, v in wanted)]
    if not chosen:
        raise LinrnnError(f"--only: no run of this experiment has {', '.join(only)}")
    return chosen


def job_key(experiment: Experiment, job: Job) -> dict:
    """What a job's record must match to be this job's (`linrnn.tasks.sweep`): its experiment, labels, resolved
    config, data and options."""
    from linrnn.tasks.config import TrainConfig

    return {"experiment": experiment.name, "labels": job.labels, "config": TrainConfig(**job.config).to_dict(),
            "data": _data_spec(job), "options": job.options}


def job_rows(runner: Callable[[Job, Path, Path, bool], list[dict]], job: Job, data_root: Path, runs_dir: Path,
             progress: bool) -> list[dict]:
    """One job of an experiment, wherever the executor runs it: its rows."""
    return runner(job, data_root, runs_dir, progress)


def run(experiment: Experiment, quick: bool, data_root: Path, runs_root: Path, out: Path, argv: list[str],
        progress: bool = True, only: list[str] | None = None, executor=None) -> dict:
    """Run every job (reusing finished ones: a row of the previous record at `out` with the same config, a job record
    or a run directory with the same config), rewriting `out` after each; returns the record. `only`: LABEL=VALUE
    filters of the jobs to train; the record keeps the previous record's rows of the others, and is complete when
    every job has its rows. `executor`: where the jobs run (`linrnn.tasks.sweep.Executor`; default serial, here,
    an error raised as it is)."""
    from linrnn.tasks.lock import Locked, hold, output_lock

    try:
        # one driver per record: a second one on the same --out is a one-line error naming the first
        with hold(output_lock(out), "linrnn experiment " + " ".join(argv)):
            return _run(experiment, quick, data_root, runs_root, out, argv, progress, only, executor)
    except Locked as err:
        raise LinrnnError(f"--out: another driver is running this experiment into {out} ({err}); wait for it to end "
                          f"(linrnn runs list {runs_root / experiment.name} shows its runs), or give this one its own "
                          "--out") from None


def _run(experiment: Experiment, quick: bool, data_root: Path, runs_root: Path, out: Path, argv: list[str],
         progress: bool, only: list[str] | None, executor) -> dict:
    from linrnn.tasks.sweep import Executor, SweepJob, run_jobs

    executor = executor or Executor("serial", retries=0, progress=False)
    every = experiment.all_jobs(quick)
    names = [j.name for j in every]
    if len(set(names)) != len(names):
        raise LinrnnError(f"experiment {experiment.name}: two runs share a name")
    chosen = {j.name for j in (select(every, only) if only else every)}
    before = previous_record(out, experiment, quick)
    previous = [] if before is None else [r for r in before.runs if isinstance(r, dict) and isinstance(r.get("name"), str)]
    controls = [c.spec() for c in experiment.controls(quick)]
    # the data sets are generated (or checked) once, by this process, before any job starts: no two jobs ever
    # generate a data set at once; each task's trivial baseline is measured by a job of its own, first
    for data in {j.data.name: j.data for j in every if j.data is not None}.values():
        ensure_data(data_root, data)
    runs_dir = runs_root / experiment.name
    trivial_keys, bars, measure = trivial_jobs(every, chosen, data_root, runs_dir,
                                               [] if before is None else before.trivial, experiment.requests)
    rows: dict[str, list[dict]] = {}
    for job in every:                   # what the previous record already holds (kept, whatever --only selects)
        found = stored_rows(job, previous)
        if found:
            rows[job.name] = found
    jobs = [j for j in every if j.name in chosen]
    start = time.perf_counter()
    record: dict = {}
    shown = 0

    def write_record() -> None:
        nonlocal record
        made = ExperimentRecord(
            experiment=experiment.name, claims=list(experiment.claims), title=experiment.title,
            question=experiment.question, scale=experiment.scale(quick), brief="toy sizes" if quick else experiment.brief,
            factor=experiment.factor, note=experiment.note, quick=quick, seconds=round(time.perf_counter() - start, 1),
            # the training time of every run in the record, reused ones included (steps x s per step)
            training_seconds=round(sum(r["steps"] * r["seconds_per_step"] for rs in rows.values()
                                       for r in rs if r.get("steps") and r.get("seconds_per_step")), 1),
            complete=all(n in rows for n in names), controls=controls,
            runs=[row for n in names if n in rows for row in rows[n]],
            trivial=[bars[t] for t in trivial_keys if t in bars],
            design=experiment.design(quick), envelope=Envelope.here("linrnn experiment " + " ".join(argv)))
        write(out, made)
        record = to_dict(made)

    def show(name: str) -> None:
        nonlocal shown
        shown += 1
        value = ", ".join("diverged" if row["value"] is None else f"{row['metric']} {row['value']:.4f}"
                          for row in rows[name])
        print(f"[{shown}/{len(jobs)}] {name}: {value}", flush=True)

    for job in jobs:
        if job.name in rows:
            show(job.name)
    if any(j.name in rows for j in jobs) or not jobs:
        write_record()
    bar_of = {job.name: json.dumps(job.args[0], sort_keys=True) for job in measure}

    def gathered(sweep_job: SweepJob, result, reused: bool) -> None:
        if sweep_job.name in bar_of:             # a trivial baseline
            bars[bar_of[sweep_job.name]] = result
            where = f"L = {result['length']}" if "length" in result else sweep_job.args[2].name
            print(f"trivial baseline of {result['task']} ({where}): {result['best']['name']}, {result['metric']} "
                  f"{result['best']['score']:.4f}", flush=True)
        else:
            # a job record from before (a crash, jobs that finished after their driver stopped): no time spent now
            rows[sweep_job.name] = [{**row, "wall_seconds": None} for row in result] if reused else result
            show(sweep_job.name)
        write_record()

    # a control's own runs are plain training runs, whatever the experiment's arms run; a job's per-step progress
    # bars only where it runs in this process
    sweep = measure + [SweepJob(j.name, runs_dir / j.name, job_rows,
                                (_one_run if "control" in j.labels else (experiment.run_job or _one_run), j, data_root,
                                 runs_dir, progress and executor.name == "serial"), job_key(experiment, j),
                                experiment.requests(j) if experiment.requests else None)
                       for j in jobs if j.name not in rows]
    run_jobs(sweep, executor, gathered, folder=runs_dir, lock=out)
    return record


def default_out(name: str, quick: bool) -> Path:
    return STORED_DIR / f"experiment-{name}{'-quick' if quick else ''}.json"


# -- summaries (the report section and the ledger read the runs through these) ----------------------

def cells(runs: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """The runs grouped by the labels `keys`, in first-seen order, one cell per group:

    {**labels, "n", "values" (finished runs), "diverged", "mean", "sd" (ddof 1; None below 2 values),
     "se" (sd / sqrt(n); None below 2), "metric", "baseline" (data tasks: the majority value), "chance" (data
     tasks: the best constant answer on test, at least the baseline), "parameters",
     "test_examples" (data tasks), "seconds_per_step" (mean)}
    """
    groups: dict[tuple, list[dict]] = {}
    for run_ in runs:
        if run_.get("control"):          # a positive control's run is not an arm of the comparison
            continue
        groups.setdefault(tuple(run_.get(k) for k in keys), []).append(run_)
    out = []
    for labels, members in groups.items():
        values = [float(m["value"]) for m in members if m.get("status") == "ok" and m.get("value") is not None]
        n = len(values)
        mean = sum(values) / n if n else None
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n >= 2 else None
        bases = [m["baseline"]["value"] for m in members if isinstance(m.get("baseline"), dict)]
        # chance: the best a model that learnt nothing scores on test: the best constant answer and, for macro F1,
        # the best no-information answer, where the record has them (older records: the baseline)
        chances = [max(m["baseline"]["value"], (m["baseline"].get("best_constant") or {}).get("value", -math.inf),
                       (m["baseline"].get("no_information") or {}).get("value", -math.inf))
                   for m in members if isinstance(m.get("baseline"), dict)]
        params = [m["parameters"] for m in members if isinstance(m.get("parameters"), int)]
        tests = [m["examples"]["test"] for m in members if isinstance(m.get("examples"), dict)
                 and isinstance(m["examples"].get("test"), int)]
        speeds = [m["seconds_per_step"] for m in members if isinstance(m.get("seconds_per_step"), (int, float))]
        out.append({**dict(zip(keys, labels)), "n": n, "values": values,
                    "diverged": sum(1 for m in members if m.get("status") != "ok"),
                    "mean": mean, "sd": sd, "se": sd / math.sqrt(n) if sd is not None else None,
                    "metric": next((m["metric"] for m in members if m.get("metric")), None),
                    "baseline": bases[0] if bases else None, "chance": max(chances) if chances else None,
                    "parameters": params[0] if params else None,
                    "test_examples": tests[0] if tests else None,
                    "seconds_per_step": sum(speeds) / len(speeds) if speeds else None})
    return out


def table_keys(record: dict) -> tuple[str, ...]:
    """The labels a record's table groups by: task, model (and its `init` when every run has one, long-shift) and
    the experiment's varied factor, after the task's group when every run has one (synthetic-tasks: few / many /
    context)."""
    factor = record.get("factor", "model")
    keys = ("task", "model") if factor == "model" else ("task", "model", factor)
    runs = record.get("runs") or []

    def everywhere(label: str) -> bool:
        return bool(runs) and all(isinstance(r, dict) and label in r for r in runs)

    if everywhere("init"):                      # long-shift: one model in two initialisations
        keys = keys[:2] + ("init",) + keys[2:]
    if any(isinstance(r, dict) and "stage" in r for r in runs):   # a confirmatory stage beside exploratory runs
        keys = keys + ("stage",)
    return (("group",) + keys) if everywhere("group") else keys


# labels a run may lack although the table groups by them (its runs outside a confirmatory stage: None)
OPTIONAL_KEYS = ("stage",)


# the order of the groups of tasks a record's runs may carry (synthetic-tasks: the kernels a task needs)
GROUP_ORDER = ("few", "many", "context")


def table_cells(record: dict) -> list[dict]:
    """`cells` of the record's runs by `table_keys`, the groups of tasks in GROUP_ORDER (unknown ones last)."""
    keys = table_keys(record)
    found = cells(record["runs"], keys)
    if "group" in keys:
        rank = {g: i for i, g in enumerate(GROUP_ORDER)}
        found.sort(key=lambda c: rank.get(c["group"], len(rank)))
    return found


def mixer_field(config: dict, name: str):
    """A field of a stored run's mixer: its config's mixer table, or, in a record written before mixer tables, the
    flat field (where its model has it); None where it has none (attention's d_state)."""
    from linrnn.tasks.config import nest_legacy

    mixer = nest_legacy(config).get("mixer")
    return mixer.get(name) if isinstance(mixer, dict) else None

"""`linrnn.tasks.sweep`: the executor seam every multi-run command shares (serial, local worker processes; SLURM in
test_sweep_slurm.py).

- `--executor`, `--cluster` and the slurm flags: bad input is one line naming what was expected;
- a tiny grid run serially and on two local workers gives the same rows (apart from timing fields), each job's
  record in its own directory with its executor and threads;
- a local worker killed mid-job (kill -9) loses no finished record: without retries the sweep names the failed job
  in one line and the same command again runs only it; with a retry the driver runs it again at once, resuming
  from its checkpoint;
- the live progress line counts pending, running, done and failed jobs.
"""

from __future__ import annotations

import io
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from linrnn.cli import main as cli_main
from linrnn.base import results
from linrnn.base.errors import LinrnnError
from linrnn.tasks import sweep, sweep_job, sweep_slurm
from linrnn.tasks import sweep_slurm_settings as settings
from linrnn.tasks.grid import run_grid

TINY = dict(d_model=8, batch_size=2, eval_batches=1, mixer={"d_state": 8})
TIMING = {"seconds", "seconds_per_step"}


def untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING | {"run_dir"}} for r in rows]


@pytest.mark.parametrize("text, expected", [("serial", ("serial", 1)), ("local:3", ("local", 3)),
                                            ("slurm", ("slurm", 1)), (" local:1", ("local", 1))])
def test_the_executor_names(text, expected):
    assert sweep.parse_executor(text) == expected
    assert sweep.parse_executor("local") == ("local", sweep.available_cores())


@pytest.mark.parametrize("text", ["thread", "local:0", "local:x", "serial:2", "slurm:4", ""])
def test_a_bad_executor_is_one_line(text):
    with pytest.raises(LinrnnError, match=r"--executor: expected (serial, local, local:N or slurm|local:N with N a "
                                          r"positive integer), found"):
        sweep.parse_executor(text)


def test_the_cluster_settings_come_from_the_toml_file_with_the_flags_over_them(tmp_path):
    file = tmp_path / "cluster.toml"
    file.write_text('partition = "gpu"\ntime = "1-02:30:00"\ngpus_per_job = 1\ncpus_per_job = 4\nmem = "16G"\n'
                    'setup = [". .venv/bin/activate"]\n[sbatch]\nqos = "high"\n')
    got = sweep_slurm.cluster_settings(str(file), {"partition": "debug", "sbatch": ["exclude=node3"], "time": None})
    assert got == {"time": 24 * 60 + 150 + 0, "gpus_per_job": 1, "cpus_per_job": 4, "partition": "debug", "mem": "16G",
                   "setup": [". .venv/bin/activate"], "sbatch": {"qos": "high", "exclude": "node3"}}
    assert sweep_slurm.cluster_settings(None, {"time": "90"})["time"] == 90
    assert sweep_slurm.cluster_settings(None, {}) == {}                  # a job's time: its plan's, else the default
    assert settings.job_settings({}, None, None, None) == ({"time": settings.DEFAULT_MINUTES},
                                                           settings.DEFAULT_MAX_TIMEOUTS, [])
    file.write_text('partition = "gpu"\nwalltime = 5\n')
    with pytest.raises(LinrnnError, match="--cluster: .*cluster.toml: expected keys among partition, time, .*, found "
                                          "'walltime'"):
        sweep_slurm.cluster_settings(str(file))
    with pytest.raises(LinrnnError, match="--cluster: no such file"):
        sweep_slurm.cluster_settings(str(tmp_path / "none.toml"))
    with pytest.raises(LinrnnError, match="time: expected minutes or D-HH:MM:SS, found 'soon'"):
        sweep_slurm.cluster_settings(None, {"time": "soon"})
    with pytest.raises(LinrnnError, match="cpus_per_job: expected a positive integer, found '0'"):
        sweep_slurm.cluster_settings(None, {"cpus_per_job": "0"})
    with pytest.raises(LinrnnError, match="--sbatch: expected KEY=VALUE, found 'qos'"):
        sweep_slurm.cluster_settings(None, {"sbatch": ["qos"]})


def test_the_commands_refuse_bad_executor_options_in_one_line(tmp_path, capsys):
    grid = ["tasks", "grid", "--tasks", "shift", "--models", "dlr", "--length", "8", "--steps", "2", "--out",
            str(tmp_path / "g")]
    for extra, message in ((["--executor", "threads"], "--executor: expected serial, local, local:N or slurm"),
                           (["--partition", "gpu"], "--cluster and the slurm flags need --executor slurm"),
                           (["--retries", "-1"], "--retries: expected 0 or more"),
                           (["--max-timeouts", "2"], "--cluster and the slurm flags need --executor slurm"),
                           (["--executor", "slurm", "--max-timeouts", "-1"], "--max-timeouts: expected 0 or more"),
                           (["--threads-per-job", "0"], "--threads-per-job: expected 1 or more")):
        assert cli_main(grid + extra) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "g").exists()


def test_a_grid_serially_and_on_two_local_workers_gives_the_same_rows(tmp_path):
    grid = (["shift", "cumsum"], ["dlr", "lru"], "torch")
    serial = run_grid(*grid, length=8, steps=4, out_dir=tmp_path / "serial", **TINY)
    local = run_grid(*grid, length=8, steps=4, out_dir=tmp_path / "local", **TINY,
                     executor=sweep.Executor("local", 2, progress=False))
    assert untimed(local) == untimed(serial) and len(serial) == 4
    for row in local:
        record = results.read(Path(row["run_dir"]) / results.JOB_RESULT, results.JobRecord)
        assert (record.executor, record.threads, record.slurm_job_id, record.restarts) == ("local", 1, None, 0)
        assert record.result == row and record.key == {"grid": row["config"]}
        assert (Path(row["run_dir"]) / sweep_job.JOB_LOG).exists()
    # the same grid again: every job has its record, nothing is trained
    again = run_grid(*grid, length=8, steps=4, out_dir=tmp_path / "local", **TINY,
                     executor=sweep.Executor("local", 2, progress=False))
    assert again == local


def _kill_when_checkpointed(run_dir: Path, stop: threading.Event, killed: list) -> None:
    """Kill -9 the local worker that runs the job in `run_dir` once it has saved a checkpoint."""
    while not stop.is_set():
        log = run_dir / sweep_job.JOB_LOG
        found = re.search(r"in process (\d+)", log.read_text()) if log.exists() else None
        if found and (run_dir / "checkpoint.npz").exists() and not killed:
            os.kill(int(found.group(1)), signal.SIGKILL)
            killed.append(int(found.group(1)))
            return
        time.sleep(0.05)


@pytest.mark.parametrize("retries", [0, 1])
def test_a_killed_local_worker_loses_no_finished_record_and_its_job_runs_again(tmp_path, capfd, retries):
    """Two quick jobs and a slow one (checkpointed every 0.2 s) on two workers; the slow one's worker is killed."""
    out = tmp_path / "grid"
    slow = out / "shift-dlr-torch-L8-s0"
    executor = sweep.Executor("local", 2, retries=retries, checkpoint_seconds=0.2, progress=False)
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_when_checkpointed, args=(slow, stop, killed), daemon=True)
    watcher.start()

    try:
        if retries == 0:
            with pytest.raises(sweep.SweepFailed, match=r"1 of 3 jobs failed after 1 attempt\(s\) each "
                                                        r"\(shift-dlr-torch-L8-s0\); every other job's record is kept"):
                _three_jobs(out, executor)
        else:
            rows = _three_jobs(out, executor)
            assert [r["status"] for r in rows] == ["ok"] * 3
    finally:
        stop.set()
        watcher.join()
    assert killed, "the slow job finished before it could be killed"
    err = capfd.readouterr().err
    assert "its worker process died (exit code -9)" in err
    quick_dirs = [out / "cumsum-dlr-torch-L8-s0", out / "cumsum-lru-torch-L8-s0"]
    stamps = {d: (d / results.JOB_RESULT).stat().st_mtime_ns for d in quick_dirs}   # both finished and kept
    if retries == 0:
        assert not (slow / results.JOB_RESULT).exists()
        assert "--- the last lines of its log ---" in err
        rows = _three_jobs(out, executor)                    # the same command again: only the slow job runs
        assert [r["status"] for r in rows] == ["ok"] * 3
    assert {d: (d / results.JOB_RESULT).stat().st_mtime_ns for d in quick_dirs} == stamps
    # the killed job resumed from its checkpoint, not from step 0, and ended with all its steps
    log = (slow / sweep_job.JOB_LOG).read_text()
    assert re.search(r"resuming from the checkpoint at step [1-9]", log), log
    record = results.read(slow / results.RUN_RESULTS, results.RunRecord)
    assert record.steps == SLOW_STEPS and len(record.train_loss) == SLOW_STEPS


SLOW_STEPS = 400


def _three_jobs(out: Path, executor) -> list[dict]:
    """Shift (slow: SLOW_STEPS steps) and two quick CumSum runs, as one sweep of three jobs."""
    from linrnn.tasks.grid import grid_config, grid_row

    configs = [grid_config("shift", "dlr", "torch", 8, SLOW_STEPS, 0, mixer={"d_state": 8}, d_model=8, batch_size=2,
                           eval_batches=1)] + \
              [grid_config("cumsum", m, "torch", 8, 3, 0, mixer={"d_state": 8}, d_model=8, batch_size=2,
                           eval_batches=1) for m in ("dlr", "lru")]
    names = ["shift-dlr-torch-L8-s0", "cumsum-dlr-torch-L8-s0", "cumsum-lru-torch-L8-s0"]
    jobs = [sweep.SweepJob(n, out / n, grid_row, (c.to_dict(), str(out / n)), {"grid": c.to_dict()})
            for n, c in zip(names, configs)]
    rows = {}
    sweep.run_jobs(jobs, executor, lambda job, row, reused: rows.__setitem__(job.name, row), folder=out)
    return [rows[n] for n in names]


def test_a_plan_becomes_gres_time_and_memory_and_what_cannot_fit_it_is_one_line_per_kind():
    """`--scale full`: a run planned at 35 GPU-hours asks for a GPU, 35 h x 1.25 + 10 min and its memory; a partition
    limit, the user's --time, --mem or --gpus-per-job 0 below the plan are said, once per kind, naming the runs."""
    plan = {"hours": 35.0, "gpus": 1, "mem_gb": 18}
    got, timeouts, misfits = settings.job_settings({}, plan, None, None)
    assert got == {"time": 2640, "gres": "gpu:1", "mem": "18G"} and timeouts == settings.DEFAULT_MAX_TIMEOUTS
    assert misfits == []
    got, timeouts, misfits = settings.job_settings({}, plan, 24 * 60, None)        # the partition's limit: 24 h
    assert got["time"] == 24 * 60 and timeouts == 4 and [k for k, _ in misfits] == ["time"]  # 3 x 35 h in 5 pieces
    cluster = {"time": 120, "mem": "4G", "gpus_per_job": 0}
    got, timeouts, misfits = settings.job_settings(cluster, plan, None, 3)
    assert got == cluster and timeouts == 3
    assert [k for k, _ in misfits] == ["time", "timeouts", "gpu", "mem"]
    lines = settings.misfit_lines({kind: [(f"run-{i}", plan, text) for i in range(5)] for kind, text in misfits})
    assert len(lines) == 4 and all(line.startswith("warning: 5 run(s) (run-0, run-1, run-2 and 2 more) ")
                                   for line in lines)
    assert "need up to 35.0 h each by the plan, above the time limit 02:00:00 (--time): each is requeued at its " \
           "limit about 17 time(s)" in lines[0]
    assert "more than 4 x 02:00:00, all that --max-timeouts 3 allows: raise --max-timeouts or --time" in lines[1]
    assert "planned at 18 GiB of memory, asked for 4G" in lines[3]
    # --sbatch is read last by sbatch: its gres and mem win over the plan's
    got, _, _ = settings.job_settings({"sbatch": {"gres": "gpu:a100:1", "mem": "64G"}}, plan, None, None)
    assert "gres" not in got and "mem" not in got and got["sbatch"] == {"gres": "gpu:a100:1", "mem": "64G"}


def test_the_progress_line_counts_the_jobs_and_estimates_the_time_left():
    stream = io.StringIO()
    progress = sweep.Progress(total=5, gathered=1, stream=stream)
    progress.update(pending=3, running=1, done=1, failed=0)
    progress.update(pending=3, running=1, done=1, failed=0)           # no change: no new line
    progress.start -= 10                                               # 10 s later, one more job done
    progress.update(pending=2, running=1, done=2, failed=0)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("jobs: 1/5 done (1 already), 1 running, 3 pending, 0 failed; 0:00 elapsed")
    assert re.fullmatch(r"jobs: 2/5 done \(1 already\), 1 running, 2 pending, 0 failed; 0:10 elapsed, about 0:3\d "
                        r"left", lines[1]), lines[1]
    assert len(lines) == 2


def test_the_progress_line_reads_the_running_jobs_steps_from_their_logs(tmp_path):
    from linrnn.tasks.config import TrainConfig
    from linrnn.tasks.train import train

    config = TrainConfig(task="shift", model="dlr", backend="torch", length=8, steps=12, d_model=8,
                         mixer={"d_state": 8}, batch_size=2, eval_batches=1)
    train(config, tmp_path / "a", stop_after=5, progress=False)
    train(config, tmp_path / "b", stop_after=3, progress=False)
    with open(tmp_path / "b" / "metrics.jsonl", "a") as log:
        log.write('{"step": 4, "lo')                                   # a line being written
    jobs = [sweep.SweepJob(n, tmp_path / n, print, (), {}) for n in ("a", "b")]
    assert sweep.running_steps(jobs) == (8, 24)
    stream = io.StringIO()
    sweep.Progress(total=2, gathered=0, stream=stream).update(0, 2, 0, 0, jobs=jobs, cancelled=1)
    assert stream.getvalue().startswith("jobs: 0/2 done (0 already), 2 running (at 8 of 24 steps), 0 pending, 0 "
                                        "failed, 1 cancelled;")


def test_importing_submitit_leaves_the_process_logging_handlers_and_their_streams_open():
    """submitit's own import runs `logging.config.dictConfig`, which closes every handler of the process and the
    streams they write to (absl's writes to sys.stderr: a driver, and pytest's capture, lost their stderr)."""
    import subprocess
    import sys

    code = ("import io, logging\n"
            "class Closing(logging.StreamHandler):     # as absl's handler: closing it closes its stream\n"
            "    def close(self):\n"
            "        self.stream.close()\n"
            "        super().close()\n"
            "stream = io.StringIO()\n"
            "logging.getLogger('absl').addHandler(Closing(stream))\n"
            "IMPORT\n"
            "assert not stream.closed, 'a handler stream was closed'\n"
            "logging.getLogger('submitit').warning('to stderr')\n")
    ours = subprocess.run([sys.executable, "-c", code.replace("IMPORT", "from linrnn.tasks.sweep_slurm import "
                                                                         "import_submitit; import_submitit()")],
                          capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    assert "submitit WARNING" in ours.stderr and "to stderr" in ours.stderr
    plain = subprocess.run([sys.executable, "-c", code.replace("IMPORT", "import submitit")], capture_output=True,
                           text=True, timeout=120)
    assert "a handler stream was closed" in plain.stderr      # what the plain import does

"""What happens on a shared machine, broken on purpose (without SLURM; SLURM's own faults: test_sweep_slurm.py).

- a run directory has one writer: a second `linrnn train` into it is one line naming the first; a dead holder (kill
  -9) leaves no lock; a second driver on one --out is one line; two drivers over the same jobs (each its own --out)
  train each job once, the second waiting for the first and using its record;
- a `local` driver killed with kill -9 takes its worker with it (which saves its checkpoint first), and the same
  command run again at once trains every step exactly once: the rows equal those of an undisturbed serial run;
- every damaged file recovers, said in one line, to the bits of an undisturbed run: a half-written last line of
  metrics.jsonl, a damaged line before it, a truncated checkpoint (the one before it, or step 0), a finished run's
  truncated job.json and results.json, a job.json that is a directory; garbage in the SLURM ledger, the W&B run id
  or a lock file left behind counts as absent;
- a sweep run again into the same --out with a changed config (steps, learning rate, a mixer field) reuses nothing;
- `runs list | head` is quiet; out of memory is one line; `runs list` says which runs a process holds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from linrnn.base import results
from linrnn.tasks import lock, sweep
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.grid import grid_config, grid_row, run_grid
from linrnn.tasks.train import train

TINY = dict(d_model=8, batch_size=2, eval_batches=1, mixer={"d_state": 8})
TIMING = {"seconds", "seconds_per_step", "run_dir"}
CONFIG = dict(task="shift", model="dlr", backend="torch", length=8, steps=12, d_model=8, mixer={"d_state": 8},
              batch_size=2, eval_every=4, eval_batches=1, checkpoint_every=3)
ROOT = Path(__file__).resolve().parents[2]


def untimed(rows) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def same_run(a: Path, b: Path) -> None:
    """Two run directories hold the same run, to the bit: results (apart from the time per step) and log."""
    ra, rb = (results.to_dict(results.read(d / results.RUN_RESULTS, results.RunRecord)) for d in (a, b))
    drop = {"seconds_per_step", "envelope", "code_version", "date", "machine"}
    assert {k: v for k, v in ra.items() if k not in drop} == {k: v for k, v in rb.items() if k not in drop}
    assert (a / "metrics.jsonl").read_text() == (b / "metrics.jsonl").read_text()


def linrnn(*argv, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "linrnn", *map(str, argv)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


# -- locks ----------------------------------------------------------------------------------------------------

HOLD = ("import sys, time; from pathlib import Path; from linrnn.tasks.lock import hold, run_lock\n"
        "with hold(run_lock(Path(sys.argv[1])), 'the holder of this test'):\n"
        "    print('held', flush=True); time.sleep(600)\n")


def test_a_second_writer_of_a_run_directory_is_one_line_and_a_dead_holder_leaves_no_lock(tmp_path, cli):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        line = cli.error_line("train", "--task", "shift", "--model", "dlr", "--length", "8", "--steps", "2", "--out",
                              run, "--quiet")
        assert re.search(rf"--out: {re.escape(str(run))} is being trained by pid {holder.pid} on \S+ since [\d: -]+: "
                         r"the holder of this test; wait for it to end, or stop it", line), line
        assert lock.holder(lock.run_lock(run))["pid"] == holder.pid
        holder.send_signal(signal.SIGKILL)                       # a dead holder: its lock goes with it
        holder.wait(timeout=30)
    finally:
        holder.kill()
    assert lock.holder(lock.run_lock(run)) is None
    code, _, err = cli.run("train", "--task", "shift", "--model", "dlr", "--length", "8", "--steps", "2", "--out",
                           run, "--quiet")
    assert code == 0, err
    assert not (run / lock.RUN_LOCK).exists()                  # the holder removes it as it lets go


def test_locks_are_reentrant_in_a_thread_and_exclusive_between_threads(tmp_path):
    path = lock.run_lock(tmp_path)
    with lock.hold(path, "outer"):
        with lock.hold(path, "inner"):                          # the training a sweep job calls
            assert json.loads(path.read_text())["command"] == "outer"
        caught = []
        thread = threading.Thread(target=lambda: caught.append(_try(path)))
        thread.start()
        thread.join()
        assert caught == ["Locked"]
    assert not path.exists()


def _try(path: Path) -> str:
    try:
        with lock.hold(path, "another thread"):
            return "held"
    except lock.Locked:
        return "Locked"


def _grid_jobs(out: Path, steps: int = 60) -> list[sweep.SweepJob]:
    configs = [grid_config(t, "dlr", "torch", 8, steps, 0, **TINY) for t in ("shift", "cumsum")]
    return [sweep.SweepJob(f"{c.task}-dlr", out / f"{c.task}-dlr", grid_row, (c.to_dict(), str(out / f"{c.task}-dlr")),
                           {"grid": c.to_dict()}) for c in configs]


def test_two_drivers_over_the_same_jobs_train_each_once_and_one_out_has_one_driver(tmp_path, capfd):
    """Two drivers at once (threads: two writers, as two processes are), each with its own output, over the same job
    directories: each job trains once; the driver that finds a job held waits, then uses its record. A third on the
    first's output is refused in one line."""
    out = tmp_path / "runs"
    rows = {"a": {}, "b": {}}
    started = threading.Event()

    def drive(who: str) -> None:
        started.set()
        sweep.run_jobs(_grid_jobs(out), sweep.Executor("serial", retries=0, progress=False),
                       lambda job, row, reused: rows[who].__setitem__(job.name, row), folder=out,
                       lock=tmp_path / f"record-{who}.json")

    threads = [threading.Thread(target=drive, args=(who,)) for who in ("a", "b")]
    for t in threads:
        t.start()
    started.wait()
    deadline = time.monotonic() + 60
    while lock.holder(lock.output_lock(tmp_path / "record-a.json")) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(sweep.LinrnnError, match=r"record-a.json: another driver is running this sweep \(pid \d+ .*\); "
                                                r"wait for it to end \(linrnn runs list .*runs shows where its jobs "
                                                r"are\), or stop it"):
        sweep.run_jobs(_grid_jobs(out), sweep.Executor("serial", progress=False), print, folder=out,
                       lock=tmp_path / "record-a.json")
    for t in threads:
        t.join()
    assert untimed(rows["a"].values()) == untimed(rows["b"].values()) and len(rows["a"]) == 2
    for job in _grid_jobs(out):
        log = [json.loads(line) for line in (job.folder / "metrics.jsonl").read_text().splitlines()]
        assert [line["step"] for line in log if "loss" in line] == list(range(1, 61))      # each step once
    assert "its record was written by another process meanwhile; nothing to run" in capfd.readouterr().err


# -- a killed driver --------------------------------------------------------------------------------------------

def test_a_killed_local_driver_takes_its_worker_and_the_rerun_at_once_trains_each_step_once(tmp_path):
    out = tmp_path / "grid"
    argv = ["tasks", "grid", "--tasks", "shift", "--models", "dlr", "--length", "8", "--steps", "300",
            "--set", "d_model=8", "--set", "batch_size=2", "--set", "eval_batches=1", "--set", "mixer.d_state=8",
            "--out", out, "--executor", "local:1", "--checkpoint-minutes", "0.005"]
    driver = linrnn(*argv)
    try:
        logs = [out / "shift-dlr-torch-L8-s0" / "metrics.jsonl"]
        deadline = time.monotonic() + 120
        while not all(p.exists() and p.stat().st_size > 1000 for p in logs) and driver.poll() is None:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        workers = [int(m) for p in logs for m in re.findall(r"in process (\d+)", (p.parent / "job.log").read_text())]
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        driver.kill()
    again = linrnn(*argv)                                    # at once: the dying workers hold their directories
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert not any(_alive(pid) for pid in workers)
    for p in logs:
        text = (p.parent / "job.log").read_text()
        assert re.search(r"saved the checkpoint at step [1-9]\d* on a signal", text), text
        assert re.search(r"resuming from the checkpoint at step [1-9]", text), text
        steps = [json.loads(line)["step"] for line in p.read_text().splitlines() if '"loss"' in line]
        assert steps == list(range(1, 301))
    serial = run_grid(["shift"], ["dlr"], "torch", length=8, steps=300, out_dir=tmp_path / "serial", **TINY)
    stored = json.loads((out / "grid.json").read_text())["rows"]
    assert untimed(stored) == untimed(serial)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


# -- damaged files ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("undisturbed") / "run"
    train(TrainConfig(**CONFIG), out, progress=False)
    return out


def _half_done(out: Path) -> None:
    train(TrainConfig(**CONFIG), out, stop_after=7, progress=False)      # checkpoints at 3, 6 and 7 (its end)


def test_a_half_written_last_line_of_the_log_is_dropped_and_said(tmp_path, undisturbed, capfd):
    _half_done(tmp_path)
    with open(tmp_path / "metrics.jsonl", "a") as log:
        log.write('{"step": 8, "loss": 0.12')                           # what kill -9 mid-write leaves
    train(TrainConfig(**CONFIG), tmp_path, resume=True, progress=False)
    err = capfd.readouterr().err
    assert f"{tmp_path / 'metrics.jsonl'}: dropped its half-written last line" in err
    same_run(tmp_path, undisturbed)


def test_a_damaged_line_inside_the_log_trains_the_run_afresh_keeping_the_log(tmp_path, undisturbed, capfd):
    _half_done(tmp_path)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines[:2] + ["{not json"] + lines[3:]) + "\n")
    train(TrainConfig(**CONFIG), tmp_path, resume=True, progress=False)
    err = capfd.readouterr().err
    assert "metrics.jsonl: line 3 is damaged (JSONDecodeError); the log cannot be kept" in err
    assert "metrics.jsonl moved to metrics.jsonl.damaged-1; training from step 0" in err
    assert "{not json" in (tmp_path / "metrics.jsonl.damaged-1").read_text()
    same_run(tmp_path, undisturbed)


@pytest.mark.parametrize("damaged", [("checkpoint.npz",), ("checkpoint.npz", "checkpoint.previous.npz")])
def test_a_truncated_checkpoint_resumes_from_the_one_before_or_from_step_0(tmp_path, undisturbed, capfd, damaged):
    _half_done(tmp_path)
    for name in damaged:
        data = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(data[: len(data) // 2])
    train(TrainConfig(**CONFIG), tmp_path, resume=True, progress=False)
    err = capfd.readouterr().err
    for name in damaged:
        assert f"{tmp_path / name}: unreadable (cannot read checkpoint" in err and f"moved to {name}.damaged-1" in err
    if len(damaged) == 1:
        assert "resuming from the checkpoint before the damaged one (checkpoint.previous.npz, step 6)" in err
        assert "resuming from the checkpoint at step 6" in err
    else:
        assert "resuming from the checkpoint at step" not in err
    same_run(tmp_path, undisturbed)


def test_a_finished_runs_truncated_job_and_results_are_written_again(tmp_path, capfd):
    jobs = _grid_jobs(tmp_path, steps=12)
    first = {}
    sweep.run_jobs(jobs, sweep.Executor("serial", progress=False), lambda j, r, _: first.__setitem__(j.name, r))
    for job in jobs:
        for name in (results.JOB_RESULT, results.RUN_RESULTS):
            text = (job.folder / name).read_text()
            (job.folder / name).write_text(text[: len(text) // 2])
    again = {}
    sweep.run_jobs(jobs, sweep.Executor("serial", progress=False), lambda j, r, _: again.__setitem__(j.name, r))
    assert untimed(again.values()) == untimed(first.values())
    assert "results.json: unreadable JSON" in capfd.readouterr().err
    for job in jobs:
        log = [json.loads(line) for line in (job.folder / "metrics.jsonl").read_text().splitlines()]
        assert [line["step"] for line in log if "loss" in line] == list(range(1, 13))     # nothing trained again
        assert results.read(job.folder / results.JOB_RESULT, results.JobRecord).key == job.key


def test_a_job_json_that_is_a_directory_is_set_aside_and_the_job_runs_once(tmp_path, capfd):
    jobs = _grid_jobs(tmp_path, steps=12)
    (jobs[0].folder / results.JOB_RESULT).mkdir(parents=True)
    rows = {}
    sweep.run_jobs(jobs, sweep.Executor("serial", retries=0, progress=False),
                   lambda j, r, _: rows.__setitem__(j.name, r))
    assert f"{jobs[0].folder / results.JOB_RESULT} is not a file; moved to job.json.damaged-1" in capfd.readouterr().err
    assert (jobs[0].folder / "job.json.damaged-1").is_dir()
    assert results.read(jobs[0].folder / results.JOB_RESULT, results.JobRecord).result == rows[jobs[0].name]


def test_damaged_bookkeeping_files_count_as_absent(tmp_path):
    """The SLURM ledger (nothing is followed: the jobs are submitted), the W&B run id (a new one), a lock file a dead
    holder left (taken): garbage in each is never an error."""
    from linrnn.tasks import logsinks, sweep_slurm

    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / sweep_slurm.SUBMITTED).write_text('{"shift-dlr": "12_')
    assert sweep_slurm._Driver(sweep.Executor("slurm", progress=False), tmp_path).submitted() == {}
    (tmp_path / logsinks.WANDB_RUN).write_text("\x00garbage")
    assert len(logsinks.wandb_run_id(tmp_path, fresh=False)) == 16
    (tmp_path / lock.RUN_LOCK).write_text("not a description")
    assert lock.holder(lock.run_lock(tmp_path)) is None
    with lock.hold(lock.run_lock(tmp_path), "a test"):
        assert lock.holder(lock.run_lock(tmp_path))["command"] == "a test"


# -- a changed config is another job --------------------------------------------------------------------------

@pytest.mark.parametrize("change", [{"steps": 7}, {"lr": 3e-3}, {"mixer": {"d_state": 4}}])
def test_a_sweep_run_again_into_the_same_out_with_a_changed_config_reuses_nothing(tmp_path, change):
    """A record or a run directory of another config (steps, learning rate, a mixer field) is never taken for this
    one's: the rerun's rows are those of a fresh run of the changed config, not the first run's."""
    base = dict(length=8, steps=6, **{k: v for k, v in TINY.items() if k != "mixer"})
    mixer = change.get("mixer", TINY["mixer"])
    changed = {**base, **{k: v for k, v in change.items() if k != "mixer"}}
    first = run_grid(["shift"], ["dlr"], "torch", out_dir=tmp_path / "out", mixer=TINY["mixer"], **base)
    again = run_grid(["shift"], ["dlr"], "torch", out_dir=tmp_path / "out", mixer=mixer, **changed)
    fresh = run_grid(["shift"], ["dlr"], "torch", out_dir=tmp_path / "fresh", mixer=mixer, **changed)
    assert untimed(again) == untimed(fresh) and untimed(again) != untimed(first)
    assert again[0]["config"] != first[0]["config"]


# -- one-line errors, quiet pipes, runs list ------------------------------------------------------------------

def test_runs_list_into_a_closed_pipe_is_quiet_and_out_of_memory_is_one_line(tmp_path, cli, monkeypatch):
    for n in range(3):
        train(TrainConfig(**{**CONFIG, "steps": 2, "seed": n}), tmp_path / f"run{n}", progress=False)
    reader = linrnn("runs", "list", tmp_path)
    reader.stdout.close()                                       # `| head` that has read enough
    err = reader.stderr.read()
    assert reader.wait(timeout=120) == 141 and err == "", err
    from linrnn.tasks import runs

    def no_memory(root):
        raise MemoryError("Unable to allocate 15.0 GiB for an array with shape (4, 1048576, 960)")

    monkeypatch.setattr(runs, "table", no_memory)
    line = cli.error_line("runs", "list", tmp_path)
    assert line == ("linrnn runs: error: out of memory (MemoryError: Unable to allocate 15.0 GiB for an array with "
                    "shape (4, 1048576, 960)); run it where there is more memory, or smaller (a smaller batch size "
                    "or length)")


def test_runs_list_says_which_run_a_process_holds_and_where_an_unfinished_one_resumes(tmp_path, cli):
    train(TrainConfig(**CONFIG), tmp_path / "a", stop_after=7, progress=False)
    train(TrainConfig(**{**CONFIG, "checkpoint_every": None}), tmp_path / "b", stop_after=2, progress=False)
    (tmp_path / "b" / "checkpoint.npz").unlink()
    (tmp_path / "b" / "checkpoint.previous.npz").unlink(missing_ok=True)
    _, out, _ = cli.run("runs", "list", tmp_path)
    assert "step 7 of 12 (unfinished; resumes from step 7)" in out
    assert "step 2 of 12 (unfinished; no checkpoint: starts again from step 0)" in out
    with lock.hold(lock.run_lock(tmp_path / "a"), "a test"):      # as a process training it holds it
        _, out, _ = cli.run("runs", "list", tmp_path)
    assert "running, step 7 of 12" in out

"""`--executor slurm` on a real single-node SLURM cluster (the session's `slurm_cluster`, tools/slurm-cluster.sh;
these tests skip, with the reason, where it cannot start), broken on purpose as a shared cluster breaks it.

- One sweep of two slow Shift runs: job A gets SLURM's signal before a time limit twice with `--max-timeouts 1` (the
  first saves its checkpoint on the signal and requeues it, and it resumes from exactly that step; the second ends it
  with one line, its checkpoint kept); job B's process is killed (kill -9), and B is requeued in its own array (the
  same SLURM id) and resumes from its checkpoint. The same command again with more timeouts: a user cancels the
  whole array (`scancel`): one line, not retried. Once more: A finishes. Every row equals the serial run's, bit for
  bit, apart from timing fields; `squeue` names each job after its run; `runs list` shows the SLURM id and state.
- A driver killed right after it submitted, run again at once as two drivers over the same jobs (one on its output,
  one on another): both follow the jobs SLURM holds, nothing is submitted twice, the rows are the serial run's; a
  third driver on a live driver's output is one line.
- A bad partition, an unknown sbatch option, an unreachable controller: one line, exit status 2.
- `linrnn experiment long-shift --scale full`: the jobs ask for what their plan says, the driver warns in one line per
  kind of what the flags cannot fit, measures no trivial baseline itself (a job of the array does) and submits.
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
from linrnn.base.errors import LinrnnError
from linrnn.tasks import lock, sweep, sweep_slurm
from linrnn.tasks.grid import grid_config, grid_row

pytestmark = pytest.mark.slow

SLOW_STEPS = 500        # a few seconds on the 2-core machine: long enough to be interrupted twice
TIMING = {"seconds", "seconds_per_step", "run_dir"}
TINY = dict(mixer={"d_state": 8}, d_model=8, batch_size=2, eval_batches=1)


def jobs(out: Path, names=("slow-a", "slow-b"), steps: int = SLOW_STEPS) -> list[sweep.SweepJob]:
    configs = {"slow-a": grid_config("shift", "dlr", "torch", 8, steps, 0, **TINY),
               "slow-b": grid_config("shift", "lru", "torch", 8, steps, 0, **TINY),
               "quick-a": grid_config("cumsum", "dlr", "torch", 8, 3, 0, **TINY),
               "quick-b": grid_config("cumsum", "lru", "torch", 8, 3, 0, **TINY)}
    return [sweep.SweepJob(n, out / n, grid_row, (configs[n].to_dict(), str(out / n)), {"grid": configs[n].to_dict()})
            for n in names]


def gather(todo: list[sweep.SweepJob], executor: sweep.Executor, folder: Path, lock: Path | None = None) -> dict:
    rows = {}
    sweep.run_jobs(todo, executor, lambda job, row, reused: rows.__setitem__(job.name, row), folder=folder, lock=lock)
    return {name: {k: v for k, v in row.items() if k not in TIMING} for name, row in rows.items()}


def slurm(retries: int = 1, checkpoint_seconds: float = 0.3, **kwargs) -> sweep.Executor:
    return sweep.Executor("slurm", retries=retries, checkpoint_seconds=checkpoint_seconds, progress=False,
                          cluster=sweep_slurm.cluster_settings(None, {"time": "5", "mem": "500M"}), **kwargs)


def wait_for(what: str, found, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout:.0f} s for {what}")


def ledger(out: Path) -> dict:
    path = out / "slurm" / sweep_slurm.SUBMITTED
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def logs(out: Path, job_id: str) -> str:
    path = out / "slurm" / job_id / f"{job_id}_0_log.out"
    return path.read_text(errors="replace") if path.exists() else ""


def steps_logged(run_dir: Path) -> int:
    log = run_dir / "metrics.jsonl"
    return log.read_text().count('"loss"') if log.exists() else 0


class Driver(threading.Thread):
    """A sweep's driver in a thread: its rows, or the error it ended with."""

    def __init__(self, todo, executor, folder, lock=None):
        super().__init__(daemon=True)
        self.args, self.rows, self.error = (todo, executor, folder, lock), None, None
        self.start()

    def run(self):
        try:
            self.rows = gather(*self.args)
        except Exception as err:
            self.error = err


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("serial")
    return gather(jobs(out, ("slow-a", "slow-b", "quick-a", "quick-b")), sweep.Executor("serial", retries=0,
                                                                                      progress=False), out)


def test_a_sweep_survives_a_killed_job_a_timeout_past_its_limit_and_a_users_scancel(slurm_cluster, serial, tmp_path,
                                                                                    capfd):
    out = tmp_path / "sweep"
    first = Driver(jobs(out), slurm(max_timeouts=1), out)
    ids = wait_for("the submission", lambda: ledger(out) if len(ledger(out)) == 2 else None)
    a, b = out / "slow-a", out / "slow-b"
    # B: its process killed once it has a checkpoint (a lost node, the out-of-memory killer)
    wait_for("B's checkpoint", lambda: (b / "checkpoint.npz").exists())
    started = wait_for("B's process", lambda: re.search(r"slow-b: started .* in process (\d+)",
                                                          logs(out, ids["slow-b"])))
    pid = int(started.group(1))
    os.kill(pid, signal.SIGKILL)
    # A: SLURM's signal before its time limit, twice (--max-timeouts 1)
    wait_for("A's training", lambda: steps_logged(a) > 50)
    subprocess.run(["scancel", "--signal=USR2", ids["slow-a"]], check=True, timeout=60)
    saved = int(wait_for("A's checkpoint on the signal", lambda: re.search(
        r"saved the checkpoint at step (\d+) on a signal", logs(out, ids["slow-a"]))).group(1))
    wait_for("A's resume", lambda: f"resuming from the checkpoint at step {saved}\n" in logs(out, ids["slow-a"]))
    wait_for("A's training again", lambda: steps_logged(a) > saved + 20)
    subprocess.run(["scancel", "--signal=USR2", ids["slow-a"]], check=True, timeout=60)
    first.join(timeout=300)
    assert isinstance(first.error, sweep.SweepFailed), first.error
    assert str(first.error).startswith("1 of 2 jobs failed after 1 attempt(s) each (slow-a); every other job's "
                                       "record is kept")
    err = capfd.readouterr().err
    assert re.search(rf"slow-a failed after 1 attempt\(s\): reached its time limit once more than --max-timeouts "
                     rf"allows \(SLURM job {ids['slow-a']}\); its checkpoint \(step \d+\) is kept", err), err
    assert re.search(rf"slow-b: SLURM: FAILED .*\(SLURM job {ids['slow-b']}\); requeued in its array \(1/1\)", err), err
    record = results.read(b / results.JOB_RESULT, results.JobRecord)
    assert record.slurm_job_id == ids["slow-b"] and record.restarts >= 1 and ledger(out) == ids   # the same job
    assert re.search(r"resuming from the checkpoint at step [1-9]", logs(out, ids["slow-b"]))
    names = subprocess.run(["squeue", "-h", "-t", "all", "-j", ids["slow-b"], "-o", "%j"], capture_output=True,
                           text=True, timeout=60).stdout.split()
    assert names == ["linrnn-slow-b"]

    # the same command with more timeouts; a user cancels the whole array: one line, not retried
    second = Driver(jobs(out), slurm(max_timeouts=3), out)
    again = wait_for("A's new job", lambda: ledger(out)["slow-a"] if ledger(out)["slow-a"] != ids["slow-a"] else None)
    wait_for("A's training", lambda: "resuming from the checkpoint at step" in logs(out, again)
             and steps_logged(a) > saved + 40)
    subprocess.run(["scancel", again.split("_")[0]], check=True, timeout=60)
    second.join(timeout=300)
    stopped = int(wait_for("A's checkpoint on scancel's SIGTERM", lambda: re.search(
        r"saved the checkpoint at step (\d+) on a signal", logs(out, again))).group(1))
    assert isinstance(second.error, sweep.SweepCancelled), second.error
    assert str(second.error) == ("1 of 2 jobs were cancelled (scancel) and not run again (slow-a); every other job's "
                                 "record is kept: run the same command again to run only these (each resumes from "
                                 "its checkpoint)")
    assert "requeued" not in capfd.readouterr().err
    listed = subprocess.run(["python", "-m", "linrnn", "runs", "list", str(out)], capture_output=True, text=True,
                            timeout=120).stdout
    assert re.search(rf"slow-a .* {re.escape(again)} CANCELLED", listed) and \
        re.search(rf"slow-b .*finished.* {re.escape(ids['slow-b'])} (COMPLETED|RUNNING)", listed), listed

    # once more: A resumes from the step it saved when cancelled, and finishes; every row is the serial run's
    rows = gather(jobs(out), slurm(), out)
    assert rows == {name: serial[name] for name in ("slow-a", "slow-b")}
    assert f"resuming from the checkpoint at step {stopped}\n" in logs(out, ledger(out)["slow-a"])
    for run in (a, b):
        assert steps_logged(run) == SLOW_STEPS


DRIVE = """
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("sweep_slurm_test", sys.argv[1])
test = importlib.util.module_from_spec(spec)
spec.loader.exec_module(test)
test.gather(test.jobs(Path(sys.argv[2]), ("quick-a", "quick-b")), test.slurm(), Path(sys.argv[2]), Path(sys.argv[3]))
"""


def test_a_killed_driver_rerun_at_once_and_two_drivers_together_submit_each_job_once(slurm_cluster, serial, tmp_path,
                                                                                      capfd):
    """A driver killed (kill -9) right after it submitted; at once two drivers over the same jobs, one on the dead
    driver's output and one on its own: both follow the jobs SLURM holds (nothing is submitted again), and a third on
    a live driver's output is one line."""
    out, quick = tmp_path / "sweep", ("quick-a", "quick-b")
    first = subprocess.Popen([sys.executable, "-c", DRIVE, __file__, str(out), str(tmp_path / "one.json")],
                             cwd=Path(__file__).resolve().parents[2])
    try:
        ids = wait_for("the submission", lambda: ledger(out) if len(ledger(out)) == 2 else None)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        first.kill()
    one = Driver(jobs(out, quick), slurm(), out, lock=tmp_path / "one.json")
    two = Driver(jobs(out, quick), slurm(), out, lock=tmp_path / "two.json")
    held = lock.output_lock(tmp_path / "one.json")
    wait_for("the dead driver's output held again", lambda: lock.holder(held) is not None)
    with pytest.raises(LinrnnError, match=r"one.json: another driver is running this sweep \(pid \d+"):
        gather(jobs(out, quick), slurm(), out, lock=tmp_path / "one.json")
    one.join(timeout=300)
    two.join(timeout=300)
    assert one.error is None and two.error is None, (one.error, two.error)
    assert one.rows == two.rows == {name: serial[name] for name in quick}
    assert ledger(out) == ids                                        # nothing submitted twice
    assert capfd.readouterr().err.count("following SLURM job") >= 2


@pytest.mark.parametrize("flags, expected", [
    (["--partition", "nosuch"], r"--executor slurm: sbatch refused the jobs: .*invalid partition"),
    (["--sbatch", "nosuchoption=1"], r"--executor slurm: sbatch refused the jobs: .*unrecognized option "
                                     r"'--nosuchoption=1'"),
])
def test_what_sbatch_refuses_is_one_line(slurm_cluster, tmp_path, cli, flags, expected):
    line = cli.error_line("tasks", "grid", "--tasks", "cumsum", "--models", "dlr", "--length", "8", "--steps", "2",
                          "--out", tmp_path / "g", "--executor", "slurm", *flags)
    assert re.search(expected, line, re.IGNORECASE), line


def test_an_unreachable_controller_is_one_line(slurm_cluster, tmp_path, cli, monkeypatch):
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text()
    bad = tmp_path / "slurm.conf"
    bad.write_text(re.sub(r"(?m)^SlurmctldHost=.*$", "SlurmctldHost=nohost(127.0.0.1)", conf)
                   + "\nSlurmctldPort=6999\n")
    monkeypatch.setenv("SLURM_CONF", str(bad))
    line = cli.error_line("tasks", "grid", "--tasks", "cumsum", "--models", "dlr", "--length", "8", "--steps", "2",
                          "--out", tmp_path / "g", "--executor", "slurm")
    assert line == "linrnn tasks: error: --executor slurm: SLURM's controller does not answer (Slurmctld(primary) " \
                   "at nohost is DOWN)", line


def test_the_papers_scale_asks_for_its_plan_warns_what_cannot_fit_and_measures_nothing_itself(slurm_cluster, tmp_path,
                                                                                             capfd, monkeypatch):
    """long-shift at L = 16,384 (--only): the trivial baseline is a job of the array, not the driver's (at 2^20 it
    took 15 GB); the jobs are held (`--sbatch hold`), their scripts read, then the array is cancelled."""
    from linrnn.tasks import trivial

    monkeypatch.setattr(trivial, "synthetic_baseline", lambda *a, **k: pytest.fail("the driver measured a baseline"))
    cluster = tmp_path / "cluster.toml"
    cluster.write_text("[sbatch]\nhold = true\n")
    argv = ["experiment", "long-shift", "--scale", "full", "--data", tmp_path / "data", "--out", tmp_path / "rec.json",
            "--only", "length=16384", "--only", "seed=0", "--executor", "slurm", "--cluster", cluster, "--time", "20",
            "--mem", "2G", "--gpus-per-job", "0", "--quiet"]        # (this cluster has no GPU)
    from linrnn.cli import main

    driver = threading.Thread(target=lambda: main([str(a) for a in argv]), daemon=True)
    driver.start()
    runs = tmp_path / "data" / "runs" / "papers-scale" / "long-shift"
    ids = wait_for("the submission", lambda: ledger(runs) if len(ledger(runs)) == 5 else None)
    scripts = {name: (runs / "slurm" / base / f"{base}_submission.sh").read_text()
               for name, base in ((n, i.split("_")[0]) for n, i in ids.items())}
    subprocess.run(["scancel", *sorted({i.split("_")[0] for i in ids.values()})], check=True, timeout=60)
    driver.join(timeout=120)
    err = capfd.readouterr().err
    [bar] = [n for n in ids if n.startswith("trivial-shift-L16384-")]
    assert "#SBATCH --gres" not in scripts[bar] and "#SBATCH --time=20" in scripts[bar]
    run = scripts["shift-dlr-synthetic-16384-0"]
    assert "#SBATCH --mem=2G" in run and "#SBATCH --time=20" in run and "#SBATCH --hold" in run
    assert "#SBATCH --job-name=linrnn-long-shift" in run and "#SBATCH --gpus-per-node=0" in run
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert [w.split(" run(s)")[0] for w in warned] == ["warning: 4", "warning: 4", "warning: 5"], warned
    assert re.search(r"need up to 1\.\d h each by the plan, above the time limit 00:20:00 \(--time\): each is "
                     r"requeued at its limit about [45] time\(s\)", warned[0]), warned[0]
    assert "planned on a GPU, asked for none (--gpus-per-job 0)" in warned[1]
    assert "planned at 16 GiB of memory, asked for 2G: they may run out of memory" in warned[2]
    assert "jobs were cancelled (scancel) and not run again" in err

"""`--executor slurm` on a real single-node SLURM cluster (the session's `slurm_cluster`, tools/slurm-cluster.sh;
these tests skip, with the reason, where it cannot start).

One sweep of four synthetic-task jobs through submitit's job array: two quick CumSum runs, and two slow Shift runs
that checkpoint every 0.3 s. While it runs, one slow job is cancelled (`scancel`) once it has a checkpoint: the
driver reports it, submits it again, and the new job resumes from that checkpoint; the other is requeued
(`scontrol requeue`, as a preemption does): SLURM starts it again and it resumes from its checkpoint, not from step
0. The gathered rows equal those of the same sweep run serially, apart from timing fields; the records name the
SLURM job and its requeues.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from linrnn.impls import results
from linrnn.tasks import sweep, sweep_slurm
from linrnn.tasks.grid import grid_config, grid_row

pytestmark = pytest.mark.slow

SLOW_STEPS = 2000       # about 6 s on the 2-core machine: longer than the cluster's KillWait (3 s)
TIMING = {"seconds", "seconds_per_step", "run_dir"}


def jobs(out: Path) -> list[sweep.SweepJob]:
    tiny = dict(mixer={"d_state": 8}, d_model=8, batch_size=2, eval_batches=1)
    configs = {"slow-cancelled": grid_config("shift", "dlr", "torch", 8, SLOW_STEPS, 0, **tiny),
               "slow-requeued": grid_config("shift", "lru", "torch", 8, SLOW_STEPS, 0, **tiny),
               "quick-dlr": grid_config("cumsum", "dlr", "torch", 8, 3, 0, **tiny),
               "quick-lru": grid_config("cumsum", "lru", "torch", 8, 3, 0, **tiny)}
    return [sweep.SweepJob(name, out / name, grid_row, (c.to_dict(), str(out / name)), {"grid": c.to_dict()})
            for name, c in configs.items()]


def gather(out: Path, executor: sweep.Executor) -> dict[str, dict]:
    rows = {}
    sweep.run_jobs(jobs(out), executor, lambda job, row, reused: rows.__setitem__(job.name, row), folder=out)
    return {name: {k: v for k, v in row.items() if k not in TIMING} for name, row in rows.items()}


def interfere(out: Path, stop: threading.Event, done: dict) -> None:
    """Once each slow job has a checkpoint: scancel the one, scontrol requeue the other (their SLURM ids from the
    sweep's submitted.json)."""
    actions = {"slow-cancelled": ["scancel"], "slow-requeued": ["scontrol", "requeue"]}
    while not stop.is_set() and len(done) < len(actions):
        ledger = out / "slurm" / sweep_slurm.SUBMITTED
        submitted = json.loads(ledger.read_text()) if ledger.exists() else {}
        for name, command in actions.items():
            if name not in done and name in submitted and (out / name / "checkpoint.npz").exists():
                subprocess.run(command + [submitted[name]], check=True, capture_output=True, timeout=60)
                done[name] = submitted[name]
        time.sleep(0.1)


def test_a_sweep_on_slurm_survives_a_cancel_and_a_requeue_and_gathers_the_serial_rows(slurm_cluster, tmp_path,
                                                                                        capfd):
    executor = sweep.Executor("slurm", retries=1, checkpoint_seconds=0.3, progress=False,
                              cluster=sweep_slurm.cluster_settings(None, {"time": "60", "mem": "1G"}))
    out = tmp_path / "slurm"
    stop, done = threading.Event(), {}
    watcher = threading.Thread(target=interfere, args=(out, stop, done), daemon=True)
    watcher.start()
    try:
        on_slurm = gather(out, executor)
    finally:
        stop.set()
        watcher.join()
    assert set(done) == {"slow-cancelled", "slow-requeued"}, "a slow job finished before it could be interrupted"
    err = capfd.readouterr().err
    submitted = json.loads((out / "slurm" / sweep_slurm.SUBMITTED).read_text())
    assert re.search(rf"slow-cancelled: SLURM job {re.escape(done['slow-cancelled'])}: SLURM ended it \(CANCELLED.*\); "
                     r"retrying \(1/1\)", err), err
    assert submitted["slow-cancelled"] != done["slow-cancelled"]          # submitted again, as a new job
    for name in ("quick-dlr", "quick-lru", "slow-cancelled", "slow-requeued"):
        assert f"{name}: SLURM job " in err and ", log " in err
    records = {name: results.read(out / name / results.JOB_RESULT, results.JobRecord) for name in on_slurm}
    assert all(r.executor == "slurm" and r.threads == 1 and r.slurm_job_id for r in records.values())
    assert records["slow-cancelled"].slurm_job_id == submitted["slow-cancelled"]
    assert records["slow-requeued"].slurm_job_id == done["slow-requeued"] and records["slow-requeued"].restarts >= 1
    for name in ("slow-cancelled", "slow-requeued"):       # each resumed from its checkpoint, not from step 0
        logs = "".join(p.read_text() for p in (out / "slurm").glob("*/*_log.out"))
        assert re.search(rf"{re.escape(str(out / name))}: resuming from the checkpoint at step [1-9]\d*", logs), name
        run = results.read(out / name / results.RUN_RESULTS, results.RunRecord)
        assert run.steps == SLOW_STEPS and len(run.train_loss) == SLOW_STEPS
    # the same sweep serially, here: the same rows to the bit
    serial = gather(tmp_path / "serial", sweep.Executor("serial", retries=0, progress=False))
    assert on_slurm == serial

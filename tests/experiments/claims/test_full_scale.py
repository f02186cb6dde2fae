"""`linrnn experiment NAME --scale full`: the papers' scale for R6, D1, D2, D5, R7 and D6.

- `--dry-run` lists every run with its steps and GPU-hours, and the GPU-hours of each claim and in all; the seconds
  per step come from a measured file where there is one, else from S4's published epoch times, else scaled from the
  ListOps one by the work of a step; `--ledger` adds each claim's seeds for 80 % power;
- `--measure-steps` times a few steps of each run through the executor and writes the file `--step-times` reads;
- without `--dry-run` the runs go through the same runner as this machine's experiments, on the papers' data under
  --data, into a record of the same kind (`experiment-NAME-full.json`);
- every misuse is one line.
"""

from __future__ import annotations

import json
import re

import pytest

from linrnn.experiments.claims import full_scale
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.grid import grid_config

GPU_HOURS = re.compile(r"^(?P<claim>[RD]\d): (?P<hours>[\d,]+) GPU-hours at 3 seeds per arm", re.M)


def test_the_plan_gives_gpu_hours_for_every_claim_a_cluster_must_settle(cli):
    found = {}
    for name in ("lra-reduced", "speech", "subtrees-segmentation", "long-shift"):
        code, out, err = cli.run("experiment", name, "--scale", "full", "--dry-run")
        assert code == 0, err
        found.update({m["claim"]: float(m["hours"].replace(",", "")) for m in GPU_HOURS.finditer(out)})
        runs = [line.split() for line in out.splitlines() if re.match(r"^\S+ +[RD]\d", line)]
        assert len(runs) == len(full_scale.FULL[name]())
        for run, claims, steps, seconds, hours, *source in runs:     # steps, s/step, GPU-hours a seed, the source
            assert int(steps.replace(",", "")) > 0 and float(seconds) > 0 and float(hours.replace(",", "")) >= 0.05
            assert " ".join(source).startswith(("S4's published", "scaled from S4's ListOps epoch")), run
        total = re.search(r"^total: ([\d,]+) GPU-hours", out, re.M)
        assert total and float(total.group(1).replace(",", "")) > 0
    assert set(found) == {"R6", "D1", "D2", "D5", "R7", "D6"} and all(h > 0 for h in found.values())


def test_the_runs_are_the_configs_files_with_the_baselines_through_set():
    jobs = {j.name: j for j in full_scale.lra()}
    assert len(jobs) == 30 and {j.labels["model"] for j in jobs.values()} == {"rotrnn", "lru", "dlr", "s4d", "s5"}
    s4d = jobs["listops-s4d"]
    assert s4d.claims == ("R6", "D1") and s4d.config["model"] == "s4d"
    assert s4d.command == ("linrnn train --config tasks/configs/listops-dlr.toml --data DIR --set 'model=s4d' --out "
                           "runs/listops-s4d")
    dlr = TrainConfig.from_dict(TrainConfig.read(full_scale.CONFIGS / "listops-dlr.toml")).to_dict()
    assert {k: v for k, v in s4d.config.items() if k not in ("model", "mixer")} == \
        {k: v for k, v in dlr.items() if k not in ("model", "mixer")}                  # the DLR file's run
    assert all(s4d.config["mixer"][f] == dlr["mixer"][f] for f in ("d_state", "bidirectional", "dt_min", "dt_max"))
    attention = {j.name: j for j in full_scale.subtrees_segmentation()}["listops-subtrees-attention"]
    assert attention.config["model"] == "attention"
    assert (attention.config["mixer"]["heads"], attention.config["mixer"]["window"]) == (4, 1024)
    d2 = full_scale.long_shift()
    assert {j.labels["length"] for j in d2} == set(full_scale.D2_LENGTHS) and all(j.config["steps"] == 24000 for j in d2)


def test_where_the_seconds_per_step_come_from(tmp_path):
    listops = full_scale.from_file(("R6",), "listops", "lru")
    config = TrainConfig(**listops.config)
    per_epoch = config.data_task.nominal_train // config.batch_size
    assert full_scale.step_seconds(listops, {}) == (15 * 60 / per_epoch, "S4's published listops epoch (T4)")
    text = full_scale.from_file(("R6",), "text", "lru")
    seconds, source = full_scale.step_seconds(text, {})
    params, tokens, _ = full_scale._work(TrainConfig(**text.config))
    a_params, a_tokens, _ = full_scale._work(config)
    assert source.startswith("scaled from S4's ListOps epoch (T4)")
    assert seconds == pytest.approx(15 * 60 / per_epoch * params * tokens / (a_params * a_tokens))
    measured = tmp_path / "steps.json"
    measured.write_text(json.dumps({"step_times": {"text-lru": {"seconds_per_step": 0.25, "device": "cuda (H100)"}}}))
    assert full_scale.step_seconds(text, full_scale.read_step_times(str(measured))) == (0.25, "measured (cuda (H100))")


def test_the_ledger_adds_the_seeds_for_power(tmp_path, cli):
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps([{"claim": "R7", "parts": [{"power": {"seeds_per_arm": 9}},
                                                            {"power": {"seeds_per_arm": None}}, {"power": None}]},
                                  {"claim": "D6", "parts": []}]))
    code, out, err = cli.run("experiment", "speech", "--scale", "full", "--dry-run", "--ledger", ledger)
    assert code == 0, err
    r7 = next(line for line in out.splitlines() if line.startswith("R7:"))
    hours = float(GPU_HOURS.search(r7).group("hours").replace(",", ""))
    at = float(re.search(r"9 seeds per arm for 80 % power .*: ([\d,]+) GPU-hours", r7).group(1).replace(",", ""))
    assert at == pytest.approx(hours * 9 / 3, abs=1.5)
    assert "power" not in next(line for line in out.splitlines() if line.startswith("D6:"))


def tiny_plan() -> list[full_scale.FullJob]:
    config = grid_config("cumsum", "dlr", "torch", 8, 3, 0, mixer={"d_state": 8}, d_model=8, batch_size=2,
                         eval_batches=1)
    return [full_scale.FullJob(("D2",), "cumsum-dlr", config.to_dict(), "linrnn tasks grid ...",
                               {"task": "cumsum", "model": "dlr", "init": "synthetic", "length": 8})]


def test_measured_steps_feed_the_plan_and_the_full_scale_runs_write_a_record(tmp_path, cli, monkeypatch):
    monkeypatch.setitem(full_scale.FULL, "long-shift", tiny_plan)
    steps = tmp_path / "steps.json"
    code, out, err = cli.run("experiment", "long-shift", "--scale", "full", "--data", tmp_path / "data",
                             "--measure-steps", steps, "--executor", "serial")
    assert code == 0 and "1 runs timed" in out, err
    entry = json.loads(steps.read_text())["step_times"]["cumsum-dlr"]
    assert entry["seconds_per_step"] > 0 and entry["device"] == "cpu" and entry["steps"] == 10
    code, out, err = cli.run("experiment", "long-shift", "--scale", "full", "--dry-run", "--step-times", steps)
    assert code == 0 and re.search(r"^cumsum-dlr +D2 +3 .* measured \(cpu\)$", out, re.M), out
    record_path = tmp_path / "record.json"
    code, out, err = cli.run("experiment", "long-shift", "--scale", "full", "--data", tmp_path / "data", "--seeds", "2",
                             "--out", record_path, "--executor", "serial", "--quiet")
    assert code == 0, err
    record = json.loads(record_path.read_text())
    assert record["experiment"] == "long-shift" and record["complete"] and not record["quick"]
    assert [(r["task"], r["seed"], r["metric"]) for r in record["runs"]] == [("cumsum", 0, "r2"), ("cumsum", 1, "r2")]
    assert record["brief"].startswith("the papers' scale: 1 runs x 2 seeds")
    assert (tmp_path / "data" / "runs" / "papers-scale" / "long-shift" / "cumsum-dlr-synthetic-8-1" / "job.json").exists()


@pytest.mark.parametrize("argv, message", [
    (["speech", "--dry-run"], "--dry-run: expected --scale full with it"),
    (["speech", "--seeds", "5"], "--seeds: expected --scale full with it"),
    (["norm-position", "--scale", "full", "--dry-run"], "--scale full: expected one of lra-reduced, speech, "
                                                        "subtrees-segmentation, long-shift"),
    (["speech", "--scale", "full", "--quick"], "--quick: expected --scale reduced with it"),
    (["speech", "--scale", "full", "--ledger", "x.json"], "--ledger: expected --dry-run with it"),
    (["speech", "--scale", "full", "--dry-run", "--seeds", "0"], "--seeds: expected 1 or more"),
    (["speech", "--scale", "full", "--dry-run", "--step-times", "none.json"], "--step-times: no such file"),
    (["speech", "--scale", "full", "--dry-run", "--ledger", "none.json"], "--ledger: no such file"),
])
def test_misuse_is_one_line(cli, argv, message):
    assert message in cli.error_line("experiment", *argv)


def test_full_scale_runs_need_the_papers_data(tmp_path, cli):
    line = cli.error_line("experiment", "speech", "--scale", "full", "--data", tmp_path / "none", "--executor",
                          "serial")
    assert "--data: expected the papers' data sets under" in line and "found nothing" in line


def test_a_full_scale_run_serves_only_claims_its_experiment_settles():
    """A full-scale run names the claims it is evidence for; each is one its experiment declares (`settles`), so the
    plan's GPU-hours per claim and the ledger read the same wiring."""
    from linrnn.experiments.claims import EXPERIMENTS

    for name, runs in full_scale.FULL.items():
        declared = set(EXPERIMENTS[name].claims)
        for job in runs():
            assert job.claims and set(job.claims) <= declared, (name, job.name, job.claims, declared)

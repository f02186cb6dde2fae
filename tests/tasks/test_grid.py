"""`run_grid` and `linrnn tasks grid`: one row per run with finite metrics, the JSON file, one-line errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from linrnn.base import results
from linrnn.impls import specs
from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.cli import main
from linrnn.tasks import checkpoint
from linrnn.tasks.config import TrainConfig, model_defaults
from linrnn.tasks.grid import grid_config, run_grid, thin

TINY = dict(d_model=8, batch_size=2, eval_batches=1)     # every run a fraction of a second


def test_grid_gives_one_row_per_run_with_finite_metrics_and_run_directories(tmp_path):
    calls = []
    rows = run_grid(["shift", "cumsum"], ["dlr", "lru"], "torch", length=8, steps=4, out_dir=tmp_path,
                    seeds=(0, 1), progress=lambda done, total, what: calls.append((done, total, what)), **TINY)
    assert [(r["task"], r["model"], r["seed"]) for r in rows] == [
        (t, m, s) for t in ("shift", "cumsum") for m in ("dlr", "lru") for s in (0, 1)]
    for r in rows:
        assert r["status"] == "ok" and r["error"] is None
        assert math.isfinite(r["mse"]) and math.isfinite(r["r2"]) and r["seconds_per_step"] > 0
        assert r["evaluations"][-1] == {"step": 4, "mse": r["mse"], "r2": r["r2"]}
        assert r["train_loss"]["step"][-1] == 4 and all(math.isfinite(x) for x in r["train_loss"]["loss"])
        assert r["config"]["d_model"] == 8 and r["config"]["length"] == 8 and r["config"]["steps"] == 4
        assert Path(r["run_dir"]).parent == tmp_path and (Path(r["run_dir"]) / "results.json").exists()
    assert calls[0][:2] == (0, 8) and calls[-1] == (8, 8, "done")


def test_defaults_give_every_model_the_same_number_of_complex_modes_and_dlr_n_at_least_l():
    for L in (16, 64, 300):
        dlr, lru, rot = (model_defaults(m, L) for m in ("dlr", "lru", "rotrnn"))
        assert dlr["d_state"] >= L and dlr["dt_min"] == dlr["dt_max"] == 1e-5
        assert lru["d_state"] == dlr["d_state"] == rot["heads"] * rot["d_state"] // 2
    cfg = grid_config("shift", "rotrnn", "jax", 64, 200, seed=3, lr=1e-3)
    assert isinstance(cfg, TrainConfig) and cfg.lr == 1e-3 and cfg.seed == 3 and cfg.warmup_steps == 20


def test_thin_keeps_window_means_and_the_last_step():
    curve = thin([float(k) for k in range(10)], points=3)
    assert curve == {"step": [4, 8, 10], "loss": [1.5, 5.5, 8.5]}
    assert thin([]) == {"step": [], "loss": []}


def test_bad_names_and_overrides_fail_before_any_run(tmp_path):
    with pytest.raises(LinrnnError, match="tasks: expected names from"):
        run_grid(["shift", "nope"], ["dlr"], "torch", 8, 2, tmp_path)
    with pytest.raises(LinrnnError, match="backend: expected one of torch, jax"):
        run_grid(["shift"], ["dlr"], "tf", 8, 2, tmp_path)
    with pytest.raises(LinrnnError, match="lr: expected a number"):
        run_grid(["shift"], ["dlr"], "torch", 8, 2, tmp_path, lr=-1.0)
    assert not any(tmp_path.iterdir())


def test_cli_prints_the_table_and_writes_the_rows(tmp_path, capsys):
    out, rows_file = tmp_path / "runs", tmp_path / "rows.json"
    status = main(["tasks", "grid", "--tasks", "shift,context_shift", "--models", "dlr,rotrnn", "--length", "8",
                   "--steps", "3", "--out", str(out), "--json", str(rows_file), "--quiet",
                   "--set", "d_model=8", "--set", "batch_size=2", "--set", "eval_batches=1",
                   "--set", "mixer.d_state=6", "--set", "gamma_max=0.99995"])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task", "model", "seed", "R^2", "MSE", "ms/step"]
    assert [line.split()[:2] for line in lines[1:5]] == [["shift", "dlr"], ["shift", "rotrnn"],
                                                         ["context_shift", "dlr"], ["context_shift", "rotrnn"]]
    assert str(rows_file) in lines[-1]
    record = results.to_dict(results.read(rows_file, results.GridRecord))         # a grid record, every field checked
    assert len(record["rows"]) == 4 and record["command"].startswith("linrnn tasks grid --tasks shift,context_shift")
    assert record["machine"]["cpus"] >= 1 and record["rows"][0]["config"]["batch_size"] == 2
    # a mixer field given to the grid applies to each model that has it: d_state to both, gamma_max to RotRNN
    mixers = {row["model"]: row["config"]["mixer"] for row in record["rows"]}
    assert mixers["dlr"]["d_state"] == mixers["rotrnn"]["d_state"] == 6 and mixers["rotrnn"]["gamma_max"] == 0.99995
    assert "gamma_max" not in mixers["dlr"]


@pytest.mark.parametrize("flags, message", [
    (["--tasks", "nope"], "--tasks: expected a comma-separated list of"),
    (["--models", "s4"], f"--models: expected a comma-separated list of {', '.join(specs.kinds())}"),
    (["--length", "abc"], "--length: expected an integer, found 'abc'"),
    (["--length", "4"], "length: expected an integer >= 8, found 4"),
    (["--steps", "0"], "steps: expected an integer >= 1, found 0"),
    (["--seeds", "0,x"], "--seeds: expected an integer, found 'x'"),
    (["--backend", "tf"], "backend: expected one of torch, jax, found 'tf'"),
    (["--set", "lr"], "--set: expected FIELD=VALUE"),
    (["--set", "seed=2"], "--set: expected FIELD=VALUE"),
    (["--set", "nope=2"], "--set: expected FIELD=VALUE"),
    (["--set", "lr=fast"], "--set lr: expected a number, found 'fast'"),
    (["--models", "dlr,lru", "--set", "gamma_min=0.5"], "mixer: no model of the grid (dlr, lru) has the field gamma_min"),
    (["--models", "lru", "--set", "mixer.d_state=x"], "--set mixer.d_state: expected an integer, found 'x'"),
])
def test_cli_rejects_bad_options_with_one_line(tmp_path, capsys, flags, message):
    argv = {"--tasks": "shift", "--length": "8", "--steps": "2", "--out": str(tmp_path / "runs")}
    for flag, value in zip(flags[::2], flags[1::2]):
        argv[flag] = value
    args = ["tasks", "grid"] + [x for kv in argv.items() for x in kv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("linrnn tasks: error: ") and message in err
    assert not (tmp_path / "runs").exists()


def test_s5_trains_through_the_grid_and_both_frameworks_take_the_same_steps(tmp_path):
    """S5's recurrence group (Lambda, B~, log_step: B is in it, unlike the LRU's) gets its own rate and no decay."""
    rows = {backend: run_grid(["shift"], ["s5"], backend, length=8, steps=4, out_dir=tmp_path / backend,
                              mixer={"d_state": 4}, dtype="float64", recurrence_lr=3e-3, weight_decay=0.1, **TINY)[0]
            for backend in ("torch", "jax")}
    for row in rows.values():
        assert row["status"] == "ok" and row["evaluations"][-1]["mse"] < row["evaluations"][0]["mse"]
    assert_close("s5 validation mse", [e["mse"] for e in rows["torch"]["evaluations"]],
                 [e["mse"] for e in rows["jax"]["evaluations"]], "gradient", "float64", 8)
    bundles = {b: checkpoint.load(Path(row["run_dir"]) / "checkpoint.npz").bundle for b, row in rows.items()}
    for key, value in bundles["torch"].params.items():
        assert_close(f"{key} after 4 steps", value, bundles["jax"].params[key], "gradient", "float64", 8)


def test_s4d_trains_through_the_grid_and_both_frameworks_take_the_same_steps(tmp_path):
    """S4D in its default mode (conv, the s4 code's route), its kernel parameters (log_dt, A) in their own group."""
    rows = {backend: run_grid(["shift"], ["s4d"], backend, length=8, steps=4, out_dir=tmp_path / backend,
                              mixer={"d_state": 3}, dtype="float64", recurrence_lr=3e-3, weight_decay=0.1, **TINY)[0]
            for backend in ("torch", "jax")}
    for row in rows.values():
        assert row["status"] == "ok" and row["evaluations"][-1]["mse"] < row["evaluations"][0]["mse"]
    assert TrainConfig(**rows["torch"]["config"]).compute_mode == "conv"
    bundles = {b: checkpoint.load(Path(row["run_dir"]) / "checkpoint.npz").bundle for b, row in rows.items()}
    for key, value in bundles["torch"].params.items():
        assert_close(f"{key} after 4 steps", value, bundles["jax"].params[key], "gradient", "float64", 8)


def test_attention_trains_through_the_grid_and_both_frameworks_take_the_same_steps(tmp_path):
    """Local causal attention (window 3, L = 8 not a multiple) in its default mode (chunked), post-norm (pre-norm:
    tests/impls/test_attention.py's model through every backend)."""
    rows = {backend: run_grid(["shift"], ["attention"], backend, length=8, steps=4, out_dir=tmp_path / backend,
                              mixer={"heads": 2, "window": 3}, prenorm=False, dtype="float64", weight_decay=0.1,
                              **TINY)[0]
            for backend in ("torch", "jax")}
    for row in rows.values():
        assert row["status"] == "ok" and row["evaluations"][-1]["mse"] < row["evaluations"][0]["mse"]
    config = TrainConfig(**rows["torch"]["config"])
    assert config.compute_mode == "chunked" and config.model_config().prenorm is False
    bundles = {b: checkpoint.load(Path(row["run_dir"]) / "checkpoint.npz").bundle for b, row in rows.items()}
    for key, value in bundles["torch"].params.items():
        assert_close(f"{key} after 4 steps", value, bundles["jax"].params[key], "gradient", "float64", 8)

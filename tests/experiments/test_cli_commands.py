"""`linrnn bench torch|parts|jax|training-speed` and `linrnn reduced-training`: their help, their wiring to the
harnesses (the tables replaced by recorders: no timing runs here), and a bad input's one line and exit status 2.
The stored records' `command` is checked where a record is written (tests/reports/test_training_speed.py,
tests/experiments/test_reduced_training.py)."""

from __future__ import annotations

import pytest

from linrnn.cli import main

HELP = {
    ("bench",): ["torch", "parts", "jax", "training-speed", "growth"],
    ("bench", "torch"): ["--threads"],
    ("bench", "parts"): ["--rounds"],
    ("bench", "jax"): ["--B", "--L", "--H", "--N", "--heads", "--dtype", "--repeats"],
    ("bench", "training-speed"): ["--out", "--device", "--lengths", "--budget-s", "--interleaved-rounds",
                                  "--growth-rounds", "--no-peers", "--no-memory"],
    ("bench", "growth"): ["--rounds"],
    ("reduced-training",): ["--data", "--out", "--only", "--runs", "--quiet"],
}


@pytest.mark.parametrize("command", list(HELP), ids=lambda c: "linrnn " + " ".join(c))   # not "bench": a marker
def test_help_names_every_option(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"usage: linrnn {' '.join(command)}"), out
    assert all(option in out for option in HELP[command]), out


def test_the_top_level_help_lists_the_new_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "bench" in out and "reduced-training" in out


# the sweep's other options at toy sizes: a check that went missing makes a quick sweep that exits 0, not a long one
TINY_SWEEP = ["--frameworks", "torch", "--mixers", "lru", "--width", "4", "--state", "4", "--heads", "2", "--no-peers",
              "--no-memory", "--interleaved-rounds", "0", "--growth-rounds", "0"]


@pytest.mark.parametrize("argv, message", [
    (["bench", "torch", "--threads", "0"], "--threads: expected 1 or more, found 0"),
    (["bench", "parts", "--rounds", "0"], "--rounds: expected 1 or more, found 0"),
    (["bench", "growth", "--rounds", "0"], "--rounds: expected 1 or more, found 0"),
    (["bench", "jax", "--L", "0"], "--L: expected 1 or more, found 0"),
    (["bench", "jax", "--dtype", "float16"], "--dtype: expected float32 or float64, found 'float16'"),
    (["bench", "training-speed", *TINY_SWEEP, "--lengths", "0,16"],
     "--lengths: expected positive integers, found '0,16'"),
    (["bench", "training-speed", *TINY_SWEEP, "--lengths", "16", "--batch", "0"], "--batch: expected 1 or more, found 0"),
    (["bench", "training-speed", *TINY_SWEEP, "--lengths", "16", "--budget-s", "-1"],
     "--budget-s: expected a positive number of seconds"),
    (["reduced-training", "--data", "D", "--out", "O", "--only", "nope"], "--only: expected names among"),
])
def test_a_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"linrnn {argv[0]}: error: {message}"), err
    assert list(tmp_path.iterdir()) == []                        # refused before anything is written


def test_the_bench_tables_get_the_options(monkeypatch, capsys):
    """Each action calls its harness with the options given (the harness replaced by a recorder)."""
    from linrnn.experiments import training_speed
    from linrnn.verify import bench_jax as jax_bench
    from linrnn.verify import bench_torch as torch_bench

    calls = []
    monkeypatch.setattr(torch_bench, "routes_table", lambda *args: calls.append(("routes", args)) or "routes")
    monkeypatch.setattr(torch_bench, "forward_parts_table", lambda *args: calls.append(("parts", args)) or "parts")
    monkeypatch.setattr(jax_bench, "forward_table", lambda *args: calls.append(("jax", args)) or "jax")
    monkeypatch.setattr(training_speed, "growth_rounds", lambda **kwargs: calls.append(("growth", kwargs)) or ["rows"])
    monkeypatch.setattr(training_speed, "growth_markdown", lambda rows: f"growth-{rows[0]}")
    assert main(["bench", "torch", "--threads", "1"]) == 0
    assert main(["bench", "torch"]) == 0
    assert main(["bench", "parts", "--rounds", "3"]) == 0
    assert main(["bench", "jax", "--B", "2", "--L", "16", "--H", "4", "--N", "6", "--heads", "3", "--dtype", "float64",
                 "--repeats", "2"]) == 0
    assert main(["bench", "growth", "--rounds", "4"]) == 0
    assert calls == [("routes", (1,)), ("routes", (None,)), ("parts", (3,)), ("jax", (2, 16, 4, 6, 3, "float64", 2)),
                     ("growth", {"rounds": 4})]
    assert capsys.readouterr().out.split() == ["routes", "routes", "parts", "jax", "growth-rows"]

"""`linrnn tasks sample`: the file it writes, its one printed line, and its one-line errors; `linrnn train --set`
with the fields of the model's mixer.

Most tests drive `register` through a local parser, as `linrnn.cli` does, so they run while
other areas' `cli` modules are still missing; the tests through `main` skip until those exist.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks import cli
from linrnn.tasks.synthetic import TASKS, make_task


def run_local(argv: list[str]) -> int:
    """Parse with a parser holding only the tasks area, then run the selected command."""
    parser = argparse.ArgumentParser(prog="linrnn")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def sample_argv(out, **flags) -> list[str]:
    values = {"task": "sort", "length": "6", "batch": "3", "seed": "4", "out": str(out)} | flags
    return ["tasks", "sample"] + [item for flag, value in values.items() for item in (f"--{flag}", value)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sample_writes_inputs_targets_mask_of_batch_0_and_prints_one_line(tmp_path, capsys, dtype):
    out = tmp_path / "sort.npz"
    assert run_local(sample_argv(out, dtype=dtype)) == 0
    expected = make_task("sort", 6, seed=4, batch_size=3, dtype=dtype).batch(0)
    with np.load(out, allow_pickle=False) as saved:
        assert sorted(saved.files) == ["inputs", "mask", "targets"]
        for key in saved.files:
            assert saved[key].dtype == getattr(expected, key).dtype, key
            assert np.array_equal(saved[key], getattr(expected, key)), key
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert "(3, 12, 3)" in lines[0] and "(3, 6, 1)" in lines[0] and "(3, 6)" in lines[0] and dtype in lines[0]


def test_sample_writes_the_exact_path_given(tmp_path):
    out = tmp_path / "batch"  # np.savez alone would write batch.npz
    assert run_local(sample_argv(out, task="cumsum")) == 0
    assert os.listdir(tmp_path) == ["batch"]


BAD_FLAGS = [
    (dict(task="nope"), ["task: expected one of", ", ".join(TASKS), "found 'nope'"]),
    (dict(length="abc"), ["--length: expected an integer, found 'abc'"]),
    (dict(length="0"), ["length: expected a positive integer, found 0"]),
    (dict(task="shift", length="4"), ["length: expected an integer >= 8 for task 'shift', found 4"]),
    (dict(batch="0"), ["batch_size: expected a positive integer, found 0"]),
    (dict(batch="2.5"), ["--batch: expected an integer, found '2.5'"]),
    (dict(seed="-3"), ["seed: expected an integer >= 0, found -3"]),
    (dict(dtype="int8"), ["dtype: expected one of float32, float64, found 'int8'"]),
]


@pytest.mark.parametrize("flags, fragments", BAD_FLAGS, ids=[str(flags) for flags, _ in BAD_FLAGS])
def test_bad_flag_values_raise_linrnn_error(tmp_path, flags, fragments):
    with pytest.raises(LinrnnError) as raised:
        run_local(sample_argv(tmp_path / "x.npz", **flags))
    for fragment in fragments:
        assert fragment in str(raised.value)
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_unwritable_out_raises_linrnn_error(tmp_path, where):
    out = tmp_path / "no" / "such" / "x.npz" if where == "missing folder" else tmp_path
    with pytest.raises(LinrnnError, match=r"--out: expected a writable file path, found .*\(.+\)"):
        run_local(sample_argv(out))


# ---------------------------------------------------------------------------------------------
# Through the real entry point: a LinrnnError becomes one stderr line and exit status 2.


@pytest.fixture
def main():
    reports_cli = pytest.importorskip("linrnn.cli")
    for area in reports_cli.AREAS:  # `main` imports every area's cli; skip while one is missing
        pytest.importorskip(area, reason=f"{area} does not exist yet, so linrnn.cli.main cannot build")
    return reports_cli.main


def test_main_samples_a_batch(main, tmp_path, capsys):
    assert main(sample_argv(tmp_path / "b.npz")) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


@pytest.mark.parametrize("flags, fragments", BAD_FLAGS, ids=[str(flags) for flags, _ in BAD_FLAGS])
def test_main_turns_bad_values_into_one_line_and_status_2(main, tmp_path, capsys, flags, fragments):
    assert main(sample_argv(tmp_path / "x.npz", **flags)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("linrnn tasks: error: ")
    for fragment in fragments:
        assert fragment in err


def test_main_turns_unwritable_out_into_status_2(main, tmp_path, capsys):
    assert main(sample_argv(tmp_path / "no" / "x.npz")) == 2
    assert capsys.readouterr().err.startswith("linrnn tasks: error: --out: expected a writable file path")


# ---------------------------------------------------------------------------------------------
# `linrnn train --set`: a mixer field is the model's own (mixer.FIELD, or bare when it is not a training field)

LISTOPS_LRU = os.path.join(os.path.dirname(__file__), "..", "..", "tasks", "configs", "listops-lru.toml")


def dry_run(main, capsys, *argv) -> tuple[int, dict | None, str]:
    code = main(["train", "--dry-run", *argv])
    captured = capsys.readouterr()
    out = captured.out
    return code, json.loads(out[:out.index("\n}") + 2]) if code == 0 else None, captured.err


@pytest.mark.parametrize("flags", [["--set", "gamma_min=0.5", "--set", "dt_min=0.3"],
                                   ["--set", "mixer.gamma_min=0.5", "--set", "mixer.dt_min=0.3"]],
                         ids=["bare", "nested"])
def test_train_refuses_a_mixer_field_the_model_lacks_in_one_line(main, capsys, flags):
    code, _, err = dry_run(main, capsys, "--config", LISTOPS_LRU, *flags)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("linrnn train: error: ") and "gamma_min" in err and "dt_min" in err and "model lru" in err


@pytest.mark.parametrize("argv, message", [
    (["--model", "attention", "--set", "d_state=8"], "mixer: model attention has no field d_state"),
    (["--model", "lru", "--set", "mixer.colour=red"], "mixer: model lru has no field colour"),
    (["--model", "lru", "--set", "mixer.d_model=8"], "d_model is the training config's, not the mixer table's"),
    (["--model", "lru", "--set", "mixer.r_min=low"], "--set mixer.r_min: expected a number, found 'low'"),
    (["--model", "lru", "--set", "r_min=1.5"], "LRUConfig.r_min: expected a value in [0.0, 1.0)"),
    (["--model", "lru", "--set", "mixer.=1"], "--set: expected FIELD=VALUE with FIELD a TrainConfig field, mixer"),
    (["--model", "lru", "--gamma-min", "0.5"], "mixer: model lru has no field gamma_min"),
    (["--model", "lru", "--d-state", "x"], "--d-state: expected an integer, found 'x'"),
])
def test_train_names_a_bad_mixer_field_or_value(main, capsys, argv, message):
    code, _, err = dry_run(main, capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_train_applies_nested_and_bare_mixer_fields_over_the_file(main, capsys):
    code, resolved, _ = dry_run(main, capsys, "--config", LISTOPS_LRU, "--set", "mixer.r_min=0.5", "--set",
                                "r_max=0.6", "--set", "d_model=64", "--max-phase", "3.0")
    assert code == 0 and resolved["d_model"] == 64
    assert resolved["mixer"] == {"d_state": 256, "bidirectional": True, "r_min": 0.5, "r_max": 0.6, "max_phase": 3.0}
    # a field not given takes the model's training default (its spec's at L = 256: N = 256, Delta in [1e-4, 1e-1]),
    # else the mixer class's own (bidirectional)
    code, resolved, _ = dry_run(main, capsys, "--model", "s4d", "--set", "mixer.init=inv")
    assert code == 0 and resolved["mixer"] == {"d_state": 256, "bidirectional": False, "init": "inv", "dt_min": 1e-4,
                                               "dt_max": 1e-1}


def test_a_baseline_trains_on_a_paper_models_file_whose_mixer_fields_it_has_or_on_an_emptied_table(main, capsys):
    dlr_file = LISTOPS_LRU.replace("listops-lru", "listops-dlr")
    code, resolved, _ = dry_run(main, capsys, "--config", dlr_file, "--set", "model=s4d")
    assert code == 0 and resolved["mixer"]["dt_min"] == 1e-4 and resolved["mixer"]["init"] == "lin"
    code, _, err = dry_run(main, capsys, "--config", LISTOPS_LRU, "--set", "model=s4d")
    assert code == 2 and "mixer: model s4d has no field r_min, r_max, max_phase" in err
    code, resolved, _ = dry_run(main, capsys, "--config", LISTOPS_LRU, "--set", "model=attention", "--set", "mixer={}",
                                "--set", "mixer.heads=4", "--set", "window=64")
    assert code == 0 and resolved["mixer"] == {"heads": 4, "bidirectional": False, "window": 64}

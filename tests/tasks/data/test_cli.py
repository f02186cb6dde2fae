"""`linrnn data check/info/generate`: exit codes, one line per problem, one-line errors."""

from __future__ import annotations

import argparse

import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cli


def run_local(argv: list[str]) -> int:
    """Parse with a parser holding only the data area, as `linrnn.cli` registers it, then run."""
    parser = argparse.ArgumentParser(prog="linrnn")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_check_of_a_good_folder_prints_statistics_and_exits_0(tmp_path, cache_env, writers, capsys):
    writers.listops(tmp_path / "lra_release" / "lra_release" / "listops-1000")
    assert run_local(["data", "check", str(tmp_path), "--task", "listops"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"listops: data folder {tmp_path}/lra_release/lra_release/listops-1000"
    train = next(line for line in out if line.startswith("train:"))
    assert "40 examples" in train and "labels 0:4 1:4" in train and "vocabulary 18" in train
    assert out[-1] == "no problems found"


def test_check_prints_each_problem_on_one_line_and_exits_2(tmp_path, cache_env, writers, capsys):
    writers.pathfinder(tmp_path / "pathfinder32")
    path = tmp_path / "pathfinder32" / "curv_contour_length_14" / "imgs" / "1" / "sample_2.png"
    path.write_bytes(path.read_bytes()[:30])
    assert run_local(["data", "check", str(tmp_path), "--task", "pathfinder", "--resolution", "32"]) == 2
    problems = [line for line in capsys.readouterr().out.splitlines() if line.startswith("problem: ")]
    assert len(problems) == 1 and "sample_2.png: not a readable PNG" in problems[0]


def test_info_says_what_the_loader_sees_without_parsing(tmp_path, cache_env, writers, capsys):
    writers.aan(tmp_path / "tsv_data")
    assert run_local(["data", "info", str(tmp_path), "--task", "retrieval", "--set", "max_length=100"]) == 0
    out = capsys.readouterr().out
    assert f"data folder {tmp_path / 'tsv_data'}" in out and "'max_length': 100" in out
    assert "train: from new_aan_pairs.train.tsv" in out and "cache not built" in out
    assert not (tmp_path / "tsv_data" / ".linrnn-cache" / "retrieval" / "train").exists()


@pytest.mark.parametrize("argv, message", [
    (["data", "check", "DIR", "--task", "imagenet"], "unknown data task 'imagenet': expected one of listops, text"),
    (["data", "check", "DIR", "--task", "listops", "--set", "max_length"], "--set: expected KEY=VALUE"),
    (["data", "check", "DIR", "--task", "listops", "--resolution", "32"], "listops: unknown option"),
    (["data", "info", "DIR", "--task", "image"], "Image (CIFAR-10): no folder with"),
    (["data", "generate", "imagenet", "--out", "OUT"], "no generator for 'imagenet'"),
    (["data", "generate", "listops", "--out", "OUT", "--n-train", "-3"], "--n-train: expected a non-negative integer"),
])
def test_bad_input_is_a_one_line_error(tmp_path, cache_env, argv, message):
    argv = [str(tmp_path) if a == "DIR" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    with pytest.raises(LinrnnError) as err:
        run_local(argv)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_task_whose_loader_is_missing_is_one_clear_line(monkeypatch):
    from linrnn.tasks import data

    monkeypatch.setitem(data.LOADERS, "sc35", ("linrnn.tasks.data.not_written_yet", {"variant": "sc35"}))
    with pytest.raises(LinrnnError, match="data task 'sc35': its loader linrnn.tasks.data.not_written_yet is not there yet"):
        data.loader("sc35")


def test_data_is_registered_in_the_main_command_line():
    from linrnn import cli as main_cli

    assert "linrnn.tasks.data.cli" in main_cli.AREAS

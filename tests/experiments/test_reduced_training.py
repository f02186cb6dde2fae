"""`linrnn reduced-training` at a tiny size: `RUNS` replaced by one run of 3 steps on
32 / 8 / 8 generated ListOps expressions (H = 8, N = 4, one layer, float64), never the real runs.

- main() writes the JSON with every documented key, its numbers those of the run directory's results.json,
  in the form the report's section accepts;
- a second call finds the run's results.json with the same config and reuses it: nothing is retrained;
- the baseline of a hand-made label set is the fraction of test labels equal to the train split's majority;
- --only with an unknown name exits 2 with one line, before anything is generated or written.
"""

import csv
import json
from pathlib import Path

import pytest

from linrnn.cli import main as cli_main
from linrnn.experiments import reduced_training as rt
from linrnn.tasks import datasets
from linrnn.base import results as stored
from linrnn.reports.sections import training_reduced
from linrnn.tasks.config import TrainConfig

TINY = rt.Run(
    "listops-tiny",
    datasets.DataSet("listops-tiny", "listops", dict(n_train=32, n_val=8, n_test=8, workers=1)),
    dict(task="listops", model="lru", d_model=8, mixer={"d_state": 4}, n_layers=1, batch_size=8, epochs=None, steps=3,
         dtype="float64", eval_every=None, eval_batches=None, checkpoint_every=None, backend="torch"),
    "32 / 8 / 8 generated ListOps expressions; LRU, 1 layer, H = 8, N = 4; 3 steps of batch 8")
FILE_KEYS = {"schema_version", "kind", "command", "date", "machine", "libraries", "code_version", "runs"}
RUN_KEYS = {"name", "task", "model", "backend", "scale", "examples", "data", "config", "steps", "seconds_per_step",
            "wall_seconds", "train_loss", "evaluations", "best", "metric", "test_at_best_val", "baseline",
            "above_baseline", "machine", "code_version"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(argv, the written record, the run directory) of one main() call with RUNS = (TINY,)."""
    root = tmp_path_factory.mktemp("reduced")
    argv = ["--data", str(root / "data"), "--out", str(root / "out.json"), "--quiet"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rt, "RUNS", (TINY,))
        assert rt.main(argv) == 0
        yield argv, json.loads((root / "out.json").read_text()), root / "data" / "runs" / TINY.name


def test_main_writes_every_documented_key(tiny):
    argv, record, run_dir = tiny
    assert set(record) == FILE_KEYS and record["schema_version"] == stored.SCHEMA_VERSION
    assert record["kind"] == "reduced_training" and record["command"] == " ".join([rt.PROG, *argv])
    assert len(record["runs"]) == 1 and set(record["runs"][0]) == RUN_KEYS
    run, results = record["runs"][0], stored.to_dict(stored.read(run_dir / stored.RUN_RESULTS, stored.RunRecord))
    assert (run["name"], run["task"], run["model"], run["backend"], run["scale"]) == \
        (TINY.name, "listops", "lru", "torch", TINY.scale)
    assert run["data"] == {"generator": "listops", "options": TINY.data.options}
    for key in ("config", "steps", "seconds_per_step", "train_loss", "evaluations", "best", "machine", "code_version"):
        assert run[key] == results[key], key
    assert run["steps"] == 3 and len(run["train_loss"]) == 3 and run["wall_seconds"] > 0
    assert run["metric"] == "accuracy" and run["test_at_best_val"] == run["best"]["test"]["accuracy"]
    assert set(run["baseline"]) == {"rule", "metric", "value", "best_constant"} and run["baseline"]["metric"] == "accuracy"
    assert run["above_baseline"] == (run["test_at_best_val"] > run["baseline"]["value"])
    assert training_reduced.check_stored(record) is None                   # the report's section accepts it


def test_a_second_call_reuses_the_run(tiny, monkeypatch):
    argv, first, run_dir = tiny
    trained = (run_dir / "metrics.jsonl").stat().st_mtime_ns
    monkeypatch.setattr(rt, "RUNS", (TINY,))
    assert rt.main(argv) == 0
    second = json.loads(Path(argv[3]).read_text())
    assert (run_dir / "metrics.jsonl").stat().st_mtime_ns == trained        # not trained again
    assert second["runs"][0]["wall_seconds"] is None
    assert {k: v for k, v in second["runs"][0].items() if k != "wall_seconds"} == \
        {k: v for k, v in first["runs"][0].items() if k != "wall_seconds"}


def write_listops(folder, labels: dict[str, list[int]]) -> None:
    """A ListOps data folder (LRA's TSV files) with one short expression per label given."""
    (folder / "listops-1000").mkdir(parents=True)
    for split, values in labels.items():
        with open(folder / "listops-1000" / f"basic_{split}.tsv", "w", newline="") as f:
            writer = csv.writer(f, delimiter="\t")
            writer.writerow(["Source", "Target"])
            writer.writerows([["( ( ( [MAX 2 ) 9 ) ] )", label] for label in values])


def test_the_baseline_is_the_majority_fraction(tmp_path):
    """Train's majority is 7; test's own majority (4) and val's would give other values."""
    train, test = [7, 4, 7, 2, 7, 1, 4], [4, 2, 4, 9, 4, 1, 7, 0]
    write_listops(tmp_path, {"train": train, "val": [4, 4], "test": test})
    base = datasets.baseline(TrainConfig(**TINY.config), tmp_path)
    assert base == {"rule": "always class 7 (the most frequent in train)", "metric": "accuracy",
                    "value": test.count(7) / len(test), "examples": {"train": 7, "val": 2, "test": 8},
                    "best_constant": {"class": 4, "value": test.count(4) / len(test)}}   # test's own majority


def test_only_with_an_unknown_name_exits_2_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rt, "RUNS", (TINY,))
    assert cli_main(["reduced-training", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out.json"),
                     "--only", "listops-tiny,nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and "listops-tiny" in err, err
    assert err.startswith("linrnn reduced-training: error: --only:"), err
    assert list(tmp_path.iterdir()) == []

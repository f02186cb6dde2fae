"""The best trivial predictor of a task (linrnn.tasks.trivial): fit on train, chosen on validation, scored on the
split the models are scored on, with the task's own metric; it must see the input and have no long-range context."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from linrnn.experiments.reduced_training import DataSet, ensure_data
from linrnn.tasks import trivial
from linrnn.tasks.config import TrainConfig


def test_on_the_synthetic_tasks_a_local_map_explains_what_is_local_and_nothing_long_range():
    cumsum, cummax, shift = (trivial.synthetic_baseline(t, 32) for t in ("cumsum", "cummax", "shift"))
    reverse = trivial.synthetic_baseline("reverse", 32)
    assert cumsum["best"]["name"].endswith("(a bag of tokens)") and cumsum["best"]["score"] > 0.8
    assert cummax["best"]["score"] > 0.3                          # a running maximum is mostly local
    assert reverse["best"]["score"] < 0.1                         # the first half, read backwards: no local map helps
    for r in (cumsum, cummax, shift, reverse):
        assert r["metric"] == "r2" and r["split"] == "val" and r["chosen_on"] == "held"
        assert {p["name"] for p in r["predictors"]} >= {r["best"]["name"]} and len(r["predictors"]) == 3
        best = next(p for p in r["predictors"] if p["name"] == r["best"]["name"])
        assert best["held"] == max(p["held"] for p in r["predictors"]) and best["val"] == r["best"]["score"]
    # the same streams: the same numbers
    assert trivial.synthetic_baseline("shift", 32)["predictors"] == shift["predictors"]


def test_the_scored_split_is_the_one_the_training_loop_evaluates():
    """R^2 on the validation stream's first `eval_batches` batches, as `linrnn train` scores a run."""
    from linrnn.tasks.metrics import r2
    from linrnn.tasks.synthetic import make_task

    found = trivial.synthetic_baseline("cumsum", 16, eval_batches=2, batch_size=8)
    stream = make_task("cumsum", 16, seed=2**31, batch_size=8, dtype="float64")
    targets = np.concatenate([stream.batch(k).targets for k in range(2)])
    mask = np.concatenate([stream.batch(k).mask for k in range(2)])
    assert r2(np.zeros_like(targets) + targets.mean(), targets, mask) == pytest.approx(0.0, abs=1e-12)
    assert -0.1 < found["best"]["score"] <= 1.0


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("trivial-data")


@pytest.mark.parametrize("task, data, model", [
    ("listops", DataSet("listops-t", "listops", dict(n_train=60, n_val=20, n_test=20, workers=1)), "lru"),
    ("listops-subtrees", DataSet("subtrees-t", "listops-subtrees", dict(n_train=4, n_val=2, n_test=2)), "dlr"),
    ("pathfinder-segmentation", DataSet("seg-t", "pathfinder-segmentation",
                                        dict(resolution=32, n_train=24, n_val=8, n_test=8)), "dlr"),
])
def test_each_data_objective_has_its_family_scored_with_the_tasks_metric(data_root, task, data, model):
    options = {"resolution": 32} if task == "pathfinder-segmentation" else {}
    config = TrainConfig(task=task, model=model, steps=1, data_options=options)
    found = trivial.data_task_baseline(config, ensure_data(data_root, data))
    assert found["metric"] == config.data_task.monitor and found["split"] == "test" and found["chosen_on"] == "val"
    best = next(p for p in found["predictors"] if p["name"] == found["best"]["name"])
    assert best["val"] == max(p["val"] for p in found["predictors"]) and best["test"] == found["best"]["score"]
    assert all(0.0 <= p[k] <= 1.0 for p in found["predictors"] for k in ("train", "val", "test"))
    names = " ".join(p["name"] for p in found["predictors"])
    expected = {"listops": "bag of tokens", "listops-subtrees": "lookup per (previous token, token)",
                "pathfinder-segmentation": "lookup per (pixel intensity, position)"}[task]
    assert expected in names
    # fit on train: a lookup table scores at least as well on its own training data as on test, bar ties
    assert max(p["train"] for p in found["predictors"]) >= found["best"]["score"] - 0.05


def test_a_lookup_backs_off_to_the_shorter_key_and_reads_macro_f1_by_over_representation():
    keys = np.array([1, 1, 1, 2, 2, 3])
    labels = np.array([0, 0, 1, 1, 1, 0])
    table = trivial._Lookup(keys, labels, classes=2)
    fallback = np.tile([0.3, 0.7], (3, 1))
    got = table.logits(np.array([1, 2, 9]), balanced=False, fallback=fallback)
    assert got.argmax(axis=1).tolist() == [0, 1, 1] and got[2].tolist() == [0.3, 0.7]     # 9 unseen: the fallback
    balanced = table.logits(np.array([1]), balanced=True, fallback=fallback[:1])
    assert balanced[0, 0] == pytest.approx((2 / 3) / 0.5) and balanced[0, 1] == pytest.approx((1 / 3) / 0.5)

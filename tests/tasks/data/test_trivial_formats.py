"""The trivial bar (linrnn.tasks.trivial) of the data tasks no generator of this project writes (Text, Retrieval,
Image, Pathfinder, Path-X), on small data sets written here in the public archives' formats: each bar is the best
of its family on validation, at least each of its simpler predictors there, named and scored on test."""

from __future__ import annotations

import pytest

from linrnn.tasks import trivial
from linrnn.tasks import trivial_models as fit
from linrnn.tasks.config import TrainConfig

VALUES = "bag of values (16 quantile bins per channel, mean and SD)"
STATISTICS = "logistic regression on per-channel summary statistics"
PIXELS = ("logistic regression on every pixel at its position (per-pixel)",
          "logistic regression on the frequencies of 3 x 3 patterns of bright pixels (a neighbourhood model)")
BAGS = "bag of tokens of both documents (their difference and product)"


@pytest.mark.parametrize("task, write, options, simpler, learned", [
    ("text", lambda w, root: w.imdb(root / "imdb", n_per_label=6), {},
     ("bag of tokens", "bag of bigrams (a local window of 2)"), ("logistic regression on the bag of tokens and bigrams",)),
    ("retrieval", lambda w, root: w.aan(root / "aan", sizes=(("train", 16), ("eval", 8), ("test", 8))), {},
     (BAGS,), (f"logistic regression on the {BAGS}",)),
    ("image", lambda w, root: w.cifar_bin(root / "cifar", n_per_batch=12), {"val_size": 12}, (VALUES,),
     (STATISTICS, *PIXELS)),
    ("pathfinder", lambda w, root: w.pathfinder(root / "pf", batches=3, per_batch=10), {}, (VALUES,),
     (STATISTICS, *PIXELS)),
    ("pathx", lambda w, root: w.pathfinder(root / "px", resolution=128, batches=3, per_batch=10), {}, (VALUES,),
     (STATISTICS, *PIXELS)),
])
def test_each_bar_is_the_best_of_its_family_on_validation(writers, cache_env, task, write, options, simpler, learned):
    folder = write(writers, cache_env)
    config = TrainConfig(task=task, model="lru", steps=1, data_options=options)
    found = trivial.data_task_baseline(config, folder)
    members = {p["name"]: p for p in found["predictors"]}
    assert found["split"] == "test" and found["chosen_on"] == "val" and found["metric"] == config.data_task.monitor
    assert found["family_version"] == trivial.FAMILY_VERSION
    assert [name for name in members if not name.startswith(learned)] == list(simpler)
    assert all(any(name.startswith(m) for name in members) for m in learned)
    best = members[found["best"]["name"]]
    assert best["val"] == max(p["val"] for p in members.values()) and best["test"] == found["best"]["score"]
    assert all(best["val"] >= members[name]["val"] for name in simpler)
    for p in members.values():
        assert all(0.0 <= p[k] <= 1.0 for k in ("train", "val", "test"))
        if p["name"].startswith("logistic regression"):
            assert p["regularisation"]["chosen_on"] == "val" and p["regularisation"]["C"] in fit.C_GRID

"""The best trivial predictor of a task (linrnn.tasks.trivial): fit on train, chosen on validation, scored on the
split the models are scored on, with the task's own metric; it must see the input and have no long-range context.

Each planted mistake of issue 48 (item 8) has a test here that fails when it is planted: the synthetic bar scored
on the training stream, the local window without the current input, the best predictor (or a learned model's
regularisation) chosen on test, and a stored bar of another family version reused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from linrnn.tasks.datasets import DataSet, ensure_data
from linrnn.tasks import trivial
from linrnn.tasks import trivial_models as fit
from linrnn.tasks.config import TrainConfig

LEARNED = ("logistic regression", "gradient-boosted trees", "evaluated on its own digit operands",
           "its value on its own digit operands")


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
        assert r["family_version"] == trivial.FAMILY_VERSION
    # the same streams: the same numbers
    assert trivial.synthetic_baseline("shift", 32)["predictors"] == shift["predictors"]


def test_the_synthetic_bar_is_scored_on_the_batches_linrnn_train_evaluates():
    """Planted: the bar scored on the training stream (CumMax at L = 64: 0.43 -> 0.48). Each member's "val" is R^2 on
    the batches the training loop evaluates, read here through the loop's own config and metric."""
    from linrnn.tasks.metrics import regression_metrics

    found = trivial.synthetic_baseline("cummax", 64, seed=0, eval_batches=4, batch_size=16)
    config = TrainConfig(task="cummax", length=64, batch_size=16, eval_batches=4, seed=0, dtype="float64", steps=1)
    stream = config.validation_task()
    batches = [stream.batch(k) for k in range(config.eval_batches)]
    inputs, targets, mask = (np.concatenate([getattr(b, f) for b in batches]) for f in ("inputs", "targets", "mask"))
    members = {m["name"]: m for m in trivial.synthetic_predictors("cummax", 64, seed=0, batch_size=16)}
    for p in found["predictors"]:
        expected = regression_metrics(trivial.predict(members[p["name"]], inputs), targets, mask)["r2"]
        assert p["val"] == pytest.approx(expected, rel=1e-9, abs=1e-12), p["name"]
        assert p["held"] == members[p["name"]]["held"]
    best = next(p for p in found["predictors"] if p["name"] == found["best"]["name"])
    assert found["best"]["score"] == best["val"]


def test_the_local_window_holds_the_current_input_and_the_w_minus_1_before_it():
    """Planted: the window left out the current input (CumMax at L = 64: 0.43 -> 0.28, still above 0.3 at L = 32). A
    target made of the current input and the one three steps back is explained exactly by the window alone."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 16, 2))                                         # (B L d)
    windows = trivial._windowed(x, 4)                                           # (B L w d)
    for t in range(16):
        for k in range(4):
            back = t - 3 + k
            assert np.array_equal(windows[:, t, k], x[:, back] if back >= 0 else np.zeros_like(x[:, 0]))
    x = rng.standard_normal((64, 32, 1))
    y = x - 0.5 * np.concatenate([np.zeros((64, 3, 1)), x[:, :-3]], axis=1)    # (B L 1)
    features = trivial._synthetic_features(x, 32, 8)
    window = next(name for name in features if "local window" in name)
    for name, F in features.items():
        X = fit.standardise(F.reshape(-1, F.shape[-1]))[0]
        residual = y.reshape(-1, 1) - X @ fit.solve(X, y.reshape(-1, 1))
        explained = 1 - float(residual.var() / y.var())
        assert (explained > 0.999) == (name == window), (name, explained)


def test_the_best_predictor_and_each_learned_models_regularisation_are_chosen_on_validation_never_on_test():
    """Planted: the choice made on test while the record says validation. Validation and test disagree here on purpose."""
    scored = [{"name": "simple", "val": 0.5, "test": 0.7}, {"name": "learned", "val": 0.6, "test": 0.4},
              {"name": "tied later", "val": 0.6, "test": 0.9}]
    found = trivial._result("accuracy", "test", scored, "val")
    assert found["chosen_on"] == "val" and found["best"] == {"name": "learned", "score": 0.4}

    rng = np.random.default_rng(0)
    X = {k: rng.standard_normal((60, 3)) for k in ("train", "val", "test")}
    y = np.arange(60) % 2

    def planted_scores(by_split):
        calls = {k: 0 for k in by_split}

        def score(split, logits):
            assert logits.shape == (60, 2)
            calls[split] += 1
            return by_split[split][calls[split] - 1]
        return score

    # candidates in order (C from fit.C_GRID, rounds from fit.ROUNDS): validation prefers the first, test the last
    n = len(fit.C_GRID)
    score = planted_scores({"train": [0.5] * n, "val": list(np.linspace(0.3, 0.1, n)),
                            "test": list(np.linspace(0.7, 0.9, n))})
    found = fit.logistic(X, y, 2, score)
    assert found["regularisation"]["C"] == fit.C_GRID[0] and found["regularisation"]["chosen_on"] == "val"
    assert found["test"] == pytest.approx(0.7) and found["val"] == pytest.approx(0.3)
    n = len(fit.ROUNDS)
    score = planted_scores({"train": [0.5] * n, "val": list(np.linspace(0.3, 0.1, n)),
                            "test": list(np.linspace(0.7, 0.9, n))})
    found = fit.boosted_trees(X["train"], y, lambda model, k: model.predict_proba(X[k]), 2, score)
    assert found["regularisation"]["rounds"] == fit.ROUNDS[0] and found["val"] == pytest.approx(0.3)
    assert found["regularisation"]["chosen_on"] == "val"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("trivial-data")


SEGMENTATION = DataSet("seg-t", "pathfinder-segmentation", dict(resolution=32, n_train=24, n_val=8, n_test=8))


def test_a_stored_bar_of_another_family_version_is_measured_again(tmp_path):
    """Planted: the runner keeps a previous record's bar whatever family measured it (PathfinderSegmentation's
    per-pixel bar 0.426 of 16 intensity levels instead of 0.548). experiments/claims/runner.py keeps an entry only when
    its family_version is this one, and measures the others by a job of the sweep (`trivial_entry`)."""
    from linrnn.experiments.claims.runner import Job, trivial_entry, trivial_jobs, trivial_key

    config = dict(task="pathfinder-segmentation", model="dlr", steps=1, data_options={"resolution": 32})
    job = Job({"task": "pathfinder-segmentation", "model": "dlr", "seed": 0}, config, SEGMENTATION)
    stale = {**trivial_key(job), "metric": "macro_f1", "split": "test", "chosen_on": "val",
             "best": {"name": "lookup per pixel intensity, read by the most frequent class", "score": 0.426},
             "predictors": [], "family_version": trivial.FAMILY_VERSION - 1}
    unversioned = {k: v for k, v in stale.items() if k != "family_version"}
    for previous in ([stale], [unversioned]):
        keys, kept, measure = trivial_jobs([job], {job.name}, tmp_path, tmp_path / "runs", previous)
        assert kept == {} and len(measure) == 1 and measure[0].key["family_version"] == trivial.FAMILY_VERSION
        assert measure[0].call is trivial_entry and measure[0].args[0] == trivial_key(job)
    current = {**stale, "family_version": trivial.FAMILY_VERSION}
    keys, kept, measure = trivial_jobs([job], {job.name}, tmp_path, tmp_path / "runs", [current])
    assert list(kept.values()) == [current] and measure == []                   # this family's: kept, not measured


SIMPLER = {"listops": ("bag of tokens", "bag of bigrams (a local window of 2)"),
           "listops-subtrees": ("lookup per token", "lookup per (previous token, token)", "lookup per last three tokens",
                                "lookup per (that operator, previous token)"),
           "pathfinder-segmentation": ("lookup per pixel intensity, read by the most frequent class",
                                       "lookup per (pixel intensity, position), read by the most frequent class"),
           "sc10": ("bag of values (16 quantile bins per channel, mean and SD)",),
           "sc35": ("bag of values (16 quantile bins per channel, mean and SD)",)}
STRONGER = {"listops": "logistic regression on the root operator x its own digit operands",
            "listops-subtrees": "each subtree evaluated on its own digit operands (no learning)",
            "pathfinder-segmentation": "gradient-boosted trees on each pixel's 5 x 5 neighbourhood",
            "sc10": "logistic regression on per-channel summary statistics",
            "sc35": "logistic regression on per-channel summary statistics"}
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng is not installed: apt-get install espeak-ng")
SPEECH = DataSet("speech-t", "speech", dict(n_train=2, n_val=1, n_test=1))


def check_family(found: dict, config: TrainConfig, simpler: tuple[str, ...], stronger: str) -> dict:
    """The bar is chosen on val among every member, at least each of its simpler predictors there, named and scored
    on test; every learned model chose its regularisation on val. -> {name: member}."""
    members = {p["name"]: p for p in found["predictors"]}
    assert found["metric"] == config.data_task.monitor and found["split"] == "test" and found["chosen_on"] == "val"
    assert found["family_version"] == trivial.FAMILY_VERSION
    assert set(simpler) <= set(members) and any(name.startswith(stronger) for name in members)
    best = members[found["best"]["name"]]
    assert best["test"] == found["best"]["score"] and best["val"] == max(p["val"] for p in members.values())
    assert all(best["val"] >= members[name]["val"] for name in simpler)
    assert all(0.0 <= p[k] <= 1.0 for p in members.values() for k in ("train", "val", "test"))
    for p in members.values():
        learned = "regularisation" in p
        assert learned == (p["name"].startswith(("logistic regression", "gradient-boosted trees")))
        if learned:
            assert p["regularisation"]["chosen_on"] == "val"
            assert (p["regularisation"].get("C") in fit.C_GRID) or (p["regularisation"].get("rounds") in fit.ROUNDS)
    return members


@pytest.mark.parametrize("task, data, model, options", [
    ("listops", DataSet("listops-t", "listops", dict(n_train=60, n_val=20, n_test=20, workers=1)), "lru", {}),
    ("listops-subtrees", DataSet("subtrees-t", "listops-subtrees", dict(n_train=4, n_val=2, n_test=2)), "dlr", {}),
    ("pathfinder-segmentation", SEGMENTATION, "dlr", {"resolution": 32}),
    pytest.param("sc10", SPEECH, "lru", {"mfcc": True}, marks=needs_espeak),
    pytest.param("sc35", SPEECH, "lru", {"mfcc": True}, marks=needs_espeak),
])
def test_each_generated_tasks_bar_is_the_best_of_its_family_on_validation(data_root, task, data, model, options):
    config = TrainConfig(task=task, model=model, steps=1, data_options=options)
    found = trivial.data_task_baseline(config, ensure_data(data_root, data))
    members = check_family(found, config, SIMPLER[task], STRONGER[task])
    if task == "listops-subtrees":
        # exact on every subtree whose operands are all digits: above every lookup, whatever the sample size
        local = members["each subtree evaluated on its own digit operands (no learning)"]
        for name in SIMPLER[task]:
            assert local["val"] > members[name]["val"] and local["test"] > members[name]["test"]
    # fit on train and seeded: the same data give the same bar
    if task == "listops":
        assert trivial.data_task_baseline(config, ensure_data(data_root, data))["predictors"] == found["predictors"]


def test_a_lookup_backs_off_to_the_shorter_key_and_reads_macro_f1_by_over_representation():
    keys = np.array([1, 1, 1, 2, 2, 3])
    labels = np.array([0, 0, 1, 1, 1, 0])
    table = fit.Lookup(keys, labels, classes=2)
    fallback = np.tile([0.3, 0.7], (3, 1))
    got = table.logits(np.array([1, 2, 9]), balanced=False, fallback=fallback)
    assert got.argmax(axis=1).tolist() == [0, 1, 1] and got[2].tolist() == [0.3, 0.7]     # 9 unseen: the fallback
    balanced = table.logits(np.array([1]), balanced=True, fallback=fallback[:1])
    assert balanced[0, 0] == pytest.approx((2 / 3) / 0.5) and balanced[0, 1] == pytest.approx((1 / 3) / 0.5)


def test_a_tree_is_read_locally_its_root_operator_digits_and_each_subtrees_own_value():
    """[MAX 2 [MIN 7 3] 9] and [SM [MED 1 8] 5 6]: the readers of tasks/trivial_trees.py on LRA's token ids."""
    from linrnn.tasks import trivial_trees as trees
    from linrnn.tasks.data.listops import TOKEN_ID

    def ids(text: str) -> np.ndarray:
        return np.array([TOKEN_ID[t] for t in text.replace("]", "X").split()])

    tokens = ids("[MAX 2 [MIN 7 3 ] 9 ]")
    local = trees.local_values(tokens, TOKEN_ID)
    at = {i: tuple(row) for i, row in enumerate(local) if row[0] >= 0}
    assert at == {5: (0, 3, 2, 0), 7: (1, 9, 2, 1)}            # MIN 7 3 -> 3; MAX of its own 2, 9 -> 9 (1 subtree)
    assert trees.closing_operators(tokens, TOKEN_ID)[[5, 7]].tolist() == [TOKEN_ID["[MIN"], TOKEN_ID["[MAX"]]
    med = trees.local_values(ids("[SM [MED 1 8 ] 5 6 ]"), TOKEN_ID)
    assert med[4, 1] == 4 and med[7, 1] == 1                    # MED 1 8: int(4.5); SM of its own 5, 6: 11 mod 10
    root = trees.root_features(tokens, TOKEN_ID)
    op = root[:4]
    counts = root[4:44].reshape(4, 10)
    value = root[84:128].reshape(4, 11)
    assert op.tolist() == [0, 1, 0, 0] and counts[1, [2, 9]].tolist() == [1, 1] and counts.sum() == 2
    assert value[1].argmax() == 9 and root[-4:].tolist() == [0, 1, 0, 0]

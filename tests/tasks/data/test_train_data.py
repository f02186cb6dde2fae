"""Training on data tasks: each objective's loss against a hand computation in both frameworks, masked
pooling, evaluation tallies, exact resume across an epoch boundary, the best checkpoint, bad configs
before any data is read, --dry-run and --smoke."""

import json

import numpy as np
import pytest

from linrnn.cli import main
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.base.tolerance import assert_close
from linrnn.tasks import checkpoint, datatasks, metrics
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.datatasks import IGNORE_INDEX, ModelBatch, Tally
from linrnn.tasks.train import train

TINY = dict(d_model=8, mixer={"d_state": 4}, n_layers=1, batch_size=4, eval_batches=None, eval_every=None,
            checkpoint_every=None, dtype="float64", lr=3e-3)


def hand_loss(objective, logits, targets):
    """The losses written out: mean CE over scored positions; segmentation weights 1/count per class."""
    z, y = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    keep = y != IGNORE_INDEX
    z, y = z[keep], y[keep]
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -logp[np.arange(len(y)), y]
    if objective != "segmentation":
        return nll.mean()
    counts = {c: (y == c).sum() for c in set(y.tolist())}
    w = np.array([1.0 / counts[c] for c in y])
    return (w * nll).sum() / w.sum()


CASES = [("classification", (5, 3), (5,)), ("retrieval", (5, 2), (5,)), ("tokens", (3, 7, 4), (3, 7)),
         ("segmentation", (3, 7, 3), (3, 7))]


@pytest.mark.parametrize("objective, logit_shape, target_shape", CASES)
def test_each_objective_loss_is_the_hand_computation_in_both_frameworks(objective, logit_shape, target_shape):
    import jax.numpy as jnp
    import torch

    from linrnn.tasks.jax_adapter import objective_loss
    from linrnn.tasks.torch_adapter import Adapter

    rng = np.random.default_rng(0)
    logits = rng.standard_normal(logit_shape)
    targets = rng.integers(0, logit_shape[-1], size=target_shape)
    if len(target_shape) == 2:
        targets[:, -2:] = IGNORE_INDEX                      # padding and unscored positions
        targets[0, 0] = 0                                     # class 0 once: its weight is 1
    want = hand_loss(objective, logits, targets)
    assert np.isclose(datatasks.cross_entropy(logits, targets,
                                              datatasks.class_weights(targets, logit_shape[-1])
                                              if objective == "segmentation" else None), want)
    got_jax = float(objective_loss(objective, jnp.asarray(logits), jnp.asarray(targets), None))
    adapter = Adapter.__new__(Adapter)                       # only the loss: no model needed
    adapter.cfg = type("C", (), {"objective": objective})()
    adapter.world_size, adapter.dtype, adapter.device = 1, torch.float64, torch.device("cpu")
    num, den = adapter._loss_terms(torch.from_numpy(logits), ModelBatch(None, None, targets))
    assert_close(f"{objective} loss, jax", want, got_jax, "forward", "float64", 1)
    assert_close(f"{objective} loss, torch", want, float(num / den), "forward", "float64", 1)


def test_the_tally_gives_the_metrics_of_the_whole_split_batch_by_batch():
    rng = np.random.default_rng(1)
    logits, targets = rng.standard_normal((6, 9, 3)), rng.integers(0, 3, size=(6, 9))
    targets[:, 7:] = IGNORE_INDEX
    tally = Tally("segmentation", 3)
    for k in range(0, 6, 2):
        tally.add(logits[k:k + 2], targets[k:k + 2])
    merged = Tally.from_array("segmentation", 3, tally.to_array())
    summary = merged.summary()
    assert summary["macro_f1"] == pytest.approx(metrics.macro_f1(logits, targets))
    assert summary["balanced_accuracy"] == pytest.approx(metrics.balanced_accuracy(logits, targets))
    assert summary["accuracy"] == pytest.approx(metrics.accuracy(logits, targets))
    assert summary["loss"] == pytest.approx(datatasks.cross_entropy(logits, targets))
    assert summary["examples"] == 6 * 7


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_masked_pooling_ignores_padding(backend, writers, cache_env):
    """Changing the pad tokens past each sequence's length changes nothing (causal model, mean pooling)."""
    from linrnn.tasks.train import adapter_class

    folder = writers.listops(cache_env / "lo")
    cfg = TrainConfig(task="listops", model="lru", steps=1, backend=backend, **TINY)
    from linrnn.tasks.train import DataSource

    source = DataSource(cfg, folder)
    adapter = adapter_class(backend)(init(source.model_config(), 0), cfg)
    batch = source.train_batch(0)
    assert (batch.lengths < batch.inputs.shape[1]).any()
    pad = np.arange(batch.inputs.shape[1])[None, :] >= batch.lengths[:, None]
    other = ModelBatch(np.where(pad, 7, batch.inputs).astype(np.int32), batch.lengths, batch.targets)
    assert np.array_equal(adapter.predict(batch), adapter.predict(other))


def test_retrieval_trains_with_one_shared_tower(writers, cache_env):
    """AAN pairs: the model sees 2B documents; one set of tower weights (no second encoder in the bundle)."""
    folder = writers.aan(cache_env / "aan", sizes=(("train", 8), ("eval", 4), ("test", 4)))
    cfg = TrainConfig(task="retrieval", model="dlr", steps=2, **TINY)
    result = train(cfg, cache_env / "run", data=folder, progress=False)
    keys = set(result.bundle.params)
    assert {"head.weight", "head.bias", "decoder.weight", "encoder.weight"} <= keys
    assert not any(k.startswith(("encoder2", "tower")) for k in keys)
    assert result.bundle.params["head.weight"].shape == (8, 32)
    assert set(result.evaluations[-1]) == {"step", "epoch", "val", "test"}


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_resume_across_an_epoch_boundary_with_workers_equals_the_whole_run(backend, writers, cache_env):
    folder = writers.listops(cache_env / "lo")           # 40 train examples: 5 steps per epoch of 8
    cfg = TrainConfig(task="listops", model="rotrnn", epochs=2, backend=backend, workers=0,
                      **{**TINY, "batch_size": 8, "dropout": 0.1, "eval_batches": 1, "checkpoint_every": 3,
                         "mixer": {"d_state": 4, "heads": 2}})
    whole = train(cfg, cache_env / "whole", data=folder, progress=False)
    first = train(cfg, cache_env / "split", data=folder, stop_after=4, progress=False)   # checkpoint at 3 and 4
    rest = train(TrainConfig(**{**cfg.to_dict(), "workers": 2}), cache_env / "split", data=folder, resume=True,
                 progress=False)                                                         # crosses the epoch end
    assert first.steps_done == 4 and rest.steps_done == 10
    assert rest.bundle.digest() == whole.bundle.digest()
    assert first.losses + rest.losses == whole.losses
    assert [e["step"] for e in whole.evaluations] == [5, 10]
    assert rest.best == whole.best and whole.best["step"] in (5, 10)
    best = checkpoint.load(cache_env / "whole" / "best.npz")
    assert best.step == whole.best["step"] and best.extra["best"] == whole.best
    record = json.loads((cache_env / "whole" / "results.json").read_text())
    assert record["best"] == whole.best and record["final"]["step"] == 10


def test_token_targets_and_segmentation_train_and_score(cache_env):
    assert main(["data", "generate", "listops-subtrees", "--out", str(cache_env / "st"), "--n-train", "8",
                 "--n-val", "4", "--n-test", "4"]) == 0
    st = train(TrainConfig(task="listops-subtrees", model="lru", steps=2, data_options={"max_length": 8192},
                           **TINY), cache_env / "run-st", data=cache_env / "st", progress=False)
    assert 0.0 <= st.evaluations[-1]["val"]["accuracy"] <= 1.0
    assert main(["data", "generate", "pathfinder-segmentation", "--out", str(cache_env / "seg"), "--resolution", "32",
                 "--n-train", "8", "--n-val", "2", "--n-test", "2"]) == 0
    seg = train(TrainConfig(task="pathfinder-segmentation", model="dlr", steps=2, data_options={"resolution": 32},
                            **{**TINY, "mixer": {"d_state": 4, "bidirectional": True}}), cache_env / "run-seg",
                data=cache_env / "seg", progress=False)
    assert {"macro_f1", "balanced_accuracy", "accuracy", "loss"} <= set(seg.evaluations[-1]["val"])


def test_a_bad_config_field_is_one_line_before_any_data_is_read(tmp_path, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('# a config\ntask = "listops"\nmodel = "lru"\nepochs = 2\nsteps = "none"\nlr = 0.001\n')
    missing = str(tmp_path / "no-such-data")
    for flags, message in [(["--set", "lr=fast"], "--set lr: expected a number, found 'fast'"),
                           (["--set", "d_model=0"], "d_model: expected an integer >= 1, found 0"),
                           (["--set", "colour=red"], "--set: expected FIELD=VALUE with FIELD a TrainConfig field"),
                           (["--set", "steps=10"], "steps, epochs: expected exactly one of them set"),
                           (["--set", "length=512"], "length: expected null for the data task listops"),
                           (["--set", "data_options.resolution=64"], None)]:
        code = main(["train", "--config", str(cfg), "--data", missing, "--out", str(tmp_path / "r")] + flags)
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1
        if message:
            assert message in err, err
        else:   # a loader option the task does not have: found when the loader checks its options, still before reading
            assert "listops: unknown option(s) resolution" in err, err
    assert not (tmp_path / "r").exists()


def test_dry_run_reads_no_data_and_reports_the_plan(tmp_path, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('task = "pathx"\nmodel = "lru"\nepochs = 50\nsteps = "none"\nd_model = 128\n'
                   'n_layers = 6\nbatch_size = 32\ngrad_checkpointing = true\n[mixer]\nd_state = 256\n')
    assert main(["train", "--config", str(cfg), "--data", str(tmp_path / "none"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    resolved = json.loads(out[:out.index("\n}") + 2])
    assert resolved["task"] == "pathx" and resolved["epochs"] == 50
    assert "sequence length 16,384" in out and "steps per epoch 5,000" in out and "total steps     250,000" in out
    assert "memory estimate" in out and not (tmp_path / "none").exists()


def test_smoke_runs_a_tiny_version_on_the_given_data(writers, cache_env, capsys):
    folder = writers.listops(cache_env / "lo")
    cfg = cache_env / "run.toml"
    cfg.write_text('task = "listops"\nmodel = "rotrnn"\nepochs = 30\nsteps = "none"\nd_model = 128\n'
                   'n_layers = 6\nbatch_size = 32\n[mixer]\nd_state = 16\nheads = 8\n')
    assert main(["train", "--config", str(cfg), "--data", str(folder), "--smoke", "--quiet",
                 "--out", str(cache_env / "smoke")]) == 0
    assert "listops rotrnn torch: 4 steps" in capsys.readouterr().out
    resolved = json.loads((cache_env / "smoke" / "config.json").read_text())
    assert resolved["d_model"] == 16 and resolved["n_layers"] == 2 and resolved["steps"] == 4


def test_a_data_task_without_data_is_one_line(tmp_path):
    with pytest.raises(LinrnnError, match="--data: the data task listops needs its data folder"):
        train(TrainConfig(task="listops", model="lru", steps=1, **TINY), tmp_path, progress=False)


def test_gradient_checkpointing_takes_the_same_steps_and_autocast_trains(writers, cache_env):
    folder = writers.listops(cache_env / "lo")
    base = dict(task="listops", model="lru", steps=3, **{**TINY, "dropout": 0.1})
    plain = train(TrainConfig(**base), cache_env / "plain", data=folder, progress=False)
    again = train(TrainConfig(**base, grad_checkpointing=True), cache_env / "ckpt", data=folder, progress=False)
    assert again.losses == plain.losses and again.bundle.digest() == plain.bundle.digest()
    # (the JAX side's remat is checked against the plain pass in tests/impls/test_model_heads.py)
    amp = train(TrainConfig(**{**base, "dtype": "float32"}, autocast=True), cache_env / "amp", data=folder,
                progress=False)
    assert np.isfinite(amp.losses).all()
    assert all(v.dtype == np.float64 for v in amp.bundle.params.values())   # bundles stay float64 on disk
    with pytest.raises(LinrnnError, match="autocast: expected false or null with backend jax"):
        TrainConfig(**{**base, "dtype": "float32"}, backend="jax", autocast=True)


def test_patience_stops_a_run_whose_validation_stopped_improving_and_it_stays_stopped(writers, cache_env):
    """lr 0: the first evaluation is the best and none improves on it, so with patience 2 and an evaluation at
    every epoch end the run stops after epoch 3 of 10; resuming it trains nothing more."""
    folder = writers.listops(cache_env / "lo")           # 40 train examples: 5 steps per epoch of 8
    cfg = TrainConfig(task="listops", model="lru", epochs=10, patience=2, **{**TINY, "batch_size": 8, "lr": 0.0})
    result = train(cfg, cache_env / "run", data=folder, progress=False)
    assert result.stopped_early and result.steps_done == 15
    assert [e["step"] for e in result.evaluations] == [5, 10, 15] and result.best["step"] == 5
    record = json.loads((cache_env / "run" / "results.json").read_text())
    assert record["stopped_early"] is True and record["steps"] == 15
    again = train(cfg, cache_env / "run", data=folder, resume=True, progress=False)
    assert again.steps_done == 15 and again.losses == [] and again.stopped_early
    # without patience the same run takes every epoch
    full = train(TrainConfig(**{**cfg.to_dict(), "patience": None}), cache_env / "full", data=folder, progress=False)
    assert full.steps_done == 50 and not full.stopped_early


def test_an_interrupted_run_with_patience_resumes_its_count_of_evaluations_without_improvement(writers, cache_env):
    folder = writers.listops(cache_env / "lo")
    cfg = TrainConfig(task="listops", model="lru", epochs=10, patience=2, **{**TINY, "batch_size": 8, "lr": 0.0})
    first = train(cfg, cache_env / "split", data=folder, stop_after=10, progress=False)   # epochs 1-2: one stale
    assert first.steps_done == 10 and not first.stopped_early
    rest = train(cfg, cache_env / "split", data=folder, resume=True, progress=False)
    assert rest.stopped_early and rest.steps_done == 15


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_best_evaluation_keeps_the_test_splits_per_example_predictions(backend, writers, cache_env):
    folder = writers.listops(cache_env / "lo")
    cfg = TrainConfig(task="listops", model="dlr", epochs=2, backend=backend, **{**TINY, "batch_size": 8})
    result = train(cfg, cache_env / "run", data=folder, progress=False)
    kept = result.best["predictions"]
    from linrnn.tasks import data

    test = data.load("listops", folder, "test")
    assert kept["split"] == "test" and len(kept["predicted"]) == len(kept["label"]) == len(test)
    assert kept["label"] == np.asarray(test.arrays[test.labels]).tolist()             # file order
    correct = np.mean(np.array(kept["predicted"]) == np.array(kept["label"]))
    assert correct == pytest.approx(result.best["test"]["accuracy"])
    record = json.loads((cache_env / "run" / "results.json").read_text())
    assert record["best"]["predictions"] == kept
    assert all("predictions" not in json.loads(line).get("eval", {}).get("test", {})
               for line in (cache_env / "run" / "metrics.jsonl").read_text().splitlines())


def test_patience_is_refused_for_a_synthetic_task():
    with pytest.raises(LinrnnError, match="patience: expected null for the synthetic task shift"):
        TrainConfig(task="shift", patience=3)
    with pytest.raises(LinrnnError, match="patience: expected an integer >= 1"):
        TrainConfig(task="listops", epochs=1, patience=0)

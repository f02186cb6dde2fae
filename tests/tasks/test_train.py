"""The training stack: exact resume, torch == jax in float64, the divergence guard, every task runs."""

import json
import math

import numpy as np
import pytest

from linrnn.base import results
from linrnn.impls import specs
from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.cli import main
from linrnn.tasks import checkpoint
from linrnn.tasks.config import TrainConfig, mixer_subset
from linrnn.tasks.synthetic import TASKS
from linrnn.tasks.train import TrainingDiverged, train

SMALL = dict(length=16, d_model=8, batch_size=3, eval_batches=1, dtype="float64")
# the mixer's sizes, and the LRU's and RotRNN's rings these tests were written at (their classes' own; the training
# defaults put the decays nearer 1), each where the model has it
SIZES = {"d_state": 8, "heads": 2, "r_min": 0.9, "r_max": 0.999, "gamma_min": 0.9, "gamma_max": 0.999}


def config(mixer: dict | None = None, **overrides) -> TrainConfig:
    model = overrides.pop("model", "lru")
    return TrainConfig(**{**SMALL, "task": "shift", "model": model, "steps": 6, "eval_every": 3,
                          "checkpoint_every": 2, "warmup_steps": 2, "lr": 3e-3, "recurrence_lr": 1e-3,
                          "weight_decay": 0.05, "grad_clip": 0.5, **overrides,
                          "mixer": {**mixer_subset(model, SIZES), **(mixer or {})}})


@pytest.mark.parametrize("backend, model", [("torch", "rotrnn"), ("jax", "dlr")])
def test_interrupted_and_resumed_run_ends_with_the_same_bundle(tmp_path, backend, model):
    cfg = config(backend=backend, model=model, dropout=0.1 if backend == "torch" else 0.0)
    whole = train(cfg, tmp_path / "whole", progress=False)
    first = train(cfg, tmp_path / "split", stop_after=3, progress=False)
    assert first.steps_done == 3 and not (tmp_path / "split" / "results.json").exists()
    rest = train(cfg, tmp_path / "split", resume=True, progress=False)
    assert rest.steps_done == 6
    assert rest.bundle.digest() == whole.bundle.digest()
    assert first.losses + rest.losses == whole.losses
    log = [json.loads(line) for line in (tmp_path / "split" / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4, 5, 6]


def test_a_torch_step_seeds_the_cpu_generator_and_only_its_own_gpus(monkeypatch):
    """The dropout seeding of a step: as `torch.manual_seed` on the CPU; on CUDA, the rank's device's
    generator (its index, or the current device's for a bare "cuda") and no other. No GPU here: the CUDA
    generators are stand-ins, which is all `_seed_dropout` touches."""
    import torch
    from linrnn.tasks.train import adapter_class

    adapter = object.__new__(adapter_class("torch"))      # only its device is read
    adapter.device = torch.device("cpu")
    adapter._seed_dropout(123)
    drawn = torch.rand(5)
    torch.manual_seed(123)
    assert torch.equal(drawn, torch.rand(5))

    generators = (torch.Generator(), torch.Generator(), torch.Generator())
    monkeypatch.setattr(torch.cuda, "default_generators", generators)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 2)
    for device, seeded in ((torch.device("cuda", 1), 1), (torch.device("cuda", 0), 0), (torch.device("cuda"), 2)):
        for g in generators:
            g.manual_seed(7)
        adapter.device = device
        adapter._seed_dropout(99)
        assert [g.initial_seed() for g in generators] == [99 if i == seeded else 7 for i in range(3)], device


def test_torch_and_jax_take_the_same_steps_in_float64(tmp_path):
    runs = {b: train(config(backend=b, model="rotrnn", norm="batch"), tmp_path / b, progress=False)
            for b in ("torch", "jax")}
    assert_close("training losses", runs["torch"].losses, runs["jax"].losses, "gradient", "float64", 16)
    for key, value in runs["torch"].bundle.params.items():
        assert_close(f"{key} after 6 steps", value, runs["jax"].bundle.params[key], "gradient", "float64", 16)
    ckpt = {b: checkpoint.load(tmp_path / b / "checkpoint.npz") for b in runs}
    for key, value in ckpt["torch"].optimizer.items():
        assert_close(f"optimizer {key}", value, ckpt["jax"].optimizer[key], "gradient", "float64", 16)


def test_a_poisoned_batch_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    cfg = config(backend="torch", checkpoint_every=1)
    with pytest.raises(TrainingDiverged, match="step 3: the training loss is nan; stopped before updating"):
        train(cfg, tmp_path, poison_step=3, progress=False)
    kept = checkpoint.load(tmp_path / "checkpoint.npz")
    assert kept.step == 3 and all(np.all(np.isfinite(v)) for v in kept.bundle.params.values())
    resumed = train(cfg, tmp_path, resume=True, progress=False)
    assert resumed.steps_done == 6 and np.isfinite(resumed.losses).all()


def test_the_log_holds_every_finished_step_while_the_run_goes_on(tmp_path, monkeypatch):
    from linrnn.tasks.train import adapter_class

    Adapter, seen = adapter_class("torch"), []
    step_once = Adapter.train_step

    def spy(self, batch, step, *args):
        lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
        seen.append(sum('"loss"' in line for line in lines))
        return step_once(self, batch, step, *args)

    monkeypatch.setattr(Adapter, "train_step", spy)
    train(config(backend="torch", checkpoint_every=None, eval_every=None), tmp_path, progress=False)
    assert seen == [0, 1, 2, 3, 4, 5]           # before step k, the k finished steps are already on disk


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_tiny_run_of_every_task_completes(tmp_path, task):
    length = max(TASKS[task].min_length, 8)
    cfg = TrainConfig(task=task, length=length, model="dlr", d_model=4, mixer={"d_state": 4}, steps=2, eval_every=2,
                      checkpoint_every=2, batch_size=2, eval_batches=1)
    result = train(cfg, tmp_path, progress=False)
    record = results.to_dict(results.read(tmp_path / results.RUN_RESULTS, results.RunRecord))   # every field checked
    assert record["steps"] == 2 and len(record["train_loss"]) == 2 and record["final"]["step"] == 2
    assert np.isfinite(result.losses).all() and set(record["final"]) == {"step", "mse", "r2"}


@pytest.mark.parametrize("overrides, message", [
    ({"task": "copy"}, "task: expected a synthetic task (shift, "),
    ({"d_model": -4}, "d_model: expected an integer >= 1, found -4"),
    ({"length": 4}, "length: expected an integer >= 8, found 4"),
    ({"model": "s4"}, f"model: expected one of {', '.join(specs.kinds())}, found 's4'"),
    ({"model": "lru", "mixer": {"window": 4}}, "mixer: model lru has no field window"),
    ({"model": "attention", "mode": "scan"}, "mode: expected full, chunked or null, found 'scan'"),
    ({"backend": "tf"}, "backend: expected one of torch, jax, found 'tf'"),
    ({"lr": float("nan")}, "lr: expected a number in"),
    ({"model": "rotrnn", "mixer": {"d_state": 3}}, "RotRNNConfig.d_state: expected an even state size"),
    ({"model": "lru", "mixer": {"max_phase": 7.0}}, "mixer.max_phase: expected a number in"),
    ({"mode": "step"}, "mode: expected scan, sequential, conv or null"),
])
def test_bad_configs_fail_before_any_work_and_name_the_field(overrides, message):
    with pytest.raises(LinrnnError, match=message.replace("(", r"\(")):
        TrainConfig(**{**SMALL, **overrides})


def test_resuming_a_finished_run_takes_no_step_and_keeps_its_results(tmp_path, capsys):
    train(config(backend="torch", steps=2), tmp_path, progress=False)
    stored = (tmp_path / "results.json").read_text()
    again = train(config(backend="torch", steps=2), tmp_path, resume=True, progress=False)
    assert (again.steps_done, again.losses, again.seconds_per_step) == (2, [], None)
    assert (tmp_path / "results.json").read_text() == stored      # its time per step is not overwritten by ~0
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps(config(backend="torch", steps=2).to_dict()))
    assert main(["train", "--config", str(cfg_file), "--out", str(tmp_path), "--resume", "--quiet"]) == 0
    assert "2 steps, no step taken (finished before)" in capsys.readouterr().out


def test_resume_with_another_config_is_refused(tmp_path):
    train(config(backend="torch", steps=2), tmp_path, progress=False)
    with pytest.raises(LinrnnError, match="made with another config \\(differs in lr\\)"):
        train(config(backend="torch", steps=2, lr=1.0), tmp_path, resume=True, progress=False)


def _flatten_checkpoint(path) -> dict:
    """Rewrite a checkpoint's stored train config as linrnn wrote it before mixer tables: every model's mixer fields
    at the top level (those of other models at the old flat defaults); returns the flat config."""
    arrays = dict(np.load(path, allow_pickle=False))
    meta = json.loads(str(arrays.pop("__meta__")))
    nested = meta["train_config"]
    flat = {**{k: v for k, v in nested.items() if k != "mixer"}, "d_state": 64, "heads": 8, "bidirectional": False,
            "dt_min": 1e-5, "dt_max": 1e-5, "max_kernel_length": None, "window": None, "r_min": 0.9, "r_max": 0.999,
            "gamma_min": 0.9, "gamma_max": 0.999, "max_phase": 2 * math.pi, **nested["mixer"]}
    meta["train_config"] = flat
    with open(path, "wb") as fh:
        np.savez(fh, __meta__=np.array(json.dumps(meta)), **arrays)
    return flat


def test_a_checkpoint_with_a_flat_config_of_earlier_versions_resumes_and_is_still_compared(tmp_path):
    """A checkpoint written before mixer tables resumes (its flat config read as the fields its model used); a run
    whose mixer differs from it is still refused."""
    train(config(backend="torch", steps=4), tmp_path, stop_after=2, progress=False)
    flat = _flatten_checkpoint(tmp_path / "checkpoint.npz")
    assert "mixer" not in flat and flat["r_min"] == 0.9 and flat["gamma_min"] == 0.9
    with pytest.raises(LinrnnError, match="made with another config \\(differs in mixer\\)"):
        train(config(backend="torch", steps=4, mixer={"r_min": 0.5}), tmp_path, resume=True, progress=False)
    assert train(config(backend="torch", steps=4), tmp_path, resume=True, progress=False).steps_done == 4


def test_train_command_line(tmp_path, capsys):
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps({**SMALL, "task": "cumsum", "model": "dlr", "mixer": {"d_state": 8}, "steps": 2,
                                    "eval_every": 2}))
    assert main(["train", "--config", str(cfg_file), "--lr", "0.01", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert "cumsum dlr torch: 2 steps" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "config.json").read_text())["lr"] == 0.01
    assert main(["train", "--task", "shift", "--length", "3", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == "linrnn train: error: length: expected an integer >= 8, found 3"
    assert main(["train", "--steps", "ten"]) == 2
    assert "--steps: expected an integer, found 'ten'" in capsys.readouterr().err


def test_jax_steps_draw_new_dropout_masks_and_a_step_redraws_its_own(monkeypatch):
    """The JAX adapter's dropout key is fold_in(PRNGKey(seed), step): consecutive steps draw different masks, and
    the same step of the same seed (a resumed run) draws the same ones. The masks are recorded as the model draws
    them: `model.dropout` applied to ones, passed out of the compiled step by `jax.debug.callback`."""
    import jax
    import jax.numpy as jnp
    from linrnn.impls.init import init
    from linrnn.impls.jax import model as jax_model
    from linrnn.tasks.jax_adapter import Adapter
    from linrnn.tasks.train import SyntheticSource

    cfg = config(backend="jax", dtype="float32", length=8, d_model=8, mixer={"d_state": 2}, dropout=0.5, n_layers=1)
    source = SyntheticSource(cfg)
    drawn = []
    original = jax_model.dropout

    def recording(z, rate, key):
        mask = original(jnp.ones((z.shape[0], 1, z.shape[2]), z.dtype), rate, key)
        jax.debug.callback(lambda m: drawn.append(np.asarray(m)), mask, ordered=True)
        return original(z, rate, key)

    monkeypatch.setattr(jax_model, "dropout", recording)
    jax.clear_caches()                  # a step compiled earlier in this process would not call `recording`

    def masks(adapter, step):
        drawn.clear()
        adapter.train_step(source.train_batch(step), step, 1e-3, 1e-3)
        assert len(drawn) == 2 * cfg.n_layers, "a dropout site was not reached"
        return [m.copy() for m in drawn]

    bundle = init(source.model_config(), cfg.seed)
    run = Adapter(bundle, cfg)
    step0, step1 = masks(run, 0), masks(run, 1)
    again = masks(run, 0)                  # step 0 again, as a resumed run takes it (other parameters by now)
    assert all(0 < np.count_nonzero(m) < m.size for m in step0 + step1), "rate 0.5 keeps some, drops some"
    for site, (a, b) in enumerate(zip(step0, step1)):
        assert not np.array_equal(a, b), f"dropout site {site}: steps 0 and 1 drew the same mask"
    for site, (a, b) in enumerate(zip(step0, again)):
        assert np.array_equal(a, b), f"dropout site {site}: step 0 of the same seed drew another mask"


def test_the_jax_training_step_does_not_retrace_after_its_first(monkeypatch):
    """Retrace guard (issue 30 §4): over steps with new batches, step numbers and learning rates (as the warm-up
    schedule gives), the adapter's compiled gradient and update are traced once each. Traces are counted by a
    Python side effect inside the traced functions (the model's forward, the optimiser's update): it runs while JAX
    traces, never when a compiled program is reused."""
    import optax
    from linrnn.impls.init import init
    from linrnn.impls.jax import model as jax_model
    from linrnn.tasks.jax_adapter import Adapter
    from linrnn.tasks.train import SyntheticSource

    traces = {"gradient": 0, "update": 0}
    forward_train = jax_model.forward_train

    def counted_forward(*args, **kwargs):
        traces["gradient"] += 1
        return forward_train(*args, **kwargs)

    monkeypatch.setattr(jax_model, "forward_train", counted_forward)
    cfg = config({"d_state": 2}, backend="jax", dtype="float32", length=8, d_model=4, n_layers=1, dropout=0.1)
    source = SyntheticSource(cfg)
    run = Adapter(init(source.model_config(), cfg.seed), cfg)
    adam_update = run.adam.update

    def counted_update(*args, **kwargs):
        traces["update"] += 1
        return adam_update(*args, **kwargs)

    run.adam = optax.GradientTransformation(run.adam.init, counted_update)
    losses = [run.train_step(source.train_batch(step), step, lr, lr / 3)
              for step, lr in enumerate([1e-4, 5e-4, 1e-3, 2e-3])]
    assert all(np.isfinite(losses))
    assert traces == {"gradient": 1, "update": 1}, f"traces over 4 steps: {traces}"

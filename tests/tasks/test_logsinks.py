"""Training logs people read: `linrnn train --log tensorboard,wandb`, `linrnn runs list` and `linrnn runs export`.

- the TensorBoard event files, read back by TensorBoard's own reader, hold every value of metrics.jsonl exactly
  (float64 tensor summaries), the config as text; a resumed run's events are those of one uninterrupted log, for
  the app's reader and for the older one that ignores `purge_step` alike;
- `runs export` writes the same events for a run trained without `--log`, and twice writes them once;
- Weights & Biases: a resumed run, and an export, go on in the run's own W&B run (its id stored in the run
  directory), not a second one of the same name; offline (WANDB_MODE=offline) it logs the run's last values and its
  config (skipped, saying so, where wandb is not installed: it is optional);
- `runs list` shows each run's task, model, seed, status (finished or the step an unfinished run reached) and best
  metric; a bad `--log`, `--to` or folder is one line.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from linrnn.tasks import logsinks
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.train import train

CONFIG = dict(task="shift", model="dlr", backend="torch", length=8, steps=12, d_model=8, mixer={"d_state": 8},
              batch_size=2, eval_every=4, eval_batches=1, checkpoint_every=6)


def logged(run_dir: Path) -> dict[str, dict[int, float]]:
    """metrics.jsonl as {tag: {step: value}}, by `logsinks.scalars`."""
    out: dict[str, dict[int, float]] = {}
    for text in (run_dir / "metrics.jsonl").read_text().splitlines():
        line = json.loads(text)
        for tag, value in logsinks.scalars(line).items():
            out.setdefault(tag, {})[line["step"]] = value
    return out


def events(run_dir: Path, older: bool = False) -> tuple[dict[str, dict[int, float]], list[str]]:
    """The scalars of RUN_DIR/tensorboard as TensorBoard's own reader (the one its app uses; `older`: the older
    one, which does not honour `purge_step`) sees them, and its text summaries."""
    from tensorboard.backend.event_processing import event_accumulator, plugin_event_accumulator
    from tensorboard.util import tensor_util

    kind = event_accumulator if older else plugin_event_accumulator
    reader = kind.EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"tensors": 0})
    reader.Reload()
    scalars, texts = {}, []
    for tag in reader.Tags()["tensors"]:
        for event in reader.Tensors(tag):
            value = tensor_util.make_ndarray(event.tensor_proto)
            if tag.startswith("config"):
                texts.append(value.item().decode())
            else:
                assert event.step not in scalars.get(tag, {}), f"{tag} logged twice at step {event.step}"
                scalars.setdefault(tag, {})[event.step] = float(value)
    return scalars, texts


pytest.importorskip("tensorboard", reason="the TensorBoard sink needs the tensorboard package (the test extra)")


def test_train_log_tensorboard_writes_every_value_of_metrics_jsonl(tmp_path, cli):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    code, out, err = cli.run("train", "--config", config, "--out", tmp_path / "run", "--quiet", "--log", "tensorboard")
    assert code == 0, err
    scalars, texts = events(tmp_path / "run")
    want = logged(tmp_path / "run")
    assert set(want) == {"train/loss", "train/lr", "eval/mse", "eval/r2"} and len(want["train/loss"]) == 12
    assert scalars == want                                   # exactly: float64, the JSON's own numbers
    assert len(texts) == 1 and json.loads(texts[0].strip("`\n")) == TrainConfig(**CONFIG).to_dict()


def test_a_resumed_run_logs_one_uninterrupted_history(tmp_path):
    from linrnn.tasks.train import TrainingDiverged

    config = TrainConfig(**CONFIG)
    with pytest.raises(TrainingDiverged):          # logged steps 1-8 and an evaluation at 8; its checkpoint is at 6
        train(config, tmp_path, poison_step=8, progress=False, log_to=("tensorboard",))
    assert sorted(events(tmp_path)[0]["train/loss"]) == list(range(1, 9))
    train(config, tmp_path, resume=True, progress=False, log_to=("tensorboard",))    # steps 7-12 again, from 6
    for older in (False, True):                       # (events() fails on a step logged twice)
        scalars, texts = events(tmp_path, older)
        assert scalars == logged(tmp_path) and sorted(scalars["train/loss"]) == list(range(1, 13)) and len(texts) == 1


def test_runs_export_writes_the_same_events_for_a_run_trained_without_a_sink(tmp_path, cli):
    train(TrainConfig(**CONFIG), tmp_path / "runs" / "a", progress=False)
    assert not (tmp_path / "runs" / "a" / "tensorboard").exists()
    code, out, err = cli.run("runs", "export", tmp_path / "runs", "--to", "tensorboard")
    assert code == 0 and "a: 15 log lines to tensorboard" in out, (out, err)
    assert events(tmp_path / "runs" / "a")[0] == logged(tmp_path / "runs" / "a")
    cli.run("runs", "export", tmp_path / "runs", "--to", "tensorboard")        # again: the events are replaced
    for older in (False, True):
        assert events(tmp_path / "runs" / "a", older)[0] == logged(tmp_path / "runs" / "a")


class FakeWandb:
    """What the sink calls of `wandb`: init (project, dir, name, config), log(values, step), finish."""

    def __init__(self):
        self.calls = []

    def init(self, **kwargs):
        self.calls.append(("init", kwargs))
        return self

    @staticmethod
    def Settings(**kwargs):
        return kwargs

    def log(self, values, step):
        self.calls.append(("log", step, dict(values)))

    def finish(self):
        self.calls.append(("finish",))


def test_the_wandb_sink_logs_every_value_at_its_step_with_the_config(tmp_path, monkeypatch):
    import sys

    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setenv("WANDB_PROJECT", "mine")
    config = TrainConfig(**CONFIG)
    train(config, tmp_path, progress=False, log_to=("wandb",))
    (kind, init), *logs, finish = fake.calls
    assert kind == "init" and finish == ("finish",)
    run_id = json.loads((tmp_path / logsinks.WANDB_RUN).read_text())["id"]
    assert init == {"project": "mine", "dir": str(tmp_path), "name": tmp_path.name, "id": run_id,
                    "config": config.to_dict(), "resume": None, "settings": {"console": "off"}}
    got: dict[str, dict[int, float]] = {}
    for _, step, values in logs:
        for tag, value in values.items():
            got.setdefault(tag, {})[step] = value
    assert got == logged(tmp_path)


def test_a_resumed_run_and_an_export_go_on_in_the_runs_own_wandb_run(tmp_path, monkeypatch):
    import sys

    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    config = TrainConfig(**CONFIG)
    train(config, tmp_path, stop_after=7, progress=False, log_to=("wandb",))
    train(config, tmp_path, resume=True, progress=False, log_to=("wandb",))
    logsinks.export(tmp_path, "wandb")
    train(config, tmp_path / "other", progress=False, log_to=("wandb",))        # another run: another W&B run
    inits = [call[1] for call in fake.calls if call[0] == "init"]
    assert [(i["id"], i["resume"]) for i in inits[:3]] == [(inits[0]["id"], None), (inits[0]["id"], "allow"),
                                                            (inits[0]["id"], "allow")]
    assert inits[3]["id"] != inits[0]["id"] and inits[3]["resume"] is None


@pytest.mark.skipif(importlib.util.find_spec("wandb") is None,
                    reason="wandb is optional and not installed (pip install wandb)")
def test_wandb_offline_writes_its_run_without_an_account(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    train(TrainConfig(**CONFIG), tmp_path, progress=False, log_to=("wandb",))
    [run] = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")     # wandb's own log, for `wandb sync`
    data = run.read_bytes()
    assert all(tag.encode() in data for tag in logged(tmp_path))


def test_runs_list_shows_each_run_its_status_and_best_metric(tmp_path, cli):
    train(TrainConfig(**CONFIG), tmp_path / "done", progress=False)
    train(TrainConfig(**{**CONFIG, "model": "lru", "seed": 3}), tmp_path / "sweep" / "half", stop_after=5,
          progress=False)
    code, out, err = cli.run("runs", "list", tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["run", "task", "model", "seed", "status", "best", "time"]
    done = next(line for line in lines if line.startswith("done "))
    half = next(line for line in lines if line.startswith("sweep/half "))
    r2 = json.loads((tmp_path / "done" / "results.json").read_text())["final"]["r2"]
    assert done.split()[:5] == ["done", "shift", "dlr", "0", "finished"] and f"final R^2 {r2:.4f}" in done
    assert half.split()[:4] == ["sweep/half", "shift", "lru", "3"]
    assert "step 5 of 12 (unfinished; resumes from step 5)" in half
    assert lines[-1] == "2 run(s)"


def test_bad_log_options_are_one_line(tmp_path, cli, monkeypatch):
    assert "--log: expected a comma-separated list of tensorboard, wandb, found 'tensorbored'" in cli.error_line(
        "train", "--task", "shift", "--model", "dlr", "--length", "8", "--steps", "2", "--out", tmp_path / "r",
        "--log", "tensorbored")
    assert not (tmp_path / "r").exists()
    assert "--to: expected one of tensorboard, wandb, found 'csv'" in cli.error_line(
        "runs", "export", tmp_path, "--to", "csv")
    assert "runs: expected a folder of run directories, found" in cli.error_line("runs", "list", tmp_path / "none")
    import builtins

    real = builtins.__import__

    def no_wandb(name, *args, **kwargs):
        if name == "wandb":
            raise ImportError("No module named 'wandb'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wandb)
    with pytest.raises(logsinks.LinrnnError, match=r"--log wandb: expected the wandb package \(pip install wandb"):
        logsinks.open_sinks(("wandb",), tmp_path, {})

"""Data parallel: W ranks (torch: torchrun's processes, gloo on CPUs) or W devices (JAX: XLA host devices in
one process) take the steps of one process on the same global batch, and their runs end with the same
bundle, losses and evaluations within the tolerance table (docs/precision.md).

The torch side runs `python -m torch.distributed.run --standalone --nproc-per-node 2` (torchrun) as a
subprocess, either the user's command `-m linrnn train ... --set devices=2` or `DRIVER`, a script that
calls `train` and reports what each rank saw; the JAX side runs `JAX_DRIVER` in a subprocess started with
2 host devices (the flag must be set before JAX starts). Both compare with a 1-way run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from linrnn.impls.reference import spectral_radius
from linrnn.base.tolerance import assert_close
from linrnn.tasks import checkpoint
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate.listops import TreeConfig, generate
from linrnn.tasks.train import DataSource, SyntheticSource, adapter_class, train

from linrnn.cli import main

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

TINY = dict(d_model=8, mixer={"d_state": 4}, n_layers=1, norm="layer", dropout=0.0, dtype="float64", batch_size=4,
            steps=3, eval_every=2)
LISTOPS = dict(TINY, task="listops", model="lru", eval_batches=None)          # val, test: 2 batches each
SEGMENTATION = dict(TINY, task="pathfinder-segmentation", data_options={"resolution": 32}, model="dlr",
                    eval_batches=None)
SHIFT = dict(TINY, task="shift", length=16, model="rotrnn", mixer={"d_state": 4, "heads": 2}, eval_batches=2)

# one rank's view of a run under torchrun: argv = config, data ('' for none), out, report folder,
# the rank whose step `poison_step` gets NaN inputs (-1: none), poison_step
DRIVER = """
import json, os, sys
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.train import TrainingDiverged, train

config, data, out, report, poison_rank, poison_step = sys.argv[1:]
rank = int(os.environ["RANK"])
try:
    result = train(TrainConfig.from_file(config), out, data=data or None, progress=False,
                   poison_step=int(poison_step) if rank == int(poison_rank) else None)
    record = {"losses": result.losses, "evaluations": result.evaluations, "best": result.best,
              "bundle": result.bundle.digest()}
except TrainingDiverged as err:
    record = {"diverged": str(err)}
with open(os.path.join(report, f"rank{rank}.json"), "w") as file:
    json.dump(record, file)
"""

# with 2 XLA host devices: the config with devices=1 (in OUT/d1) and devices=2 (in OUT/d2), then
# `linrnn train` with devices=4; prints {"status", "stderr"} of the latter
JAX_DRIVER = """
import contextlib, io, json, sys
from linrnn.cli import main
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.overrides import replace
from linrnn.tasks.train import train

config, data, out = sys.argv[1:]
for devices in (1, 2):
    train(replace(TrainConfig.from_file(config), [f"devices={devices}"]), f"{out}/d{devices}", data=data or None,
          progress=False)
err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(["train", "--config", config] + (["--data", data] if data else [])
                  + ["--set", "devices=4", "--out", f"{out}/d4", "--quiet"])
print(json.dumps({"status": status, "stderr": err.getvalue()}))
"""



def _has_torch_distributed() -> bool:
    try:
        import torch.distributed
    except ImportError:
        return False
    return torch.distributed.is_available()


torch_distributed = pytest.mark.skipif(not _has_torch_distributed(),
                                       reason="PyTorch with torch.distributed is not installed")


@pytest.fixture(scope="module")
def listops_data(tmp_path_factory) -> Path:
    """32/8/8 LRA-format ListOps trees of 17 to 22 tokens (the generator's length bounds, made small): every
    batch pads to L = 24, so the JAX side compiles one shape."""
    out = tmp_path_factory.mktemp("listops")
    generate(out, n_train=32, n_val=8, n_test=8, seed=0, workers=1, config=TreeConfig(min_length=16, max_length=23))
    return out


@pytest.fixture(scope="module")
def segmentation_data(tmp_path_factory) -> Path:
    """8/4/4 PathfinderSegmentation images at 32 x 32 (L = 1024)."""
    out = tmp_path_factory.mktemp("segmentation")
    GENERATORS["pathfinder-segmentation"](out, n_train=8, n_val=4, n_test=4, seed=1, resolution=32, workers=1)
    return out


def write_config(folder: Path, fields: dict) -> Path:
    path = folder / "config.json"
    path.write_text(json.dumps(fields))
    return path


def run(command: list, cwd: Path, **env) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *map(str, command)], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "OMP_NUM_THREADS": "1", **env}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done


def torchrun(*args, cwd: Path) -> subprocess.CompletedProcess:
    return run(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *args], cwd)


def drive(folder: Path, fields: dict, data: Path | None, out: Path, poison=(-1, 0)) -> list[dict]:
    """`DRIVER` under torchrun with 2 ranks: what each rank reports."""
    (folder / "driver.py").write_text(DRIVER)
    (folder / "report").mkdir()
    torchrun(folder / "driver.py", write_config(folder, fields), data or "", out, folder / "report", *poison,
             cwd=folder)
    return [json.loads((folder / "report" / f"rank{rank}.json").read_text()) for rank in (0, 1)]


def longest(cfg: TrainConfig, data: Path | None) -> int:
    """The longest padded L of the run's training batches (the recurrences' length in the tolerance)."""
    if not cfg.is_data_task:
        return cfg.length
    source = DataSource(cfg, data)
    return max(source.train_batch(s).inputs.shape[1] for s in range(cfg.steps))


def radius(bundle) -> float:
    """The largest |eigenvalue| over the model's mixers."""
    cfg = bundle.config
    return max(spectral_radius(cfg.mixer, {k.split("mixer.", 1)[1]: v for k, v in bundle.params.items()
                                           if k.startswith(f"layers.{i}.mixer.")}) for i in range(cfg.n_layers))


def flat(record, prefix: str = "") -> dict[str, float]:
    """A nested record of numbers as {"val.accuracy": ..., ...}."""
    if not isinstance(record, dict):
        return {prefix: record}
    return {k: v for key, value in record.items() for k, v in flat(value, f"{prefix}.{key}" if prefix else key).items()}


def assert_same_records(name: str, one: dict | None, two: dict | None, length: int, r: float,
                        kind: str = "gradient") -> None:
    assert (one is None) == (two is None), f"{name}: {one} vs {two}"
    if one is None:
        return
    # the best evaluation's per-example test predictions: gathered over the ranks, the same classes in file order
    assert one.get("predictions") == two.get("predictions"), f"{name}: the per-example predictions differ"
    one, two = ({k: v for k, v in r.items() if k != "predictions"} for r in (one, two))
    a, b = flat(one), flat(two)
    assert sorted(a) == sorted(b), name
    for key in a:
        assert_close(f"{name} {key}", a[key], b[key], kind, "float64", length, r)


def assert_same_run(one: Path, two: Path, cfg: TrainConfig, data: Path | None) -> None:
    """The final bundle, optimiser state, losses, evaluations and best of two run folders agree."""
    a, b = checkpoint.load(one / "checkpoint.npz"), checkpoint.load(two / "checkpoint.npz")
    assert a.step == b.step == cfg.steps
    L, r = longest(cfg, data), radius(a.bundle)
    for key, value in a.bundle.params.items():
        assert_close(f"{key} after {cfg.steps} steps", value, b.bundle.params[key], "gradient", "float64", L, r)
    for key, value in a.optimizer.items():
        assert_close(f"optimizer {key}", value, b.optimizer[key], "gradient", "float64", L, r)
    ra, rb = (json.loads((run / "results.json").read_text()) for run in (one, two))
    assert len(ra["train_loss"]) == len(rb["train_loss"]) == cfg.steps
    assert_close("training losses", ra["train_loss"], rb["train_loss"], "gradient", "float64", L, r)
    assert [e["step"] for e in ra["evaluations"]] == [e["step"] for e in rb["evaluations"]] == [2, 3]
    for x, y in zip(ra["evaluations"], rb["evaluations"]):
        assert_same_records(f"evaluation at step {x['step']}", x, y, L, r)
    assert_same_records("best", ra["best"], rb["best"], L, r)


# ---------------------------------------------------------------------------------------------------
# torch: 2 processes (gloo) against 1


@torch_distributed
def test_torch_two_ranks_take_the_steps_of_one_and_agree_on_every_evaluation(tmp_path, listops_data):
    cfg = TrainConfig(**LISTOPS)
    train(cfg, tmp_path / "one", data=listops_data, progress=False)
    ranks = drive(tmp_path, {**LISTOPS, "devices": 2}, listops_data, tmp_path / "two")
    assert_same_run(tmp_path / "one", tmp_path / "two", cfg, listops_data)
    assert ranks[0]["best"] is not None and ranks[0]["best"]["val"]["examples"] == 8   # both val batches counted
    predictions = ranks[0]["best"]["predictions"]                   # each rank's test batches, gathered
    assert len(predictions["predicted"]) == ranks[0]["best"]["test"]["examples"] and min(predictions["label"]) >= 0
    assert ranks[0] == ranks[1]   # the same losses, evaluations, best and final bundle on both ranks


@torch_distributed
@pytest.mark.parametrize("fields", [SHIFT, SEGMENTATION], ids=["regression", "segmentation"])
def test_torchrun_linrnn_train_with_two_ranks_ends_as_one_process(tmp_path, fields, segmentation_data):
    data = segmentation_data if fields["task"] == "pathfinder-segmentation" else None
    cfg = TrainConfig(**fields)
    train(cfg, tmp_path / "one", data=data, progress=False)
    config = write_config(tmp_path, fields)
    done = torchrun("-m", "linrnn", "train", "--config", config, *(["--data", data] if data else []),
                    "--set", "devices=2", "--out", tmp_path / "two", "--quiet", cwd=tmp_path)
    assert f"results in {tmp_path / 'two'}" in done.stdout
    assert json.loads((tmp_path / "two" / "config.json").read_text())["devices"] == 2
    assert_same_run(tmp_path / "one", tmp_path / "two", cfg, data)


@torch_distributed
def test_two_ranks_evaluate_the_batchnorm_statistics_rank_0_saves(tmp_path, listops_data):
    """Each rank normalises with its own batch's statistics in training; the evaluation summed over the
    ranks must still be the evaluation of the saved model (rank 0's statistics on every rank)."""
    fields = {**LISTOPS, "norm": "batch"}
    torchrun("-m", "linrnn", "train", "--config", write_config(tmp_path, fields), "--data", listops_data,
             "--set", "devices=2", "--out", tmp_path / "two", "--quiet", cwd=tmp_path)
    saved = checkpoint.load(tmp_path / "two" / "checkpoint.npz")
    cfg = TrainConfig(**fields)
    again = DataSource(cfg, listops_data).evaluate(adapter_class("torch")(saved.bundle, cfg))
    recorded = json.loads((tmp_path / "two" / "results.json").read_text())["final"]
    assert_same_records("final evaluation", {k: recorded[k] for k in again}, again, longest(cfg, listops_data),
                        radius(saved.bundle), "forward")


@torch_distributed
def test_a_non_finite_loss_on_one_rank_stops_every_rank(tmp_path):
    fields = {**SHIFT, "steps": 6, "checkpoint_every": 1, "devices": 2}
    for record in drive(tmp_path, fields, None, tmp_path / "run", poison=(1, 3)):
        assert record.get("diverged", "").startswith("step 3: the training loss is nan; stopped before updating")
    kept = checkpoint.load(tmp_path / "run" / "checkpoint.npz")
    assert kept.step == 3 and all(np.all(np.isfinite(v)) for v in kept.bundle.params.values())


def test_each_rank_trains_on_its_part_of_a_synthetic_batch():
    cfg = TrainConfig(**{**SHIFT, "devices": 2})
    whole = SyntheticSource(TrainConfig(**SHIFT)).train_batch(1)
    parts = [SyntheticSource(cfg, rank, 2).train_batch(1) for rank in (0, 1)]
    for field in ("inputs", "lengths", "targets", "mask"):
        assert [len(getattr(p, field)) for p in parts] == [2, 2]
        np.testing.assert_array_equal(np.concatenate([getattr(p, field) for p in parts]), getattr(whole, field))


def test_torch_devices_without_torchrun_is_one_line_error(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--task", "shift", "--length", "16", "--d-model", "8", "--d-state", "4", "--steps", "1",
            "--set", "devices=2", "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        "linrnn train: error: devices: expected torchrun's WORLD_SIZE (1) for the torch side, found 2 "
        "(run with torchrun --nproc-per-node 2)")
    assert not out.exists()


# ---------------------------------------------------------------------------------------------------
# JAX: 2 host devices against 1, in one process


@pytest.mark.parametrize("fields", [LISTOPS, {**SHIFT, "model": "dlr", "mixer": {"d_state": 4}, "norm": "batch",
                                              "dropout": 0.2}],
                         ids=["classification", "regression-batchnorm-dropout"])
def test_jax_two_devices_take_the_steps_of_one(tmp_path, fields, listops_data):
    pytest.importorskip("jax")
    fields = {**fields, "backend": "jax"}
    data = listops_data if fields["task"] == "listops" else None
    (tmp_path / "driver.py").write_text(JAX_DRIVER)
    # the run's own XLA flags (conftest.py: how XLA compiles, not what) and the 2 host devices
    done = run([tmp_path / "driver.py", write_config(tmp_path, fields), data or "", tmp_path], tmp_path,
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip())
    assert_same_run(tmp_path / "d1", tmp_path / "d2", TrainConfig(**fields), data)
    four = json.loads(done.stdout.strip().splitlines()[-1])
    assert four == {"status": 2, "stderr": (
        "linrnn train: error: devices: expected at most the 2 cpu devices JAX sees here, found 4 "
        "(CPU: XLA_FLAGS=--xla_force_host_platform_device_count=4)\n")}
    assert not (tmp_path / "d4").exists()

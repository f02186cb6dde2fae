"""One table of training defaults: `linrnn train` and `linrnn tasks grid` start every registered model the same way,
from its spec (`ModelSpec.task_defaults`, read by `linrnn.tasks.config.model_defaults`)."""

from __future__ import annotations

import json

import pytest

from linrnn.cli import main
from linrnn.impls import specs
from linrnn.tasks.config import TrainConfig, model_defaults, state_modes
from linrnn.tasks.grid import grid_config


def _dry_run(capsys, *args: str) -> dict:
    assert main(["train", "--task", "shift", *args, "--dry-run"]) == 0
    return json.JSONDecoder().raw_decode(capsys.readouterr().out)[0]


@pytest.mark.parametrize("model", specs.kinds())
@pytest.mark.parametrize("length", [8, 100])
def test_train_and_the_grid_start_every_model_the_same_way(model, length, capsys):
    planned = _dry_run(capsys, "--model", model, "--length", str(length))
    job = grid_config("shift", model, "torch", length, 10)
    assert planned["mixer"] == job.mixer, model
    assert {k: planned["mixer"][k] for k in model_defaults(model, length)} == model_defaults(model, length)
    assert TrainConfig(model=model, length=length).compute_mode == job.compute_mode == (
        specs.spec(model).training_modes[0])


def test_linrnn_train_shows_s4d_s_initialisation_settings(capsys):
    planned = _dry_run(capsys, "--model", "s4d")          # the default length, 256
    assert planned["mixer"] == {"d_state": 256, "bidirectional": False, "init": "lin", "dt_min": 1e-4,
                                "dt_max": 1e-1}
    assert planned["mixer"] == grid_config("shift", "s4d", "torch", 256, 10).mixer


def test_the_state_grows_with_the_length_and_data_tasks_take_the_fewest_modes():
    assert [state_modes(L) for L in (None, 8, 64, 65, 300, 4096)] == [64, 64, 64, 72, 304, 4096]
    for L in (100, 300, 320):           # every model the same count, RotRNN in 8 heads of an even d_state
        lru, rotrnn = (TrainConfig(model=m, length=L).mixer for m in ("lru", "rotrnn"))
        assert lru["d_state"] == rotrnn["heads"] * rotrnn["d_state"] // 2 == state_modes(L) >= L

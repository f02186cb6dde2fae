"""The full-scale configs tasks/configs/TASK-MODEL.toml: one per data task x paper model (the baselines
S4D and S5 train through the same loop with `--model`, but have no config files of their own), each loads,
plans and says where its values come from; the LRU's published settings are the ones written."""

import math
from pathlib import Path

import pytest

from linrnn.cli import main
from linrnn.tasks.config import PAPER_MODELS, TrainConfig
from linrnn.tasks.datatasks import DATA_TASKS
from linrnn.tasks.plan import plan

CONFIGS = Path(__file__).resolve().parents[2] / "tasks" / "configs"
PAIRS = [(task, model) for task in DATA_TASKS for model in PAPER_MODELS]


def path(task: str, model: str) -> Path:
    return CONFIGS / f"{task}-{model}.toml"


def test_there_is_exactly_one_config_per_data_task_and_model():
    assert sorted(p.name for p in CONFIGS.iterdir()) == sorted(path(t, m).name for t, m in PAIRS)


@pytest.mark.parametrize("task, model", PAIRS)
def test_a_config_loads_plans_and_names_its_source(task, model):
    file = path(task, model)
    assert file.read_text().splitlines()[0].startswith("# Source: ")
    config = TrainConfig.from_file(file)
    assert (config.task, config.model) == (task, model)
    # full scale: whole epochs, evaluated and checkpointed at every epoch's end on the whole splits
    assert config.epochs is not None and config.steps is None and config.length is None
    assert (config.eval_every, config.eval_batches, config.checkpoint_every) == (None, None, None)
    assert (config.backend, config.devices) == ("torch", 1)
    run = plan(config)
    assert run.parameters > 0 and 0 < config.warmup_steps < run.total_steps


@pytest.mark.parametrize("task, model", [(task, PAPER_MODELS[i % len(PAPER_MODELS)]) for i, task in enumerate(DATA_TASKS)])
def test_the_dry_run_of_a_config_prints_the_plan(task, model, capsys):
    assert main(["train", "--config", str(path(task, model)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "parameters" in out and f'"task": "{task}"' in out


def test_the_lru_files_hold_the_lru_port_table():
    # the per-task table of the LRU port to the S4 code base (as collected for the LRU paper's appendix)
    pathx = TrainConfig.from_file(path("pathx", "lru"))
    assert (pathx.r_min, pathx.r_max, pathx.max_phase) == (0.999, 0.9999, math.pi / 10)
    assert (pathx.d_model, pathx.d_state, pathx.batch_size, pathx.epochs) == (128, 256, 32, 50)
    assert pathx.grad_checkpointing
    listops = TrainConfig.from_file(path("listops", "lru"))
    assert (listops.n_layers, listops.d_model, listops.d_state, listops.r_min, listops.r_max) == (6, 128, 256, 0.0, 0.9)
    assert (listops.lr, listops.recurrence_lr, listops.weight_decay) == (0.003, 0.003 * 0.5, 0.05)
    image = TrainConfig.from_file(path("image", "lru"))
    assert (image.d_model, image.d_state, image.dropout, image.batch_size, image.epochs) == (512, 384, 0.1, 50, 200)
    assert (image.lr, image.recurrence_lr) == (0.005, 0.005 * 0.25) and image.data_options == {"grayscale": True}


def test_dlr_own_tasks_hold_the_dlr_authors_runs():
    subtrees = TrainConfig.from_file(path("listops-subtrees", "dlr"))
    assert (subtrees.n_layers, subtrees.d_model, subtrees.d_state, subtrees.lr, subtrees.batch_size) == (
        6, 128, 1024, 8e-4, 32)
    assert (subtrees.prenorm, subtrees.bidirectional, subtrees.dt_min, subtrees.dt_max) == (False, False, 1e-4, 1e-1)
    segmentation = TrainConfig.from_file(path("pathfinder-segmentation", "dlr"))
    assert (segmentation.n_layers, segmentation.warmup_steps, segmentation.epochs) == (5, 3000, 30)
    assert segmentation.bidirectional and segmentation.data_options == {"resolution": 128}

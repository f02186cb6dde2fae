"""The full-scale configs tasks/configs/TASK-MODEL.toml: one per data task x paper model (the baselines
S4D and S5 train through the same loop with `--model`, but have no config files of their own), each loads,
plans and says where its values come from; the LRU's published settings are the ones written."""

import json
import math
import tomllib
from pathlib import Path

import pytest

from linrnn.cli import main
from linrnn.impls.config import MIXER_CONFIGS
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.tasks.config import MIXER_FIELD_TYPES, PAPER_MODELS, TrainConfig
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
    assert pathx.mixer_config() == LRUConfig(d_model=128, d_state=256, bidirectional=True, r_min=0.999, r_max=0.9999,
                                             max_phase=math.pi / 10)
    assert (pathx.d_model, pathx.batch_size, pathx.epochs) == (128, 32, 50)
    assert pathx.grad_checkpointing
    listops = TrainConfig.from_file(path("listops", "lru"))
    assert (listops.n_layers, listops.d_model) == (6, 128)
    assert (listops.mixer["d_state"], listops.mixer["r_min"], listops.mixer["r_max"]) == (256, 0.0, 0.9)
    assert (listops.lr, listops.recurrence_lr, listops.weight_decay) == (0.003, 0.003 * 0.5, 0.05)
    image = TrainConfig.from_file(path("image", "lru"))
    assert (image.d_model, image.mixer["d_state"], image.dropout, image.batch_size, image.epochs) == (512, 384, 0.1, 50,
                                                                                                     200)
    assert (image.lr, image.recurrence_lr) == (0.005, 0.005 * 0.25) and image.data_options == {"grayscale": True}


def test_dlr_own_tasks_hold_the_dlr_authors_runs():
    subtrees = TrainConfig.from_file(path("listops-subtrees", "dlr"))
    assert (subtrees.n_layers, subtrees.d_model, subtrees.lr, subtrees.batch_size) == (6, 128, 8e-4, 32)
    assert subtrees.mixer_config() == DLRConfig(d_model=128, d_state=1024, bidirectional=False, dt_min=1e-4, dt_max=1e-1)
    assert subtrees.prenorm is False
    segmentation = TrainConfig.from_file(path("pathfinder-segmentation", "dlr"))
    assert (segmentation.n_layers, segmentation.warmup_steps, segmentation.epochs) == (5, 3000, 30)
    assert segmentation.mixer["bidirectional"] and segmentation.data_options == {"resolution": 128}
    assert segmentation.mixer_config().max_kernel_length == 8192


# -- the mixer table: the model's own config, nothing else -----------------------------------------------------

def test_every_config_keeps_its_mixer_fields_in_the_mixer_table():
    for task, model in PAIRS:
        data = tomllib.loads(path(task, model).read_text())
        assert isinstance(data.get("mixer"), dict) and not set(data) & set(MIXER_FIELD_TYPES), (task, model)
        config = TrainConfig.from_file(path(task, model))
        assert type(config.mixer_config()) is MIXER_CONFIGS[model] and config.mixer_config().d_model == config.d_model
        assert {k: config.mixer[k] for k in data["mixer"]} == {k: None if v == "none" else v
                                                               for k, v in data["mixer"].items()}


def _dry_run(file, capsys, *flags) -> tuple[int, str, str]:
    code = main(["train", "--config", str(file), "--dry-run", *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _with_line(tmp_path, task_model: str, line: str, where: str) -> Path:
    """A copy of a shipped config with `line` added at the top level or in its [mixer] table."""
    text = path(*task_model.split("/")).read_text()
    head, table, mixer = text.partition("[mixer]\n")
    file = tmp_path / "run.toml"
    file.write_text(head + line + "\n" + table + mixer if where == "top" else text + line + "\n")
    return file


@pytest.mark.parametrize("where", ["mixer", "top"])
def test_a_toml_field_the_model_lacks_is_one_line_naming_field_and_model(tmp_path, capsys, where):
    file = _with_line(tmp_path, "listops/lru", "gamma_min = 0.5", where)
    code, out, err = _dry_run(file, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"linrnn train: error: {file}: ") and "gamma_min" in err and "model lru" in err, err


def test_a_toml_mixer_field_at_the_top_level_is_refused_even_where_the_model_has_it(tmp_path, capsys):
    code, _, err = _dry_run(_with_line(tmp_path, "listops/lru", "r_min = 0.5", "top"), capsys)
    assert code == 2 and err.count("\n") == 1 and "r_min: mixer fields go in the mixer table" in err, err


def test_a_json_field_the_model_lacks_is_one_line_naming_field_and_model(tmp_path, capsys):
    file = tmp_path / "run.json"
    file.write_text(json.dumps({"task": "listops", "model": "lru", "epochs": 1, "mixer": {"dt_min": 0.3}}))
    code, out, err = _dry_run(file, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "mixer: model lru has no field dt_min (its fields: d_state, bidirectional, r_min, r_max, max_phase)" in err


def test_a_valid_mixer_field_of_a_file_is_applied(tmp_path, capsys):
    code, out, _ = _dry_run(_with_line(tmp_path, "listops/rotrnn", 'm_init = "near_identity"', "mixer"), capsys)
    resolved = json.loads(out[:out.index("\n}") + 2])
    assert code == 0 and resolved["mixer"]["m_init"] == "near_identity" and resolved["mixer"]["heads"] == 32


def test_a_flat_config_of_earlier_versions_says_how_to_convert_it_and_still_reads_where_linrnn_wrote_it(tmp_path,
                                                                                                        capsys):
    """A run's config.json as linrnn wrote it before mixer tables: every model's fields at the top level. As a
    --config it is refused with the way to convert it; as a stored config (checkpoint, record) it reads as the run
    it was: the fields its model used."""
    nested = TrainConfig.from_file(path("sc10", "dlr"))
    flat = {**{k: v for k, v in nested.to_dict().items() if k != "mixer"}, "heads": 8, "window": None, "r_min": 0.9,
            "r_max": 0.999, "gamma_min": 0.9, "gamma_max": 0.999, "max_phase": 2 * math.pi,
            **{k: v for k, v in nested.mixer.items()}}
    file = tmp_path / "config.json"
    file.write_text(json.dumps(flat))
    code, _, err = _dry_run(file, capsys)
    assert code == 2 and err.count("\n") == 1 and "as linrnn wrote configs before mixer tables" in err, err
    assert TrainConfig.from_stored(flat) == nested
    assert TrainConfig.from_stored(nested.to_dict()) == nested

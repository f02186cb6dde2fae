"""A seventh model added as a newcomer would: a spec and one small implementation per side, in a temporary
package (`toy_source.py`), registered with `linrnn.impls.specs.register`. With no other edit to the project, the
cross-check, `linrnn conform` (its radius checks run, through the toy's `with_radius`), `linrnn train` in both
frameworks, `linrnn tasks grid` and the precision map must pick it up; the cross-check and conform must catch a bug
planted in one of its sides. The toy's decay fields have names of their own (`decay_min`, `decay_max`).

And the default run passes with it registered: every test file that names kinds (`toy_plugin.kind_files`: its text
reads the registry or lists kinds in a message) runs in a subprocess with the toy registered for the whole run
(`pytest -p toy_plugin --toy-only`: the toy's own cases, and the tests whose bodies read the registry)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from linrnn.cli import main
from linrnn.experiments import precision_map
from linrnn.impls import specs
from linrnn.experiments import gpucheck
from linrnn.impls import config
from linrnn.verify import bench, conform, crosscheck
from linrnn.impls.config import MIXER_CONFIGS, config_from_dict, config_to_dict, mixer_config
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.base.results import RUN_RESULTS, RunRecord, read
from linrnn.tasks.grid import grid_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# this folder's plugin (it writes the toy's package), imported from its file
_found = importlib.util.spec_from_file_location("toy_plugin", HERE / "toy_plugin.py")
toy_plugin = importlib.util.module_from_spec(_found)
_found.loader.exec_module(toy_plugin)
SHAPES = (crosscheck.Shape(2, 1, 3, 4, False, False), crosscheck.Shape(2, 9, 3, 4, False, True),
          crosscheck.Shape(1, 11, 4, 4, True, True))


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("seventh")
    module = toy_plugin.build(root)
    specs.register(module.spec(toy_plugin.PACKAGE))
    yield module
    specs.unregister("toy")
    toy_plugin.remove(root)


def test_the_registry_lists_it_everywhere(toy):
    assert "toy" in specs.kinds() and "toy" in specs.recurrent_kinds()
    assert MIXER_CONFIGS["toy"] is toy.ToyConfig
    assert "toy" in crosscheck.Selection().kinds            # the cross-check's default selection
    assert "toy" in conform.models() and "toy" in conform.own_models("linrnn-torch")
    cfg = mixer_config("toy", 3, 4, heads=2, decay_max=0.9)     # heads dropped: the toy has none
    assert config_from_dict(config_to_dict(cfg)) == cfg
    bundle = init(cfg, 0)
    assert sorted(bundle.params) == ["B", "C", "D", "log_decay"]
    for other in ("gamma_min", "r_max", "dt_min"):                # RotRNN's, the LRU's, DLR's: none is the toy's
        with pytest.raises(LinrnnError, match="unknown field"):
            mixer_config("toy", 3, 4, **{other: 0.5})


def _views() -> dict[str, object]:
    """Every table of model kinds above the registry, each read when used (imported before the toy registered)."""
    return {"specs.KINDS": specs.KINDS, "specs.RECURRENT_KINDS": specs.RECURRENT_KINDS,
            "config.KINDS": config.KINDS, "config.RECURRENT_KINDS": config.RECURRENT_KINDS,
            "crosscheck.Selection().kinds": crosscheck.Selection().kinds, "conform.models()": conform.models(),
            "bench.RECURRENT_KINDS": bench.RECURRENT_KINDS,
            "gpucheck's full profile": gpucheck.PROFILES["full"]["crosscheck_kinds"],
            "gpucheck's quick profile": gpucheck.PROFILES["quick"]["crosscheck_kinds"]}


def test_every_table_of_kinds_follows_the_registry_both_ways(toy):
    assert {name for name, kinds in _views().items() if "toy" not in kinds} == set()
    assert specs.KINDS == specs.kinds() and specs.KINDS[-1] == "toy" and len(specs.KINDS) == len(specs.SPECS)
    assert specs.KINDS + ("x",) == specs.kinds() + ("x",)
    assert ("x",) + specs.RECURRENT_KINDS == ("x", *specs.recurrent_kinds())
    hypothesis = pytest.importorskip("hypothesis")
    from linrnn.testing import spectral_radius, strategies
    bundle = hypothesis.find(strategies.bundles("toy", radius=(0.2, 0.3)), lambda b: True)
    decays = np.exp(-np.exp(bundle.params["log_decay"]))   # its init draws them apart in [0.5, 0.99]: all moved to r
    assert bundle.config.kind == "toy" and np.ptp(decays) < 1e-12 and 0.2 - 1e-12 <= decays[0] <= 0.3 + 1e-12
    assert spectral_radius(bundle) == pytest.approx(decays[0], abs=1e-12)
    spec = specs.spec("toy")
    specs.unregister("toy")
    try:
        assert {name for name, kinds in _views().items() if "toy" in kinds} == set()
        assert "toy" not in specs.KINDS and specs.KINDS == specs.BUILTIN
        with pytest.raises(LinrnnError, match=r"^kind: expected one of rotrnn, .*, found 'toy'$"):
            strategies.bundles("toy", radius=(0.2, 0.3))
    finally:
        specs.register(spec)


def test_the_crosscheck_picks_it_up(toy):
    result = crosscheck.run(crosscheck.Selection(kinds=("toy",), shapes=SHAPES))
    entries = result["entries"]
    assert entries and result["ok"], [e for e in entries if not e["ok"]][:3]
    seen = {(e["mode"], e["pair"]) for e in entries}
    for mode in ("sequential", "scan", "conv", "step"):
        assert any(m == mode for m, _ in seen), f"mode {mode} not compared"
    assert {p for _, p in seen} >= {"reference-torch", "reference-jax", "torch-jax"}


def test_conform_picks_it_up_with_its_radius_checks_run(toy):
    for target in ("linrnn-torch", "linrnn-jax"):
        result = conform.run(target, "toy", dtypes=("float64",), lengths=(1, 7), long_length=0)
        assert result.ok, result.checks
        status = {c.name: c.status for c in result.checks}
        assert status["radius near 1"] == status["radius small"] == "pass", status   # not "n/a"
        detail = next(c.detail for c in result.checks if c.name == "radius near 1")
        # the toy's own with_radius put every decay at each radius of the sweep toward 1 (issue 47)
        assert all(f"r = {r}: " in detail for r in ("0.999", "0.9999", "0.99999")), detail


def _train(tmp_path: Path, backend: str, *extra: str) -> RunRecord:
    out = tmp_path / f"train-{backend}"
    assert main(["train", "--task", "shift", "--model", "toy", "--backend", backend, "--length", "8", "--steps", "1",
                 "--d-model", "4", "--batch-size", "2", "--eval-batches", "1", "--out", str(out), "--quiet",
                 *extra]) == 0
    return read(out / RUN_RESULTS, RunRecord)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_linrnn_train_trains_it_one_step(toy, tmp_path, backend):
    record = _train(tmp_path, backend, "--d-state", "4", "--decay-min", "0.8", "--set", "decay_max=0.95")  # its own
    assert record.steps == 1 and record.config["model"] == "toy"                                # flag and field
    assert record.config["mixer"] == {"d_state": 4, "bidirectional": False, "decay_min": 0.8, "decay_max": 0.95}
    assert all(math.isfinite(x) for x in record.train_loss) and record.evaluations[-1]["step"] == 1


def test_train_and_the_grid_start_it_the_same_way_and_the_grid_runs_it(toy, tmp_path, capsys):
    assert main(["train", "--task", "shift", "--model", "toy", "--length", "8", "--dry-run"]) == 0
    planned, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    assert planned["mixer"] == grid_config("shift", "toy", "torch", 8, 2).mixer == {
        "d_state": 64, "bidirectional": False, "decay_min": 0.9, "decay_max": 0.999}    # its spec's task_defaults
    out = tmp_path / "grid"
    assert main(["tasks", "grid", "--tasks", "shift", "--models", "lru,toy", "--length", "8", "--steps", "2",
                 "--out", str(out), "--quiet", "--executor", "serial",     # a model registered here: not in workers
                 "--set", "d_model=4", "--set", "batch_size=2", "--set", "eval_batches=1",
                 "--set", "d_state=4"]) == 0
    rows = {r["model"]: r for r in json.loads((out / "grid.json").read_text())["rows"]}
    assert rows["toy"]["status"] == "ok" and rows["toy"]["steps"] == 2 and rows["lru"]["status"] == "ok"
    assert rows["toy"]["config"]["mixer"]["d_state"] == 4 and rows["toy"]["config"]["mixer"]["decay_max"] == 0.999


def test_the_precision_map_gets_its_cells(toy):
    data = precision_map.run("quick", kinds=["toy"], kernels=False)
    cells = [c for c in data["cells"] if c["kind"] == "toy"]
    routes = {f"{b} {m}" for b in ("torch", "jax") for m in ("sequential", "scan", "conv", "step")}
    assert {(c["route"], c["dtype"], c["r"]) for c in cells} == {
        (route, dtype, r) for route in routes for dtype in precision_map.DTYPES for r in (0.9, 0.999)}
    float32 = [c for c in cells if c["dtype"] == "float32"]
    assert all(c["within"] for c in float32), [c for c in float32 if not c["within"]]


def test_a_bug_planted_in_one_side_is_caught(toy, monkeypatch):
    monkeypatch.setitem(toy.PLANTED, "torch_D", 1.01)         # the PyTorch side's skip off by 1 %
    result = crosscheck.run(crosscheck.Selection(kinds=("toy",), shapes=SHAPES[1:2], modes=("scan",)))
    assert not result["ok"]
    assert {e["pair"] for e in result["entries"] if not e["ok"]} >= {"reference-torch", "torch-jax"}
    assert not conform.run("linrnn-torch", "toy", dtypes=("float64",), lengths=(7,), long_length=0).ok


@pytest.mark.slow
def test_the_files_that_name_kinds_pass_with_the_toy_registered():
    """The done-when of "How to add a model": the tests that read the registry pass with a model added by the recipe
    and no other edit. About a minute: the files' toy cases and registry-reading tests, in one process."""
    files = toy_plugin.kind_files(ROOT)
    assert len(files) > 30 and ROOT / "tests" / "impls" / "test_bundle.py" in files, files
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "toy_plugin", "--toy-only", "-n", "0", "-v",
                          "--no-header", *map(str, files)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    toy_cases = re.findall(r"\[[^\]]*\btoy\b[^\]]*\] PASSED", out)
    assert len(toy_cases) > 50, f"only {len(toy_cases)} of the toy's cases ran:\n{out[-3000:]}"

"""A seventh model added as a newcomer would: a spec and one small implementation per side, in a temporary
package (`toy_source.py`), registered with `linrnn.impls.specs.register`. The cross-check and `linrnn conform`
must pick it up with no other edit to the project, and catch a bug planted in one of its sides."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from linrnn.impls import specs
from linrnn.verify import conform, crosscheck
from linrnn.impls.config import MIXER_CONFIGS, config_from_dict, config_to_dict, mixer_config
from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init

SOURCE = Path(__file__).with_name("toy_source.py")
SHAPES = (crosscheck.Shape(2, 1, 3, 4, False, False), crosscheck.Shape(2, 9, 3, 4, False, True),
          crosscheck.Shape(1, 11, 4, 4, True, True))


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("seventh")
    package = root / "toy_seventh_model"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(SOURCE, package / "spec.py")
    namespace: dict = {}
    exec(compile(SOURCE.read_text(), str(SOURCE), "exec"), namespace)
    (package / "reference.py").write_text(namespace["REFERENCE"])
    (package / "torch_side.py").write_text(namespace["TORCH"].replace("{package}", package.name))
    (package / "jax_side.py").write_text(namespace["JAX"])
    sys.path.insert(0, str(root))
    module = importlib.import_module(f"{package.name}.spec")
    specs.register(module.spec(package.name))
    yield module
    specs.unregister("toy")
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m.startswith(package.name)]:
        del sys.modules[name]


def test_the_registry_lists_it_everywhere(toy):
    assert "toy" in specs.kinds() and "toy" in specs.recurrent_kinds()
    assert MIXER_CONFIGS["toy"] is toy.ToyConfig
    assert "toy" in crosscheck.Selection().kinds            # the cross-check's default selection
    assert "toy" in conform.models() and "toy" in conform.own_models("linrnn-torch")
    cfg = mixer_config("toy", 3, 4, heads=2, r_max=0.9)     # heads dropped: the toy has none
    assert config_from_dict(config_to_dict(cfg)) == cfg
    bundle = init(cfg, 0)
    assert sorted(bundle.params) == ["B", "C", "D", "log_decay"]
    with pytest.raises(LinrnnError, match="unknown field"):
        mixer_config("toy", 3, 4, gamma_min=0.5)


def test_the_crosscheck_picks_it_up(toy):
    result = crosscheck.run(crosscheck.Selection(kinds=("toy",), shapes=SHAPES))
    entries = result["entries"]
    assert entries and result["ok"], [e for e in entries if not e["ok"]][:3]
    seen = {(e["mode"], e["pair"]) for e in entries}
    for mode in ("sequential", "scan", "conv", "step"):
        assert any(m == mode for m, _ in seen), f"mode {mode} not compared"
    assert {p for _, p in seen} >= {"reference-torch", "reference-jax", "torch-jax"}


def test_conform_picks_it_up(toy):
    for target in ("linrnn-torch", "linrnn-jax"):
        result = conform.run(target, "toy", dtypes=("float64",), lengths=(1, 7), long_length=0)
        assert result.ok, result.checks


def test_a_bug_planted_in_one_side_is_caught(toy, monkeypatch):
    monkeypatch.setitem(toy.PLANTED, "torch_D", 1.01)         # the PyTorch side's skip off by 1 %
    result = crosscheck.run(crosscheck.Selection(kinds=("toy",), shapes=SHAPES[1:2], modes=("scan",)))
    assert not result["ok"]
    assert {e["pair"] for e in result["entries"] if not e["ok"]} >= {"reference-torch", "torch-jax"}
    assert not conform.run("linrnn-torch", "toy", dtypes=("float64",), lengths=(7,), long_length=0).ok

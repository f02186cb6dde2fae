"""linrnn's pytest plugin is inert where a run does not use it: a user's unrelated test file, with linrnn installed,
imports neither PyTorch nor JAX (nor NumPy) and keeps XLA_FLAGS, with the plugin loaded and with `-p no:linrnn`;
its fixtures and options say in one line what they expected."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

UNRELATED = '''
import os
import sys


def test_nothing_heavy_was_imported(request):
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "jax", "jaxlib", "numpy", "triton"})
    assert heavy == [], heavy
    assert os.environ.get("XLA_FLAGS") == os.environ["EXPECTED_XLA_FLAGS"]
    assert request.config.pluginmanager.has_plugin("linrnn") == (os.environ["EXPECT_PLUGIN"] == "1")
'''

MISUSE = '''
import pytest


def test_bundle_without_the_marker(linrnn_bundle):
    pass


@pytest.mark.linrnn_conform(kind="lstm")
def test_marker_of_an_unknown_kind(linrnn_bundle):
    pass


@pytest.mark.linrnn_conform(kind="lru", d_model=3, d_state=2, r_min=0.5)
def test_marker_and_dtypes(linrnn_bundle, linrnn_reference, linrnn_dtype):
    import numpy as np
    assert linrnn_bundle.config.r_min == 0.5 and linrnn_dtype == "float32"
    assert linrnn_reference(np.zeros((1, 4, 3))).shape == (1, 4, 3)
'''


def others() -> list[str]:
    """`-p no:NAME` for every other package's pytest plugin installed here: what those import is theirs, not this
    plugin's (the README's set-up installs the peers' dependencies, and jaxtyping's plugin imports NumPy)."""
    return [arg for e in entry_points(group="pytest11") if e.value != "linrnn.testing.plugin"
            for arg in ("-p", f"no:{e.name}")]


def pytest_run(tmp_path, *args, expect_plugin="1"):
    """pytest in a fresh process, in a folder of its own (its own ini: none of this project's conftest files), with
    no other package's pytest plugin (`others`)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider " + " ".join(others()) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env.update({"EXPECT_PLUGIN": expect_plugin, "XLA_FLAGS": "--xla_dump_to=/nonexistent",
                "EXPECTED_XLA_FLAGS": "--xla_dump_to=/nonexistent"})
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def folder(tmp_path):
    if not any(e.value == "linrnn.testing.plugin" for e in entry_points(group="pytest11")):
        pytest.fail("linrnn's pytest plugin is not installed (entry point pytest11); reinstall the project: "
                    "pip install -e '.[test]'")
    (tmp_path / "test_unrelated.py").write_text(UNRELATED)
    (tmp_path / "test_misuse.py").write_text(MISUSE)
    return tmp_path


def test_an_unrelated_run_imports_no_framework_with_the_plugin_and_without(folder):
    loaded = pytest_run(folder, "test_unrelated.py", "--linrnn-long=0")     # the option proves the plugin loaded
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    off = pytest_run(folder, "-p", "no:linrnn", "test_unrelated.py", expect_plugin="0")
    assert off.returncode == 0, off.stdout + off.stderr


def test_the_fixtures_and_options_say_what_they_expected(folder):
    run = pytest_run(folder, "test_misuse.py", "--linrnn-dtypes=float32", "-rE")
    out = run.stdout
    assert run.returncode == 1 and "1 passed, 2 errors" in out, out + run.stderr
    assert ("linrnn_bundle: expected the test marked @pytest.mark.linrnn_conform(kind=...), found no such marker"
            in out), out
    from linrnn.impls.specs import BUILTIN     # the child pytest registers the built-in models alone
    assert f"@pytest.mark.linrnn_conform: kind: expected one of {', '.join(BUILTIN)}, found 'lstm'" in out, out
    bad = pytest_run(folder, "test_unrelated.py", "--linrnn-dtypes=float8")
    assert bad.returncode == 4 and ("--linrnn-dtypes: expected a comma-separated subset of "
                                    "float64,float32,bfloat16,float16, found 'float8'") in bad.stderr, \
        bad.stdout + bad.stderr
    low = pytest_run(folder, "test_unrelated.py", "--linrnn-dtypes=bfloat16,float16")     # the battery's low dtypes
    assert low.returncode == 0, low.stdout + low.stderr
    bad = pytest_run(folder, "test_unrelated.py", "--linrnn-long=-1")
    assert bad.returncode == 4 and ("--linrnn-long: expected a length >= 0 (0 leaves the check out), found '-1'"
                                    in bad.stderr), bad.stdout + bad.stderr

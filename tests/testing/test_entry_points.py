"""linrnn's entry points are inert: loading Hypothesis' `hypothesis` entry point and pytest's `pytest11` one imports
the standard library only (a fresh process each, compared with the same process with the entry point turned off),
and the layer configs' strategies still resolve for `st.from_type` whichever is imported first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

pytest.importorskip("hypothesis")

OURS = {"linrnn", "linrnn.testing", "linrnn.testing._hypothesis", "linrnn.testing.plugin"}

IMPORT_HYPOTHESIS = r'''
import json, sys, time
start = time.perf_counter()
import hypothesis
seconds = time.perf_counter() - start
print(json.dumps({"modules": sorted(sys.modules), "seconds": seconds}))
'''

# the config class imported after Hypothesis, or before it: st.from_type draws configs(kind) either way
FROM_TYPE = r'''
import sys
if sys.argv[1] == "after":
    import hypothesis
from linrnn.impls.specs.s5 import S5Config
from linrnn.impls.specs.lru import LRUConfig
import hypothesis
from hypothesis import strategies as st
s5 = hypothesis.find(st.from_type(S5Config), lambda c: c.discretization == "bilinear" and c.blocks == 2)
lru = hypothesis.find(st.from_type(LRUConfig), lambda c: c.bidirectional)
print(type(s5).__name__, type(lru).__name__, s5.d_state % 2)
'''


def run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTHESIS", "PYTEST_"))}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**clean, **env})


def not_standard(modules) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] not in sys.stdlib_module_names and m not in OURS)


def test_the_hypothesis_entry_point_imports_the_standard_library_only():
    if not any(e.value.startswith("linrnn.testing._hypothesis") for e in entry_points(group="hypothesis")):
        pytest.fail("linrnn's hypothesis entry point is not installed; reinstall the project: pip install -e '.[test]'")
    loaded, off = run(IMPORT_HYPOTHESIS), run(IMPORT_HYPOTHESIS, HYPOTHESIS_NO_PLUGINS="1")
    assert loaded.returncode == 0 and off.returncode == 0, loaded.stderr + off.stderr
    with_hook, without = json.loads(loaded.stdout), json.loads(off.stdout)
    added = set(with_hook["modules"]) - set(without["modules"])
    assert {"linrnn.testing._hypothesis"} <= added and not_standard(added) == [], sorted(added)
    assert not {"numpy", "linrnn.impls"} & set(with_hook["modules"]), sorted(added)
    print(f"import hypothesis: {with_hook['seconds']:.3f} s with linrnn's entry point, {without['seconds']:.3f} s "
          f"without")


@pytest.mark.parametrize("order", ["after", "before"])
def test_the_configs_resolve_for_from_type_whichever_is_imported_first(order):
    done = run(FROM_TYPE, order)
    assert done.returncode == 0 and done.stdout.split() == ["S5Config", "LRUConfig", "0"], done.stderr[-3000:]


UNRELATED = '''
import json, os, sys


def test_modules():
    with open(os.environ["MODULES_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
'''


def test_the_pytest_plugin_imports_the_standard_library_only(tmp_path):
    """An unrelated test file run with the plugin and with `-p no:linrnn`: what the plugin adds is the standard
    library and its own modules (other packages' pytest plugins turned off: what they import is theirs)."""
    (tmp_path / "test_unrelated.py").write_text(UNRELATED)
    others = [a for e in entry_points(group="pytest11") if e.value != "linrnn.testing.plugin"
              for a in ("-p", f"no:{e.name}")]
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider " + " ".join(others) + "\n")
    found = {}
    for name, extra in (("loaded", []), ("off", ["-p", "no:linrnn"])):
        out = tmp_path / f"{name}.json"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", *extra, "test_unrelated.py"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300,
                              env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
                                   "MODULES_OUT": str(out), "HYPOTHESIS_NO_PLUGINS": "1"})
        assert done.returncode == 0, done.stdout + done.stderr
        found[name] = set(json.loads(out.read_text()))
    added = found["loaded"] - found["off"]
    assert "linrnn.testing.plugin" in added and not_standard(added) == [], sorted(added)

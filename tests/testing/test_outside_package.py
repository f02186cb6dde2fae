"""A package written outside linrnn (tests/testing/outside: tinyssm, an LRU and an S5 in plain PyTorch) runs its own
tests through linrnn's public testing API and pytest plugin: they pass on the faithful layers, and a bug planted in
a copy of its source, one per check family, fails the user's run with the deviation named.

One subprocess runs every run (pytest.main once per copy, each copy's `src` first on sys.path, the copy's modules
dropped between runs), so PyTorch is imported once: the plugin is the installed entry point, as in a user's run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

OUTSIDE = Path(__file__).resolve().parent / "outside"
LONG = 2048          # --linrnn-long for these runs: past the planted chunk of 1024 positions, and quick

# name -> (file, text, its replacement, the user's -k selection, what the failure must say)
PLANTED = {
    "readout": ("s5.py", "y = 2 * (xs @", "y = (xs @", "tiny-s5-base-float64-impulse",
                ["FAIL impulse (float64)", "the output is missing the factor 2 of conjugate symmetry"]),
    "discretisation": ("s5.py", "return (1 + half) / (1 - half), (step / (1 - half))",
                       "return (1 - half) / (1 + half), (step / (1 + half))",
                       "tiny-s5-bilinear-float64-impulse or drawn_layers",
                       ["the discretisation is the bilinear transform with the sign of Delta flipped",
                        "FAILED tests/test_tinyssm.py::test_s5_matches_the_reference_on_drawn_layers"]),
    "radius": ("lru.py", "-torch.exp(self.nu_log)", "-torch.exp(self.nu_log).clamp(min=1e-3)",
               "tiny-lru-base-float64-radius", ["FAIL radius near 1 (float64)", "1 passed"]),
    "long": ("scan.py", "x = lam * x + bu[:, t]", "x = lam * (x if t % 1024 or t == 0 else 0 * x) + bu[:, t]",
             "tiny-lru-base-float64-long or tiny-lru-base-float64-random", [f"FAIL long L={LONG} (float64)",
                                                                            "3 passed"]),
    "bidirectional": ("lru.py", "torch.zeros_like(x), reverse=True", "torch.zeros_like(x), reverse=False",
                      "tiny-lru-base-float64-bidirectional",
                      ["FAIL bidirectional (float64)", "the backward direction is not anti-causal"]),
    "state": ("lru.py", "x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if state is None else state",
              "x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype)", "tiny-lru-base-float64-state",
              ["FAIL state (float64)", "the state is not carried between calls"]),
    "gradient": ("lru.py", "+ self.D * u\n", "+ self.D * u.detach()\n",
                 "tiny-lru-base-float64-gradient or tiny-lru-base-float64-impulse or adjoint",
                 ["FAIL gradient (float64)", "the input gradient is not the adjoint of the output",
                  "check_vjp: the input gradient by autodiff is not J^T w", "1 passed"]),
    "step": ("lru.py", "+ self.D * u_t, x", ", x", "steps_like",
             ["check_step: stepping token by token departs from the whole-sequence forward, first at position t = 0",
              "2 failed"]),
    "float32": ("lru.py", "bu = u.to(B.dtype) @ B.T", "bu = (u.to(torch.complex64) @ B.to(torch.complex64).T).to(B.dtype)",
                "tiny-lru-base-float64-impulse", ["FAIL impulse (float64)", "computes in float32 only"]),
    # the checks of conform's users' bug reports (issue 44): each named where the older checks pass
    "hand-over": ("lru.py", "x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if state is None else state",
                  "x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if state is None or u.shape[1] == 1 "
                  "else state", "tiny-lru-base-float64-state",
                  ["FAIL state hand-over (float64)", "the state is not carried between calls", "1 passed"]),
    "short lengths": ("lru.py", "xs = diagonal_scan(lam, bu, x, starts=starts)",
                      "xs = diagonal_scan(lam, 2 * bu if u.shape[1] in (2, 3) else bu, x, starts=starts)",
                      "tiny-lru-base-float64-lengths or tiny-lru-base-float64-random",
                      ["FAIL lengths 1-8 (float64)", "the output is wrong at L = 2, 3 and conforms at L = 1, 4, 5, 6, "
                       "7, 8", "3 passed"]),
    "very long": ("scan.py", "x = lam * x + bu[:, t]", "x = lam * (x if t % 65536 or t == 0 else 0 * x) + bu[:, t]",
                  "tiny-lru-base-float64-very-long or tiny-lru-base-float64-long",
                  ["FAIL very long L=65537 (float64)", "the output departs from the reference from position t = 65536 "
                   "of L = 65537 on", "1 passed"]),
    "packing": ("scan.py", "x = torch.where(restart[:, None], torch.zeros_like(x), x)", "x = x",
                "tiny-lru-base-float64-packing",
                ["FAIL packing (float64)", "the state does not reset where a packed sequence begins"]),
    "padding": ("scan.py", "u = u * valid", "u = u", "tiny-lru-base-float64-padding",
                ["FAIL padding (float64)", "the padding reaches the valid positions"]),
}
# the faithful run: every check but the very long ones, and one very long check (a second of Python loop each)
FAITHFUL = "not very-long or tiny-lru-base-float64-very-long"

# Runs each copy's tests in this one process: argv [json list of (folder, [pytest args], output file)].
DRIVER = r"""
import contextlib, io, json, os, sys
import pytest
runs = json.loads(sys.argv[1])
codes = []
for folder, args, out in runs:
    for name in [m for m in sys.modules if m == "tinyssm" or m.startswith("tinyssm.") or m.startswith("test_tinyssm")]:
        del sys.modules[name]
    sys.path.insert(0, folder + "/src")
    os.chdir(folder)                      # where the user runs pytest: the package's own folder
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        codes.append(int(pytest.main([folder + "/tests", "--rootdir", folder, *args])))
    sys.path.remove(folder + "/src")
    open(out, "w").write(buffer.getvalue())
print(json.dumps(codes))
"""


def copy_with(tmp: Path, name: str, planted=None) -> Path:
    folder = tmp / name
    shutil.copytree(OUTSIDE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".hypothesis"))
    if planted:
        file, old, new = planted[:3]
        path = folder / "src" / "tinyssm" / file
        text = path.read_text()
        assert text.count(old) == 1, f"planted bug {name}: {old!r} occurs {text.count(old)} times in {file}"
        path.write_text(text.replace(old, new))
    return folder


def plugin_installed() -> bool:
    from importlib.metadata import entry_points
    return any(e.value == "linrnn.testing.plugin" for e in entry_points(group="pytest11"))


@pytest.fixture(scope="module")
def outside_runs(tmp_path_factory):
    """{run name: (pytest's exit code, its output)}: the faithful package and each planted bug."""
    if not plugin_installed():
        pytest.fail("linrnn's pytest plugin is not installed (entry point pytest11); reinstall the project: "
                    "pip install -e '.[test]'")
    tmp = tmp_path_factory.mktemp("outside")
    common = ["-p", "no:cacheprovider", "-q", "-rfs", "--hypothesis-seed=0"]
    long = [f"--linrnn-long={LONG}"]                 # the readout run keeps the default, as docs/testing.md shows it
    runs = [(str(copy_with(tmp, "faithful")), [*common, *long, "-k", FAITHFUL], str(tmp / "faithful.txt"))]
    for name, planted in PLANTED.items():
        runs.append((str(copy_with(tmp, name, planted)), [*common, *([] if name == "readout" else long), "-k",
                                                          planted[3]], str(tmp / f"{name}.txt")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(runs)], capture_output=True, text=True,
                          cwd=tmp, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    names = ["faithful", *PLANTED]
    return {name: (code, Path(out).read_text()) for name, code, (_, _, out) in zip(names, codes, runs)}


def test_the_outside_package_passes_on_its_faithful_layers(outside_runs):
    code, out = outside_runs["faithful"]
    assert code == 0, out
    assert "90 passed, 3 deselected" in out and "skipped" not in out, out    # every check applies, gradients too


@pytest.mark.parametrize("bug", list(PLANTED))
def test_a_planted_bug_fails_the_users_run_naming_the_deviation(outside_runs, bug):
    code, out = outside_runs[bug]
    assert code == 1, out                         # pytest's "tests failed"
    for words in PLANTED[bug][4]:
        assert words in out, f"{bug}: {words!r} not in the run's output:\n{out}"


DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def test_the_docs_show_the_packages_own_test_file_and_a_real_run():
    text = DOCS.read_text()
    shown = re.search(r"```python\n(.*?)```", text, flags=re.S).group(1)
    assert shown == (OUTSIDE / "tests" / "test_tinyssm.py").read_text()


def test_the_docs_output_is_what_the_planted_run_prints(outside_runs):
    text = DOCS.read_text()
    block = re.search(r"```text\n\$ pytest -k (\S+)\n(.*?)```", text, flags=re.S)
    assert block.group(1) == PLANTED["readout"][3]
    _, out = outside_runs["readout"]
    lines = [line for line in block.group(2).splitlines() if line.startswith(("E ", "FAILED", "check = "))]
    assert len(lines) == 5 and all(line in out for line in lines), out

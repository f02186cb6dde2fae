"""A package written outside linrnn (tests/testing/outside: tinyssm, an LRU and an S5 in plain PyTorch) runs its own
tests through linrnn's public testing API and pytest plugin: they pass on the faithful layers, and a bug planted in
a copy of its source, one per check family, fails the user's run with the deviation named.

One subprocess runs every run (pytest.main once per copy, each copy's `src` first on sys.path, the copy's modules
dropped between runs), so PyTorch is imported once: the plugin is the installed entry point, as in a user's run.
That subprocess is a fresh virtual environment where linrnn is installed from its wheel with no extras (pip resolves
the wheel's dependencies against what the environment has); tinyssm's own dependencies (PyTorch, NumPy, pytest,
Hypothesis and what they require) are links to this environment's installs, not installed again (PyTorch alone
takes about a minute to install): JAX is not there, and linrnn is the wheel's, not the work tree's. Building the
wheel and the environment costs about 10 s of the file's time.
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
                        "FAILED tests/test_tinyssm.py::test_s5_matches_the_reference_on_drawn_layers",
                        "Draw 1: make_bundle('s5', d_model="]),      # the shrunk bundle, as code
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
                  ["FAIL state hand-over (float64)", "the state is not carried between calls",
                   "2 passed"]),                              # the state check and the state gradient
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
import contextlib, io, json, os, sys, time
import pytest
runs = json.loads(sys.argv[1])
codes, seconds = [], []
for folder, args, out in runs:
    for name in [m for m in sys.modules if m == "tinyssm" or m.startswith("tinyssm.") or m.startswith("test_tinyssm")]:
        del sys.modules[name]
    sys.path.insert(0, folder + "/src")
    os.chdir(folder)                      # where the user runs pytest: the package's own folder
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        start = time.perf_counter()
        codes.append(int(pytest.main([folder + "/tests", "--rootdir", folder, *args])))
        seconds.append(time.perf_counter() - start)
    sys.path.remove(folder + "/src")
    open(out, "w").write(buffer.getvalue())
import importlib.util, linrnn
print(json.dumps({"codes": codes, "seconds": seconds, "jax": importlib.util.find_spec("jax") is not None,
                  "linrnn": linrnn.__file__}))
"""
LINKED = ("torch", "numpy", "scipy", "pytest", "hypothesis")    # tinyssm's dependencies and its tests' tools


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


@pytest.fixture(scope="module")
def outside_python(tmp_path_factory, linrnn_wheel, fresh_venv, venv_pip):
    """The python of a fresh venv with linrnn's wheel installed with no extras, and tinyssm's dependencies linked."""
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("outside-venv")
    python = fresh_venv(folder / "venv", link=LINKED)
    done = venv_pip(python, "install", "--no-index", str(linrnn_wheel))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    version = linrnn_wheel.name.split("-")[1]
    assert done.stdout.strip().splitlines()[-1] == f"Successfully installed linrnn-{version}", done.stdout  # alone
    return python


@pytest.fixture(scope="module")
def outside_runs(tmp_path_factory, outside_python):
    """{run name: (pytest's exit code, its output)}: the faithful package and each planted bug."""
    tmp = tmp_path_factory.mktemp("outside")
    common = ["-p", "no:cacheprovider", "-q", "-rfs", "--hypothesis-seed=0"]
    long = [f"--linrnn-long={LONG}"]                 # the readout run keeps the default, as docs/testing.md shows it
    faithful = str(copy_with(tmp, "faithful"))
    runs = [(faithful, [*common, *long, "-k", FAITHFUL], str(tmp / "faithful.txt")),
            (faithful, [*common, "-rA", "--linrnn-profile=quick"], str(tmp / "quick.txt"))]   # docs/testing.md's
    for name, planted in PLANTED.items():
        runs.append((str(copy_with(tmp, name, planted)), [*common, *([] if name == "readout" else long), "-k",
                                                          planted[3]], str(tmp / f"{name}.txt")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS", "PYTHONPATH"))}
    done = subprocess.run([str(outside_python), "-c", DRIVER, json.dumps(runs)], capture_output=True, text=True,
                          cwd=tmp, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["jax"] and "site-packages" in result["linrnn"], result     # the wheel's linrnn, no JAX
    names = ["faithful", "quick", *PLANTED]
    found = Runs({name: (code, Path(out).read_text()) for name, code, (_, _, out) in zip(names, result["codes"], runs)})
    found.folders = {name: Path(folder) for name, (folder, _, _) in zip(names, runs)}
    found.seconds = dict(zip(names, result["seconds"]))
    found.python = outside_python
    return found


class Runs(dict):
    """{run: (exit code, output)}, with each run's folder, its seconds and the venv's python."""


def test_the_outside_package_passes_on_its_faithful_layers(outside_runs):
    code, out = outside_runs["faithful"]
    assert code == 0, out
    # every check applies, gradients too, but the protocol's optional parts tinyssm's adapters leave out: params= and
    # step (float64, float32) and the low dtypes (its own table of dtypes refuses them: 2 kinds x 2 dtypes x 7)
    assert "96 passed, 36 skipped, 3 deselected" in out, out
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 36 and all(("takes no params=" in line or "has no step" in line or
                                       "the target refuses bfloat16" in line or "the target refuses float16" in line)
                                      for line in skipped), out


def test_the_quick_profile_runs_float32_without_the_long_checks(outside_runs):
    code, out = outside_runs["quick"]
    assert code == 0, out
    cases = re.findall(r"^(?:PASSED|SKIPPED|FAILED).*_conforms\[(tiny-[^\]]+)\]", out, flags=re.M)
    assert cases and all("-float32-" in c and not c.endswith("long") for c in cases), cases
    assert re.search(r"^PASSED tests/test_tinyssm.py::test_lru_steps_like_its_forward\[float32\]$", out, flags=re.M)
    assert "test_lru_steps_like_its_forward[float64]" not in out, out      # linrnn_dtype takes the profile's too
    print(f"quick profile: {outside_runs.seconds['quick']:.1f} s (faithful run, default profile less three very long "
          f"checks: {outside_runs.seconds['faithful']:.1f} s)")


def test_the_printed_command_and_replay_rerun_the_failure_from_where_pytest_started(outside_runs):
    """The readout bug's message: its command and its two replay lines, run as printed from the package's folder
    (where pytest was started), each fail naming the same deviation."""
    _, out = outside_runs["readout"]
    folder, python = outside_runs.folders["readout"], outside_runs.python
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(folder)}
    command = re.search(r"the whole battery: (PYTHONPATH=(\S+) (linrnn conform .*))$", out, flags=re.M)
    assert command and command.group(2) == "tests:src", out
    done = subprocess.run(command.group(3).split(), cwd=folder, env={**env, "PYTHONPATH": command.group(2)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "the output is missing the factor 2 of conjugate symmetry" in done.stdout, \
        done.stdout + done.stderr
    lines = re.search(r"replay this check alone:\nE +(.*)\nE +(replay\(.*\))$", out, flags=re.M)
    assert lines and (folder / ".linrnn-replay" / "tiny-s5-base-float64-impulse.npz").is_file(), out
    done = subprocess.run([str(python), "-c", "\n".join(lines.groups())], cwd=folder,
                          env={**env, "PYTHONPATH": "tests:src"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "AssertionError: linrnn check tiny-s5-base-float64-impulse: FAIL impulse " \
        "(float64)" in done.stderr and "the factor 2 of conjugate symmetry" in done.stderr, done.stderr


@pytest.mark.parametrize("bug", list(PLANTED))
def test_a_planted_bug_fails_the_users_run_naming_the_deviation(outside_runs, bug):
    code, out = outside_runs[bug]
    assert code == 1, out                         # pytest's "tests failed"
    for words in PLANTED[bug][4]:
        assert words in out, f"{bug}: {words!r} not in the run's output:\n{out}"


DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def test_the_docs_show_the_packages_own_test_file_and_a_real_run():
    text = DOCS.read_text()
    shown = re.search(r"```python\n(.*?)```", text[text.index("## A user's test file"):], flags=re.S).group(1)
    assert shown == (OUTSIDE / "tests" / "test_tinyssm.py").read_text()


def test_the_docs_output_is_what_the_planted_run_prints(outside_runs):
    text = DOCS.read_text()
    block = re.search(r"```text\n\$ pytest -k (\S+)\n(.*?)```", text, flags=re.S)
    assert block.group(1) == PLANTED["readout"][3]
    _, out = outside_runs["readout"]
    lines = [line for line in block.group(2).splitlines() if line.startswith(("E ", "FAILED", "check = "))]
    assert len(lines) == 8 and all(line in out for line in lines), out      # with the command and the replay

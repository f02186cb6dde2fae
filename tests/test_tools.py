"""tools/hypothesis_seeds.py: a fresh `--hypothesis-seed` must decide the draws even where CI=true.

Under CI=true Hypothesis loads its derandomised "ci" profile, which takes precedence over an explicit
seed; the script's plugin profile exists to undo exactly that. Each check runs a tiny property file in
a temporary folder (a few seconds in all), outside this project's conftest and test paths.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

TOOLS = pathlib.Path(__file__).resolve().parents[1] / "tools"

PROPERTY = '''
import os
from hypothesis import given, settings, strategies as st

@settings(max_examples=5)
@given(st.integers(0, 2**62))
def test_draw(x):
    with open(os.environ["DRAWS_FILE"], "a") as f:
        f.write(f"{x}\\n")
'''


def _draws(tmp_path: pathlib.Path, seed: int, run: str) -> list[str]:
    (tmp_path / "test_draw.py").write_text(PROPERTY)
    out = tmp_path / f"draws-{run}.txt"
    env = dict(os.environ, CI="true", DRAWS_FILE=str(out), HYPOTHESIS_STORAGE_DIRECTORY=str(tmp_path / run),
               PYTHONPATH=os.pathsep.join(p for p in (str(TOOLS), os.environ.get("PYTHONPATH", "")) if p))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "hypothesis_seeds",
                           "--hypothesis-profile=fresh-seed", f"--hypothesis-seed={seed}", "test_draw.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out.read_text().split()


def test_fresh_seed_profile_draws_by_the_seed_even_under_ci(tmp_path):
    first, again, other = _draws(tmp_path, 11, "a"), _draws(tmp_path, 11, "b"), _draws(tmp_path, 12, "c")
    assert first == again  # the seed reproduces the run (no database replays anything)
    assert first != other  # and a different seed draws differently: CI's derandomisation is off

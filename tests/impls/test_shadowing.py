"""impls/torch and impls/jax are named like the libraries: started inside impls/, Python finds them first.

Then `import torch` (or `import jax`, or anything that imports them) must fail at once with one line
that says what happened and what to do, not deep inside the package with a circular-import error.
"""

import subprocess
import sys
from pathlib import Path

import pytest

IMPLS = Path(__file__).resolve().parents[2] / "impls"


@pytest.mark.parametrize("statement,library", [("import torch", "torch"), ("import jax", "jax"),
                                               ("import linrnn.impls.torch", "torch")])
def test_python_started_inside_impls_gets_a_clear_import_error(statement, library):
    out = subprocess.run([sys.executable, "-c", statement], cwd=IMPLS, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and f"`import {library}` found linrnn's impls/{library} folder" in last
    assert "started inside impls/" in last and "start it from another directory" in last

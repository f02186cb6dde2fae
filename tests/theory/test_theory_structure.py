"""The derivations read as named steps: no function in theory/ is longer than about a screen (issue 43, point 5).

Each `derive_*` is a short list of lemmas (functions returning a `records.Lemma`: findings, steps, witness numbers)
joined by `records.claim_from_lemmas`; this test keeps every function, lemma or helper, at most `MAX_LINES` lines,
counted with `ast` from its first decorator (or `def`) to its last line, docstring and comments included.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import linrnn.theory
from linrnn.theory.registry import DERIVATIONS

MAX_LINES = 60
THEORY = Path(linrnn.theory.__file__).parent


def function_lengths(source: str) -> dict[str, int]:
    """Every function in `source` (methods and nested functions included) -> its length in lines."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[f"{node.name} (line {node.lineno})"] = node.end_lineno - first + 1
    return out


def test_the_counter_counts_decorators_nested_functions_and_docstrings():
    body = "\n".join(f"    x{i} = {i}" for i in range(57))
    source = f'@decorator\ndef outer():\n    """doc"""\n    def inner():\n        pass\n{body}\n'
    lengths = function_lengths(source)
    assert lengths == {"outer (line 2)": 62, "inner (line 4)": 2}
    assert {name for name, n in lengths.items() if n > MAX_LINES} == {"outer (line 2)"}


def test_no_function_in_theory_is_over_sixty_lines():
    files = sorted(THEORY.glob("*.py"))
    assert {"normalisation.py", "rotation.py", "dlr_memory.py"} <= {f.name for f in files}
    too_long = {f"{path.name}: {name}": n for path in files
                for name, n in function_lengths(path.read_text()).items() if n > MAX_LINES}
    assert not too_long, f"functions over {MAX_LINES} lines (split them into named lemmas): {too_long}"


def test_every_derivation_is_a_short_list_of_lemmas():
    for claim, derive in DERIVATIONS.items():
        source = textwrap.dedent(inspect.getsource(derive))
        assert "claim_from_lemmas(" in source, f"{claim}: {derive.__name__} does not join its lemmas"
        (length,) = [n for name, n in function_lengths(source).items() if name.startswith(derive.__name__ + " ")]
        assert length <= MAX_LINES, f"{claim}: {derive.__name__} is {length} lines"

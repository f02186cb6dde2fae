"""The maps are true. Everything the documentation and the code's docstrings and comments name exists: every
repository path, every module (`linrnn.verify.bench`, or in backticks `verify.bench.interleaved_ms`) with the name
after it, and every section named as `docs/PAGE.md, "TITLE"` (a heading of that page, or a paragraph that starts with
that title). README's layout table names every top folder of the repository, each once; only the log carries dates.

A path is any text that starts with a top folder of the repository and a slash (`impls/torch/scan.py`,
docs/speed.md), in backticks or not. Placeholders stand for any name and must match at least one file (where the
literal name is not one): a word in capitals (`experiment-NAME.json`, `DIR`), `<word>`, `{...}` (an f-string's field;
`{a,b}` is each of a and b), `$var`, and `x` as the new model's file name of docs/architecture.md's "How to add a
model" (`impls/specs/x.py`). The first column of a table headed "old path" (docs/architecture.md, "What moved where")
names paths that no longer exist.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
THIS = pathlib.Path(__file__).resolve()

# Paths a command writes; they exist only after it has run.
WRITTEN_BY_A_COMMAND = {
    "reports/results/experiment-NAME-full.json": "linrnn experiment NAME --scale full (docs/experiments.md)",
}
# Paths named relative to another folder than the repository's root: the folder they are in.
ELSEWHERE = {
    "tests/test_tinyssm.py": "tests/testing/outside",   # the outside package's own tests, as pytest prints them there
}
TEXT_SUFFIXES = {".md", ".py", ".toml", ".sh", ".j2", ".html", ".cfg", ".txt"}


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"not a git checkout ({out.stderr.strip()}): the repository's files are what git tracks")
    return out.stdout.splitlines()


def top_folders(files: list[str]) -> list[str]:
    return sorted({f.split("/", 1)[0] for f in files if "/" in f})


def _path_pattern(tops: list[str]) -> re.Pattern:
    return re.compile(r"(?<![\w./~$-])((?:%s)/(?:<\w+>|[\w.\-/{},*$])*(?:<\w+>|[\w}*/]))"
                      % "|".join(map(re.escape, tops)))


def _expand(path: str) -> list[str]:
    """`a/{b,c}.py` -> a/b.py, a/c.py; a field without a comma (`{name}`) stays, a placeholder."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", path)
    if not match:
        return [path]
    return [q for alt in match.group(1).split(",") for q in _expand(path[:match.start()] + alt + path[match.end():])]


def exists(path: str, root: pathlib.Path = ROOT) -> bool:
    """Whether the path, each alternative of it, matches a file or folder (a placeholder: at least one)."""
    if path in WRITTEN_BY_A_COMMAND:
        return True
    base = root / ELSEWHERE[path] if path in ELSEWHERE else root
    for alternative in _expand(path):
        if (base / alternative).exists():                          # a name in capitals such as README.md
            continue
        pattern = re.sub(r"<\w+>|\{[^{}]*\}|\$\w+|(?<=/)x(?=\.py)|(?<=test_)x(?=\.py)|\b[A-Z][A-Z_0-9]*\b", "*",
                         alternative.rstrip("/"))
        pattern = re.sub(r"\*+", "*", pattern)
        if not (any(base.glob(pattern)) if "*" in pattern else (base / pattern).exists()):
            return False
    return True


def _named_text(line: str, old_path_table: bool) -> str:
    """The part of a line that names current paths: a row of an "old path" table without its first cell."""
    return line.split("|", 2)[2] if old_path_table and line.startswith("|") and line.count("|") > 2 else line


def missing_paths(text: str, tops: list[str], root: pathlib.Path = ROOT) -> list[tuple[int, str]]:
    """(line, path) for every path the text names that does not exist."""
    pattern, found, old_path_table = _path_pattern(tops), [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            old_path_table = old_path_table or re.match(r"\|\s*old path\s*\|", line) is not None
        else:
            old_path_table = False
        for match in pattern.finditer(_named_text(line, old_path_table)):
            if not exists(match.group(1), root):
                found.append((number, match.group(1)))
    return found


def test_every_path_the_docs_and_the_code_name_exists():
    files = tracked_files()
    tops = top_folders(files)
    checked = [f for f in files if pathlib.Path(f).suffix in TEXT_SUFFIXES and (ROOT / f).resolve() != THIS]
    assert "README.md" in checked and "docs/architecture.md" in checked
    missing = [f"{name}:{line}: {path}" for name in checked
               for line, path in missing_paths((ROOT / name).read_text(), tops)]
    assert missing == [], "paths that do not exist:\n" + "\n".join(missing)


def test_a_planted_bad_path_is_caught(tmp_path):
    (tmp_path / "impls" / "torch").mkdir(parents=True)
    (tmp_path / "impls" / "torch" / "scan.py").write_text("")
    (tmp_path / "impls" / "specs").mkdir()
    (tmp_path / "impls" / "specs" / "lru.py").write_text("")
    text = ("the scans in `impls/torch/scan.py` and impls/{torch,specs}/, a new model's `impls/specs/x.py`\n"
            "| old path | new path |\n| `impls/bench.py` | `impls/torch/scan.py` |\n\n"
            "the harness in `impls/torch/bench.py`; `impls/{torch,jax}/scan.py`; impls/specs/KIND.py\n"
            "| old path | new path |\n| `impls/old.py` | `impls/new.py` |\n")
    found = missing_paths(text, ["impls"], tmp_path)
    assert found == [(5, "impls/torch/bench.py"), (5, "impls/{torch,jax}/scan.py"), (7, "impls/new.py")], found


AREAS = ("base", "impls", "verify", "theory", "tasks", "experiments", "reports")
MODULE = re.compile(r"(?<![\w.])linrnn((?:\.\w+)+)|`((?:%s)(?:\.\w+)+)" % "|".join(AREAS))
NOT_A_MODULE = {"tasks.data.not_written_yet"}   # tests/tasks/data/test_cli.py: the error a missing module gives


def module_exists(name: str, root: pathlib.Path = ROOT) -> bool:
    """`a.b.c`: the packages down to a module file, then (at most) a name its package's `__init__.py` mentions or
    any attribute of the module; a file name in backticks (`tasks.py`) is not a module's name."""
    parts = name.split(".")
    if name in NOT_A_MODULE or parts[-1] in ("py", "md", "json", "toml"):
        return True
    folder = root if parts[0] in AREAS else root / "linrnn"
    for part in parts:
        if part.startswith("__") or (folder / f"{part}.py").is_file():
            return True
        if not (folder / part / "__init__.py").is_file():
            init = folder / "__init__.py"
            return init.is_file() and re.search(rf"\b{part}\b", init.read_text()) is not None
        folder = folder / part
    return True


def missing_modules(text: str, root: pathlib.Path = ROOT) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in MODULE.finditer(line):
            name = (match.group(1) or "").strip(".") or match.group(2)
            if not module_exists(name, root):
                found.append((number, name))
    return found


def test_every_module_the_docs_and_the_code_name_exists():
    files = [f for f in tracked_files() if pathlib.Path(f).suffix in TEXT_SUFFIXES and (ROOT / f).resolve() != THIS]
    missing = [f"{name}:{line}: {module}" for name in files
               for line, module in missing_modules((ROOT / name).read_text())]
    assert missing == [], "modules that do not exist:\n" + "\n".join(missing)


def test_a_planted_bad_module_is_caught(tmp_path):
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "__init__.py").write_text('"""The engines."""\nKINDS = ()\n')
    (tmp_path / "verify" / "bench.py").write_text("")
    text = ("`linrnn.verify.bench`, `verify.bench.interleaved_ms`, linrnn.verify.KINDS, `bench.py`, `verify.py`\n"
            "`impls.bench.interleaved_ms` and linrnn.verify.bench_torch; ops.linrnn.triton_scan\n")
    assert missing_modules(text, tmp_path) == [(2, "impls.bench.interleaved_ms"), (2, "verify.bench_torch")]


SECTION = re.compile(r'docs/([\w-]+\.md),\s+"([^"]+)"')


def titles(page: str) -> list[str]:
    """A page's headings and the first lines of its paragraphs (`**Title.** ...`, "What `DIR` must hold:"), without
    markup."""
    found = [line.lstrip("#").strip() for line in page.splitlines() if line.startswith("#")]
    found += [paragraph.lstrip("-* ").split("\n", 1)[0] for paragraph in re.split(r"\n\s*\n", page)]
    return [re.sub(r"[`*]", "", title) for title in found]


def missing_sections(text: str, pages: dict[str, list[str]]) -> list[tuple[int, str]]:
    """(line, 'PAGE "TITLE"') for every section the text names that its page does not have."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for page, title in SECTION.findall(line):
            if not any(t.startswith(title) for t in pages.get(page, ())):
                found.append((number, f'{page} "{title}"'))
    return found


def test_every_section_the_docs_and_the_code_name_exists():
    pages = {p.name: titles(p.read_text()) for p in (ROOT / "docs").glob("*.md")}
    files = [f for f in tracked_files() if pathlib.Path(f).suffix in TEXT_SUFFIXES and (ROOT / f).resolve() != THIS]
    missing = [f"{name}:{line}: {section}" for name in files
               for line, section in missing_sections((ROOT / name).read_text(), pages)]
    assert missing == [], "sections that do not exist:\n" + "\n".join(missing)


def test_a_planted_bad_section_is_caught():
    pages = {"speed.md": titles("# Speed\n\n## The floor\n\n**The targets.** For one layer\n\nWhat `DIR` must hold:\n")}
    text = ('docs/speed.md, "The floor"; docs/speed.md, "The targets"; docs/speed.md, "What DIR must hold"\n'
            'see docs/speed.md, "The ceiling", and docs/nothere.md, "The floor"\n')
    assert missing_sections(text, pages) == [(2, 'speed.md "The ceiling"'), (2, 'nothere.md "The floor"')]


def layout_folders(readme: str) -> list[str]:
    """The folders in the first column of README's "Layout" table, without the trailing slash."""
    section = readme.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `([^`]+)/` \|", section, re.MULTILINE)]


def test_the_readme_layout_names_every_top_folder_once():
    folders = layout_folders((ROOT / "README.md").read_text())
    assert len(folders) == len(set(folders)), folders
    assert sorted(folders) == top_folders(tracked_files())


def test_a_folder_missing_from_the_layout_is_caught():
    readme = (ROOT / "README.md").read_text()
    planted = re.sub(r"^\| `verify/` \|.*\n", "", readme, count=1, flags=re.MULTILINE)
    assert planted != readme and "verify" not in layout_folders(planted)


DATE = re.compile(r"(?<![\w-])20\d\d-\d\d-\d\d(?![\w-])")   # a date, not part of a file name


def dated_lines(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if DATE.search(line)]


def test_only_the_log_carries_dates():
    """README and the reference pages give the current figures with their commands; the history, dated, is the log's
    (docs/speed-log.md)."""
    pages = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name != "speed-log.md")]
    dated = {page: dated_lines((ROOT / page).read_text()) for page in pages}
    assert not {page: lines for page, lines in dated.items() if lines}, dated
    assert dated_lines("from `runs/sweep_2026-12-04_jax.json`\nmeasured (2026-12-04) on\n") == [2]

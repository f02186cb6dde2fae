"""No import cycle anywhere in the package (docs/architecture.md, "The layers").

The graph is drawn from the source with `ast`, not by importing: every `import` and `from ... import` statement of
every module, at module level and inside functions alike (a function-level import that only breaks a loop at import
time is still a loop), relative imports resolved, and `from package import name` counted as an edge to the
submodule `package.name` where that is a module. The strongly connected components of the graph (Tarjan) with more
than one module are the cycles; the test names one loop of each, with the file and line of every edge in it.

The same graph read between folders (a module's folder is its file's: `experiments/claims`, `impls/torch`, ...) is
held to the edges drawn here (`FOLDER_EDGES`): a new edge between two folders fails, naming the import that makes it,
until it is added on purpose; one that is gone asks for the table to shrink. The edges into `base/`, the floor every
folder may stand on, and into the package root's `__init__.py` (the version: importing any module of the package runs
it) are not drawn.
"""

from __future__ import annotations

import ast
import pathlib
from collections import deque

ROOT = pathlib.Path(__file__).resolve().parents[1]
AREAS = ("base", "impls", "verify", "theory", "tasks", "experiments", "reports")   # as setup.py's package_dir
PACKAGE_DIRS = {"linrnn": ROOT / "linrnn", **{f"linrnn.{area}": ROOT / area for area in AREAS}}

Edges = dict[str, dict[str, str]]      # module -> {imported module: "file:line" of the first statement}

# folder -> the folders it imports from, apart from base/ (docs/architecture.md, "The layers" and "What each folder
# holds"). Inside experiments/: the section measurements and claims/ decide through decide/, which imports no other
# folder; claims/ may use the section measurements (R8's norm study, D4's rule and control), never the reverse; reports/
# reads experiments/ and base/ only, never an engine below them.
FOLDER_EDGES: dict[str, set[str]] = {
    "experiments": {"experiments/decide", "impls", "impls/jax", "impls/reference", "impls/specs", "impls/torch", "tasks",
                    "theory", "verify"},
    "experiments/claims": {"experiments", "experiments/decide", "impls/specs", "tasks"},
    "impls": {"impls/reference", "impls/specs"},
    "impls/jax": {"impls", "impls/specs"},
    "impls/reference": {"impls", "impls/specs"},
    "impls/torch": {"impls", "impls/specs"},
    "linrnn/testing": {"impls", "impls/reference", "impls/specs", "verify"},
    "reports": {"experiments", "experiments/claims", "experiments/decide", "reports/sections"},
    "reports/sections": {"experiments", "experiments/claims", "reports"},
    "tasks": {"impls", "impls/jax", "impls/specs", "impls/torch", "tasks/data", "tasks/data/generate",
              "tasks/synthetic"},
    "tasks/synthetic": {"tasks/data", "tasks/data/generate"},
    "theory": {"impls", "impls/specs"},
    "verify": {"impls", "impls/jax", "impls/reference", "impls/specs", "impls/torch"},
}
# The same count before the layout of issue 51 (the base modules inside impls/, experiments/ one flat folder of 27 files,
# the report's sections calling the engines of verify/, theory/, tasks/ and impls/ themselves): 52 edges between folders
FOLDER_EDGES_BEFORE = 52


def module_files(package_dirs: dict[str, pathlib.Path]) -> dict[str, tuple[pathlib.Path, str]]:
    """module name -> its file and the file as shown (from the package folder's parent), for every .py file below
    each package folder (`__init__.py`: the package itself)."""
    found = {}
    for package, folder in package_dirs.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = (path, path.relative_to(folder.parent).as_posix())
    return found


def _resolve(name: str, modules: dict) -> str | None:
    """The longest prefix of `name` that is one of the package's modules (None: outside the package)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names one import statement reaches: `import a.b`, and `from a import b` as both a.b and a."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join(anchor + ([node.module] if node.module else []))
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def import_graph(package_dirs: dict[str, pathlib.Path]) -> Edges:
    """module -> the package modules it imports, anywhere in its file."""
    modules = module_files(package_dirs)
    graph: Edges = {}
    for module, (path, shown) in modules.items():
        edges = graph.setdefault(module, {})
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = _targets(node, module, is_package)
            if isinstance(node, ast.ImportFrom) and names:
                # `from a import b`: the submodule a.b where it is one, else the module a itself
                names = [n for n in names[:-1] if n in modules] or names[-1:]
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != module:
                    edges.setdefault(target, f"{shown}:{node.lineno}")
    return graph


def strongly_connected(graph: Edges) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, {})))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def one_loop(graph: Edges, component: list[str]) -> list[str]:
    """A shortest loop through the component's first module, as 'module (file:line)' steps back to it."""
    members, start = set(component), component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                path.reverse()
                return [f"{a} ({graph[a][b]})" for a, b in zip(path, path[1:] + [start])] + [start]
            if child in members and child not in came_from and child != start:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no loop through {start} in its component {component}")


def cycles(package_dirs: dict[str, pathlib.Path]) -> list[str]:
    """One line per import cycle: its modules, and one loop through them with the file and line of each import."""
    graph = import_graph(package_dirs)
    return [f"{len(c)} modules {', '.join(c)}: " + " -> ".join(one_loop(graph, c))
            for c in strongly_connected(graph) if len(c) > 1]


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE_DIRS)
    assert "linrnn.impls.specs" in graph and sum(map(len, graph.values())) > 500, "the graph was not drawn"
    found = cycles(PACKAGE_DIRS)
    assert not found, "import cycles:\n" + "\n".join(found)


def _write(folder: pathlib.Path, files: dict[str, str]) -> dict[str, pathlib.Path]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return {"pkg": folder}


def test_a_cycle_through_function_level_and_relative_imports_is_found(tmp_path):
    """a -> b at module level (`from pkg import b`: the submodule), b -> c inside a function, c -> a relatively."""
    dirs = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg.sub import c\n    return c\n",
        "sub/__init__.py": "",
        "sub/c.py": "import os\nfrom ..a import name\n",
        "d.py": "import pkg.a\n",
    })
    found = cycles(dirs)
    assert len(found) == 1, found
    assert found[0].startswith("3 modules pkg.a, pkg.b, pkg.sub.c: "), found
    assert "pkg.a (pkg/a.py:1) -> pkg.b (pkg/b.py:2) -> pkg.sub.c (pkg/sub/c.py:2) -> pkg.a" in found[0], found


def test_a_tree_of_imports_is_no_cycle(tmp_path):
    """The same modules with c no longer importing a: every edge kept but the loop's, and no cycle."""
    dirs = _write(tmp_path / "pkg", {
        "__init__.py": "from pkg import a\n",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg.sub import c\n    return c\n",
        "sub/__init__.py": "",
        "sub/c.py": "import os\nfrom .. import d\n",
        "d.py": "X = 1\n",
    })
    assert cycles(dirs) == []
    assert import_graph(dirs)["pkg.sub.c"] == {"pkg.d": "pkg/sub/c.py:2"}


def folder_graph(package_dirs: dict[str, pathlib.Path]) -> dict[str, dict[str, str]]:
    """folder -> {a folder it imports from: "file:line" of the first such import}, from `import_graph`; a module's folder
    is its file's, as shown from the package folder's parent. Edges into base/ and into the package root's __init__
    are left out (`FOLDER_EDGES`)."""
    modules = module_files(package_dirs)
    roots = set(package_dirs) - {name for name in package_dirs if "." in name}

    def folder(module: str) -> str:
        return pathlib.PurePosixPath(modules[module][1]).parent.as_posix()

    found: dict[str, dict[str, str]] = {}
    for module, targets in import_graph(package_dirs).items():
        for target, where in targets.items():
            if target in roots or folder(target) == folder(module) or folder(target) == "base":
                continue
            found.setdefault(folder(module), {}).setdefault(folder(target), where)
    return found


def edge_changes(found: dict[str, dict[str, str]], drawn: dict[str, set[str]]) -> list[str]:
    """One line per edge between folders that the code has and `drawn` does not (with the import that makes it), and
    per drawn edge the code no longer has."""
    have = {(a, b) for a, targets in found.items() for b in targets}
    want = {(a, b) for a, targets in drawn.items() for b in targets}
    return ([f"new edge {a} -> {b} ({found[a][b]})" for a, b in sorted(have - want)]
            + [f"drawn edge {a} -> {b} is gone: remove it from FOLDER_EDGES" for a, b in sorted(want - have)])


def test_the_folders_import_each_other_only_along_the_drawn_edges():
    found = folder_graph(PACKAGE_DIRS)
    assert "experiments/claims" in found and "experiments/decide" not in found, "the folder graph was not drawn"
    changes = edge_changes(found, FOLDER_EDGES)
    assert not changes, "edges between folders (tests/test_import_graph.py, FOLDER_EDGES):\n" + "\n".join(changes)
    drawn = sum(map(len, FOLDER_EDGES.values()))
    assert drawn < FOLDER_EDGES_BEFORE, f"{drawn} edges between folders, not fewer than the {FOLDER_EDGES_BEFORE} before"


def test_no_two_folders_of_different_areas_or_of_experiments_import_each_other():
    """No loop between folders but a package and its own sub-folders (impls and impls/reference: the converters read
    the references; reports and reports/sections: the sections draw with reports' plots)."""
    graph = folder_graph(PACKAGE_DIRS)
    for folder in [f for targets in graph.values() for f in targets]:
        graph.setdefault(folder, {})
    loops = [c for c in strongly_connected(graph) if len(c) > 1]
    allowed = [["impls", "impls/reference"], ["reports", "reports/sections"]]
    assert [c for c in loops if c not in allowed] == [], loops


def test_a_new_edge_between_folders_is_named_with_its_import(tmp_path):
    dirs = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/x.py": "from pkg.b import y\n",
        "b/__init__.py": "",
        "b/y.py": "def f():\n    from pkg.c import z\n",
        "c/__init__.py": "",
        "c/z.py": "import pkg\n",
    })
    found = folder_graph(dirs)
    assert found == {"pkg/a": {"pkg/b": "pkg/a/x.py:1"}, "pkg/b": {"pkg/c": "pkg/b/y.py:2"}}
    assert edge_changes(found, {"pkg/a": {"pkg/b"}, "pkg/c": {"pkg/a"}}) == [
        "new edge pkg/b -> pkg/c (pkg/b/y.py:2)", "drawn edge pkg/c -> pkg/a is gone: remove it from FOLDER_EDGES"]
    assert edge_changes(found, {"pkg/a": {"pkg/b"}, "pkg/b": {"pkg/c"}}) == []

"""The shape of the course's code: no module of coursekit or specdec over 400 lines, and no import
cycle among them, counting imports inside functions as well as at module level (a function-level
import is a cycle that waits for its first call). Read with `ast`: nothing is imported."""
from __future__ import annotations

import ast

from coursekit.paths import REPO

PACKAGES = ("coursekit", "specdec")
MAX_LINES = 400


def _modules() -> dict[str, object]:
    """{dotted module name: path} of every module of PACKAGES."""
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _target(name: str, modules) -> str | None:
    """The module of ours that importing `name` loads (a name inside a module counts as the module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(modules=None) -> dict[str, set[str]]:
    """{module: the modules of ours it imports}, from every import statement anywhere in it. A
    package's own __init__ is left out of its submodules' edges (importing a.b runs a's __init__,
    which the test of a's own imports covers)."""
    modules = modules or _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's package
                    base = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                # `from pkg import mod` imports the submodule pkg.mod
                targets = [f"{module}.{alias.name}" for alias in node.names] + [module]
            else:
                continue
            for target in targets:
                hit = _target(target, modules)
                if hit and hit != name:
                    edges.add(hit)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, f"import cycles among the course's modules: {found}"


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "coursekit.judge.sandbox" in graph["coursekit.grading.results"]  # inside layer_of
    assert "specdec.model" in graph["specdec.toy"]


def test_no_module_over_400_lines():
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules (at most {MAX_LINES} lines): {long}"


def test_every_name_imported_from_the_courses_code_is_there():
    """`from coursekit.x import y` anywhere in the repository (a function's import included, which
    only fails when the function first runs: in a grading worker, say) names something module x
    has. This one imports the modules it reads."""
    import importlib

    files = [p for d in ("coursekit", "specdec", "solutions", "tests", "benchmarks", "hub") for p in (REPO / d).rglob("*.py")]
    missing = []
    for path in files + [REPO / "grader_config.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split(".")[0] in ("coursekit", "specdec", "solutions", "tests")):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if alias.name != "*" and not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        missing.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{alias.name}")
    assert not missing, missing

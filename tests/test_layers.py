"""The layer map (docs/how-it-works.md) holds: imports only go down it, and the front ends reach the engine
through `workspace` alone. Read from the code's own import statements (type-only ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "server" / "kebab"

BASE = {"model", "errors", "paths", "text", "lexicon", "loanwords", "links", "tokens", "units", "markdown",
        "footnotes", "config", "excerpts", "filters", "syntax", "placement"}  # fmt: skip
# layer of each top-level module or package; a module may import its own layer or lower ones
LAYER = {
    **dict.fromkeys(BASE, 0),
    "embed": 1,
    "index": 2,
    "search": 3,
    "llm": 3,
    "rag": 4,
    "workspace": 5,
    "evaluation": 5,
    "cli": 6,
    "lsp": 6,
    "mcp_server": 6,
}
FRONT_ENDS = {"cli", "lsp", "mcp_server"}


def _imports(path: Path) -> set[str]:
    """The kebab modules `path` imports, as top-level names (`kebab.rag.retrieval` -> `rag`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "kebab":
                if len(parts) > 1:
                    found.add(parts[1])
                else:  # from kebab import footnotes, config
                    found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "kebab" and len(parts) > 1:
                    found.add(parts[1])
    return found


def _owner(path: Path) -> str:
    rel = path.relative_to(SERVER).parts
    return rel[0].removesuffix(".py")


def test_every_module_has_a_place_on_the_map() -> None:
    owners = {_owner(p) for p in SERVER.rglob("*.py")} - {"__init__", "__main__"}
    assert owners <= set(LAYER), owners - set(LAYER)


def test_imports_only_go_down_the_layers() -> None:
    upward = []
    for path in SERVER.rglob("*.py"):
        owner = _owner(path)
        if owner not in LAYER:
            continue
        for imported in _imports(path):
            if imported in LAYER and imported != owner and LAYER[imported] > LAYER[owner]:
                upward.append(f"{path.relative_to(SERVER)} imports {imported}")
    assert upward == []


def test_front_ends_reach_the_engine_through_workspace_alone() -> None:
    allowed = BASE | FRONT_ENDS | {"workspace", "evaluation"}
    reaching = [
        f"{path.relative_to(SERVER)} imports {imported}"
        for path in SERVER.rglob("*.py")
        if _owner(path) in FRONT_ENDS
        for imported in _imports(path)
        if imported not in allowed
    ]
    assert reaching == []


def _module_name(path: Path, root: Path) -> str:
    """`<root>/lsp/ask.py` -> `kebab.lsp.ask`; a package's `__init__.py` is the package."""
    parts = ["kebab", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source(node: ast.ImportFrom, package: str) -> str:
    """The module a `from ... import` reads from, a relative one resolved against `package`."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [node.module])])


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Each kebab module under `root` → the kebab modules it imports anywhere in it: at the top,
    inside functions and under `if TYPE_CHECKING:`. `from kebab.lsp import ask` names
    `kebab.lsp.ask`; `from kebab.lsp.ask import target` names it too."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _source(node, package)
                submodules = (f"{source}.{a.name}" for a in node.names)
                targets = [m if m in paths else source for m in submodules]
            else:
                continue
            for target in targets:
                while target and target not in paths:  # `import kebab.a.b` where b is a name
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles, as [a, b, ..., a]: in each group of modules that import each other
    (Tarjan's strongly connected components), the shortest circle through each of its modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while (w := stack.pop()) != v:
                group.add(w)
            groups.append(group | {v})

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for group in (g for g in groups if len(g) > 1):
        for start in sorted(group):
            cycle = _shortest_cycle(graph, group, start)
            first = cycle.index(min(cycle))  # the same circle, whichever module it starts from
            cycle = [*cycle[first:-1], *cycle[:first], cycle[first]]
            if cycle not in cycles:
                cycles.append(cycle)
    return cycles


def _shortest_cycle(graph: dict[str, set[str]], group: set[str], start: str) -> list[str]:
    """The shortest import circle from `start` back to it inside `group`, by breadth-first search."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{sorted(group)} is not a cycle")


def test_no_module_imports_itself_through_others() -> None:
    """An import circle makes import order matter and keeps modules apart in name only: features
    depend on the server's core, the dispatcher on the features, never the other way."""
    cycles = [" → ".join(c) for c in _cycles(_import_graph(SERVER))]
    assert not cycles, "import circles:\n" + "\n".join(cycles)


def test_the_circle_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Imports inside functions, under TYPE_CHECKING and relative ones all close a circle."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from kebab.pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("if TYPE_CHECKING:\n    from .c import C\n")
    (tmp_path / "pkg" / "c.py").write_text("from . import a\nimport kebab.pkg.d\n")
    (tmp_path / "pkg" / "d.py").write_text("from ..pkg.c import x\n")
    cycles = _cycles(_import_graph(tmp_path))
    assert sorted(cycles) == [
        ["kebab.pkg.a", "kebab.pkg.b", "kebab.pkg.c", "kebab.pkg.a"],
        ["kebab.pkg.c", "kebab.pkg.d", "kebab.pkg.c"],
    ], cycles

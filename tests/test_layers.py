"""The layer map (docs/how-it-works.md) holds: imports only go down it, and the front ends reach the engine
through `workspace` alone. Read from the code's own import statements (type-only ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "server" / "kebab"

BASE = {"model", "errors", "paths", "text", "lexicon", "loanwords", "links", "tokens", "units", "markdown",
        "footnotes", "config", "render"}  # fmt: skip
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
    """The kebab modules `path` imports, as top-level names (`kebab.rag.gate` -> `rag`)."""
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

"""Functions a person can hold in their head: none in `server/kebab` runs over 100 lines.
A longer one does several things; split it along them (issue 28)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "server" / "kebab"
MOST_LINES = 100


def test_no_function_is_longer_than_a_screenful_or_two() -> None:
    long = [
        f"{path.relative_to(SERVER)}:{node.lineno} {node.name} ({length} lines)"
        for path in sorted(SERVER.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MOST_LINES
    ]
    assert long == []

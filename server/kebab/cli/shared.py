"""What every CLI command shares: the workspace opened from the arguments, its index brought up
to date before reading, `--queries` files read, and JSON printed the one way."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from kebab.errors import KebabError, WorkspaceError
from kebab.model import to_builtins
from kebab.workspace import Workspace


def open_workspace(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Workspace:
    root = Path(args.root).expanduser()
    if not root.exists():
        raise WorkspaceError(f"no such folder: {root}")
    merged: dict[str, Any] = dict(overrides or {})
    if getattr(args, "index_dir", None):
        merged["index_dir"] = args.index_dir
    return Workspace(root, overrides=merged)


def refresh(ws: Workspace) -> None:
    """Bring the index up to date before reading it; an index that cannot be written (a
    read-only folder, a full disk) is read as it was last built, with a warning."""
    if ws.read_only:
        print(
            f"kebab: warning: the index at {ws.index_dir} cannot be updated "
            f"({ws.read_only}); using it as it was last built",
            file=sys.stderr,
        )
        return
    ws.refresh()


def llm_overrides(args: argparse.Namespace) -> dict[str, Any] | None:
    """The `llm` settings given as --backend, --model and --endpoint, as config overrides."""
    llm = {
        key: getattr(args, key)
        for key in ("backend", "model", "endpoint")
        if getattr(args, key, None)
    }
    return {"llm": llm} if llm else None


def read_queries(path: str) -> Iterator[tuple[Any, str]]:
    """(id, question) pairs from a JSON-lines file; a bad line is a clear error."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise KebabError(f"cannot read {path}: {e.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            yield item.get("id", n), str(item["question"])
        except (ValueError, KeyError, AttributeError):
            raise KebabError(f"{path}:{n}: expected a JSON object with a 'question'") from None


def print_json(value: object) -> None:
    sys.stdout.write(msgspec.json.encode(to_builtins(value)).decode() + "\n")

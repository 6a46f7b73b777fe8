"""Where a note may be: inside the workspace root (symlinks followed) and Markdown by name.

Shared by every layer that takes a path from outside (the index's walk, a footnote's link, a
`uri` from the editor, an MCP tool's argument), so one rule decides what leaves the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

NOTE_SUFFIXES = (".md", ".markdown")


def resolve_inside(root: Path, path: str | Path) -> Path | None:
    """`path` (absolute or root-relative) resolved, or None when it leaves the workspace."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    real = Path(os.path.realpath(candidate))
    return real if is_inside(root.resolve(), real) else None


def is_inside(root: Path, path: Path) -> bool:
    """Whether resolved `path` is `root` or under it."""
    return path == root or root in path.parents

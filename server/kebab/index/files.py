"""Which files of a workspace are notes, and reading them safely.

Skips `.git`, `.obsidian`, `node_modules`, hidden folders, `.gitignore`d and `.kebabignore`d paths.
Symlinks are followed only while they stay inside the root, and each real folder is walked once,
so symlink loops cannot hang the walk.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec

from kebab.model import Skipped
from kebab.paths import NOTE_SUFFIXES, is_inside

_ALWAYS_SKIPPED = {".git", ".obsidian", "node_modules", ".venv", "__pycache__", ".kebab"}
_IGNORE_FILES = (".gitignore", ".kebabignore")


@dataclass(frozen=True)
class NoteFile:
    path: str  # workspace-relative, forward slashes
    abspath: str
    size: int
    mtime_ns: int


def scan(
    root: Path, extra_ignores: list[str], max_bytes: int
) -> tuple[list[NoteFile], list[Skipped]]:
    """Every note under `root`, sorted by path, and what was passed over with the reason why."""
    root = root.resolve()
    notes: list[NoteFile] = []
    skipped: list[Skipped] = []
    visited: set[str] = set()
    base = [("", pathspec.PathSpec.from_lines("gitignore", extra_ignores))] if extra_ignores else []
    _walk(root, root, "", base, visited, notes, skipped, max_bytes)
    notes.sort(key=lambda n: n.path)
    return notes, skipped


def _walk(
    root: Path,
    folder: Path,
    rel: str,
    specs: list[tuple[str, pathspec.PathSpec]],
    visited: set[str],
    notes: list[NoteFile],
    skipped: list[Skipped],
    max_bytes: int,
) -> None:
    real = os.path.realpath(folder)
    if real in visited:
        return
    visited.add(real)
    specs = specs + [(f"{rel}/" if rel else "", s) for s in _ignore_specs(folder)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        skipped.append(Skipped(rel or ".", f"cannot list folder: {e.strerror}"))
        return
    for entry in entries:
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        if entry.name in _ALWAYS_SKIPPED or entry.name.startswith("."):
            continue
        try:
            is_link = entry.is_symlink()
            st = entry.stat(follow_symlinks=True)
        except OSError:
            skipped.append(Skipped(child_rel, "broken symlink or unreadable entry"))
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if _ignored(specs, child_rel, is_dir):
            continue
        if not _is_utf8(entry.name):  # the index stores names as UTF-8 text
            if is_dir or entry.name.lower().endswith(NOTE_SUFFIXES):
                shown = os.fsencode(child_rel).decode("utf-8", "replace")
                skipped.append(Skipped(shown, "name is not valid UTF-8; rename it to index it"))
            continue
        if is_link and not is_inside(root, Path(os.path.realpath(entry.path))):
            skipped.append(Skipped(child_rel, "symlink points outside the workspace"))
            continue
        if is_dir:
            _walk(root, Path(entry.path), child_rel, specs, visited, notes, skipped, max_bytes)
        elif not entry.name.lower().endswith(NOTE_SUFFIXES):
            continue
        elif not stat.S_ISREG(st.st_mode):  # a FIFO would block the reader forever
            skipped.append(Skipped(child_rel, "not a regular file (a pipe, socket or device)"))
        else:
            if st.st_size > max_bytes:
                skipped.append(
                    Skipped(
                        child_rel,
                        f"larger than max_file_bytes ({st.st_size:,} > {max_bytes:,} bytes)",
                    )
                )
                continue
            notes.append(NoteFile(child_rel, entry.path, st.st_size, st.st_mtime_ns))


def read_note(note: NoteFile, max_bytes: int) -> tuple[str | None, str | None]:
    """(text, warning) for a note, or (None, reason) when it cannot be indexed."""
    try:
        # Non-blocking, then checked: a note swapped for a FIFO since the scan cannot hang us.
        fd = os.open(note.abspath, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, "not a regular file (a pipe, socket or device)"
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        return None, "deleted while being read"
    except OSError as e:
        return None, f"cannot read: {e.strerror}"
    if len(data) > max_bytes:
        return None, f"larger than max_file_bytes ({max_bytes:,} bytes)"
    if b"\x00" in data[:8192]:
        return None, "binary content (NUL bytes) in a note file"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return (
            data.decode("utf-8", errors="replace"),
            f"not valid UTF-8 (byte {e.start}); decoded with replacement characters",
        )


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes surface as lone surrogates
        return False
    return True


def _ignore_specs(folder: Path) -> list[pathspec.PathSpec]:
    specs = []
    for name in _IGNORE_FILES:
        f = folder / name
        try:  # a folder we may not search raises here already; scandir reports it
            if f.is_file():
                specs.append(
                    pathspec.PathSpec.from_lines(
                        "gitignore", f.read_text(encoding="utf-8", errors="replace").splitlines()
                    )
                )
        except (OSError, ValueError):
            continue
    return specs


def _ignored(specs: list[tuple[str, pathspec.PathSpec]], rel: str, is_dir: bool) -> bool:
    """Whether an ignore file (or the configured patterns) rules out `rel`; each spec holds
    the root-relative folder its file sits in, so matching needs no path arithmetic."""
    for base, spec in specs:
        if rel.startswith(base) and spec.match_file(rel[len(base) :] + ("/" if is_dir else "")):
            return True
    return False

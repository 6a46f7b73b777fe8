"""Which `[^kb-n]` is at a position, and what its definition points to now.

Hover, go to definition, document links, diagnostics and the refresh quick fix all start here.
A definition records the cited note, the passage's 1-based line span and the first 12 hex digits
of the passage's content hash. The passage's *current* text is those lines of the cited note
(the editor's buffer when it is open, else the file), numbered as the index numbers them, joined
with "\\n" and stripped of leading/trailing newlines: exactly how the chunker built the chunk's
text, so `markdown.content_hash` of it starts with the recorded digits while nothing changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pygls.lsp.server import LanguageServer

from kebab.lsp import text as textmod
from kebab.markdown import content_hash, normalise_newlines
from kebab.model import Chunk
from kebab.paths import resolve_inside
from kebab.rag import footnotes
from kebab.rag.footnotes import Definition

State = Literal["fresh", "unverified", "moved", "changed", "missing"]
Reader = Callable[[Path], "str | None"]  # current text of a note, None when it is gone
ChunksOf = Callable[[str], "list[Chunk]"]  # the index's chunks of a workspace-relative path

_MAX_SCAN_LINES = 20_000  # past this, a moved passage is looked up in the index only


@dataclass(frozen=True)
class CitedSource:
    """A kebab footnote definition and the state of the passage it cites."""

    definition: Definition
    path: Path  # the cited note on disk
    uri: str
    state: State
    text: str  # current text of the cited passage ("" when missing)
    start_line: int  # where the passage is now (1-based, inclusive); the recorded span if unknown
    end_line: int
    reason: str = ""  # for "missing" and "changed": what a person should know

    @property
    def label(self) -> str:
        return self.definition.label


def definitions(note_text: str, note_path: str) -> list[Definition]:
    """kebab's footnote definitions in a note (links resolved to workspace-relative paths)."""
    return footnotes.definitions(normalise_newlines(note_text), note_path)


def definition_at(lines: list[str], note_path: str, line: int, column: int) -> Definition | None:
    """The kebab definition of the `[^label]` under (line, code-point column), if any."""
    if not 0 <= line < len(lines):
        return None
    label = footnotes.label_at(lines[line], column)
    if label is None:
        return None
    return next((d for d in definitions("\n".join(lines), note_path) if d.label == label), None)


def resolve(
    root: Path, d: Definition, read: Reader, chunks_of: ChunksOf | None = None
) -> CitedSource:
    """Compare the passage a definition cites with the current text of the cited note."""
    path = root / d.path
    uri = textmod.uri_of(path)
    if resolve_inside(root, d.path) is None:  # `../../etc/passwd`, `/etc/passwd`, a symlink out
        return _missing(d, path, uri, f"{d.path} is outside the workspace; kebab does not read it")
    current = read(path)
    if current is None:
        return _missing(d, path, uri, f"{d.path} no longer exists")
    lines = _lines(current)
    here = passage(lines, d.start_line, d.end_line)
    if not d.content_hash:
        if here is None:
            return _gone(d, path, uri, lines)
        return CitedSource(d, path, uri, "unverified", here, d.start_line, d.end_line)
    if here is not None and _same(content_hash(here), d.content_hash):
        return CitedSource(d, path, uri, "fresh", here, d.start_line, d.end_line)
    moved = locate(lines, d, chunks_of(d.path) if chunks_of else [])
    if moved is not None:
        start, end = moved
        return CitedSource(
            d,
            path,
            uri,
            "moved",
            passage(lines, start, end) or "",
            start,
            end,
            f"the passage moved to L{start}–L{end}",
        )
    if here is None:
        return _gone(d, path, uri, lines)
    return CitedSource(
        d, path, uri, "changed", here, d.start_line, d.end_line, "source changed since this answer"
    )


def passage(lines: list[str], start_line: int, end_line: int) -> str | None:
    """The text of lines start_line..end_line (1-based), None when they are not all there."""
    if start_line < 1 or end_line < start_line or end_line > len(lines):
        return None
    return "\n".join(lines[start_line - 1 : end_line]).strip("\n")


def locate(lines: list[str], d: Definition, chunks: list[Chunk]) -> tuple[int, int] | None:
    """Where the cited passage is now, when it only moved within the note (same text)."""
    for c in chunks:  # the index knows its chunks' hashes: the cheap way first
        if _same(c.content_hash, d.content_hash) and _same(
            content_hash(passage(lines, c.start_line, c.end_line) or ""), d.content_hash
        ):
            return c.start_line, c.end_line
    size = d.end_line - d.start_line + 1
    if size < 1 or len(lines) > _MAX_SCAN_LINES:
        return None
    starts = sorted(range(1, len(lines) - size + 2), key=lambda s: abs(s - d.start_line))
    for start in starts:
        text = passage(lines, start, start + size - 1)
        if text and _same(content_hash(text), d.content_hash):
            return start, start + size - 1
    return None


def reader(ls: LanguageServer) -> Reader:
    """Current text of a note: the editor's buffer when open, else the file (blocking)."""

    def read(path: Path) -> str | None:
        buffered = textmod.open_text(ls, path)
        if buffered is not None:
            return buffered
        try:
            return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        except OSError:
            return None

    return read


def span_columns(definition_line: str) -> tuple[int, int] | None:
    """Code-point columns of the `L12–L30` span at the end of a definition line."""
    m = footnotes.DEFINITION.match(definition_line.rstrip("\r"))
    return (m.start("start") - 1, m.end("end")) if m else None


def link_columns(definition_line: str) -> tuple[int, int] | None:
    """Code-point columns of the `[title](link "kb:…")` in a definition line."""
    m = footnotes.DEFINITION.match(definition_line.rstrip("\r"))
    if not m:
        return None
    close = definition_line.index(")", m.end("hash") if m.group("hash") else m.end("link"))
    return m.start("title") - 1, close + 1


def _same(hash_: str, recorded: str) -> bool:
    return bool(recorded) and hash_[: len(recorded)] == recorded


def _lines(text: str) -> list[str]:
    return textmod.split_lines(text.replace("\x00", "\ufffd"))


def _gone(d: Definition, path: Path, uri: str, lines: list[str]) -> CitedSource:
    return _missing(
        d,
        path,
        uri,
        f"lines L{d.start_line}–L{d.end_line} are past the end of {d.path} ({len(lines)} lines)",
    )


def _missing(d: Definition, path: Path, uri: str, reason: str) -> CitedSource:
    return CitedSource(d, path, uri, "missing", "", d.start_line, d.end_line, reason)

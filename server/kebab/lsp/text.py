"""A note's text as the server sees it: lines, positions in the client's encoding, and edits.

Lines follow the engine's numbering (`markdown.normalise_newlines`, then split on "\\n"), so line
`n` here is line `n + 1` of a chunk's span. Columns inside the server are code points; the client
counts UTF-8 or UTF-16 units, whichever `initialize` negotiated (pygls's `position_codec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition

from kebab.markdown import normalise_newlines


@dataclass(frozen=True)
class Snapshot:
    """One document's text at one version (None: read from disk, not open in the editor)."""

    uri: str
    version: int | None
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def split_lines(text: str) -> list[str]:
    """The lines of a note, numbered the way the index numbers them."""
    return normalise_newlines(text).split("\n")


def document(ls: LanguageServer, uri: str) -> TextDocument | None:
    """The editor's open document at `uri` (pygls would read an unopened one from disk)."""
    return ls.workspace.text_documents.get(unquote(uri))


def open_snapshot(ls: LanguageServer, uri: str) -> Snapshot | None:
    """The editor's buffer for `uri`, or None when it is not open (never touches the disk)."""
    doc = document(ls, uri)
    if doc is None:
        return None
    return Snapshot(doc.uri, doc.version, split_lines(doc.source))


def open_text(ls: LanguageServer, path: Path) -> str | None:
    """The unsaved buffer of the note at `path` when the editor has it open."""
    doc = document(ls, uri_of(path))
    return doc.source if doc is not None else None


def read_snapshot(ls: LanguageServer, uri: str) -> Snapshot | None:
    """The buffer when open, else the file on disk (blocking: call from a worker thread)."""
    snap = open_snapshot(ls, uri)
    if snap is not None:
        return snap
    path = path_of(uri)
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path else None
    except OSError:
        return None
    return Snapshot(uri, None, split_lines(text)) if text is not None else None


_PATH_MAX = 4096  # Linux's PATH_MAX: no file has a longer path


def path_of(uri: str) -> Path | None:
    """The local path a `file:` URI names; None for other schemes and impossible paths (a
    1 MB URI would otherwise be resolved one component at a time, for minutes)."""
    if not isinstance(uri, str) or len(uri) > 3 * _PATH_MAX:
        return None
    fs = to_fs_path(uri)
    return Path(fs) if fs and len(fs) <= _PATH_MAX and "\x00" not in fs else None


def uri_of(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def to_server(ls: LanguageServer, lines: list[str], pos: types.Position) -> tuple[int, int]:
    """(line, code-point column) of a client position."""
    copy = types.Position(line=pos.line, character=pos.character)
    p = ls.workspace.position_codec.position_from_client_units(lines, copy)
    return p.line, p.character


def to_client(ls: LanguageServer, lines: list[str], line: int, column: int) -> types.Position:
    """A client position for (line, code-point column), clamped to the text."""
    if not lines:
        return types.Position(line=0, character=0)
    line = min(max(line, 0), len(lines) - 1)
    column = min(max(column, 0), len(lines[line]))
    return ls.workspace.position_codec.position_to_client_units(
        lines, ServerTextPosition(line, column)
    )


def span(ls: LanguageServer, lines: list[str], line: int, start: int, end: int) -> types.Range:
    """The client range of columns [start, end) on one line."""
    return types.Range(start=to_client(ls, lines, line, start), end=to_client(ls, lines, line, end))


def end_of_line(ls: LanguageServer, lines: list[str], line: int) -> types.Position:
    return to_client(ls, lines, line, len(lines[line]) if 0 <= line < len(lines) else 0)


def whole_lines(start_line: int, end_line: int) -> types.Range:
    """Lines `start_line`..`end_line` (1-based, inclusive) as an LSP range, like a citation's."""
    return types.Range(
        start=types.Position(line=max(start_line - 1, 0), character=0),
        end=types.Position(line=max(end_line, 0), character=0),
    )


def workspace_edit(
    ls: LanguageServer, snap: Snapshot, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    """Edits to one document, tied to the version they were computed on when the client can check.

    A client that supports `documentChanges` refuses a versioned edit whose document moved on, so
    an answer never lands at a stale position.
    """
    if get_capability(ls.client_capabilities, "workspace.workspace_edit.document_changes", False):
        doc = types.OptionalVersionedTextDocumentIdentifier(uri=snap.uri, version=snap.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(doc, list(edits))])
    return types.WorkspaceEdit(changes={snap.uri: list(edits)})

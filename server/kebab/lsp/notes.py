"""Which `[^kb-n]` is under the cursor in an open note, the editor's view of a note's text,
and where a definition's span and link sit on its line. What a definition points to now is
`footnotes.resolve`, which every front end shares.
"""

from __future__ import annotations

from pathlib import Path

from pygls.lsp.server import LanguageServer

from kebab import footnotes
from kebab.footnotes import Definition, Reader
from kebab.lsp import text as textmod
from kebab.markdown import normalise_newlines
from kebab.syntax import KEBAB_DEFINITION


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
    m = KEBAB_DEFINITION.match(definition_line.rstrip("\r"))
    return (m.start("start") - 1, m.end("end")) if m else None


def link_columns(definition_line: str) -> tuple[int, int] | None:
    """Code-point columns of the `[title](link "kb:…")` in a definition line."""
    m = KEBAB_DEFINITION.match(definition_line.rstrip("\r"))
    if not m:
        return None
    close = definition_line.index(")", m.end("hash") if m.group("hash") else m.end("link"))
    return m.start("title") - 1, close + 1

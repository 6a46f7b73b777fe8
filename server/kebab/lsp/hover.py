"""The hover on a `[^kb-n]` footnote: which note and lines on its first line, then the passage.

VS Code and Neovim render the hover's Markdown in a popup, where any layout reads. Emacs shows
it in the echo area (eglot through eldoc): newer eglots echo its first line; Emacs 28's eldoc
echoes its first few lines, and Emacs shows a message taller than the echo area may grow from
its end. A long line wraps into several screen lines, so one long line of the passage pushed
the header out of sight. So the header is a plain line first (no Markdown heading), and every
line fits 78 columns where it can: the header's heading path is shortened from the left, and
the passage's paragraphs are wrapped, which changes nothing a Markdown renderer shows (a line
break in a paragraph is a space; a passage whose breaks would turn a word into a block is left
as it is). Code and tables are left as they are, and the passage's leading headings are left
out: the header names them.
"""

from __future__ import annotations

import unicodedata

from markdown_it import MarkdownIt

from kebab import footnotes
from kebab.syntax import HEADING, OPENS_BLOCK, WRAP_LEAD

WIDTH = 78  # columns: an 80-column terminal shows a line this wide without wrapping it

_NOTICE = {
    "changed": "⚠ source changed since this answer",
    "missing": "⚠ source not found",
    "moved": "↪ the passage moved",
}
_MD = MarkdownIt("commonmark", {"html": True}).enable("table")


def preview(s: footnotes.Cited) -> str:
    """The hover: `**heading path** · `path` lines L–L`, a notice when the passage changed,
    moved or is gone, then the passage quoted."""
    parts = [header(s.definition.title, s.definition.path, s.start_line, s.end_line)]
    if s.state in _NOTICE:
        notice = _NOTICE[s.state]
        said = f"{notice}: {s.reason}" if s.reason and s.state != "changed" else notice
        parts.append("\n".join(wrap(said, WIDTH)))
    if quoted := quote(s.text, s.definition.title):
        parts.append(quoted)
    return "\n\n".join(parts)


def header(title: str, path: str, start: int, end: int) -> str:
    """One line of at most `WIDTH` columns as shown where it can be: the heading path loses
    its first headings (`…` stands for them), then its last one is cut short; the note's path
    and lines are always there."""
    where = f" · {path} lines L{start}–L{end}"
    headings = title.split(" › ")
    shown = title
    while len(headings) > 1 and columns(shown + where) > WIDTH:
        headings = headings[1:]
        shown = " › ".join(["…", *headings])
    if columns(shown + where) > WIDTH:
        shown = _cut(shown, max(WIDTH - columns(where), 12))
    return f"**{shown}** · `{path}` lines L{start}–L{end}"


def _cut(text: str, room: int) -> str:
    """`text` in at most `room` columns, cut after a word where it can be, `…` ending it."""
    out = ""
    for c in text:
        if columns(out + c + "…") > room:
            space = out.rfind(" ")
            return (out[:space] if space > len(out) * 0.6 else out).rstrip() + "…"
        out += c
    return out


def quote(text: str, title: str = "") -> str:
    """The passage as a Markdown quote, its leading headings left out when the header's `title`
    names them, its paragraphs wrapped (the lines a Markdown parser reads as paragraph text:
    never code, tables or HTML)."""
    lines = text.split("\n")
    while lines and (
        not lines[0].strip() or (HEADING.match(lines[0]) and lines[0].lstrip("#").strip() in title)
    ):
        lines.pop(0)
    prose = _paragraph_lines("\n".join(lines))
    out: list[str] = []
    for i, line in enumerate(lines):
        out += wrap(line, WIDTH - 2) if i in prose and "\t" not in line else [line]
    if out != lines and _shown(out) != _shown(lines):  # a rare break that made a block
        out = lines
    return "\n".join(f"> {line}" if line else ">" for line in out)


def wrap(line: str, width: int) -> list[str]:
    """A prose line broken at spaces into lines of at most `width` columns where it can be,
    each new line carrying the first one's quote markers and list indent. Never broken before
    a word that would start a block, and a line ending in a hard break keeps it."""
    if columns(line) <= width:
        return [line]
    lead = WRAP_LEAD.match(line)
    start = lead.end() if lead else 0
    quotes = lead.group(1) if lead else ""
    indent = quotes + " " * (start - len(quotes))
    body = line[start:].rstrip(" ")
    trailing = line[start + len(body) :]
    out: list[str] = []
    words: list[str] = []
    prefix = line[:start]
    for word in body.split(" "):
        longer = columns(prefix + " ".join([*words, word])) > width
        if longer and any(words) and word and not OPENS_BLOCK.match(word):
            out.append(prefix + " ".join(words))
            prefix, words = indent, []
        words.append(word)
    out.append(prefix + " ".join(words) + trailing)
    return out


def columns(text: str) -> int:
    """How many terminal columns `text` takes (wide Korean and CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _shown(lines: list[str]) -> list[tuple[str, str, str]]:
    """What a renderer makes of `lines`: its blocks, and their text with line breaks as spaces."""
    return [
        (t.type, t.tag, " ".join(t.content.split()) if t.type == "inline" else t.content)
        for t in _MD.parse("\n".join(lines))
    ]


def _paragraph_lines(text: str) -> set[int]:
    """The lines of `text` (0-based) that belong to a paragraph, in a list or quote or not."""
    return {
        i
        for t in _MD.parse(text)
        if t.type == "paragraph_open" and t.map is not None
        for i in range(*t.map)
    }

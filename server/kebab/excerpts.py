"""A passage as a person reads it: plain text on one line, without what only the Markdown source
shows (HTML comments and tags, fences, table pipes, the headings it starts with, list and quote
markers, link targets, wiki link brackets, code and emphasis marks). answer.v1
`candidates[].excerpt`, and what `kebab search` prints: one cleaning, so no client repeats it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kebab.syntax import (
    ATTRIBUTE_LIST,
    AUTOLINK,
    CALLOUT_TYPE_LOOSE,
    CODE_AND_STRONG_MARKS,
    DIALECT_MARKER,
    FENCE_LINE,
    FILE_INCLUDE,
    FOOTNOTE_LABEL,
    HEADING_MARK,
    HTML_COMMENT_TO_END,
    HTML_TAG,
    IMAGE,
    LIST_LEAD,
    MARKDOWN_LINK_SHOWN,
    MKDOCS_BLOCK,
    QUOTE_MARKERS,
    SNIPPET_INCLUDE,
    STAR_ITALIC,
    TABLE_RULE,
    UNDERSCORE_ITALIC,
    WIKILINK_ALIAS,
    WIKILINK_HEADING,
    WIKILINK_HEADING_HERE,
    WIKILINK_NOTE,
    outside_code,
)

_INLINE: list[tuple[re.Pattern[str], str]] = [
    (QUOTE_MARKERS, ""),
    (CALLOUT_TYPE_LOOSE, ""),  # a callout's [!note]
    (HEADING_MARK, ""),
    (LIST_LEAD, ""),  # list markers, task boxes
    (ATTRIBUTE_LIST, " "),  # `{ loading=lazy }` after an image or a link: styling
    (IMAGE, " "),  # an image is not text: its alt is often just "image"
    (MARKDOWN_LINK_SHOWN, r"\1"),  # [text](target) → text
    (WIKILINK_ALIAS, r"\1"),  # [[target|alias]] → alias
    (WIKILINK_HEADING_HERE, r"\1"),  # [[#Heading]] → Heading
    (WIKILINK_HEADING, r"\1 › \2"),  # [[note#Heading]]
    (WIKILINK_NOTE, r"\1"),  # [[note]] → note
    (FOOTNOTE_LABEL, ""),  # footnote references
    (AUTOLINK, r"\1"),  # <https://…> shows its address
    (HTML_TAG, " "),
    (SNIPPET_INCLUDE, " "),  # snippet includes `{* file.py *}`
    (CODE_AND_STRONG_MARKS, ""),
    (STAR_ITALIC, r"\1"),
    (UNDERSCORE_ITALIC, r"\1"),
]


def excerpt(markdown: str, limit: int = 240) -> str:
    """A passage as plain text on one line, at most `limit` characters (then `…`), cut at a
    word; the headings it starts with are left out (its heading path names them)."""
    lines = HTML_COMMENT_TO_END.sub(" ", markdown.replace("\r\n", "\n")).split("\n")
    while lines and (not lines[0].strip() or HEADING_MARK.match(lines[0])):
        lines.pop(0)
    read: list[str] = []
    size = 0
    for line, code in _plain_lines(lines):  # only as many lines as the excerpt can show
        words = " ".join(line.split())
        if code and not size:  # a code line's lead (`# comment`, `- x`, `> x`) reads as
            words = _lead_dropped(words)  # Markdown only where the excerpt starts
        read.append(words)
        size += len(words) + 1 if words else 0
        if size > limit + 1:
            break
    return clip(" ".join(" ".join(filter(None, read)).split()), limit)


def clip(text: str, limit: int) -> str:
    """Plain text at most `limit` characters: cut at a word, then `…`."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit * 0.6 else head).rstrip() + "…"


def _plain_lines(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line as plain text, and whether it is code: a fenced block's lines, shown as written
    (`<div>`, `# comment`); a content tab's marker (`=== "Python"`) is its title, and a dialect's
    block markers (`/// tip | 팁`, `!!! note`, `???+ info "Title"`) are left out."""
    fenced = False
    for line in lines:
        if FENCE_LINE.match(line):  # any fence line, a nested block's too: never shown
            fenced = not fenced
            continue
        if fenced:  # its tags and marks are code
            yield FILE_INCLUDE.sub(" ", line).strip(), True  # `{! a.css !}`: a file
        elif (tab := MKDOCS_BLOCK.match(line)) and tab.group(4):
            title = _plain(tab.group(5)[1:-1])
            yield (f"{title}:" if title else ""), False
        elif not DIALECT_MARKER.match(line.strip()):  # `/// tip | 팁`, `!!! note`: markup
            yield _plain(line), False


def _lead_dropped(line: str) -> str:
    """A code line without what would read as Markdown at the start of an excerpt: a shell
    comment's `#` as a heading, a YAML item's `-` as a list, `>` as a quote."""
    for pattern in (QUOTE_MARKERS, HEADING_MARK, LIST_LEAD):
        line = pattern.sub("", line)
    return line


def _plain(line: str) -> str:
    if TABLE_RULE.match(line):
        return ""
    # inside a code span, `<Ctrl b><d>`, `__init__` and `*args` are what they say; a table's
    # cells are split by the pipes outside code only (`{{a|b}}` in a command is the command's)
    row = outside_code(line, lambda t: "|" * t.count("|"), lambda _: "").count("|") >= 2
    cell = "\x1f" if row else "|"
    line = outside_code(line, lambda t: _inline(t).replace("|", cell), lambda s: s.strip("`"))
    if row:
        line = " · ".join(c.strip() for c in line.strip().strip("\x1f").split("\x1f") if c.strip())
    return line.strip()


def _inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return text

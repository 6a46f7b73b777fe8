"""answer.v1 as a person reads it in the terminal, the way the editors show it: sources numbered
[1], [2] in the order the answer first cites them (the numbers its `[^kb-n]` footnotes get), one
refusal wording ("Not answered. The notes never mention: Redis."; "Closest in your notes." over
passages that may hold the answer), and passages as clean
excerpts (no HTML comments, fences, link targets or emphasis marks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kebab.footnotes import MARKER
from kebab.syntax import (
    CALLOUT_TYPE_LOOSE,
    CODE_AND_STRONG_MARKS,
    FENCE_LINE,
    FOOTNOTE_LABEL,
    HEADING_MARK,
    HTML_COMMENT_TO_END,
    HTML_TAG,
    LIST_LEAD,
    MARKDOWN_LINK_SHOWN,
    QUOTE_MARKERS,
    SNIPPET_INCLUDE,
    STAR_ITALIC,
    TABLE_RULE,
    UNDERSCORE_ITALIC,
    WIKILINK_ALIAS,
    WIKILINK_HEADING,
    WIKILINK_HEADING_HERE,
    WIKILINK_NOTE,
)

NOT_ANSWERED = "Not answered."
CLOSEST = "Closest in your notes."


def numbers(answer: str, markers: Iterable[int]) -> dict[int, int]:
    """Marker → the number shown: known markers in order of first appearance, from 1."""
    known = set(markers)
    out: dict[int, int] = {}
    for m in (int(x) for x in MARKER.findall(answer)):
        if m in known and m not in out:
            out[m] = len(out) + 1
    return out


def refusal(refusal_text: str | None, outcome: str | None = None) -> str:
    """The one line that says an answer was not given, and why: "Closest in your notes." over
    passages that may hold it (`closest`), "Not answered." when the notes have nothing."""
    head = CLOSEST if outcome == "closest" else NOT_ANSWERED
    return f"{head} {refusal_text}" if refusal_text else head


class Streamed:
    """Answer text as it streams, renumbered line by line (`[#5]` → `[1]`). Lines are held
    until the first citation: a refusal (which cites nothing) is then said once, in the
    refusal's words, rather than streamed and said again."""

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self._line = ""
        self._held: list[str] = []

    def write(self, piece: str) -> str:
        """What can be printed now."""
        self._line += piece
        *done, self._line = self._line.split("\n")
        self._held += [f"{line}\n" for line in done]
        if not any(MARKER.search(line) for line in self._held) and not self.numbers:
            return ""
        out, self._held = "".join(self._held), []
        return self._renumber(out)

    def rest(self) -> str:
        """The unfinished last line and anything held, renumbered (for an answer that stands)."""
        out, self._held, self._line = "".join(self._held) + self._line, [], ""
        return self._renumber(out)

    @property
    def printed(self) -> bool:
        return bool(self.numbers)

    def _renumber(self, text: str) -> str:
        def number(m: re.Match[str]) -> str:
            n = self.numbers.setdefault(int(m.group(1)), len(self.numbers) + 1)
            return f"[{n}]"

        return re.sub(r"[ \t]*" + MARKER.pattern, lambda m: number(m), text)


# Clean excerpts -------------------------------------------------------------------------------
_INLINE: list[tuple[re.Pattern[str], str]] = [
    (QUOTE_MARKERS, ""),
    (CALLOUT_TYPE_LOOSE, ""),  # a callout's [!note]
    (HEADING_MARK, ""),
    (LIST_LEAD, ""),  # list markers, task boxes
    (MARKDOWN_LINK_SHOWN, r"\1"),  # [text](target) → text
    (WIKILINK_ALIAS, r"\1"),  # [[target|alias]] → alias
    (WIKILINK_HEADING_HERE, r"\1"),  # [[#Heading]] → Heading
    (WIKILINK_HEADING, r"\1 › \2"),  # [[note#Heading]]
    (WIKILINK_NOTE, r"\1"),  # [[note]] → note
    (FOOTNOTE_LABEL, ""),  # footnote references
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
    text = " ".join(filter(None, (_plain(line) for line in lines)))
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit * 0.6 else head).rstrip() + "…"


def _plain(line: str) -> str:
    if FENCE_LINE.match(line) or TABLE_RULE.match(line):
        return ""
    for pattern, repl in _INLINE:
        line = pattern.sub(repl, line)
    if line.count("|") >= 2:
        line = " · ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip())
    return line.strip()

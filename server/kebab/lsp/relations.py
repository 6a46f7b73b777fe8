""" "Link related notes": where the code action is offered and where its line of links goes.
Shared by `actions` (which offers it) and `linking` (whose command writes the links).
"""

from __future__ import annotations

from lsprotocol import types

from kebab.syntax import FOOTNOTE_DEFINITION, HEADING, fence_after, fence_open_at, heading_level

COMMAND = "kebab.linkRelated"
TITLE = "Link related notes"
KIND = types.CodeActionKind.RefactorRewrite
LEAD = "Related:"


def offered(lines: list[str], start: int, end: int) -> bool:
    """On a heading, or on any line the person selected (not on every line: a light bulb on
    each line of a note would be noise). Never inside a code block."""
    if not 0 <= start < len(lines) or fence_open_at(lines, start):
        return False
    return bool(HEADING.match(lines[start])) or end > start


def placed_after(lines: list[str], line: int) -> int:
    """The line the links go after: the last line of text in the section holding `line` (up to
    the next heading; for a heading, up to the next one of its level or higher), before any
    footnote definitions that end the note."""
    level = heading_level(lines[line]) or 7  # under text: up to the next heading of any level
    end = len(lines)
    fence = ""
    for i in range(line + 1, len(lines)):
        fence = fence_after(lines[i], fence)
        if not fence and 0 < heading_level(lines[i]) <= level:
            end = i
            break
    last = line
    for i in range(line + 1, end):
        if lines[i].strip() and not FOOTNOTE_DEFINITION.match(lines[i]):
            last = i
    return last

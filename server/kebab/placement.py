"""Where an answer is written under a question in a note, and the proof that nothing else moved.

`answer_text` puts the answer at the question's place in the note's structure: inside every
quote, callout and list item the question is in (`syntax.answer_prefix`), with the lines that
continued the question lazily written again after it (`syntax.lazy_lines`). Those rules read
lines; Markdown has more ways to read a line than they foresee (`> Why?` then `    - foo` is one
paragraph; alone after the answer, `- foo` is a list). So `keeps_structure` parses the note's
section around the question before and after the answer goes in and compares every block but
the answer's own: an answer is offered, and written, only where the note's other blocks, and
the quotes and items the answer stands in, stay exactly as they were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kebab.footnotes import answer_below
from kebab.markdown import block_tokens
from kebab.syntax import (
    FRESH_BLOCK,
    QUOTE_MARKERS,
    answer_prefix,
    bare_text,
    fence_after,
    lazy_lines,
    shared_quote,
)

if TYPE_CHECKING:
    from markdown_it.token import Token

# What `keeps_structure` writes when the answer is not known yet (the code action is offered
# before anything is asked): a cited sentence and a fenced block, the two shapes every answer
# kebab writes has.
STAND_IN = "The answer.[^kb-0]\n\n```\ncode\n```"

_CONTAINERS = {"blockquote_open": "blockquote_close", "list_item_open": "list_item_close"}
_LEAVES = frozenset({"fence", "code_block", "html_block", "hr"})


def replaced_to(lines: list[str], line: int, end: int) -> int:
    """The last line `answer_text` writes anew: `end`, or the lines after it that continue the
    question's paragraph lazily (`syntax.lazy_lines`), written again inside its quote or item."""
    return end + lazy_lines(lines, end, answer_prefix(lines, line))


def answer_text(lines: list[str], line: int, end: int, body: str) -> str:
    """What goes after the end of `line` in place of the rest up to `replaced_to`: a blank line
    and the body, at the question's place in the note's structure (inside every quote, callout
    and list item it is in: `syntax.answer_prefix`), and a blank line before whatever the
    note says next, in the quotes that line shares with the answer; a line that continued the
    question lazily (`> Q?` then `more`) goes on after the answer, in the question's quote."""
    prefix = answer_prefix(lines, line)
    text = "\n" + "\n".join(
        prefix + b if b.strip() else prefix.rstrip() for b in ["", *body.strip("\n").split("\n")]
    )
    moved = lines[end + 1 : end + 1 + lazy_lines(lines, end, prefix)]
    after = moved[0] if moved else lines[end + 1] if end + 1 < len(lines) else ""
    if QUOTE_MARKERS.sub("", after).strip():  # the note's own text next, a paragraph of its own
        text += "\n" + (prefix.rstrip() if moved else shared_quote(prefix, after))
    return text + "".join(f"\n{prefix}{bare_text(s)}" for s in moved)


def keeps_structure(lines: list[str], line: int, body: str = STAND_IN) -> bool:
    """Whether the answer `body`, written under `line` (in place of the answer kebab wrote there
    before, if any), leaves every other block of the note as it was and stands where the question
    does: in the same quotes and list items, as the block the body starts with. Only the
    lines around the question are parsed (`_section`)."""
    end = answer_below(lines, line)
    end = line if end is None else end
    stop = replaced_to(lines, line, end)
    text = answer_text(lines, line, end, body)
    new = lines[:line] + (lines[line] + text).split("\n") + lines[stop + 1 :]
    first, last = _section(lines, line, stop)
    before = _parsed(lines, first, last)
    after = _parsed(new, first, last + len(new) - len(lines))
    # the body's lines: the lazy lines written again after it must come out as text
    written = range(line + 1, line + 1 + text.count("\n") - (stop - end))
    if _blocks(lines, before, range(line + 1, stop + 1)) != _blocks(new, after, written):
        return False
    start = next(i for i in written if bare_text(new[i]))  # the body's first line
    alone = body.strip("\n").split("\n")
    return _stands_at(before, line)[0] == _stands_at(after, start)[0] and (
        _stands_at(after, start)[1] == _stands_at(_parsed(alone, 0, len(alone)), 0)[1]
    )


def _section(lines: list[str], first: int, last: int) -> tuple[int, int]:
    """Lines around `first`..`last` that parse as they do in the note, near enough to compare:
    from the last line at or above `first` that starts a top-level block whatever came before it
    (`syntax.FRESH_BLOCK`: a heading or a bullet item at the margin, or a line at the margin
    after a blank line, outside fenced code) to the second such line after `last`, so that a
    block the answer would change below it is seen; at most `REACH` lines either way (from a
    line outside fenced code), since a 7,000-line note takes most of a second to parse whole.
    Cut inside a long paragraph, quote or item, the lines parse the same before and after."""
    start, end, seen, fence = 0, len(lines), 0, ""
    for i, s in enumerate(lines):
        fresh = not fence and (
            (s[:1].strip() and i > 0 and not lines[i - 1].strip()) or FRESH_BLOCK.match(s)
        )
        if (fresh or (not fence and start < first - REACH)) and i <= first:
            start = i
        elif fresh and i > last:
            seen += 1
            if seen == 2:
                end = i
                break
        fence = fence_after(s, fence)
    return start, min(end, last + REACH)


# How far the parse reaches from the question and its answer, at most (`_section`): a
# 10,000-line paragraph took 0.6 s each time the cursor moved in it, 500 lines take 40 ms.
REACH = 500


def _parsed(lines: list[str], first: int, last: int) -> list[Token]:
    """Lines `first`..`last` - 1 parsed, each token's map moved to the note's line numbers."""
    tokens = block_tokens("\n".join(lines[first:last]))
    for t in tokens:
        if t.map:
            t.map = [t.map[0] + first, t.map[1] + first]
    return tokens


def _blocks(lines: list[str], tokens: list[Token], skip: range) -> list[tuple[str, int, str]]:
    """Every block but paragraphs and those starting on a `skip` line: its kind, its depth and
    its first line's text (a paragraph cut in two by an answer under its line is still text)."""
    return [
        (t.type, t.level, bare_text(lines[t.map[0]]))
        for t in tokens
        if t.map
        and t.map[0] not in skip
        and t.type != "paragraph_open"
        and (t.nesting == 1 or t.type in _LEAVES)
    ]


def _stands_at(tokens: list[Token], line: int) -> tuple[list[tuple[str, int]], str]:
    """The quotes and list items `line` is inside (each as its kind and first line), and the
    kind of the innermost other block it is in ("" for none)."""
    inside: list[tuple[str, int]] = []
    held: tuple[list[tuple[str, int]], str] = ([], "")
    for t in tokens:
        if t.type in _CONTAINERS and t.map:
            inside.append((t.type, t.map[0]))
        elif t.type in _CONTAINERS.values():
            inside.pop()
        elif t.map and t.map[0] <= line < t.map[1] and (t.nesting == 1 or t.type in _LEAVES):
            held = (list(inside), t.type)
    return held

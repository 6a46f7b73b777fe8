"""Where an answer is written under a question in a note, and the proof that nothing else moved.

`answer_text` puts the answer at the question's place in the note's structure: inside every
quote, callout and list item the question is in (`syntax.answer_prefix`), with the lines that
continued the question lazily written again after it (`syntax.lazy_lines`). Those rules read
lines; Markdown has more ways to read a line than they foresee (`> Why?` then `    - foo` is one
paragraph; alone after the answer, `- foo` is a list). So `keeps_structure` parses the lines
around the question before and after the answer goes in and compares where each line stands:
an answer is offered, and written, only where every other line keeps its quotes, lists, items
and kind of block, and the answer stands in the question's quotes and items.
"""

from __future__ import annotations

from collections.abc import Callable

from kebab.footnotes import answer_below
from kebab.markdown import VERBATIM_BLOCKS, block_tokens, verbatim_at
from kebab.syntax import (
    FRESH_BLOCK,
    LIST_ITEM,
    QUOTE_MARKERS,
    TABLE_DELIMITER,
    VERBATIM_INSIDE,
    answer_prefix,
    bare_text,
    fence_after,
    lazy_lines,
    shared_quote,
)

# What `keeps_structure` writes when the answer is not known yet (the code action is offered
# before anything is asked): a cited sentence and a fenced block, the two shapes every answer
# kebab writes has.
STAND_IN = "The answer.[^kb-0]\n\n```\ncode\n```"


def answer_text(lines: list[str], line: int, end: int, body: str) -> tuple[str, int]:
    """What goes after the end of `line`, and the last line it replaces (`end`, an earlier
    answer's, or past it the lines that continued the question lazily): a blank line and the
    body, at the question's place in the note's structure (inside every quote, callout and list
    item it is in: `syntax.answer_prefix`), and a blank line before whatever the note says
    next, in the quotes that line shares with the answer; a line that continued the question
    lazily (`> Q?` then `more`) goes on after the answer, in the question's quote or item. A
    list that ends the answer takes another marker than the note's list after it (`_apart`)."""
    prefix = answer_prefix(lines, line)
    moved = lines[end + 1 : end + 1 + lazy_lines(lines, end, prefix)]
    below = next((t for i in range(end + 1, len(lines)) if (t := bare_text(lines[i]))), "")
    text = "\n" + "\n".join(
        prefix + b if b.strip() else prefix.rstrip()
        for b in ["", *_apart(body.strip("\n"), below).split("\n")]
    )
    after = moved[0] if moved else lines[end + 1] if end + 1 < len(lines) else ""
    # the note's own text next, a paragraph of its own; or a quote's empty line where the answer
    # is not that deep in quotes (it would end the answer with no blank line between)
    if QUOTE_MARKERS.sub("", after).strip() or after.count(">") > prefix.count(">"):
        text += "\n" + (prefix.rstrip() if moved else shared_quote(prefix, after))
    return text + "".join(f"\n{prefix}{bare_text(s)}" for s in moved), end + len(moved)


def _apart(body: str, below: str) -> str:
    """`body` with its last list written with another bullet (`-` → `*`) or delimiter (`1.` →
    `1)`) when it ends the body and the note's next line (`below`, bare) is an item with the
    same one: CommonMark starts a new list there, where the same marker would make the note's
    list after the answer (a question's own sub-items, the next section's list) the answer's."""
    after = LIST_ITEM.match(below)
    if after is None:
        return body
    tokens = block_tokens(body)
    opened = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting == 1]
    if not opened or tokens[opened[-1]].type not in ("bullet_list_open", "ordered_list_open"):
        return body
    mark = after[1][-1]  # `-`, `*`, `+`; `.` or `)` after a number
    # nor the marker of the answer's own list just before it (`* x` then `- a`: two lists)
    before = tokens[opened[-2]] if len(opened) > 1 else None
    taken = {mark}
    if before is not None and before.type == tokens[opened[-1]].type:
        taken |= {t.markup for t in tokens[opened[-2] : opened[-1]] if t.type == "list_item_open"}
    other = next((c for c in ("*-+" if mark in "-*+" else ").") if c not in taken), None)
    if other is None:
        return body  # `1.` then `1)` in the answer: Insert refuses it rather than merge lists
    lines = body.split("\n")
    for t in tokens[opened[-1] :]:
        if t.type == "list_item_open" and t.level == 1 and t.map and t.markup == mark:
            s = lines[t.map[0]]
            item = LIST_ITEM.match(s.lstrip())
            if item is not None:
                at = len(s) - len(s.lstrip()) + len(item[1]) - 1
                lines[t.map[0]] = s[:at] + other + s[at + 1 :]
    return "\n".join(lines)


def keeps_structure(lines: list[str], line: int, body: str = STAND_IN) -> bool:
    """Whether the answer `body`, written under `line` (in place of the answer kebab wrote there
    before, if any), leaves every other line of the note in the blocks it was in (the same
    quotes, lists, items, tables, code, HTML; text stays text) and stands where the question
    does: in its quotes and list items, as the block the body starts with. Only the lines
    around the question are parsed (`_section`), for their blocks alone (no inline parse). No
    answer goes under a line of front matter, code or HTML (`markdown.verbatim_at`)."""
    if verbatim_at(lines, line):
        return False
    end = answer_below(lines, line)
    end = line if end is None else end
    text, stop = answer_text(lines, line, end, body)
    new = lines[:line] + (lines[line] + text).split("\n") + lines[stop + 1 :]
    grown, moved_to = len(new) - len(lines), line + text.count("\n") - (stop - end) + 1

    def moved(i: int) -> int | None:
        """Where old line `i` is in the new note (None: the earlier answer, replaced)."""
        if i <= line:
            return i
        if i <= end:
            return None
        return moved_to + (i - end - 1) if i <= stop else i + grown

    first, last = _section(lines, line, stop)
    before = _in_blocks(lines, first, last, moved)
    after = _in_blocks(new, first, last + grown, lambda i: i)
    for i in range(first, last):  # every line a block of its own holds, before or after
        j = moved(i)
        held, now = before.get(i), None if j is None else after.get(j)
        if j is not None and (_leaf(held) or _leaf(now)) and held != now:
            return False
    asked = _split(before.get(line, ()))
    if VERBATIM_BLOCKS & set(asked[1]):  # in code or raw HTML (a quote's `<details>`)
        return False
    start = next(i for i in range(line + 1, moved_to) if bare_text(new[i]))  # the body's first
    if start not in after:  # the body begins with what is no block (a link definition)
        return False
    # in the question's quotes and items, then the blocks the body starts with on its own (an
    # answer that opens with a list or a quote: a list, a quote, inside them)
    alone = body.strip("\n").split("\n")
    own, kind = _split(_in_blocks(alone, 0, len(alone), lambda i: i)[0])
    stands, opens = _split(after[start])
    deep = len(asked[0])
    return (
        stands[:deep] == asked[0]
        and [k for k, _ in stands[deep:]] == [k for k, _ in own]
        and opens == kind
    )


# A line's place (`_in_blocks`): the blocks around it, outermost first, as (kind, first line);
# the paragraph's first line is not compared (an answer under a paragraph's line starts a new
# one after it, in the same quotes and items).
Place = tuple[tuple[str, int | None], ...]
_HOLDERS = frozenset({"blockquote_open", "bullet_list_open", "ordered_list_open", "list_item_open"})


def _in_blocks(
    lines: list[str], first: int, last: int, moved: Callable[[int], int | None]
) -> dict[int, Place]:
    """Each line of `first`..`last` - 1 that a block holds, by line: its place, the first lines
    of its blocks told in the new note's numbers (`moved`). A line only a quote, list or item
    holds (blank, or a bare `>`) ends with that holder."""
    held: dict[int, Place] = {}
    around: list[tuple[str, int | None]] = []
    for t in block_tokens("\n".join(lines[first:last])):
        if t.nesting == -1:
            around.pop()
            continue
        at = None if t.map is None or t.type == "paragraph_open" else moved(t.map[0] + first)
        if t.nesting == 1:
            around.append((t.type, at))
            if t.map:  # its lines, until a block inside says more (a callout's bare `>` line)
                held.update(dict.fromkeys(range(t.map[0] + first, t.map[1] + first), (*around,)))
        elif t.map:  # inline text, code, HTML, a rule: what the line is
            for i in range(t.map[0] + first, t.map[1] + first):
                held[i] = (*around, (t.type, None))
    return held


def _leaf(place: Place | None) -> bool:
    """Whether a line's place ends in a block of its own (text, code, HTML, a rule), not only in
    a quote, list or item (a blank or bare `>` line; a link definition's title line)."""
    if not place:
        return False
    return place[-1][0] not in _HOLDERS


def _split(place: Place) -> tuple[Place, tuple[str, ...]]:
    """A place's quotes, lists and items, and the kinds of the blocks inside them."""
    return (
        tuple(b for b in place if b[0] in _HOLDERS),
        tuple(kind for kind, _ in place if kind not in _HOLDERS),
    )


def _section(lines: list[str], first: int, last: int) -> tuple[int, int]:
    """Lines around `first`..`last` that parse as they do in the note, near enough to compare:
    from the last line at or above `first` that starts a top-level block whatever came before it
    (`syntax.FRESH_BLOCK`: a heading or a bullet item at the margin, or a line at the margin
    after a blank line, outside fenced code) to the second such line after `last`, so that a
    block the answer would change below it is seen; at most `REACH` lines either way (from a
    line outside fenced code and under no table's delimiter row), since a 7,000-line note takes
    a tenth of a second to parse whole. Cut inside a long paragraph, quote or item, the lines
    parse the same before and after. Under an HTML comment, `<pre>`, or a fence in a quote, an
    item or indented (`VERBATIM_INSIDE`: the line reader may misread where they end), from the
    note's first line."""
    if any(VERBATIM_INSIDE.match(s) for s in lines[:first]):
        return 0, len(lines)
    start, end, seen, fence, table = 0, len(lines), 0, "", False
    for i, s in enumerate(lines):
        text = bare_text(s)
        table = bool(text) and (table or ("|" in text and bool(TABLE_DELIMITER.match(text))))
        fresh = not fence and (
            (s[:1].strip() and i > 0 and not lines[i - 1].strip()) or FRESH_BLOCK.match(s)
        )
        far = not fence and not table and start < first - REACH
        if (fresh or far) and i <= first:
            start = i
        elif fresh and i > last:
            seen += 1
            if seen == 2:
                end = i
                break
        fence = fence_after(s, fence)
    return start, min(end, last + REACH)


# How far the parse reaches from the question and its answer, at most (`_section`): a
# 10,000-line paragraph took 0.6 s each time the cursor moved in it.
REACH = 500

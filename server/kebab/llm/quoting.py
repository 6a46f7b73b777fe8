"""How the units an extractive answer chose read as Markdown: a line of text keeps its list
marker, a code block is fenced under the line that introduces it (cut to the lines that hold
what was asked when long), items of one list stay one list nested as their note nests them, and
each unit carries its `[#n]` marker. Also the terms a passage holds, read as a question's words
would find them (`terms_apart`), which choosing and cutting both weigh.
"""

from __future__ import annotations

import re

from kebab.footnotes import MARKER
from kebab.llm import Evidence
from kebab.llm.asks import shapes_asked
from kebab.syntax import (
    BREAK_TAG,
    FENCE_LINE,
    FOOTNOTE_LABEL,
    HTML_TAG,
    LIST_ITEM,
    QUOTE_MARKER,
    fence_after,
    outside_code,
)
from kebab.text import (
    coverage,
    latin_terms,
    query_words,
    terms_of,
)
from kebab.units import (
    FENCE,
    is_block,
    leads_into,
    split_block,
)


def terms_apart(text: str) -> set[str]:
    """A passage's terms, with a number and its unit read apart too (`16GB` holds `GB`)."""
    return terms_of(text) | set(latin_terms(_NUMBER_UNIT.sub(r"\1 \2", text)))


_NUMBER_UNIT = re.compile(r"(\d)([A-Za-z])")


def _with_lead_in(found: list[tuple[Evidence, str]], i: int) -> str:
    """A code block with the sentence just before it when that sentence introduces it."""
    unit = found[i][1]
    if is_block(unit) and not split_block(unit)[0] and i > 0 and found[i - 1][0] is found[i][0]:
        before = found[i - 1][1]
        if leads_into(before):
            return f"{before}\n{unit}"
    return unit


def _lead_in_of_next(found: list[tuple[Evidence, str]], i: int, chosen: list[int]) -> bool:
    """A chosen sentence that is quoted as the next chosen block's lead-in (not twice)."""
    return i + 1 in chosen and i + 1 < len(found) and _with_lead_in(found, i + 1) != found[i + 1][1]


# A code block of up to `BLOCK_LINES` lines is quoted whole, and one of up to `WHOLE_BLOCK` lines
# unless a line holds a number the question asks with: a snippet a note gives as its answer
# is read whole when it fits a screen. Cut to the lines most like the question, the line that
# answered (`setTimeout(..., 2000)` for "never leaves the form stuck") fell under `...`: over 645
# quotes of 689 labelled questions, 75 cut a block at 15 lines and 22 now, and 11 more quotes
# then held every key fact, none fewer (median answer unchanged at 19 lines; 43 against 41 at
# the 90th percentile). A longer block, or one with a line holding a number the question asks
# with (a table's `16GB` row for "16 GB of RAM"), is quoted by its first line and the lines
# around that one.
BLOCK_LINES = 15


WHOLE_BLOCK = 30


def quote(unit: str, marker: int, question: str, where: str = "", joins: str | None = None) -> str:
    """One quoted unit with its marker: a line of text (a list item keeps its marker and
    number), or a code block as a fenced block (whole, or its first line and the lines that
    hold what was asked, when long) under the line that introduces it; a block with none is
    introduced by the word the note joins it to the block before with (`joins`: "or", "또는",
    `_between`), or else by `where` it is from, so its marker leads into it rather than
    trailing it."""
    if not is_block(unit):
        return f"{as_line(unit, keep_marker=True)} [#{marker}]"
    head, opening, code = split_block(unit)
    closing = re.match(r"`+", opening)  # as long as the opening (`units.fence_for`)
    block = "\n".join(
        [opening, *_block_lines(code, question), closing.group() if closing else FENCE]
    )
    lead = as_line(head) if head else joins or _caption(where)
    return f"{lead} [#{marker}]\n{block}"


# The words a note joins two blocks with when it gives them as alternatives or in turn, written
# alone on a line between them: too short to be units, so they were lost, and the second block
# was captioned with its heading ("Query parameter type conversion:" four times over URLs the
# note joins with "or"; `service sshd restart` and `systemctl restart sshd` read as two steps
# where the note says "또는").
_JOINING = re.compile(
    r"(?:or|and|then|otherwise|alternatively|또는|혹은|아니면|그리고|그다음|그\s?다음)[,:.]?",
    re.I,
)


def _between(text: str, before: str, unit: str) -> str | None:
    """The word a note writes alone between a quoted block `before` and the block `unit` after
    it in its passage `text` ("or", "또는": `_JOINING`), or None: anything else between them,
    or either block not found once in the passage."""
    code = [ln.strip() for ln in split_block(unit)[2] if ln.strip()]
    said = [ln.strip() for ln in split_block(before)[2] if ln.strip()]
    if not code or not said or text.count(said[-1]) != 1:
        return None
    end = text.find(said[-1]) + len(said[-1])
    start = text.find(code[0], end)
    gap = [ln.strip() for ln in text[end:start].split("\n")] if start >= 0 else []
    words = [ln for ln in gap if ln and not FENCE_LINE.match(ln)]
    # the closing fence of `before`, the word, the opening fence of `unit`: nothing else
    fences = [ln for ln in gap if FENCE_LINE.match(ln)]
    if len(words) != 1 or len(fences) != 2 or not _JOINING.fullmatch(words[0]):
        return None
    return words[0]


_OPENS_BLOCK = re.compile(r"^(\d{1,9})([.)])(?=\s|$)|^([-*+>#])(?=\s|$)")


def _caption(where: str) -> str:
    """The line over a block quoted without one of its own: where it is from ("Install:"). A
    heading that is a sentence keeps its stop ("`Object.keys`를 사용한다.", never ".:"), and one
    numbered like a step ("3. VS Code") is escaped, or it would read as a list's third item."""
    text = where.strip().rstrip(":").rstrip()
    if not text.endswith((".", "!", "?", "。", "…")):
        text += ":"
    return _OPENS_BLOCK.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", text, count=1)


def render(found: list[tuple[Evidence, str]], chosen: list[int], question: str) -> str:
    """The chosen units as Markdown: items of one list stay one list, nested as their note
    nests them (`_nested`), every other unit its own paragraph (lines joined by a single
    newline would read as one run-on paragraph)."""
    pieces: list[tuple[Evidence, str, bool]] = []  # (passage, quoted text, same list as before)
    previous: int | None = None
    for i in chosen:
        if _lead_in_of_next(found, i, chosen):
            continue
        ev, unit = found[i]
        unit = _with_lead_in(found, i)
        joins = (
            _between(ev.text, found[previous][1], unit)
            if previous is not None
            and found[previous][0] is ev
            and is_block(unit)
            and is_block(found[previous][1])
            else None
        )
        piece = quote(unit, ev.marker, question, _where_from(ev), joins)
        same_list = (
            previous is not None
            and found[previous][0] is ev
            and bool(LIST_ITEM.match(found[previous][1]))
            and bool(LIST_ITEM.match(unit))
        )
        pieces.append((ev, piece, same_list))
        previous = i
    return "".join(
        ("\n" if same else "\n\n") + text if n else text
        for n, (_, text, same) in enumerate(_nested(pieces))
    )


def _nested(pieces: list[tuple[Evidence, str, bool]]) -> list[tuple[Evidence, str, bool]]:
    """`pieces` with each list item indented as its note nests it: a sub-point quoted flush
    with its parent reads as a sibling ("- 윈도우의 개행 문자 방식 `CR LF`" under "- `DOS` `UNIX`
    의 개행 방식 서로 달라서 생기는 문제"). A child goes to its parent's text column, as CommonMark
    reads a nested list; an item whose line is not found in its passage stays flush, and code
    is left as it is."""
    out: list[tuple[Evidence, str, bool]] = []
    stack: list[tuple[int, int]] = []  # (an item's indentation in its note, its text column)
    used: dict[int, set[int]] = {}  # per passage, its lines already matched
    for ev, text, same in pieces:
        if not same:
            stack = []
        lines = text.split("\n")
        fence = ""
        for k, line in enumerate(lines):
            after = fence_after(line, fence)
            item = None if fence or after else LIST_ITEM.match(line)
            fence = after
            at = source_line(ev.text, line, used.setdefault(ev.marker, set())) if item else None
            if item is None or at is None:
                stack = []
                continue
            used[ev.marker].add(at[0])
            while stack and at[1] <= stack[-1][0]:
                stack.pop()
            column = stack[-1][1] if stack else 0
            lines[k] = " " * column + line
            stack.append((at[1], column + len(item.group())))
        out.append((ev, "\n".join(lines), same))
    return out


def source_line(text: str, quoted: str, used: set[int]) -> tuple[int, int] | None:
    """(line number, indentation) of the line of `text`, not in `used`, that the `quoted` line
    was, once quote markers and indentation are set aside: the same words, or (for a line the
    quote cleaned: tags, footnote labels) the same first 40 characters; never a longer line
    that merely starts alike ("- Install" is not "- Install deps")."""
    said = MARKER.sub("", quoted).strip()
    alike: tuple[int, int] | None = None
    for n, raw in enumerate(text.split("\n")):
        while QUOTE_MARKER.match(raw):
            raw = QUOTE_MARKER.sub("", raw, count=1)
        bare = raw.lstrip(" \t")
        if n in used:
            continue
        indent = len(raw[: len(raw) - len(bare)].replace("\t", "    "))
        if bare.rstrip() == said:
            return n, indent
        if alike is None and len(said) >= 40 and bare.startswith(said[:40]):
            alike = n, indent
    return alike


def _where_from(ev: Evidence) -> str:
    """A passage's place, said in a line: its heading, or its note's name."""
    return (
        ev.heading_path[-1] if ev.heading_path else ev.path.rsplit("/", 1)[-1].removesuffix(".md")
    )


def _block_lines(code: list[str], question: str) -> list[str]:
    """A long block's first line, then the few lines around the one that best holds the
    question's words (and what it asks for: a flag, a number), with `...` for what is left out."""
    if len(code) <= BLOCK_LINES:
        return code
    # a number and its unit read apart on both sides: "16 GB" asked finds the `16GB` row
    asked = _NUMBER_UNIT.sub(r"\1 \2", question)
    words = query_words(asked)
    numbers = set(re.findall(r"\d+", asked))
    wants = shapes_asked(question, how=True)

    def fit(i: int) -> float:
        line = code[i]
        return coverage(words, terms_apart(line)) + 0.2 * sum(1 for w in wants if w.search(line))

    best = max(range(1, len(code)), key=lambda i: (fit(i), -i))
    if len(code) <= WHOLE_BLOCK and not numbers & terms_apart(code[best]):
        return code
    start, end = max(1, best - 3), min(len(code), best + 6)
    lines = [code[0]]
    if start > 1:
        lines.append("...")
    lines += code[start:end]
    if end < len(code):
        lines.append("...")
    return lines


def as_line(unit: str, keep_marker: bool = False) -> str:
    """A unit as it reads quoted in another note: no footnote refs or #tags, and no list marker
    unless `keep_marker` (an answer keeps a list a list; a line shown alone drops it)."""
    unit = unit.strip()
    if not keep_marker:
        unit = LIST_ITEM.sub("", unit)
    if unit.startswith("|"):
        unit = " | ".join(c.strip() for c in unit.strip().strip("|").split("|"))
    unit = FOOTNOTE_LABEL.sub("", unit)  # the source note's own footnotes point nowhere here
    # inline HTML (<abbr title=…>ISBN</abbr>): its text; a code span's `<Ctrl b><d>` is code
    unit = outside_code(
        unit, lambda prose: re.sub("  +", " ", HTML_TAG.sub("", BREAK_TAG.sub(" ", prose)))
    )
    return re.sub(r"(\s+#[^\W\d][\w/-]*)+\s*$", "", unit)

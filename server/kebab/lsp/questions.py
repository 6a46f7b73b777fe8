"""Which lines of a note are questions, and the command that answers one in the note (its name,
title and code-action kind): `textDocument/codeAction` offers it on a question, and
`kebab.insertAnswer` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from kebab import footnotes
from kebab.model import QUESTION_CHARS
from kebab.placement import keeps_structure
from kebab.syntax import (
    FOOTNOTE_DEFINITION,
    HEADING,
    QUESTION_CALLOUT,
    QUESTION_LEAD,
    QUOTE_MARKER,
)

COMMAND = "kebab.insertAnswer"
TITLE = "Answer with kebab"
KIND = types.CodeActionKind.RefactorRewrite


@dataclass(frozen=True)
class Question:
    """A question in a note, and where its answer goes."""

    text: str  # the question as asked
    line: int  # 0-based line the answer goes under
    line_text: str  # that line's text, to find it again when the note changed


def question_at(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> Question | None:
    """The question at a selection of words, or else on the range's line (ending in `?`, or a
    callout). A range inside one word is the line too: eglot sends the bounds of the word at
    point where VS Code and Neovim send the cursor."""
    (l0, c0), (l1, c1) = start, end
    if c1 == 0 and l1 > l0:  # a selection of whole lines ends at the start of the next one
        l1, c1 = l1 - 1, len(lines[l1 - 1]) if l1 - 1 < len(lines) else 0
    if not 0 <= l0 <= l1 < len(lines):
        return None
    question = _question_at(lines, (l0, c0), (l1, c1))
    # An answer there would become YAML, code or HTML (the note's own `summary: Why…?`, a shell
    # prompt's `read -p "Continue?"` ask nothing of the notes), or change another block of the
    # note: a table's row (the rows below would become text), text over a heading's underline,
    # a line that went on with the question and would open a list once apart (`placement`).
    if question is None or not keeps_structure(lines, question.line):
        return None
    return question


def _question_at(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> Question | None:
    """`question_at` before the verbatim blocks are ruled out."""
    (l0, c0), (l1, c1) = start, end
    if (l0, c0) != (l1, c1) and not _inside_one_word(lines, (l0, c0), (l1, c1)):
        if not any(_askable(s) for s in lines[l0 : l1 + 1]):
            return None
        selected = "\n".join(lines[l0 : l1 + 1])
        selected = selected[c0 : len(selected) - (len(lines[l1]) - c1)]
        text = " ".join(QUESTION_LEAD.sub("", s).strip() for s in selected.split("\n")).strip()
        if not text or len(text) > QUESTION_CHARS:  # a whole note selected is no question
            return None
        return Question(text, l1, lines[l1])
    block = callout_block(lines, l0)
    if block is not None:
        first, last = block
        last = _before_answer(lines, first, last)
        head = QUESTION_CALLOUT.match(lines[first])
        body = [QUOTE_MARKER.sub("", s).strip() for s in lines[first + 1 : last + 1]]
        text = (head.group("rest").strip() if head else "") or " ".join(b for b in body if b)
        return Question(text, last, lines[last]) if text else None
    line = lines[l0].rstrip()
    if _askable(line) and line.endswith(("?", "？")):
        text = QUESTION_LEAD.sub("", line).strip()
        return Question(text, l0, lines[l0]) if text else None
    return None


def _inside_one_word(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> bool:
    """A range on one line that holds no space: a word (or `[^kb-1]`, `(restic.timer)`)."""
    (l0, c0), (l1, c1) = start, end
    return l0 == l1 and not any(ch.isspace() for ch in lines[l0][c0:c1])


def _askable(line: str) -> bool:
    """A line that can hold a question: not blank, not a footnote definition, not a heading
    whose text is not a question (`## Notes`: a selection of it is not asked either)."""
    text = line.strip()
    if not text or FOOTNOTE_DEFINITION.match(text):
        return False
    return not HEADING.match(text) or text.endswith(("?", "？"))


def _before_answer(lines: list[str], first: int, last: int) -> int:
    """The callout's last line before the answer kebab wrote inside it (the question ends
    there and a new answer replaces that one; the callout's own lines after the answer, such
    as a line that went on with the question, stay), else its last line."""
    for line in range(first, last):
        end = footnotes.answer_below(lines, line)
        if end is not None:
            # written under the callout's bare `>` line, the answer is found from the line
            # above it too (code, a nested quote): the question ends at the bare line
            while (
                line + 1 < last
                and not QUOTE_MARKER.sub("", lines[line + 1]).strip()
                and footnotes.answer_below(lines, line + 1) == end
            ):
                line += 1
            return line
    return last


def callout_block(lines: list[str], line: int) -> tuple[int, int] | None:
    """(first, last) lines of the `> [!question]` callout holding `line`."""
    first = line
    while (
        first >= 0 and QUOTE_MARKER.match(lines[first]) and not QUESTION_CALLOUT.match(lines[first])
    ):
        first -= 1
    if first < 0 or not QUESTION_CALLOUT.match(lines[first]):
        return None
    last = first
    while (
        last + 1 < len(lines)
        and QUOTE_MARKER.match(lines[last + 1])
        and not QUESTION_CALLOUT.match(lines[last + 1])
    ):
        last += 1
    return first, last

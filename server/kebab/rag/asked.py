"""Notes that ask are not notes that answer.

An inbox note holding `How do I sync tasks with Todoist?` and `More notes below.` is where a
question was written down, however the question is worded when it is asked: its questions, and
the lines written around a question in the same paragraph or list, are no evidence for a
question about the same thing. `gate.retrieve` sets such a passage aside (it still shows among
the nearest passages on a refusal).
"""

from __future__ import annotations

import re

from kebab.text import coverage, query_words, terms_of, translated_words
from kebab.units import question_blocks, units

# Share of the asked question's words that a written-down question must hold to be "about the
# same thing" (in either language: the glossary's words count).
SAME_SUBJECT = 0.5


def asks_the_same(question: str, text: str) -> bool:
    """Whether all the passage has to say is questions, and the lines around one about what
    `question` asks: nothing quotable is left once those blocks are set aside."""
    blocks = question_blocks(text)
    if not blocks:
        return False
    asked, other = query_words(question), translated_words(question)
    drop = {
        i
        for written, lines in blocks
        if any(_same_subject(asked, other, q) for q in written)
        for i in lines
    }
    if not drop:
        return False
    rest = "\n".join(line for i, line in enumerate(text.split("\n")) if i not in drop)
    return not units(rest)


def _same_subject(asked: list[frozenset[str]], other: list[frozenset[str]], written: str) -> bool:
    have = terms_of(written)
    return max(coverage(asked, have), coverage(other, have)) >= SAME_SUBJECT


# Words that point back into the thread rather than name a thing.
_POINTING = frozenset(
    [
        "it",
        "its",
        "them",
        "they",
        "that",
        "this",
        "those",
        "these",
        "there",
        "one",
        "ones",
        "thing",
        "things",
        "그거",
        "그것",
        "그건",
        "거기",
        "이거",
        "이것",
        "저거",
        "그럼",
        "그러면",
        "그리고",
        "무슨",
    ]
)


def stands_alone(question: str) -> bool:
    """Whether a follow-up names enough of what it asks about to be searched on its own words
    (`And where is the new task put when I mark it done?`), rather than leaning on the thread
    for what it leaves out (`and on which day?`, `which systemd unit starts it?`)."""
    named = [w for w in query_words(question) if not w & _POINTING]
    # "which systemd unit starts *it*?" names three things and points back for the fourth.
    points = any(w in _POINTING for w in re.findall(r"\w+", question.lower()))
    return len(named) >= (4 if points else 3)

"""Notes that ask are not notes that answer.

An inbox note holding `How do I sync tasks with Todoist?` and `More notes below.` is where a
question was written down, however the question is worded when it is asked: its questions, and
the lines written around a question in the same paragraph or list, are no evidence for a
question about the same thing. `retrieval.retrieve` sets such a passage aside (it still shows among
the nearest passages on a refusal).

A follow-up is read against the question it follows: whether it names enough to be searched
alone (`stands_alone`), and which of the previous question's words it leaves out for the
thread to fill in (`left_out`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from kebab.text import (
    LATIN_WORD,
    MOOD_WORDS,
    STOPWORDS,
    cjk_terms,
    coverage,
    is_name,
    korean_query_words,
    latin_terms,
    query_words,
    terms_of,
    translated_words,
)
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
_POINTERS = frozenset(
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
    ]
)
# Words that lead a follow-up in ("then", "and", "what kind of") without naming a thing either.
_LEADS = frozenset(["그럼", "그러면", "그리고", "무슨"])
_POINTING = _POINTERS | _LEADS


def stands_alone(question: str) -> bool:
    """Whether a follow-up names enough of what it asks about to be searched on its own words
    (`And where is the new task put when I mark it done?`), rather than leaning on the thread
    for what it leaves out (`and on which day?`, `which systemd unit starts it?`)."""
    named = [w for w in query_words(question) if not w & _POINTING]
    # "which systemd unit starts *it*?" names three things and points back for the fourth.
    points = any(w in _POINTING for w in re.findall(r"\w+", question.lower()))
    return len(named) >= (4 if points else 3)


@dataclass(frozen=True)
class _Word:
    """A word of a question as the thread reads it."""

    text: str
    key: frozenset[str]  # its terms: what lines two questions up
    content: bool  # it names something (not glue, not a pointer)
    name: bool  # a name (`sshd`, `Postgres`) rather than an everyday word
    points: bool  # it points back into the thread (`it`, `them`, `그거`)


def left_out(question: str, previous: str) -> str:
    """The previous question's words that a follow-up leaves out, for the thread to fill in.

    The two are lined up word by word. Where the follow-up puts words of its own in place of
    the previous one's, its own lead: `sort them by priority` after `sort tasks by due date`
    takes `tasks` for `them`, not `due date`. A name gives way only to a name, an everyday word
    only to an everyday word: `서비스 재시작은?` after an `sshd` question keeps `sshd`. Where the
    follow-up points back (`which unit starts it?`) or says nothing there, all of it fills in.
    """
    mine, theirs = _words(question), _words(previous)
    have = {w.key for w in mine}
    lined = SequenceMatcher(a=[w.key for w in theirs], b=[w.key for w in mine], autojunk=False)
    fill = [
        w
        for tag, i1, i2, j1, j2 in lined.get_opcodes()
        if tag != "equal"
        for w in theirs[i1:i2]
        if w.content and w.key not in have and _stays(w, mine[j1:j2])
    ]
    return " ".join(dict.fromkeys(w.text for w in fill))


def _stays(word: _Word, against: list[_Word]) -> bool:
    """Whether a word of the previous question still holds where the follow-up has `against`
    in its place: always where they point back or name nothing; otherwise unless they name a
    thing of the same kind (a name for a name, an everyday word for an everyday word)."""
    if any(w.points for w in against):
        return True
    return not any(w.content and w.name == word.name for w in against)


def _words(question: str) -> list[_Word]:
    """The question's words in order, each with its terms (a Korean word without its particle:
    `재시작은` lines up with `재시작`) and what it does in the question."""
    out: list[_Word] = []
    for raw in question.split():
        text = raw.strip("?？!.,;:~\"'`*()[]")
        latin, korean = latin_terms(text), korean_query_words(text)
        key = frozenset(latin) | frozenset(cjk_terms(korean or text))
        if not key:
            continue
        points = text.lower() in _POINTERS
        content = not points and (
            any(t not in STOPWORDS and t not in MOOD_WORDS for t in latin)
            or bool(cjk_terms(korean))
        )
        name = content and any(is_name(w, question) for w in LATIN_WORD.findall(text))
        out.append(_Word(text, key, content, name, points))
    return out

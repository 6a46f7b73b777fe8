"""Which notes a search or a question is about: a path glob, tags and front-matter fields.

One filter for every door: `--path-glob`, `--tag` and `--where key=value` on the command line,
the same params over LSP and MCP, or written at the start of a question as a person types it
(`#ops path:infra/ status=draft how do I restore?`). A note passes when it passes every part.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Container
from typing import Literal

import msgspec
import pathspec

from kebab.errors import InvalidParams
from kebab.model import AskRequest

Op = Literal["=", "!=", ">=", "<="]
# `key=value`, `key!=value`, `key>=2024-01-01`, `key<=3`: a front-matter key is a word.
_CONDITION = re.compile(r"^(?P<key>[\w.-]+)\s*(?P<op>!=|>=|<=|=)\s*(?P<value>.+)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
# Filter words at the start of a question: `#tag`, `tag:ops`, `path:infra/`, `key=value`.
_INLINE_TAG = re.compile(r"^#(?P<tag>[^\W\d][\w/-]*)$")
_INLINE_PART = re.compile(r"^(?P<kind>path|tag):(?P<value>\S+)$")


class Condition(msgspec.Struct, frozen=True):
    """One front-matter test: `status=draft`, `reviewed>=2024-01-01`."""

    key: str
    op: Op
    value: str

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value}"


class Filters(msgspec.Struct, frozen=True):
    path_glob: str | None = None
    tags: tuple[str, ...] = ()
    where: tuple[Condition, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.path_glob or self.tags or self.where)

    def __str__(self) -> str:
        """The filter as a person writes it at the start of a question."""
        parts = [f"path:{self.path_glob}"] if self.path_glob else []
        return " ".join(parts + [f"#{t}" for t in self.tags] + [str(c) for c in self.where])

    def allows(self, path: str, tags: list[str], fields: dict[str, object]) -> bool:
        """Whether a note (its path, its tags, its front matter) passes every part."""
        if self.path_glob and not _glob(self.path_glob).match_file(path):
            return False
        have = {t.lower() for t in tags}
        if any(t not in have for t in self.tags):
            return False
        return all(_holds(c, fields) for c in self.where)


def build(
    path_glob: str | None = None, tags: list[str] | None = None, where: list[str] | None = None
) -> Filters:
    """Filters from a door's flags or params; a malformed condition is an error naming it."""
    return Filters(
        path_glob.strip() or None if path_glob else None,
        tuple(dict.fromkeys(t.strip().lstrip("#").lower() for t in tags or [] if t.strip())),
        tuple(condition(w) for w in where or []),
    )


def condition(text: str) -> Condition:
    m = _CONDITION.match(text.strip())
    if not m:
        raise InvalidParams(
            f"invalid filter {text!r}: write a front-matter field as key=value, key!=value, "
            "key>=value or key<=value (e.g. status=draft, reviewed>=2024-01-01)"
        )
    return Condition(m["key"].lower(), m["op"], m["value"].strip())  # type: ignore[arg-type]


def joined(a: Filters, b: Filters) -> Filters:
    """Both filters at once (flags given and filter words written in the question)."""
    return Filters(
        b.path_glob or a.path_glob,
        tuple(dict.fromkeys(a.tags + b.tags)),
        tuple(dict.fromkeys(a.where + b.where)),
    )


def scoped(req: AskRequest, tags: Container[str] | None = None) -> AskRequest:
    """`req` with the filter words at the start of its question taken off and joined to the
    filter it was given: what is searched, and what the answer says it was limited to. `tags`:
    as `from_question`."""
    written, question = from_question(req.question, tags)
    if not written:
        return req
    whole = joined(of(req), written)
    return msgspec.structs.replace(
        req,
        question=question,
        path_glob=whole.path_glob,
        tags=list(whole.tags),
        where=[str(c) for c in whole.where],
    )


def of(req: AskRequest) -> Filters:
    """The filter a request carries (`scoped` first, for the words written in its question)."""
    return build(req.path_glob, req.tags, req.where)


def from_question(question: str, tags: Container[str] | None = None) -> tuple[Filters, str]:
    """The filter words written at the start of a question, and the question without them.
    Only a leading run counts: `#` and `=` later in a question are part of what is asked. Given
    the notes' `tags`, a `#word` no note carries is the question's own word, not a filter
    ("#task 태그가 붙은 항목만…" asks about the tag); `tag:`, `path:` and `key=value` always
    filter, since nobody writes them by chance."""
    words = question.split()
    path: str | None = None
    wanted: list[str] = []
    where: list[Condition] = []
    used = 0
    for word in words:
        if (m := _INLINE_TAG.match(word)) is not None:
            if tags is not None and m["tag"].lower() not in tags:
                break
            wanted.append(m["tag"].lower())
        elif (m := _INLINE_PART.match(word)) is not None:
            if m["kind"] == "path":
                path = m["value"]
            else:
                wanted.append(m["value"].lstrip("#").lower())
        elif (m := _CONDITION.match(word)) is not None and not m["value"].startswith("="):
            where.append(condition(word))
        else:
            break
        used += 1
    if used == len(words):  # nothing but filter words: it is the question itself
        return Filters(), question
    rest = question.strip().split(None, used)[-1] if used else question
    return Filters(path, tuple(dict.fromkeys(wanted)), tuple(where)), rest


def field_values(value: object) -> list[str]:
    """A front-matter value as the texts a condition compares with (a list: each item)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, datetime.datetime | datetime.date):
            out.append(item.isoformat())
        elif isinstance(item, str | int | float | bool):
            out.append(str(item).lower() if isinstance(item, bool) else str(item))
    return out


def _holds(c: Condition, fields: dict[str, object]) -> bool:
    values = field_values(fields.get(c.key)) if c.key in fields else []
    if c.op == "!=":
        return all(v.lower() != c.value.lower() for v in values)
    return any(_compare(v, c.op, c.value) for v in values)


def _compare(have: str, op: Op, want: str) -> bool:
    if op == "=":
        return have.lower() == want.lower()
    # Dates compare as dates, numbers as numbers, anything else as text.
    a: object
    b: object
    if _DATE.match(have) and _DATE.match(want):
        a, b = have[:10], want[:10]
    else:
        try:
            a, b = float(have), float(want)
        except ValueError:
            a, b = have.lower(), want.lower()
    return a >= b if op == ">=" else a <= b  # type: ignore[operator]


def _glob(pattern: str) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", [pattern])

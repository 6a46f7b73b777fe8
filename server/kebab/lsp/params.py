"""Custom request params (`kebab/ask`, `kebab/search`, command arguments) → typed values.

pygls hands custom methods their params as nested namedtuples; `plain()` turns them back into
JSON values and the parsers below validate them with msgspec. Anything wrong is a JSON-RPC
InvalidParams error whose message names the bad param, raised inside the handler so the client
always gets an answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from pygls.exceptions import JsonRpcInvalidParams

from kebab.model import Turn

_K = Annotated[int, msgspec.Meta(ge=1, le=200)]
_TEXT = Annotated[str, msgspec.Meta(min_length=1)]
T = TypeVar("T")
_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$\.?(?P<where>[^`]*)`)?$")


class AskParams(msgspec.Struct, rename={"work_done_token": "workDoneToken"}):
    """`kebab/ask` params (DESIGN.md); `uri` is the note the question was asked from."""

    question: _TEXT
    k: _K | None = None
    mode: Literal["hybrid", "lexical", "vector"] | None = None
    history: list[Turn] = []
    uri: str | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    seed: int | None = None
    explain: bool = False
    conversation: str | None = None
    # only notes under this glob / with these tags / whose front matter holds these
    # (`status=draft`, `reviewed>=2024-01-01`): `kebab.filters`
    path_glob: str | None = None
    tags: list[str] = []
    where: list[str] = []
    work_done_token: int | str | None = None


class SearchParams(msgspec.Struct, rename={"work_done_token": "workDoneToken"}):
    query: _TEXT
    k: _K | None = None
    mode: Literal["hybrid", "lexical", "vector"] | None = None
    path_glob: str | None = None
    tag: str | None = None
    tags: list[str] = []  # every one of them, with `tag`
    where: list[str] = []  # front-matter conditions, as `kebab/ask`'s
    uri: str | None = None  # search only the workspace folder holding this note
    work_done_token: int | str | None = None


class Position(msgspec.Struct):
    line: Annotated[int, msgspec.Meta(ge=0)]
    character: Annotated[int, msgspec.Meta(ge=0)] = 0


class LinksParams(msgspec.Struct):
    """`kebab/links`: the note `uri`."""

    uri: _TEXT


class RelatedParams(msgspec.Struct):
    """`kebab/related`: the section under `position` in the note `uri`."""

    uri: _TEXT
    position: Position
    k: Annotated[int, msgspec.Meta(ge=1, le=50)] = 5
    same_note: bool = False


def plain(value: Any) -> Any:
    """pygls's namedtuple params as plain dicts and lists (JSON values)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse(raw: Any, into: type[T], method: str) -> T:
    """Validate `raw` params into `into`, or raise InvalidParams naming what is wrong."""
    value = plain(raw)
    if not isinstance(value, dict):
        raise JsonRpcInvalidParams(
            f"{method} takes an object of params, got "
            f"{type(value).__name__ if value is not None else 'none'}"
        )
    try:
        return msgspec.convert(value, into, strict=True)
    except msgspec.ValidationError as e:
        raise JsonRpcInvalidParams(f"{method}: {describe(str(e))}") from None


def describe(error: str) -> str:
    """msgspec's 'Expected `int` >= 1 - at `$.k`' as "`k`: expected `int` >= 1"."""
    m = _AT.match(error)
    missing = re.match(r"Object missing required field `([^`]+)`", error)
    if missing:
        where = m.group("where") if m else None
        return f"missing required param `{f'{where}.' if where else ''}{missing.group(1)}`"
    if m and m.group("where"):
        what = m.group("what")
        return f"`{m.group('where')}`: {what[:1].lower()}{what[1:]}"
    return error


def ask_params(raw: Any) -> AskParams:
    params = parse(raw, AskParams, "kebab/ask")
    if not params.question.strip():
        raise JsonRpcInvalidParams("kebab/ask: `question` is blank")
    return params


def search_params(raw: Any) -> SearchParams:
    params = parse(raw, SearchParams, "kebab/search")
    if not params.query.strip():
        raise JsonRpcInvalidParams("kebab/search: `query` is blank")
    return params


def related_params(raw: Any) -> RelatedParams:
    return parse(raw, RelatedParams, "kebab/related")


def links_params(raw: Any) -> LinksParams:
    return parse(raw, LinksParams, "kebab/links")

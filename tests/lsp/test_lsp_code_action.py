""" "Answer with kebab" as each editor asks for it, under VS Code's, Neovim's and eglot's
capabilities: VS Code and Neovim send the cursor, eglot the bounds of the word at point. Either
way the action asks the whole line it is on, and only a line that can ask is offered (not a line
of code or front matter, where an answer would become code or YAML).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsp_client import PROFILES, KebabClient, serving
from lsprotocol import types
from pygls.workspace.position_codec import ServerTextPosition

pytestmark = pytest.mark.asyncio(loop_scope="module")

TITLE = "Answer with kebab"
NOTE = """# 주간 점검

매주 월요일에 백업 로그를 확인한다.
I check the restic logs every Monday.
매주 백업은 몇 시에 돌아가?

## Notes

Answered before.[^kb-1]

[^kb-1]: [Backups › Schedule](../ops/backup.md#schedule "kb:1a2b3c4d5e6f") L12–L23

```sh
is the backup done?
```
"""
LINES = NOTE.split("\n")


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=sorted(PROFILES))
async def editor(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[KebabClient, str]]:
    """A server started by each editor's `initialize`, with the note open. Listing code actions
    is text work on the buffer: no need to wait for the index."""
    profile = request.param
    async with serving(tmp_path_factory.mktemp(f"action-{profile}"), profile) as client:
        uri = client.open(client.root / "inbox" / "weekly.md", NOTE)
        yield client, uri


def _client_position(client: KebabClient, line: int, column: int) -> types.Position:
    """(line, code-point column) in the units the editor negotiated (UTF-8 for Neovim)."""
    return client.codec.position_to_client_units(LINES, ServerTextPosition(line, column))


async def _offered(
    client: KebabClient, uri: str, line: int, start: int, end: int
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=_client_position(client, line, start),
                end=_client_position(client, line, end),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction) and a.title == TITLE]


def _at(line: int, word: str) -> tuple[int, int, int]:
    """(line, start, end) of `word` on `line`: the range eglot sends with point on it."""
    start = LINES[line].index(word)
    return line, start, start + len(word)


@pytest.mark.parametrize(
    ("line", "word"), [(4, "매주"), (4, "시에"), (4, "돌아가?")], ids=["first", "middle", "last"]
)
async def test_a_word_of_a_question_asks_the_whole_line(
    editor: tuple[KebabClient, str], line: int, word: str
) -> None:
    client, uri = editor
    line, start, end = _at(line, word)
    for what, (a, b) in {"the word": (start, end), "the cursor": (start + 1, start + 1)}.items():
        (action,) = await _offered(client, uri, line, a, b)
        assert action.kind == "refactor.rewrite", what
        assert action.command is not None
        assert list(action.command.arguments or []) == [uri, 4, "매주 백업은 몇 시에 돌아가?"], what


@pytest.mark.parametrize(
    ("line", "word"),
    [(2, "매주"), (3, "I"), (6, "Notes"), (10, "L12–L23"), (5, ""), (13, "done?")],
    ids=[
        "korean-statement",
        "english-statement",
        "heading",
        "footnote-definition",
        "empty",
        "code",
    ],
)
async def test_no_ask_action_where_the_line_asks_nothing(
    editor: tuple[KebabClient, str], line: int, word: str
) -> None:
    client, uri = editor
    line, start, end = _at(line, word)
    assert await _offered(client, uri, line, start, end) == []
    assert await _offered(client, uri, line, end, end) == []  # the cursor at the word's end


async def test_words_selected_across_the_line_are_asked_as_selected(
    editor: tuple[KebabClient, str],
) -> None:
    client, uri = editor
    line, start, _ = _at(3, "check")
    _, _, end = _at(3, "logs")
    (action,) = await _offered(client, uri, line, start, end)
    assert action.command is not None
    assert list(action.command.arguments or []) == [uri, 3, "check the restic logs"]

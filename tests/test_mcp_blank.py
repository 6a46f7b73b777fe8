"""`kebab mcp`: a query, question or path of only spaces is refused like an empty one, with the
same sentence (through the MCP SDK's own client over stdio, as in test_mcp.py)."""

from __future__ import annotations

import pytest
from mcp import ClientSession

from test_mcp import agent, error_of

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["agent"]  # the stdio session fixture, shared with test_mcp.py


@pytest.mark.parametrize(
    ("tool", "name", "said"),
    [
        (
            "search_notes",
            "query",
            "query must be non-empty text of at most 20,000 characters; got {}.",
        ),
        (
            "ask_notes",
            "question",
            "question must be non-empty text of at most 20,000 characters; got {}.",
        ),
        ("read_passage", "path", "path must be non-empty text; got {}."),
    ],
)
async def test_a_blank_argument_is_refused_like_an_empty_one(
    agent: ClientSession, tool: str, name: str, said: str
) -> None:
    for blank, shown in [("", '""'), ("   ", '"   "'), ("\t\n ", '"\\t\\n "')]:
        assert await error_of(agent, tool, **{name: blank}) == said.format(shown)


async def test_the_schema_says_blank_text_is_refused(agent: ClientSession) -> None:
    tools = {t.name: t.input_schema["properties"] for t in (await agent.list_tools()).tools}
    for tool, name in [("search_notes", "query"), ("ask_notes", "question")]:
        assert tools[tool][name]["pattern"] == r"\S", tools[tool][name]

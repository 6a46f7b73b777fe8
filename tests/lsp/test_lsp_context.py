"""The one wrapper every editor feature runs inside: a fault in kebab answers with nothing and
leaves its traceback in the log; a client's mistake still goes back as an error."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from kebab.lsp.context import guarded


async def test_a_failing_feature_answers_with_its_empty_result_and_logs_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def hover(ls: Any, params: Any) -> str:
        raise KeyError("a bug in kebab")

    with caplog.at_level(logging.ERROR, logger="kebab.lsp.context"):
        assert await guarded(hover, lambda: None)(object(), object()) is None
    assert "hover failed" in caplog.text and "KeyError" in caplog.text


async def test_a_working_feature_is_answered_as_it_is_sync_or_async() -> None:
    def links(ls: Any, params: Any) -> list[str]:
        return ["a"]

    async def symbols(ls: Any, params: Any) -> list[str]:
        return ["b"]

    assert await guarded(links, list)(object(), object()) == ["a"]
    assert await guarded(symbols, list)(object(), object()) == ["b"]


async def test_a_clients_mistake_is_still_an_error_reply() -> None:
    def action(ls: Any, params: Any) -> list[str]:
        raise JsonRpcInvalidParams("line 9 is not in the note")

    with pytest.raises(JsonRpcInvalidParams):
        await guarded(action, list)(object(), object())

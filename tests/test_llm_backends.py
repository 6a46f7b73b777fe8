"""The HTTP chat backends as a user meets them: `Workspace.ask` against a real scripted server.

OpenAI-compatible servers stream SSE, Ollama streams NDJSON; both go through one retry policy
(connection errors, 429 and 5xx retried with backoff before the first token, honouring
Retry-After) and end every fault as an `llm_error` answer that keeps whatever text arrived.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import MakeWorkspace
from kebab.errors import Cancelled
from kebab.model import AskRequest, to_builtins
from llm_server import (
    OLLAMA_PATH,
    OPENAI_PATH,
    ModelServer,
    Raw,
    Reply,
    answer_rows,
    ask,
    closed_port_url,
    llm_settings,
)

QUESTION = "What time does the nightly backup job run?"
ANSWER = ["The backup job ", "runs every day ", "at 02:30 [#1]."]


def assert_llm_error(answer: Any, *, partial: str = "") -> None:
    assert answer.refusal_reason == "llm_error"
    assert answer.grounded is False
    assert answer.error
    assert answer.answer == partial
    assert answer.markdown == partial.strip() + "\n"
    assert "[^kb-" not in answer.markdown


# the wire formats ---------------------------------------------------------------------------


async def test_openai_sse_answer_streams_and_is_grounded(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer(*ANSWER)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)

    assert answer.answer == "".join(ANSWER)
    assert answer.grounded is True and answer.refusal_reason is None and answer.error is None
    assert answer.model.backend == "openai" and answer.model.id == "m"
    assert [c.marker for c in answer.citations] == [1]
    assert answer.usage.first_token_ms is not None and answer.usage.completion_tokens > 0
    assert answer.usage.prompt_tokens > 0

    [req] = server.requests
    assert req.path == OPENAI_PATH
    assert req.headers["content-type"] == "application/json"
    assert "authorization" not in req.headers  # no api_key_env configured
    body = req.body
    assert body["model"] == "m" and body["stream"] is True
    assert body["temperature"] == 0.0 and body["seed"] == 42 and body["max_tokens"] == 1024
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "[#1]" in req.message("system")
    user = req.message("user")
    assert QUESTION in user and "<evidence>" in user and '<passage marker="[#1]"' in user


async def test_ollama_ndjson_answer_streams_and_is_grounded(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer(*ANSWER)
    ws = make_ws(llm_settings(server, "ollama"))
    answer = await ask(ws, QUESTION, temperature=0.3, seed=7)

    assert answer.answer == "".join(ANSWER)
    assert answer.grounded is True and answer.refusal_reason is None
    assert answer.model.backend == "ollama" and answer.model.id == "m"
    [req] = server.requests
    assert req.path == OLLAMA_PATH
    assert req.body["model"] == "m" and req.body["stream"] is True
    assert req.body["options"] == {"temperature": 0.3, "seed": 7, "num_predict": 1024}
    assert QUESTION in req.message("user")


@pytest.mark.parametrize("backend", ["openai", "ollama"])
async def test_malformed_lines_are_skipped(
    server: ModelServer, make_ws: MakeWorkspace, backend: str
) -> None:
    if backend == "openai":
        junk = [
            Raw("data: {not json"),
            Raw("event: message"),
            Raw(": keep-alive"),
            Raw("data: [1, 2, 3]"),
            Raw('data: {"choices": []}'),
            Raw('data: {"choices": [{"delta": {"content": null}}]}'),
            Raw("garbage without a field name"),
            Raw('data: "a string"'),
        ]
    else:
        junk = [
            Raw("{not json"),
            Raw("[1, 2, 3]"),
            Raw('{"message": "not an object"}'),
            Raw('{"message": {"content": null}, "done": false}'),
            Raw("garbage"),
            Raw('"a string"'),
        ]
    server.answer(ANSWER[0], *junk, *ANSWER[1:])
    ws = make_ws(llm_settings(server, backend))
    answer = await ask(ws, QUESTION)
    assert answer.answer == "".join(ANSWER)
    assert answer.grounded is True and answer.error is None


@pytest.mark.parametrize("backend", ["openai", "ollama"])
@pytest.mark.parametrize("pieces", [[], ["", "  ", "\n"]], ids=["nothing", "whitespace"])
async def test_empty_answer_is_an_llm_error(
    server: ModelServer, make_ws: MakeWorkspace, backend: str, pieces: list[str]
) -> None:
    server.answer(*pieces)
    ws = make_ws(llm_settings(server, backend))
    answer = await ask(ws, QUESTION)
    assert answer.refusal_reason == "llm_error" and answer.grounded is False
    assert "empty answer" in (answer.error or "")
    assert answer.citations == []


async def test_error_event_mid_stream_keeps_the_partial_answer(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer(
        "The backup runs [#1]",
        Raw('data: {"error": {"message": "model overloaded"}}'),
        " never seen",
    )
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)
    assert_llm_error(answer, partial="The backup runs [#1]")
    assert "model overloaded" in (answer.error or "")
    assert len(server.requests) == 1  # after the first token nothing is retried


# connection faults --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "hint"), [("openai", "the model server"), ("ollama", "Ollama")]
)
async def test_connection_refused_says_no_llm_at_the_endpoint(
    make_ws: MakeWorkspace, backend: str, hint: str
) -> None:
    url = closed_port_url()
    ws = make_ws(llm_settings(url, backend))
    answer = await ask(ws, QUESTION)
    assert_llm_error(answer)
    assert answer.error == f"no LLM at {url}: start {hint} or set llm.endpoint"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(["too late [#1]"], hang=30),  # not even a status line
        Reply(["too late [#1]"], delay=30),  # headers, then silence
        Reply([Raw(": keep-alive")] * 100 + ["too late [#1]"], delay=0.1),  # comments only
    ],
    ids=["before-status", "after-headers", "keepalives-only"],
)
async def test_no_first_token_in_time_is_an_llm_error(
    server: ModelServer, make_ws: MakeWorkspace, reply: Reply
) -> None:
    server.script(reply)
    ws = make_ws(llm_settings(server, first_token_timeout_s=1))
    started = time.monotonic()
    answer = await ask(ws, QUESTION)
    elapsed = time.monotonic() - started
    assert_llm_error(answer)
    assert "first_token_timeout_s" in (answer.error or "")
    assert elapsed >= 0.9  # it waited the configured second, then gave up on the server
    assert len(server.requests) == 1


@pytest.mark.parametrize("backend", ["openai", "ollama"])
@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_stream_cut_midway_keeps_the_partial_text(
    server: ModelServer, make_ws: MakeWorkspace, backend: str, framing: str
) -> None:
    """A dropped connection ends the answer as llm_error, even when the body ended "cleanly"
    (close-delimited) but without the stream's end marker."""
    server.answer("The backup job runs ", "every day at 02:30 [#1] and", cut=True, framing=framing)
    ws = make_ws(llm_settings(server, backend))
    answer = await ask(ws, QUESTION)
    partial = "The backup job runs every day at 02:30 [#1] and"
    assert_llm_error(answer, partial=partial)
    assert "cut" in (answer.error or "")
    assert len(server.requests) == 1
    row = answer_rows(ws.index.dir)[-1]
    assert row["refusal_reason"] == "llm_error" and row["grounded"] == 0
    assert json.loads(row["answer"])["answer"] == partial


async def test_an_answer_ended_without_a_finish_reason_is_cut_not_an_answer(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    """llama.cpp's Python server ends a streaming answer with `[DONE]` and no `finish_reason`
    when a newer request interrupts it (its default): the fragment is not the answer."""
    server.answer("The backup runs every day at ", Raw("data: [DONE]"), cut=True)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)
    assert_llm_error(answer, partial="The backup runs every day at ")
    assert "interrupted" in (answer.error or "") and answer.citations == []


async def test_never_ending_stream_is_cut_at_max_seconds(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer("Counting [#1]: ", forever=True, delay=0.05)
    ws = make_ws(llm_settings(server, max_seconds=2))
    started = time.monotonic()
    answer = await ask(ws, QUESTION)
    elapsed = time.monotonic() - started
    assert answer.refusal_reason == "llm_error" and answer.grounded is False
    assert "llm.max_seconds" in (answer.error or "")
    assert answer.answer.startswith("Counting [#1]: more more ")
    assert elapsed >= 1.9


async def test_cancelled_answer_is_still_a_row(server: ModelServer, make_ws: MakeWorkspace) -> None:
    server.answer("Counting [#1]: ", forever=True, delay=0.05)
    ws = make_ws(llm_settings(server))
    first = asyncio.Event()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        first.set()

    task = asyncio.create_task(ws.ask(AskRequest(question=QUESTION), on_text))
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    assert isinstance(caught.value, Cancelled)
    answer = caught.value.answer
    assert answer.refusal_reason == "cancelled" and answer.grounded is False
    assert answer.answer == "".join(pieces) and answer.answer.startswith("Counting [#1]")
    [row] = answer_rows(ws.index.dir)
    assert row["id"] == answer.answer_id and row["refusal_reason"] == "cancelled"
    [request] = server.requests  # and generation stopped: kebab closed the stream
    assert await asyncio.to_thread(request.wait_end, 10) == "hung_up"


# retries ------------------------------------------------------------------------------------


async def test_429_with_retry_after_then_success(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    """Retry-After is honoured, and the wait does not eat the next attempt's first-token time."""
    server.script(Reply(status=429, headers={"Retry-After": "1"}), Reply(ANSWER))
    ws = make_ws(llm_settings(server, first_token_timeout_s=1))
    answer = await ask(ws, QUESTION)
    assert answer.grounded is True and answer.answer == "".join(ANSWER)
    assert len(server.requests) == 2
    assert server.requests[1].at - server.requests[0].at >= 0.9
    assert server.requests[0].body == server.requests[1].body


@pytest.mark.parametrize("backend", ["openai", "ollama"])
async def test_500_twice_then_success(
    server: ModelServer, make_ws: MakeWorkspace, backend: str
) -> None:
    # Retry-After: 0 keeps the test quick; the default backoff is timed in the next test.
    server.script(
        Reply(status=500, headers={"Retry-After": "0"}),
        Reply(status=503, headers={"Retry-After": "0"}),
        Reply(ANSWER),
    )
    ws = make_ws(llm_settings(server, backend))
    answer = await ask(ws, QUESTION)
    assert answer.grounded is True and answer.answer == "".join(ANSWER)
    assert len(server.requests) == 3


async def test_500_forever_gives_up_after_bounded_retries(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.script(Reply(status=500))
    ws = make_ws(llm_settings(server, max_retries=2))
    answer = await ask(ws, QUESTION)
    assert_llm_error(answer)
    assert "500" in (answer.error or "")
    assert len(server.requests) == 3  # the first try and max_retries more
    gaps = [b.at - a.at for a, b in zip(server.requests, server.requests[1:], strict=False)]
    assert all(g >= 0.4 for g in gaps)  # backoff between tries


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "refused the credentials (401); check the key in $KEBAB_TEST_LLM_KEY"),
        (404, "model 'm' not found"),
        (400, "answered 400"),
    ],
)
async def test_client_errors_are_not_retried(
    server: ModelServer, make_ws: MakeWorkspace, status: int, says: str
) -> None:
    server.script(Reply(status=status))
    ws = make_ws(llm_settings(server, api_key_env="KEBAB_TEST_LLM_KEY"))
    answer = await ask(ws, QUESTION)
    assert_llm_error(answer)
    assert says in (answer.error or "")
    assert len(server.requests) == 1


# the API key --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        [Reply(ANSWER)],
        [Reply(status=429, headers={"Retry-After": "0"}), Reply(ANSWER)],
        [Reply(status=401)],
        [Reply(["The backup runs [#1]"], cut=True)],
    ],
    ids=["answer", "retry", "401", "cut"],
)
async def test_api_key_is_sent_and_never_shown(
    server: ModelServer,
    make_ws: MakeWorkspace,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    script: list[Reply],
) -> None:
    secret = "sk-kebab-test-8f3a1c9e5b7d2f4a6c8e0b1d3f5a7c9e"
    monkeypatch.setenv("MY_LLM_KEY", secret)
    caplog.set_level(logging.DEBUG)
    server.script(*script)
    ws = make_ws(llm_settings(server, api_key_env="MY_LLM_KEY"))
    answer = await ask(ws, QUESTION, explain=True)

    assert server.requests
    assert all(r.headers["authorization"] == f"Bearer {secret}" for r in server.requests)
    assert secret not in json.dumps(to_builtins(answer), ensure_ascii=False)
    assert secret not in (answer.error or "")
    rows = answer_rows(ws.index.dir)
    assert rows
    assert secret not in json.dumps(rows, ensure_ascii=False, default=str)
    db_bytes = b"".join(p.read_bytes() for p in Path(ws.index.dir).glob("kebab.sqlite*"))
    assert secret.encode() not in db_bytes
    assert caplog.records  # logging was on (httpx, kebab) while it ran
    assert secret not in caplog.text
    assert all(secret not in str(r.args) for r in caplog.records)
    out, err = capsys.readouterr()
    assert secret not in out + err

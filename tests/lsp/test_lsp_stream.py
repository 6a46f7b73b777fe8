"""Streaming, cancelling and a model that is slow or down, as Neovim 0.11 drives them (UTF-8
positions, unversioned edits), against the scripted OpenAI-compatible server of
tests/llm_server.py on 127.0.0.1.

Nothing here waits on the clock: "the answer is still streaming" is a reply held mid-stream
(`Reply(hold_at=…)`) until the test releases it, and "the answer has started" is its first
`$/progress` report.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_client import KebabClient, serving, until
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from llm_server import ModelServer, Reply, closed_port_url, without_markers

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "What time does the nightly backup run?"
KOREAN = "🥘 김치찌개에 돼지고기는 얼마나 넣나요?"


@pytest.fixture(scope="module")
def llm() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def llm_options(endpoint: str) -> dict[str, object]:
    return {"backend": "openai", "endpoint": endpoint, "max_retries": 0}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def neovim(
    tmp_path_factory: pytest.TempPathFactory, llm: ModelServer
) -> AsyncIterator[KebabClient]:
    """One server for the module. Tests script `llm` before they ask and never change the
    server's settings (a test that needs other settings starts its own server)."""
    module_tmp = tmp_path_factory.mktemp("stream")
    settings = {"llm": llm_options(llm.url), "search": {"k": "many"}}  # one bad setting
    async with serving(module_tmp, "neovim", **settings) as client:
        await client.wait_ready()
        yield client


SAID = ("the", "nightly", "backup", "job", "runs", "every", "day", "via", "a", "systemd", "timer")


def words(n: int) -> list[str]:
    """`n` pieces of a long answer the backup note supports (so it is grounded as cited)."""
    return [f"{SAID[i % len(SAID)]} " for i in range(n)]


def streaming(pieces: list[str], hold_at: int = 1, **options: object) -> Reply:
    """A reply that sends `pieces[:hold_at]`, then holds the stream open until the test sets
    its `release` event (the answer is still streaming for as long as the test needs)."""
    return Reply(pieces, hold_at=hold_at, **options)  # type: ignore[arg-type]


async def first_report(
    client: KebabClient, token: object = None, new_since: set[object] | None = None
) -> object:
    """Wait until an answer's first piece of text arrives on `token`, or on any token created
    after `new_since`; returns the token."""

    def arrived() -> object:
        for t in list(client.progress_log):
            wanted = t == token if new_since is None else t not in new_since
            if wanted and client.reports(t):
                return t
        return None

    return await until(arrived, "the answer's first $/progress report")


def text_of(client: KebabClient, token: object) -> str:
    return "".join(str(v["message"]) for v in client.reports(token))


def cited_note(client: KebabClient) -> str:
    """An open note with one kebab footnote (the span and hash need not be right for hover)."""
    text = (
        "# Cited\n\nA fact.[^kb-1]\n\n"
        '[^kb-1]: [Home server backups › Schedule](../ops/backup.md#schedule "kb:0123456789ab")'
        " L12–L26\n"
    )
    return client.open(client.root / "inbox" / "cited.md", text)


async def timed_hover_and_actions(client: KebabClient, uri: str, rounds: int) -> list[float]:
    latencies = []
    for _ in range(rounds):
        start = time.perf_counter()
        hover = await client.text_document_hover_async(
            types.HoverParams(
                types.TextDocumentIdentifier(uri=uri), types.Position(line=2, character=9)
            )
        )
        latencies.append(time.perf_counter() - start)
        assert hover is not None
        start = time.perf_counter()
        await client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri=uri),
                types.Range(types.Position(2, 0), types.Position(2, 0)),
                types.CodeActionContext(diagnostics=[]),
            )
        )
        latencies.append(time.perf_counter() - start)
    return latencies


def p95_ms(latencies: list[float]) -> float:
    return round(statistics.quantiles(latencies, n=20)[-1] * 1000, 1)


async def test_invalid_settings_are_reported_and_the_server_starts(neovim: KebabClient) -> None:
    found = await until(
        lambda: [m for m in neovim.messages if "search.k" in m.message], "the search.k warning"
    )
    (message,) = found
    assert message.type == types.MessageType.Warning

    async def folder() -> dict[str, object] | None:
        status = await neovim.request("kebab/status", {})
        return status["folders"][0] if "llm" in status["folders"][0] else None

    assert (await until(folder, "the folder's llm in kebab/status"))["llm"]["backend"] == "openai"


async def test_hover_and_code_actions_answer_while_indexing(building: KebabClient) -> None:
    uri = cited_note(building)
    before = await building.request("kebab/status", {})
    latencies = await timed_hover_and_actions(building, uri, 10)
    after = await building.request("kebab/status", {})
    # indexing before the first hover and after the last: every one was answered meanwhile
    assert before["state"] == after["state"] == "indexing", (before, after)
    print(f"\nhover/codeAction while indexing: p95 {p95_ms(latencies)} ms")


async def test_reports_are_coalesced_and_concatenate_to_the_answer(
    neovim: KebabClient, llm: ModelServer
) -> None:
    pieces = [*words(99), "[#1]."]
    llm.answer(*pieces, delay=0.01)
    asked = len(llm.requests)
    result = await neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "s1"})
    assert "".join(pieces) == text_of(neovim, "s1")
    # the answer is the reports' text, its marker moved by kebab to the passage that supports
    # it (#1 is the inbox note that asks the question: citations[].by == "kebab")
    assert without_markers(result["answer"]) == without_markers("".join(pieces))
    assert result["grounded"] and result["model"]["backend"] == "openai"
    assert result["retrieval"]["k"] == 10  # the invalid search.k fell back to the default
    times = [
        t
        for t, v in zip(neovim.progress_times["s1"], neovim.progress_log["s1"], strict=True)
        if v["kind"] == "report"
    ]
    assert len(times) < len(pieces) / 2, "reports are coalesced, not one per token"
    # At most 20 a second, plus the first and the last, counted against the time the model
    # took to stream the answer (with 0.1 s for kebab reading the last pieces late): on a
    # busy machine the client reads several reports at once, so when they arrive here says
    # nothing certain about how often they were sent.
    [request] = llm.requests[asked:]
    streamed = request.sent[-1] - request.sent[0]
    assert len(times) <= 20 * (streamed + 0.1) + 2, f"{len(times)} reports in {streamed:.2f} s"
    busiest = max(sum(1 for u in times if t <= u < t + 1.0) for t in times)
    print(
        f"\n{len(pieces)} pieces in {streamed:.2f} s → {len(times)} reports; "
        f"busiest second as received: {busiest}"
    )


async def test_hover_answers_while_an_answer_streams(neovim: KebabClient, llm: ModelServer) -> None:
    uri = cited_note(neovim)
    reply = streaming([*words(40), "[#1]."], hold_at=20, delay=0.01)
    llm.script(reply)
    pending = asyncio.ensure_future(
        neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "h1"})
    )
    await first_report(neovim, "h1")
    latencies = await timed_hover_and_actions(neovim, uri, 15)
    assert not pending.done(), "the answer was held mid-stream: it cannot have ended"
    reply.release.set()
    print(f"\nhover/codeAction while an answer streams: p95 {p95_ms(latencies)} ms")
    assert (await pending)["grounded"]
    neovim.close(uri)


async def test_cancel_request_stops_the_answer_and_keeps_its_row(
    neovim: KebabClient, llm: ModelServer
) -> None:
    llm.answer("slow0 ", forever=True, forever_piece="slow ", delay=0.05)  # until it is cut
    asked = len(llm.requests)
    pending = asyncio.ensure_future(
        neovim.request(
            "kebab/ask", {"question": QUESTION, "workDoneToken": "c1"}, msg_id="ask-to-cancel"
        )
    )
    await first_report(neovim, "c1")
    neovim.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="ask-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    end = await until(lambda: neovim.ended("c1"), "the cancelled answer's progress end")
    assert end == {"kind": "end", "message": "cancelled"}
    [request] = llm.requests[asked:]
    ended = await asyncio.to_thread(request.wait_end, 30)
    assert ended == "hung_up", f"generation stopped: kebab closed the stream ({ended})"
    with sqlite3.connect(neovim.index_dir / "kebab.sqlite") as db:
        row = db.execute(
            "SELECT refusal_reason, answer FROM answers ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert row[0] == "cancelled" and '"answer":"slow0 ' in row[1]


async def test_progress_cancel_returns_the_cancelled_answer(
    neovim: KebabClient, llm: ModelServer
) -> None:
    llm.answer("slow0 ", forever=True, forever_piece="slow ", delay=0.05)  # until it is cut
    pending = asyncio.ensure_future(
        neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "c2"})
    )
    await first_report(neovim, "c2")
    neovim.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="c2"))
    result = await pending
    assert result["refusal_reason"] == "cancelled" and not result["grounded"]
    assert result["answer"].startswith("slow0 ") and result["answer"] == text_of(neovim, "c2")
    assert neovim.progress_log["c2"][-1] == {"kind": "end", "message": "cancelled"}

    llm.answer("The backup runs at 02:30 [#1].")  # the same token works again
    neovim.progress_log["c2"] = []
    again = await neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "c2"})
    # (kebab may move the marker to the passage that holds 02:30: citations[].by == "kebab")
    assert again["grounded"] and without_markers(text_of(neovim, "c2")) == without_markers(
        again["answer"]
    )


async def test_answering_in_a_note_counts_utf8_columns(
    neovim: KebabClient, llm: ModelServer
) -> None:
    assert neovim.server_capabilities is not None
    assert neovim.server_capabilities.position_encoding == "utf-8"
    llm.answer("돼지 앞다리살 200g을 넣는다 [#1].")
    note = neovim.root / "korean" / "질문.md"
    uri = neovim.open(note, f"# 질문 ✅\n\n{KOREAN}\n다음 줄 🥢\n")
    cursor = types.Position(line=2, character=len("🥘 김치".encode()))
    actions = await neovim.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri=uri),
            types.Range(cursor, cursor),
            types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in actions or [] if isinstance(a, types.CodeAction)]
    assert action.command is not None
    assert list(action.command.arguments or []) == [uri, 2, KOREAN]
    result = await neovim.command(action.command.command, *(action.command.arguments or []))
    assert result["applied"]
    lines = neovim.text(uri).split("\n")
    assert lines[:4] == ["# 질문 ✅", "", KOREAN, ""]
    assert lines[4] == "돼지 앞다리살 200g을 넣는다[^kb-1]."
    assert lines[5:8] == ["", "다음 줄 🥢", ""]
    assert lines[8].startswith("[^kb-1]: [김치찌개") and lines[9] == ""
    neovim.close(uri)


async def test_the_answer_follows_its_question_when_lines_are_added_meanwhile(
    neovim: KebabClient, llm: ModelServer
) -> None:
    uri = neovim.open(neovim.root / "inbox" / "moving.md", f"# Moving\n\n{QUESTION}\n")
    reply = streaming([*words(10), "[#1]."])
    llm.script(reply)
    before = set(neovim.progress_log)
    pending = asyncio.ensure_future(neovim.command("kebab.insertAnswer", uri, 2))
    await first_report(neovim, new_since=before)  # the answer is on its way, and held
    neovim.replace(uri, f"# Moving\n\nTyped while kebab was answering.\n\n{QUESTION}\n")
    await neovim.request("kebab/status", {})  # a round trip: the server has the change
    reply.release.set()
    assert (await pending)["applied"]
    lines = neovim.text(uri).split("\n")
    assert lines[4] == QUESTION and lines[5] == "" and lines[6].startswith("the nightly backup")
    neovim.close(uri)


async def test_the_answer_is_not_inserted_when_its_question_is_gone(
    neovim: KebabClient, llm: ModelServer
) -> None:
    uri = neovim.open(neovim.root / "inbox" / "gone.md", f"# Gone\n\n{QUESTION}\n")
    reply = streaming([*words(10), "[#1]."])
    llm.script(reply)
    before = set(neovim.progress_log)
    pending = asyncio.ensure_future(neovim.command("kebab.insertAnswer", uri, 2))
    await first_report(neovim, new_since=before)  # the answer is on its way, and held
    neovim.replace(uri, "# Gone\n\nThe question was deleted.\n")
    await neovim.request("kebab/status", {})  # a round trip: the server has the change
    reply.release.set()
    result = await pending
    assert not result["applied"] and result["answer"]["grounded"]
    assert neovim.text(uri) == "# Gone\n\nThe question was deleted.\n"
    assert any("question changed" in m.message for m in neovim.messages)
    neovim.close(uri)


async def test_cancelling_the_command_leaves_the_note_alone(
    neovim: KebabClient, llm: ModelServer
) -> None:
    text = f"# Cancelled\n\n{QUESTION}\n"
    uri = neovim.open(neovim.root / "inbox" / "cancelled.md", text)
    llm.answer("w0 ", forever=True, forever_piece="w ", delay=0.05)  # until it is cut
    edits = len(neovim.applied) + len(neovim.refused)
    before = set(neovim.progress_log)
    params = types.ExecuteCommandParams(command="kebab.insertAnswer", arguments=[uri, 2])
    pending = asyncio.ensure_future(
        neovim.request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="insert-to-cancel")
    )
    token = await first_report(neovim, new_since=before)
    neovim.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="insert-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    end = await until(lambda: neovim.ended(token), "the cancelled answer's progress end")
    assert end == {"kind": "end", "message": "cancelled"}
    # The command ends its progress as it stops: an edit, had it sent one, was sent before the
    # end, and a round trip after the end flushes anything still on its way.
    await neovim.request("kebab/status", {})
    assert neovim.text(uri) == text
    assert len(neovim.applied) + len(neovim.refused) == edits, "no edit was even sent"
    neovim.close(uri)


async def test_a_model_that_is_down_gives_an_llm_error_answer(
    tmp_path: Path, llm: ModelServer
) -> None:
    # its own server: the module's one keeps its working endpoint for the other tests
    async with serving(tmp_path, "neovim", llm=llm_options(llm.url)) as client:
        await client.wait_ready()
        endpoint = closed_port_url()
        client.set_configuration({"llm": {"endpoint": endpoint}}, section="kebab")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(None))

        async def applied() -> bool:  # the server pulls workspace/configuration, reopens
            status = await client.request("kebab/status", {})
            return status["folders"][0].get("llm", {}).get("endpoint") == endpoint

        await until(applied, "the new llm.endpoint applying")
        asked = len(llm.requests)
        result = await client.request("kebab/ask", {"question": QUESTION, "workDoneToken": "d"})
        assert result["refusal_reason"] == "llm_error" and not result["grounded"]
        assert endpoint in result["error"]
        assert client.progress_log["d"][-1]["message"].startswith("The model failed: ")
        assert result["refusal_text"].startswith("The model failed: ")
        assert (await client.request("kebab/status", {}))["state"] in ("ready", "indexing")
        assert len(llm.requests) == asked  # it went to the closed port, not the old endpoint


async def test_an_answer_the_notes_do_not_support_is_not_inserted(
    neovim: KebabClient, llm: ModelServer
) -> None:
    question = "How long are daily snapshots kept?"
    note = f"# Kept\n\n{question}\n"
    uri = neovim.open(neovim.root / "inbox" / "kept.md", note)
    llm.answer("Daily snapshots are kept for 20 days.")  # the notes say 7
    result = await neovim.command("kebab.insertAnswer", uri, 2)
    answer = result["answer"]
    assert not result["applied"] and not answer["grounded"] and "20" in answer["unsupported"]
    assert neovim.text(uri) == note
    said = "The notes do not support this answer. No passage holds: 20. Nothing was inserted."
    await until(lambda: any(said in m.message for m in neovim.messages), "the message")
    neovim.close(uri)

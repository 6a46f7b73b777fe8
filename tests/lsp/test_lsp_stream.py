"""Streaming, cancelling and a model that is slow or down, as Neovim 0.11 drives them (UTF-8
positions, unversioned edits), against a real OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from lsp_client import KebabClient, serving
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from scripted_llm import ScriptedLLM, closed_port

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "What time does the nightly backup run?"
KOREAN = "🥘 김치찌개에 돼지고기는 얼마나 넣나요?"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def neovim(
    tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM
) -> AsyncIterator[KebabClient]:
    module_tmp = tmp_path_factory.mktemp("stream")
    settings = {
        "llm": {"backend": "openai", "endpoint": llm.endpoint, "max_retries": 0},
        "search": {"k": "many"},
    }  # one bad setting: reported, default used
    async with serving(module_tmp, "neovim", **settings) as client:
        yield client


async def first_report(
    client: KebabClient, token: object = None, new_since: set[object] | None = None
) -> object:
    """Wait until an answer's first piece of text arrives on `token`, or on any token created
    after `new_since`; returns the token."""
    for _ in range(400):
        for t, values in list(client.progress_log.items()):
            wanted = t == token if new_since is None else t not in new_since
            if wanted and any(v.get("kind") == "report" for v in values):
                return t
        await asyncio.sleep(0.01)
    raise AssertionError("no answer text arrived")


def text_of(client: KebabClient, token: object) -> str:
    return "".join(str(v["message"]) for v in client.progress_log[token] if v["kind"] == "report")


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
    for _ in range(200):
        if neovim.messages:
            break
        await asyncio.sleep(0.02)
    (message,) = [m for m in neovim.messages if "search.k" in m.message]
    assert message.type == types.MessageType.Warning
    for _ in range(200):
        status = await neovim.request("kebab/status", {})
        if "llm" in status["folders"][0]:
            break
        await asyncio.sleep(0.02)
    assert status["folders"][0]["llm"]["backend"] == "openai"


async def test_hover_and_code_actions_answer_while_indexing(neovim: KebabClient) -> None:
    uri = cited_note(neovim)
    status = await neovim.request("kebab/status", {})
    latencies = await timed_hover_and_actions(neovim, uri, 10)
    assert status["state"] == "indexing", "the test meant to run while the index builds"
    print(f"\nhover/codeAction while indexing: p95 {p95_ms(latencies)} ms")
    await neovim.wait_ready()


async def test_reports_are_coalesced_and_concatenate_to_the_answer(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    pieces = [f"w{i} " for i in range(99)] + ["[#1]."]
    llm.script(pieces, 0.01)
    result = await neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "s1"})
    assert result["answer"] == "".join(pieces) == text_of(neovim, "s1")
    assert result["grounded"] and result["model"]["backend"] == "openai"
    assert result["retrieval"]["k"] == 10  # the invalid search.k fell back to the default
    times = [
        t
        for t, v in zip(neovim.progress_times["s1"], neovim.progress_log["s1"], strict=True)
        if v["kind"] == "report"
    ]
    assert len(times) < len(pieces) / 2, "reports are coalesced, not one per token"
    busiest = max(sum(1 for u in times if t <= u < t + 1.0) for t in times)
    assert busiest <= 20, f"{busiest} reports in one second"
    print(f"\n{len(pieces)} pieces → {len(times)} reports; busiest second: {busiest}")


async def test_hover_answers_while_an_answer_streams(neovim: KebabClient, llm: ScriptedLLM) -> None:
    uri = cited_note(neovim)
    llm.script([f"w{i} " for i in range(40)] + ["[#1]."], 0.05)
    pending = asyncio.ensure_future(
        neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "h1"})
    )
    await first_report(neovim, "h1")
    latencies = await timed_hover_and_actions(neovim, uri, 15)
    assert not pending.done(), "hover and code actions were answered while the answer streamed"
    print(f"\nhover/codeAction while an answer streams: p95 {p95_ms(latencies)} ms")
    assert (await pending)["grounded"]


async def test_cancel_request_stops_the_answer_and_keeps_its_row(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    llm.script([f"slow{i} " for i in range(200)], 0.05)
    pending = asyncio.ensure_future(
        neovim.request(
            "kebab/ask", {"question": QUESTION, "workDoneToken": "c1"}, msg_id="ask-to-cancel"
        )
    )
    await first_report(neovim, "c1")
    neovim.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="ask-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    assert neovim.progress_log["c1"][-1] == {"kind": "end", "message": "cancelled"}
    assert await asyncio.to_thread(llm.hung_up.wait, 10), "generation stopped: the stream closed"
    assert not llm.finished.is_set()
    with sqlite3.connect(neovim.index_dir / "kebab.sqlite") as db:
        row = db.execute(
            "SELECT refusal_reason, answer FROM answers ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert row[0] == "cancelled" and '"answer":"slow0 ' in row[1]


async def test_progress_cancel_returns_the_cancelled_answer(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    llm.script([f"slow{i} " for i in range(200)], 0.05)
    pending = asyncio.ensure_future(
        neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "c2"})
    )
    await first_report(neovim, "c2")
    neovim.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="c2"))
    result = await pending
    assert result["refusal_reason"] == "cancelled" and not result["grounded"]
    assert result["answer"].startswith("slow0 ") and result["answer"] == text_of(neovim, "c2")
    assert neovim.progress_log["c2"][-1] == {"kind": "end", "message": "cancelled"}

    llm.script(["The backup runs at 02:30 [#1]."], 0)  # the same token works again
    neovim.progress_log["c2"] = []
    again = await neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "c2"})
    assert again["grounded"] and text_of(neovim, "c2") == again["answer"]


async def test_answering_in_a_note_counts_utf8_columns(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    assert neovim.server_capabilities is not None
    assert neovim.server_capabilities.position_encoding == "utf-8"
    llm.script(["돼지 앞다리살 200g을 넣는다 [#1]."], 0)
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
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    uri = neovim.open(neovim.root / "inbox" / "moving.md", f"# Moving\n\n{QUESTION}\n")
    llm.script([f"w{i} " for i in range(10)] + ["[#1]."], 0.05)
    before = set(neovim.progress_log)
    pending = asyncio.ensure_future(neovim.command("kebab.insertAnswer", uri, 2))
    await first_report(neovim, new_since=before)
    neovim.replace(uri, f"# Moving\n\nTyped while kebab was answering.\n\n{QUESTION}\n")
    assert (await pending)["applied"]
    lines = neovim.text(uri).split("\n")
    assert lines[4] == QUESTION and lines[5] == "" and lines[6].startswith("w0 w1")


async def test_the_answer_is_not_inserted_when_its_question_is_gone(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    uri = neovim.open(neovim.root / "inbox" / "gone.md", f"# Gone\n\n{QUESTION}\n")
    llm.script([f"w{i} " for i in range(10)] + ["[#1]."], 0.05)
    before = set(neovim.progress_log)
    pending = asyncio.ensure_future(neovim.command("kebab.insertAnswer", uri, 2))
    await first_report(neovim, new_since=before)  # the answer is on its way
    neovim.replace(uri, "# Gone\n\nThe question was deleted.\n")
    result = await pending
    assert not result["applied"] and result["answer"]["grounded"]
    assert neovim.text(uri) == "# Gone\n\nThe question was deleted.\n"
    assert any("question changed" in m.message for m in neovim.messages)


async def test_cancelling_the_command_leaves_the_note_alone(
    neovim: KebabClient, llm: ScriptedLLM
) -> None:
    text = f"# Cancelled\n\n{QUESTION}\n"
    uri = neovim.open(neovim.root / "inbox" / "cancelled.md", text)
    llm.script([f"w{i} " for i in range(100)] + ["[#1]."], 0.05)
    before = set(neovim.progress_log)
    params = types.ExecuteCommandParams(command="kebab.insertAnswer", arguments=[uri, 2])
    pending = asyncio.ensure_future(
        neovim.request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="insert-to-cancel")
    )
    token = await first_report(neovim, new_since=before)
    neovim.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="insert-to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    for _ in range(100):
        if neovim.progress_log[token][-1]["kind"] == "end":
            break
        await asyncio.sleep(0.02)
    assert neovim.progress_log[token][-1] == {"kind": "end", "message": "cancelled"}
    await neovim.request("kebab/status", {})  # a round trip: an edit sent before it has arrived
    assert neovim.text(uri) == text


async def test_a_model_that_is_down_gives_an_llm_error_answer(neovim: KebabClient) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    neovim.set_configuration({"llm": {"endpoint": endpoint}}, section="kebab")
    neovim.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(200):  # the server pulls workspace/configuration and reopens the folder
        status = await neovim.request("kebab/status", {})
        if status["folders"][0].get("llm", {}).get("endpoint") == endpoint:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the new llm.endpoint never applied")
    result = await neovim.request("kebab/ask", {"question": QUESTION, "workDoneToken": "down"})
    assert result["refusal_reason"] == "llm_error" and not result["grounded"]
    assert endpoint in result["error"]
    assert neovim.progress_log["down"][-1]["message"].startswith("The model failed: ")
    assert result["refusal_text"].startswith("The model failed: ")
    assert (await neovim.request("kebab/status", {}))["state"] in ("ready", "indexing")

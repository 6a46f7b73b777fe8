"""One question, one answer, whichever door it comes through; threads only when asked; and an
answer made while the index is still being built says so (issue 12, server side)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_client import KebabClient, server_env, until
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "What time does the nightly backup job run?"  # also a line of inbox/questions.md
OTHER = "How do I read the slow query log on Postgres?"
KEBAB = str(Path(sys.executable).with_name("kebab"))


async def answer_action(
    client: KebabClient, uri: str, start: types.Position, end: types.Position
) -> types.Command:
    """The "Answer with kebab" command the editor offers for a cursor or a selection."""
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start, end),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    action = next(a for a in actions or [] if isinstance(a, types.CodeAction) and a.command)
    assert action.command is not None
    return action.command


def seen(answer: dict[str, Any]) -> tuple[object, ...]:
    """What a person reads: the text, whether it was answered, and the passages it cites."""
    cites = [(c["marker"], c["path"], c["start_line"], c["end_line"]) for c in answer["citations"]]
    return answer["answer"], answer["grounded"], answer["refusal_reason"], cites


async def test_the_same_question_gets_the_same_answer_through_every_door(
    vscode: KebabClient, tmp_path: Path
) -> None:
    panel = await vscode.request("kebab/ask", {"question": QUESTION})
    command = await vscode.command("kebab.ask", QUESTION)
    inbox = vscode.root / "inbox" / "questions.md"
    lines = inbox.read_text(encoding="utf-8").split("\n")
    uri = vscode.open(inbox)
    pos = types.Position(line=lines.index(QUESTION), character=3)
    command_ = await answer_action(vscode, uri, pos, pos)
    inserted = await vscode.command(command_.command, *(command_.arguments or []))
    vscode.close(uri)
    cli_index = str(tmp_path / "cli-index")
    cli = subprocess.run(
        [KEBAB, "ask", QUESTION, "--json", "--root", str(vscode.root), "--index-dir", cli_index],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=120,
        check=True,
    )
    terminal = json.loads(cli.stdout)
    assert panel["grounded"] and "02:30" in panel["answer"]
    assert all(c["path"] != "inbox/questions.md" for c in panel["citations"])
    assert seen(command) == seen(panel)
    assert seen(inserted["answer"]) == seen(panel)
    assert seen(terminal) == seen(panel)
    # ... and each is a thread of its own, named by the server
    ids = {a["conversation"] for a in (panel, command, inserted["answer"], terminal)}
    assert len(ids) == 4 and all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)


async def test_a_new_question_starts_a_new_thread_and_a_follow_up_is_explicit(
    vscode: KebabClient,
) -> None:
    alone = await vscode.request("kebab/ask", {"question": QUESTION})
    first = await vscode.request("kebab/ask", {"question": OTHER})
    after = await vscode.request("kebab/ask", {"question": QUESTION})
    assert seen(after) == seen(alone)  # the Postgres question left nothing behind
    assert after["result_hash"] == alone["result_hash"]
    follow = await vscode.request(
        "kebab/ask", {"question": QUESTION, "conversation": first["conversation"]}
    )
    assert follow["conversation"] == first["conversation"]
    assert follow["result_hash"] != alone["result_hash"]  # it knew the thread's earlier turn


async def test_a_selected_multi_line_question_is_not_its_own_evidence(
    vscode: KebabClient,
) -> None:
    path = vscode.root / "inbox" / "multi.md"
    path.write_text("# Scratch\n\nWhat time does the nightly\nbackup job run?\n", "utf-8")
    uri = vscode.open(path)
    start, end = types.Position(line=2, character=0), types.Position(line=3, character=15)
    command_ = await answer_action(vscode, uri, start, end)
    assert (command_.arguments or [])[2] == QUESTION
    found = await vscode.request("kebab/search", {"query": QUESTION})
    assert "inbox/multi.md" in [h["path"] for h in found["hits"]][:3]  # it is a close match
    asked = await vscode.request("kebab/ask", {"question": QUESTION, "uri": uri, "explain": True})
    hits = [h["path"] for h in asked["explain"]["hits"]]
    assert "ops/backup.md" in hits and "inbox/multi.md" not in hits  # but not its own evidence
    result = await vscode.command(command_.command, *(command_.arguments or []))
    vscode.close(uri)
    path.unlink()
    answer = result["answer"]
    assert answer["grounded"] and "02:30" in answer["answer"]
    assert {c["path"] for c in answer["citations"]} == {"ops/backup.md"}


async def test_refusals_say_why_in_words(vscode: KebabClient) -> None:
    en = await vscode.request("kebab/ask", {"question": "How do I sync my notes with Todoist?"})
    assert en["refusal_reason"] == "score_gate"
    assert en["refusal_text"] == "The notes never mention: Todoist."
    ko = await vscode.request("kebab/ask", {"question": "Todoist와 노트를 동기화하려면?"})
    assert not ko["grounded"] and ko["refusal_text"] == "노트에 나오지 않는 말: Todoist."
    # Written into a note and answered there, the question's own words do not count as
    # something the notes mention: the same refusal as from the panel.
    path = vscode.root / "inbox" / "sync.md"
    path.write_text("# Sync\n\nHow do I sync my notes with Todoist?\n", "utf-8")
    uri = vscode.open(path)
    on_line = await vscode.command("kebab.insertAnswer", uri, 2)
    panel = await vscode.request("kebab/ask", {"question": "How do I sync my notes with Todoist?"})
    vscode.close(uri)
    path.unlink()
    assert not on_line["applied"]
    assert seen(on_line["answer"]) == seen(panel) == seen(en)
    assert on_line["answer"]["refusal_text"] == "The notes never mention: Todoist."
    ok = await vscode.request("kebab/ask", {"question": QUESTION})
    assert ok["grounded"] and ok["refusal_text"] is None and ok["index_building"] is None


async def test_an_answer_made_while_vectors_are_filling_says_the_index_is_building(
    building: KebabClient,
) -> None:
    def embedding() -> bool:  # the progress of a folder that is embedding its passages
        return any(
            "passages embedded" in str(v.get("message", ""))
            for values in list(building.progress_log.values())
            for v in values
        )

    await until(embedding, "embedding the 600 generated notes", timeout=120)
    answer = await building.request("kebab/ask", {"question": QUESTION})
    building_ = answer["index_building"]
    assert building_ is not None and building_["vectors_pending"] > 0
    assert building_["message"].startswith("The index is still being built (")
    assert "passages not embedded yet" in building_["message"]
    await building.wait_ready(180)
    again = await building.request("kebab/ask", {"question": QUESTION})
    assert again["index_building"] is None


async def test_a_korean_question_hears_the_server_in_korean(vscode: KebabClient) -> None:
    """The server's own lines around a Korean answer (its progress, the notice after Insert)
    are Korean, as the answer and every door's words around it are; an English question's stay
    English. Filter words at the start do not make a Korean question English."""
    asked = await vscode.request(
        "kebab/ask", {"question": "김치찌개는 중약불로 몇 분 끓여야 해?", "workDoneToken": "ko-1"}
    )
    values = vscode.progress_log["ko-1"]
    assert asked["grounded"] and asked["lang"] == "ko"
    assert re.fullmatch(r".+: 준비됨|.+ 색인 중: .+", values[0]["message"]), values[0]
    n = len(asked["citations"])
    assert values[-1] == {"kind": "end", "message": f"답했습니다: 인용 {n}개"}
    near = await vscode.request(
        "kebab/ask",
        {"question": "path:korean/ 고양이 사료는 하루에 몇 번 줘?", "workDoneToken": "ko-2"},
    )
    assert near["outcome"] == "closest" and near["lang"] == "ko"
    began = vscode.progress_log["ko-2"][0]["message"]
    assert re.fullmatch(r".+: 준비됨|.+ 색인 중: .+", began), began  # Korean once filters are off
    end = vscode.progress_log["ko-2"][-1]["message"]
    assert end == f"가장 가까운 구절 {len(near['candidates'])}개", end
    en = await vscode.request("kebab/ask", {"question": QUESTION, "workDoneToken": "en-1"})
    assert vscode.progress_log["en-1"][-1]["message"].startswith("answered with ")
    assert re.fullmatch(r".+: ready|indexing .+", vscode.progress_log["en-1"][0]["message"])
    assert en["lang"] == "en"
    path = vscode.root / "inbox" / "sync-ko.md"
    path.write_text("# 동기화\n\nTodoist와 노트를 동기화하려면?\n", "utf-8")
    uri = vscode.open(path)
    result = await vscode.command("kebab.insertAnswer", uri, 2)
    vscode.close(uri)
    path.unlink()
    assert not result["applied"]
    said = "kebab: 노트에 나오지 않는 말: Todoist. 아무것도 넣지 않았습니다."
    await until(lambda: any(m.message == said for m in vscode.messages), "the Korean notice")

"""kebab/ask, kebab/search, kebab/status and the commands, as VS Code drives them."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from lsp_client import KebabClient, serving, until
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

pytestmark = pytest.mark.asyncio(loop_scope="module")

BACKUP_Q = "What time does the nightly backup run?"


async def test_initialize_indexes_the_workspace_with_progress(tmp_path: Path) -> None:
    # its own server: the module's one may have reindexed (another progress token) already
    async with serving(tmp_path, "vscode") as client:
        status = await client.wait_ready()
        assert status["state"] == "ready" and status["files"] == 16
        tokens = [t for t in client.progress_log if str(t).startswith("kebab-index")]
        assert len(tokens) == 1
        await until(lambda: client.ended(tokens[0]), "the indexing progress's end")
        values = client.progress_log[tokens[0]]
        assert values[0]["kind"] == "begin" and values[0]["title"].startswith("kebab: indexing")
        messages = [v.get("message", "") for v in client.reports(tokens[0])]
        assert any(re.fullmatch(r"16/16 files", m) for m in messages), messages
        percentages = [v["percentage"] for v in client.reports(tokens[0])]
        assert percentages == sorted(percentages) and percentages[-1] == 100
        watched = [
            r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        ]
        assert watched, "VS Code allows dynamic registration: the **/*.md watcher is registered"
        assert [t for t in client.progress_log if str(t).startswith("kebab-index")] == tokens


async def test_ask_streams_reports_that_concatenate_to_the_answer(vscode: KebabClient) -> None:
    result = await vscode.request("kebab/ask", {"question": BACKUP_Q, "workDoneToken": "ask-1"})
    values = vscode.progress_log["ask-1"]
    assert values[0] == {
        "kind": "begin",
        "title": "kebab",
        "cancellable": True,
        "message": values[0]["message"],
    }
    assert values[-1]["kind"] == "end" and "answered" in values[-1]["message"]
    assert "".join(str(v["message"]) for v in vscode.reports("ask-1")) == result["answer"]
    assert result["schema"] == "answer.v1" and result["grounded"]
    assert "02:30" in result["answer"]
    assert result["citations"][0]["path"] == "ops/backup.md"
    assert "[^kb-1]" in result["markdown"]


async def test_server_creates_a_progress_token_when_the_client_gives_none(
    vscode: KebabClient,
) -> None:
    before = set(vscode.progress_log)
    result = await vscode.command("kebab.ask", BACKUP_Q)
    new = [t for t in vscode.progress_log if t not in before and str(t).startswith("kebab-ask")]
    assert len(new) == 1
    values = vscode.progress_log[new[0]]
    assert [values[0]["kind"], values[-1]["kind"]] == ["begin", "end"]
    assert "".join(str(v["message"]) for v in vscode.reports(new[0])) == result["answer"]


async def test_a_reused_token_streams_again(vscode: KebabClient) -> None:
    await vscode.request("kebab/ask", {"question": BACKUP_Q, "workDoneToken": "again"})
    second = await vscode.request("kebab/ask", {"question": BACKUP_Q, "workDoneToken": "again"})
    ends = [v for v in vscode.progress_log["again"] if v["kind"] == "end"]
    assert len(ends) == 2 and second["refusal_reason"] is None


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({}, "question"),
        ({"question": "   "}, "question"),
        ({"question": BACKUP_Q, "k": "ten"}, "`k`"),
        ({"question": BACKUP_Q, "mode": "semantic"}, "`mode`"),
        ({"question": BACKUP_Q, "history": [{"question": "q"}]}, "history"),
        ({"question": BACKUP_Q, "uri": "file:///somewhere/else/note.md"}, "outside"),
        (["not", "an", "object"], "object"),
    ],
)
async def test_invalid_params_are_an_error_naming_the_param(
    vscode: KebabClient, params: object, named: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as error:
        await vscode.request("kebab/ask", params)
    assert named in str(error.value)
    status = await vscode.request("kebab/status", {})
    assert status["state"] == "ready"


async def test_search_returns_hits_with_whole_line_ranges(vscode: KebabClient) -> None:
    result = await vscode.request("kebab/search", {"query": "restic retention policy", "k": 3})
    hits = result["hits"]
    assert 1 <= len(hits) <= 3
    top = hits[0]
    assert top["path"] == "ops/backup.md"
    assert top["uri"].startswith("file://") and top["uri"].endswith("ops/backup.md")
    assert top["range"]["start"] == {"line": top["start_line"] - 1, "character": 0}
    assert top["range"]["end"] == {"line": top["end_line"], "character": 0}
    assert {"heading_path", "score", "text", "chunk_id"} <= top.keys()
    with pytest.raises(JsonRpcInvalidParams, match="query"):
        await vscode.request("kebab/search", {"k": 3})


async def test_status_names_models_and_counts(vscode: KebabClient) -> None:
    # an earlier test's edit may still be embedding (it pauses while answers run): once the
    # status says every vector is in, it names the models and the counts
    status = await vscode.wait_ready()
    folder = status["folders"][0]
    assert folder["chunks"] > 0 and folder["vectors"] > 0 and folder["pending_vectors"] == 0
    assert folder["embedding"]["id"] == "use-multilingual-v3"
    assert folder["llm"] == {"backend": "extractive", "id": "extractive-v2", "endpoint": None}
    assert folder["skipped"] == []


async def test_a_live_edit_is_what_the_next_answer_cites(vscode: KebabClient) -> None:
    root = vscode.root
    uri = vscode.open(root / "ops" / "postgres.md")
    text = vscode.text(uri).replace("port **5433**", "port **6543**").replace("-p 5433", "-p 6543")
    vscode.replace(uri, text)  # unsaved: the file still says 5433
    result = await vscode.request(
        "kebab/ask", {"question": "Which port does Postgres on nas01 listen on?"}
    )
    # answered: its citations; closest: the passages it lists, the nearest first
    shown = result["citations"] or result["candidates"][:1]
    cited = " ".join(c["text"] for c in shown)
    assert "6543" in cited and "5433" not in cited
    assert result["outcome"] == "closest" or "6543" in result["answer"]


async def test_every_answer_is_a_row_in_the_answers_table(vscode: KebabClient) -> None:
    def rows() -> list[tuple[int, str]]:
        with sqlite3.connect(vscode.index_dir / "kebab.sqlite") as db:
            return list(db.execute("SELECT id, question FROM answers WHERE question = ?", (q,)))

    q = "Which folders does the nightly backup include?"
    before = rows()
    ids = [(await vscode.request("kebab/ask", {"question": q}))["answer_id"] for _ in range(2)]
    ids.append((await vscode.command("kebab.ask", q))["answer_id"])
    after = rows()
    assert len(after) == len(before) + 3  # on its own too: it needs no earlier test's rows
    assert sorted(ids) == sorted(i for i, _ in after if (i, q) not in before)


async def test_a_question_asked_from_a_note_is_not_its_own_evidence(vscode: KebabClient) -> None:
    note = vscode.root / "inbox" / "questions.md"
    question = "What time does the nightly backup job run?"
    assert question in note.read_text(encoding="utf-8")
    result = await vscode.request("kebab/ask", {"question": question, "uri": note.as_uri()})
    assert result["grounded"]
    assert "inbox/questions.md" not in {c["path"] for c in result["citations"]}


async def test_reindex_command_rebuilds_with_progress(vscode: KebabClient) -> None:
    before = {t for t in vscode.progress_log if str(t).startswith("kebab-index")}
    result = await vscode.command("kebab.reindex")
    assert result == {"reindexing": [str(vscode.root.resolve())]}
    await vscode.wait_ready()

    def new() -> set[object]:
        return {t for t in vscode.progress_log if str(t).startswith("kebab-index")} - before

    # the rebuild's progress ends shortly after the index is ready
    ended = await until(lambda: {t for t in new() if vscode.ended(t)}, "the rebuild's end")
    assert len(new()) == 1 and ended == new()


async def test_workspace_folders_can_be_added_and_removed(
    vscode: KebabClient, tmp_path: Path
) -> None:
    extra = tmp_path / "garden"
    extra.mkdir()
    (extra / "tomatoes.md").write_text(
        "# Tomatoes\n\nThe tomato seedlings go out after the ice saints, in mid May.\n",
        encoding="utf-8",
    )
    folder = types.WorkspaceFolder(uri=extra.as_uri(), name="garden")
    vscode.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(added=[folder], removed=[])
        )
    )
    status = await vscode.wait_ready()
    assert len(status["folders"]) == 2
    assert status["folders"][0]["index_dir"] != status["folders"][1]["index_dir"]
    hits = (await vscode.request("kebab/search", {"query": "tomato seedlings ice saints"}))["hits"]
    assert hits[0]["path"] == "tomatoes.md" and hits[0]["uri"] == (extra / "tomatoes.md").as_uri()
    vscode.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(added=[], removed=[folder])
        )
    )

    async def removed() -> bool:
        return len((await vscode.request("kebab/status", {}))["folders"]) == 1

    await until(removed, "the removed folder leaving kebab/status")

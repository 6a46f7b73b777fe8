"""Issue 8's extras, each off by default: HyDE, relevance filtering, conflict detection, and
`kebab generate` (a new note written from the notes, every claim footnoted).

The model is the scripted HTTP server of tests/llm_server.py; what kebab sends it is read back
from its request log, never from kebab's internals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import MakeWorkspace
from kebab import footnotes
from kebab.cli import main
from kebab.errors import WorkspaceError
from kebab.model import AskRequest, to_builtins
from llm_server import ModelServer, Received, Reply, ask, llm_settings

QUESTION = "What time does the nightly backup job run?"
ANSWER = "The backup job runs every day at 02:30 [#1]."
PASSAGE = re.compile(
    r'<passage marker="\[#(\d+)\]" path="([^"]*)" heading="[^"]*" lines="(\d+)-(\d+)">'
)

BALCONY = {
    "garden/balcony.md": "# Balcony garden\n\nThe tomatoes on the balcony are watered every "
    "morning at 7, and the basil every second day. Feed them liquid seaweed once a fortnight.\n"
}
# None of its words are in BALCONY's note; only the drafted answer's meaning leads there.
VAGUE = "Which chores are done daily?"
DRAFT = "The tomatoes on the balcony are watered every morning, and the basil every second day."
OLD_BACKUP = {
    "ops/backup-2022.md": "# Backups in 2022\n\n## Schedule\n\nThe nightly backup job ran every "
    "day at 03:15 local time from cron.\n"
}


def passages(request: Received) -> list[tuple[int, str, int, int]]:
    """(marker, path, start line, end line) of every passage a request showed the model."""
    text = request.message("user")
    return [(int(m), p, int(a), int(b)) for m, p, a, b in PASSAGE.findall(text)]


# HyDE -------------------------------------------------------------------------------------------


async def test_hyde_finds_a_note_through_the_drafted_answer(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.script(Reply([DRAFT]), Reply(["Tomatoes are watered every morning [#1]."]))
    ws = make_ws(llm_settings(server), notes=BALCONY, rag={"hyde": True})
    plain = ws.prepare(AskRequest(question=VAGUE, k=3))  # no model, so no draft
    assert plain.refusal is None and "garden/balcony.md" not in {h.path for h in plain.hits}

    answer = await ask(ws, VAGUE, k=3, explain=True)

    assert len(server.requests) == 2  # the draft first, then the answer
    draft, final = server.requests
    assert draft.message("user") == VAGUE and draft.body["max_tokens"] == 150
    assert "answers the question" in draft.message("system") and passages(draft) == []
    assert "garden/balcony.md" in [path for _, path, *_ in passages(final)]
    assert f"Question: {VAGUE}" in final.message("user") and DRAFT not in final.message("user")
    [balcony] = [h for h in answer.explain["hits"] if h["path"] == "garden/balcony.md"]
    assert balcony["lexical"] is None  # the lexical side searched the raw question: no match
    assert balcony["vector"] == max(h["vector"] or 0 for h in answer.explain["hits"])
    assert answer.grounded and answer.explain["extras"]["ms"]["hyde"] > 0


async def test_hyde_draft_does_not_talk_the_gate_into_answering(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer(
        "Laminate cold butter into a yeasted dough, fold it three times, rest it "
        "overnight, then shape and bake the croissants at 200 °C."
    )
    ws = make_ws(llm_settings(server), rag={"hyde": True})
    answer = await ask(ws, "How do I make croissants?")
    assert len(server.requests) == 1  # the draft, and no answer: no note mentions croissants
    assert answer.refusal_reason == "score_gate" and "croissants" in answer.answer


async def test_hyde_falls_back_to_plain_retrieval_when_the_draft_fails(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.script(Reply(status=400), Reply([ANSWER]))
    ws = make_ws(llm_settings(server), rag={"hyde": True})
    plain = ws.prepare(AskRequest(question=QUESTION))
    answer = await ask(ws, QUESTION)
    assert len(server.requests) == 2
    assert [p[1] for p in passages(server.requests[1])] == [ev.path for ev in plain.evidence]
    assert answer.grounded and answer.refusal_reason is None and answer.error is None


async def test_extras_stay_off_with_the_extractive_backend(make_ws: MakeWorkspace) -> None:
    rag = {"hyde": True, "relevance_filter": True, "detect_conflicts": True}
    ws = make_ws(notes=OLD_BACKUP, rag=rag)
    answer = await ask(ws, QUESTION, explain=True)
    assert answer.model.backend == "extractive" and answer.grounded
    assert answer.conflicts == [] and answer.explain["extras"]["ms"] == {}
    assert "extractive" in answer.explain["extras"]["skipped"]


# relevance filtering ----------------------------------------------------------------------------


async def test_relevance_filter_drops_passages_scored_below_the_threshold(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.script(Reply(['{"scores": [', "2, 4, 9]}"]), Reply([ANSWER]))
    ws = make_ws(llm_settings(server), rag={"relevance_filter": True})
    answer = await ask(ws, QUESTION, k=3, explain=True)

    scoring, final = server.requests
    scored = passages(scoring)
    assert [m for m, *_ in scored] == [1, 2, 3]
    assert '{"scores": [7, 2, 9]}' in scoring.message("system")
    kept = scored[2]
    assert [p[1:] for p in passages(final)] == [kept[1:]]  # only the passage scored 9, as [#1]
    assert answer.retrieval.chunks_used == 1
    assert (answer.citations[0].path, answer.citations[0].start_line) == kept[1:3]
    assert answer.explain["extras"]["relevance_scores"] == [2.0, 4.0, 9.0]


@pytest.mark.parametrize(
    "reply",
    ["Sure! All of these look relevant.", '{"scores": [9]}', '{"scores": ["high", 1, 2]}', ""],
)
async def test_relevance_filter_keeps_every_passage_on_an_unreadable_reply(
    server: ModelServer, make_ws: MakeWorkspace, reply: str
) -> None:
    server.script(Reply([reply] if reply else []), Reply([ANSWER]))
    ws = make_ws(llm_settings(server), rag={"relevance_filter": True})
    answer = await ask(ws, QUESTION, k=3)
    assert len(passages(server.requests[1])) == 3
    assert answer.grounded


async def test_relevance_filter_refuses_when_every_passage_scores_low(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer('```json\n{"scores": [1, 0, 4]}\n```')
    ws = make_ws(llm_settings(server), rag={"relevance_filter": True, "relevance_threshold": 5})
    answer = await ask(ws, QUESTION, k=3)
    assert len(server.requests) == 1  # no answer was asked for
    assert answer.refusal_reason == "score_gate" and not answer.grounded
    assert "relevance check scored all 3 retrieved passages below 5/10" in answer.answer
    assert len(answer.candidates) == 3  # the nearest passages are still listed


# conflict detection -----------------------------------------------------------------------------


CONFLICTS = json.dumps(
    [
        {"a": 2, "b": "#1", "detail": "02:30 in one note, 03:15 in the other"},
        {"a": 1, "b": 42, "detail": "a passage that was never given"},
        {"a": 3, "b": 3, "detail": "a passage against itself"},
        {"a": 1, "b": 2, "detail": "the same pair again"},
    ]
)


async def test_conflicts_go_into_answer_v1_and_unknown_markers_are_dropped(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.script(Reply(["Here you go:\n", CONFLICTS]), Reply([ANSWER]))
    ws = make_ws(llm_settings(server), notes=OLD_BACKUP, rag={"detect_conflicts": True})
    heard: list[Any] = []
    answer = await ws.ask(AskRequest(question=QUESTION), None, heard.append)

    check, final = server.requests
    assert passages(check) == passages(final)  # the check read the packed evidence
    by_marker = {m: f"{p}:{a}-{b}" for m, p, a, b in passages(final)}
    out = to_builtins(answer)
    assert isinstance(out, dict)
    assert out["conflicts"] == [
        {
            "a": 1,
            "b": 2,
            "detail": "02:30 in one note, 03:15 in the other",
            "a_source": by_marker[1],
            "b_source": by_marker[2],
        }
    ]
    assert heard == [answer.conflicts]  # heard before the answer was asked for
    assert answer.grounded


def test_cli_prints_conflicts_before_the_answer(
    server: ModelServer,
    fixture_copy: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, index_dir = fixture_copy
    (root / "kebab.toml").write_text("[rag]\ndetect_conflicts = true\n", encoding="utf-8")
    (root / "ops/backup-2022.md").write_text(OLD_BACKUP["ops/backup-2022.md"], encoding="utf-8")
    server.script(Reply([CONFLICTS]), Reply([ANSWER]))
    model = ["--backend", "openai", "--endpoint", server.url, "--model", "m"]
    assert main(["ask", QUESTION, "--root", str(root), "--index-dir", str(index_dir), *model]) == 0
    out = capsys.readouterr().out
    sources = {m: f"{p}:{a}-{b}" for m, p, a, b in passages(server.requests[1])}
    warning = (
        f"⚠ Notes disagree: [#1] {sources[1]} vs [#2] {sources[2]} — "
        "02:30 in one note, 03:15 in the other\n\n"
    )
    assert out.startswith(warning + ANSWER.replace(" [#1]", "[1]"))


# generating a note ------------------------------------------------------------------------------


NOTE = (
    "```markdown\n# Restic backups\n\nThe backup job runs every day at 02:30 [#1]. Daily "
    "snapshots are kept for 7 days [#2]. The moon is made of cheese [#42].\n\n## Restore\n\n"
    "Restore one path with `restic restore` [#3].\n```"
)


@pytest.fixture
def cli_ws(fixture_copy: tuple[Path, Path]) -> tuple[Path, list[str]]:
    root, index_dir = fixture_copy
    return root, ["--root", str(root), "--index-dir", str(index_dir)]


def generate(where: list[str], output: Path, *extra: str) -> int:
    return main(["generate", "--topic", "restic backups", "--output", str(output), *where, *extra])


def assert_footnotes_resolve(root: Path, rel: str) -> list[footnotes.Definition]:
    """Every `[^kb-n]` in the note has a definition whose link opens existing lines."""
    text = (root / rel).read_text(encoding="utf-8")
    defs = footnotes.definitions(text, rel)
    assert defs and "[#" not in text
    assert {d.label for d in defs} == set(re.findall(r"\[\^(kb-\d+)\](?!:)", text))
    for d in defs:
        target = root / d.path
        assert target.is_file(), d
        assert 1 <= d.start_line <= d.end_line <= len(target.read_text().split("\n"))
        assert re.fullmatch(r"[0-9a-f]{12}", d.content_hash)
    return defs


def test_generate_writes_a_note_whose_footnotes_resolve_from_where_it_lands(
    server: ModelServer, cli_ws: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, where = cli_ws
    server.answer(NOTE)
    model = ["--backend", "openai", "--endpoint", server.url, "--model", "m"]
    output = root / "guides" / "backups.md"
    assert generate(where, output, *model) == 0

    [request] = server.requests
    assert "Markdown note" in request.message("system")
    assert request.message("user").startswith("Topic: restic backups")
    assert len(passages(request)) > 3
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# Restic backups\n\nThe backup job runs every day at 02:30[^kb-1].")
    assert "cheese." in text and "[#42]" not in text  # the unknown marker is dropped
    defs = assert_footnotes_resolve(root, "guides/backups.md")
    assert len(defs) == 3 and all(d.path.startswith("ops/") or "/" in d.path for d in defs)
    assert all(line.startswith("[^kb-") for line in text.rstrip().split("\n")[-3:])
    assert "](../" in text  # links are relative to the new note
    captured = capsys.readouterr()
    assert "dropped citations of passages that were not given: [#42]" in captured.err
    assert captured.out.startswith("wrote guides/backups.md: 3 citations from ")

    # it is never overwritten without --yes; with --yes it is
    assert generate(where, output, *model) == 1
    err = capsys.readouterr().err.strip().split("\n")
    assert err == ["kebab: guides/backups.md already exists; not overwriting it without --yes"]
    assert len(server.requests) == 1 and output.read_text(encoding="utf-8") == text
    server.answer("# Restic backups\n\nBackups run at 02:30 [#1].")
    assert generate(where, output, *model, "--yes") == 0
    assert capsys.readouterr().out.startswith("overwrote guides/backups.md: 1 citations")
    assert output.read_text(encoding="utf-8").startswith("# Restic backups\n\nBackups run at")
    assert "guides/backups.md" not in server.requests[-1].message("user")  # not its own source


@pytest.mark.parametrize("where_to", ["outside", "dotdot"])
def test_generate_refuses_a_path_outside_the_workspace(
    server: ModelServer,
    cli_ws: tuple[Path, list[str]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    where_to: str,
) -> None:
    root, where = cli_ws
    output = tmp_path / "elsewhere.md" if where_to == "outside" else root / ".." / "up.md"
    model = ["--backend", "openai", "--endpoint", server.url]
    assert generate(where, output, *model) == 1
    err = capsys.readouterr().err.strip()
    assert "is outside the workspace root" in err and "\n" not in err
    assert server.requests == [] and not output.exists()


def test_generate_dry_run_prints_retrieval_and_prompt_and_calls_no_model(
    server: ModelServer, cli_ws: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, where = cli_ws
    output = root / "guides" / "backups.md"
    model = ["--backend", "openai", "--endpoint", server.url]
    assert generate(where, output, *model, "--dry-run") == 0
    out = capsys.readouterr().out
    assert " 1. " in out and "ops/backup.md:" in out
    assert "template note-v1" in out and "output guides/backups.md" in out
    assert "--- system ---" in out and "Topic: restic backups" in out
    assert '<passage marker="[#1]"' in out
    assert server.requests == [] and not output.exists()


def test_generate_with_the_extractive_backend_quotes_the_top_passages(
    cli_ws: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, where = cli_ws
    assert generate(where, root / "backups.md") == 0
    text = (root / "backups.md").read_text(encoding="utf-8")
    assert text.startswith("# restic backups\n\n## Home server backups\n\n- ")
    assert re.search(
        r"^- \*\*Schedule:\*\* The backup job .*02:30.*\[\^kb-\d+\]$", text, re.MULTILINE
    )
    assert_footnotes_resolve(root, "backups.md")
    assert "(note-extractive-v1, extractive:extractive-v2" in capsys.readouterr().out


async def test_workspace_generate_note_for_the_editor(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer(NOTE)
    ws = make_ws(llm_settings(server))
    note = await ws.generate_note("restic backups", "guides/backups.md")
    assert note.written and not note.overwritten and note.schema == "note.v1"
    assert note.path == "guides/backups.md" and note.uri == (ws.root / note.path).as_uri()
    assert note.unknown_markers == [42]
    # the model's [#1] and [#2] name passages that do not hold 02:30 and 7 days: kebab cites
    # the ones that do
    assert [(c.heading_path[-1], c.by) for c in note.citations] == [
        ("Schedule", "kebab"),
        ("Retention policy", "kebab"),
        ("Restoring a single file", "model"),
    ]
    assert (ws.root / note.path).read_text(encoding="utf-8") == note.markdown
    with pytest.raises(WorkspaceError, match="already exists"):
        await ws.generate_note("restic backups", "guides/backups.md")
    with pytest.raises(WorkspaceError, match="outside the workspace root"):
        await ws.generate_note("restic backups", "../x.md")
    assert len(server.requests) == 1

    server.script(Reply(status=404))  # a model fault: nothing written, the reason comes back
    failed = await ws.generate_note("restic backups", "guides/other.md")
    assert not failed.written and failed.refusal_reason == "llm_error"
    assert "not found" in (failed.error or "") and not (ws.root / "guides/other.md").exists()

    server.answer("# Backups\n\nThe notes say nothing about this.")  # no citation: not written
    uncited = await ws.generate_note("restic backups", "guides/uncited.md")
    assert not uncited.written and uncited.refusal_reason == "llm_self_judge"
    assert not (ws.root / "guides/uncited.md").exists()

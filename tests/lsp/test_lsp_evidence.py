"""What is evidence, as the editors ask it (VS Code's and Neovim's capabilities): a note that
holds questions is not the answer to them however they are worded, kebab's own inserted answers
are neither evidence nor related passages, and a second insert reuses the label of a passage
the note already cites (issue 23, points 1 and 2)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsp_client import KebabClient, serving

from kebab import footnotes

pytestmark = pytest.mark.asyncio(loop_scope="module")

INBOX = "# Inbox\n\nHow do I sync tasks with Todoist?\nMore notes below.\n"
FIRST = "What time does the nightly backup job run?"
SECOND = "Which systemd timer starts the nightly backup job?"
NOTE = (
    "# Answers\n\nMy own remark about parsnips and the garden shed.\n\n"
    f"## Asked\n\n{FIRST}\n\n{SECOND}\n"
)


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=["vscode", "neovim"])
async def editor(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[KebabClient]:
    notes = {"Inbox.md": INBOX}
    async with serving(tmp_path_factory.mktemp(request.param), request.param, notes) as client:
        await client.wait_ready()
        yield client


@pytest.mark.parametrize(
    "question",
    [
        "Can I sync my tasks to Todoist?",
        "Todoist에 할 일을 동기화할 수 있나요?",
    ],
)
async def test_a_note_that_holds_the_question_is_not_its_answer_however_it_is_worded(
    editor: KebabClient, question: str
) -> None:
    asked = await editor.request("kebab/ask", {"question": question})
    assert not asked["grounded"], asked["answer"]
    assert "More notes below" not in asked["answer"]
    assert "Todoist" in asked["refusal_text"]
    assert "Inbox.md" in [c["path"] for c in asked["candidates"]]  # still among the nearest


async def test_a_follow_up_about_the_written_question_is_not_answered_from_it(
    editor: KebabClient,
) -> None:
    first = await editor.request("kebab/ask", {"question": FIRST})
    follow = await editor.request(
        "kebab/ask",
        {"question": "And can I sync my tasks to Todoist?", "conversation": first["conversation"]},
    )
    assert not follow["grounded"] and "More notes below" not in follow["answer"]
    assert all(c["path"] != "Inbox.md" for c in follow["citations"])


async def test_answers_kebab_wrote_are_not_evidence_nor_related_and_a_cited_passage_keeps_its_label(
    editor: KebabClient,
) -> None:
    path = editor.root / "inbox" / "answers.md"
    path.write_text(NOTE, encoding="utf-8")
    uri = editor.open(path)
    lines = NOTE.split("\n")
    one = await editor.command("kebab.insertAnswer", uri, lines.index(FIRST))
    assert one["applied"], one["answer"]["answer"]
    second_line = editor.text(uri).split("\n").index(SECOND)
    two = await editor.command("kebab.insertAnswer", uri, second_line)
    assert two["applied"], two["answer"]["answer"]
    text = editor.text(uri)
    path.write_text(text, encoding="utf-8")  # saved, as a person would

    # one definition per cited passage: the second answer reuses the label of the first
    defs = footnotes.definitions(text, "inbox/answers.md")
    spans = [(d.path, d.start_line, d.end_line) for d in defs]
    assert len(spans) == len(set(spans)), text
    shared = {(c["path"], c["start_line"]) for c in one["answer"]["citations"]} & {
        (c["path"], c["start_line"]) for c in two["answer"]["citations"]
    }
    assert shared, "both answers cite the schedule"

    # the inserted answers are no evidence for a later answer, nor a search hit...
    again = await editor.request("kebab/ask", {"question": FIRST})
    assert again["grounded"]
    assert all(c["path"] != "inbox/answers.md" for c in again["citations"])
    found = await editor.request("kebab/search", {"query": "restic-backup.timer 02:30", "k": 5})
    assert "inbox/answers.md" not in [h["path"] for h in found["hits"]][:3], found["hits"]
    # ...nor a passage related to the section they quote
    schedule = (editor.root / "ops" / "backup.md").read_text("utf-8").split("\n")
    at = next(i for i, line in enumerate(schedule) if line.startswith("## Schedule"))
    related = await editor.request(
        "kebab/related",
        {
            "uri": (editor.root / "ops" / "backup.md").as_uri(),
            "position": {"line": at + 1, "character": 0},
            "k": 10,
        },
    )
    assert "inbox/answers.md" not in [h["path"] for h in related["hits"]]
    # the note's own writing around them still is a note
    mine = await editor.request("kebab/search", {"query": "parsnips garden shed", "k": 3})
    assert mine["hits"][0]["path"] == "inbox/answers.md"
    editor.close(uri)
    path.unlink()

"""A note of the asker's own questions is never the answer (issue 27, item 2): an inbox whose
questions are separate paragraphs is judged whole, so the remark written under them is not
quoted as the answer to either, however the question is worded, over the real index and the
embedded answerer."""

from __future__ import annotations

import pytest

from conftest import MakeWorkspace
from kebab.units import is_asking
from llm_server import ask

# The common inbox layout: each question its own paragraph, a remark under them.
INBOX = (
    "# Inbox\n\n"
    "How do I sync tasks with Todoist?\n\n"
    "How do I archive finished tasks?\n\n"
    "More notes below.\n"
)
# ... and one of sections, whose last asks nothing: the note is judged whole.
SECTIONS = (
    "# Inbox\n\n## Todoist\n\n"
    "How do I sync tasks with Todoist?\n\n"
    "Can tasks sync both ways?\n\n"
    "Why do synced tasks lose their due dates?\n\n"
    "## Later\n\n"
    "The Todoist Sync plugin looked promising.\n"
)
# ... and one that holds the question word for word.
VERBATIM = INBOX.replace("How do I sync tasks with Todoist?", "Can I sync my tasks to Todoist?")


@pytest.mark.parametrize(
    ("inbox", "question"),
    [
        (INBOX, "Can I sync my tasks to Todoist?"),
        (INBOX, "Todoist에 할 일을 동기화할 수 있나요?"),
        (INBOX, "How do I archive finished tasks?"),
        (VERBATIM, "Todoist에 할 일을 동기화할 수 있나요?"),
    ],
    ids=["reworded", "reworded-ko", "other-question", "verbatim-ko"],
)
async def test_a_note_of_separate_questions_is_not_quoted_as_the_answer(
    make_ws: MakeWorkspace, inbox: str, question: str
) -> None:
    ws = make_ws(notes={"Inbox.md": inbox})
    answer = await ask(ws, question)
    assert "More notes below" not in answer.answer, answer.answer
    assert all(c.path != "Inbox.md" for c in answer.citations), answer.answer
    assert answer.outcome != "answered", answer.answer


def test_a_note_is_asking_when_most_of_its_lines_are_questions() -> None:
    assert is_asking(INBOX)
    assert is_asking("- [ ] Why is the NAS slow?\n- [ ] 백업은 언제 돌아가나요?\n")
    # a FAQ's questions and answers tie; one question opening a section asks nothing of it
    assert not is_asking("**How do I restart?**\nRun `reboot`.\n\n**Why?**\nUpdates.\n")
    # an inbox's settled questions, struck through and pointing at their answer, still ask
    assert is_asking(
        "- ~~Which port does Postgres use on nas01?~~ Answered in [[postgres]].\n"
        "- ~~Where is the restic password?~~ In [[backup]].\n"
    )
    assert not is_asking("## Motivation\n\nHow can I list tasks due this week?\n\nUse a query.")
    assert not is_asking("```python\nwhy = input('why?')\nhow = input('how?')\n```\n")


async def test_a_note_of_questions_answered_in_place_is_then_quoted(make_ws: MakeWorkspace) -> None:
    """Whether a note is mostly questions is kept per note between asks (every ask weighs a
    dozen notes): once the asker writes the answers into it, the next ask reads it again."""
    ws = make_ws(notes={"Inbox.md": SECTIONS})
    question = "How do I sync tasks with Todoist?"
    before = await ask(ws, question)
    assert all(c.path != "Inbox.md" for c in before.citations), before.answer
    (ws.root / "Inbox.md").write_text(
        "# Todoist\n\n"
        "Tasks sync with Todoist through the Todoist Sync plugin: install it, paste your API "
        "token into its settings, and it syncs every five minutes.\n",
        encoding="utf-8",
    )
    ws.refresh()
    after = await ask(ws, question)
    assert after.outcome == "answered", after.answer
    assert [c.path for c in after.citations][:1] == ["Inbox.md"], after.answer
    assert "Todoist Sync plugin" in after.answer


async def test_a_question_written_in_a_note_scores_as_it_does_asked_from_nowhere(
    make_ws: MakeWorkspace,
) -> None:
    """The note a question is written in (with kebab's footnotes for an earlier answer) matches
    it best. Set aside after the scores were fused, it still set their scale: asked from that
    note, a question the notes answer plainly scored 0.53 (`closest`) against 0.67."""
    q = "What time does the nightly backup run, and how long are daily snapshots kept?"
    note = (
        f"# Numbers\n\nSeen before.[^kb-4]\n\n{q}\n\n"
        '[^kb-4]: [Earlier](../ops/backup.md "kb:000000000000") L1–L2\n'
    )
    ws = make_ws(notes={"inbox/numbers.md": note})
    here = await ask(ws, q, path="inbox/numbers.md", explain=True)
    nowhere = await ask(ws, q, explain=True)
    assert here.outcome == nowhere.outcome == "answered", here.answer
    sure = [a.explain["outcome"]["confidence"] for a in (here, nowhere)]
    assert abs(sure[0] - sure[1]) < 0.03, sure


def test_a_word_only_the_questions_own_note_holds_is_unknown_unless_it_only_phrases(
    make_ws: MakeWorkspace,
) -> None:
    """Words found only where the question is written count as words no note holds; "could"
    and "tell" are how the question is put, not what it is about, and were said to be missing
    ("The notes never mention: Could.")."""
    question = "Could you tell me which zebrafish strain the lab keeps?"
    ws = make_ws(notes={"inbox/q.md": f"# Q\n\n{question}\n"})
    ids = frozenset(c.id for _, c in ws.index.store.chunks_of("inbox/q.md"))
    unknown = ws.index.unknown_words(question, ids)
    assert "zebrafish" in unknown, unknown
    assert not {"Could", "tell"} & set(unknown), unknown


def test_a_word_a_note_writes_as_two_is_not_unknown(make_ws: MakeWorkspace) -> None:
    """ "…how long does the browser cache the CORS preflight?" was told "The notes never
    mention: preflight." over a note on "pre-flight" requests; a word no note writes either way
    is still unknown."""
    note = (
        "# CORS\n\nEach POST was preceded by a pre-flight OPTIONS request; the file name and\n"
        "the home brew kit are logged.\n"
    )
    ws = make_ws(notes={"http/cors.md": note})
    unknown = ws.index.unknown_words("How long is a CORS preflight cached? And the postflight?")
    assert "preflight" not in unknown and "postflight" in unknown, unknown
    # a stem that ends inside the second word ("filenam"); a name is no two words
    assert ws.index.unknown_words("Which filename, and where is Homebrew?") == ["Homebrew"]

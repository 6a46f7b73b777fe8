"""Follow-up questions that only make sense after the previous one."""

from __future__ import annotations

from pathlib import Path

from conftest import WorkspaceFactory
from kebab.model import AskRequest, Turn


async def test_a_follow_up_in_a_conversation_answers_about_the_previous_topic(
    fixture_workspace: Path, open_workspace: WorkspaceFactory
) -> None:
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    first = await ws.ask(AskRequest(question="How is Postgres set up on nas01?", conversation="t1"))
    assert first.conversation == "t1"
    follow = await ws.ask(
        AskRequest(question="and which port does it listen on?", conversation="t1")
    )
    # answered, or (its confidence near the threshold) the closest passages: about Postgres
    shown = follow.citations or follow.candidates[:1]
    assert "5433" in " ".join(c.text for c in shown)
    assert {c.path for c in shown} == {"ops/postgres.md"}
    ssh = await ws.ask(AskRequest(question="How does the SSH config look?", conversation="t2"))
    assert ssh.grounded
    other = await ws.ask(
        AskRequest(question="and which port does it listen on?", conversation="t2")
    )
    assert "2222" in other.answer and "5433" not in other.answer


async def test_a_follow_up_that_names_no_subject_is_answered_about_the_previous_one(
    fixture_workspace: Path, open_workspace: WorkspaceFactory
) -> None:
    """The embedded answerer reads only the question: the thread's earlier question tells it
    what "it" is. Alone, the same words are refused."""
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    first = await ws.ask(AskRequest(question="What time does the nightly backup job run?"))
    assert first.grounded and first.conversation
    follow = await ws.ask(
        AskRequest(question="and which systemd unit starts it?", conversation=first.conversation)
    )
    assert follow.grounded and "restic-backup.timer" in follow.answer, follow.answer
    # a line that only shapes a unit file says nothing: never quoted on its own (inside the
    # unit file quoted whole as a fenced block, it is part of the file)
    assert not any(
        line.startswith("[Timer]") and "[#" in line for line in follow.answer.split("\n")
    )
    alone = await ws.ask(AskRequest(question="and which systemd unit starts it?"))
    assert not alone.grounded and alone.conversation != first.conversation


async def test_a_new_topic_in_a_thread_is_not_held_to_the_previous_questions_words(
    fixture_workspace: Path, open_workspace: WorkspaceFactory
) -> None:
    """Search leans on the previous question; the answer is judged on the question asked."""
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    first = await ws.ask(
        AskRequest(question="What does CI_PIPELINE_2 run in `deploy.yml`?", conversation="t")
    )
    assert not first.grounded  # no note has either name
    nginx = await ws.ask(
        AskRequest(question="Which port does nginx listen on for HTTPS?", conversation="t")
    )
    assert nginx.grounded and "8443" in nginx.answer, nginx.answer


async def test_explicit_history_changes_the_prompt_template_and_the_result_hash(
    fixture_workspace: Path, open_workspace: WorkspaceFactory
) -> None:
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    plain = ws.prepare(AskRequest(question="which port does it listen on?"))
    threaded = ws.prepare(
        AskRequest(
            question="which port does it listen on?",
            history=[Turn("How is Postgres set up?", "PostgreSQL 16 runs in Docker [#1]")],
        )
    )
    assert plain.template == "rag-v1" and threaded.template == "rag-v2"
    roles = [m.role for m in threaded.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert threaded.hits[0].path == "ops/postgres.md"


def test_kebab_ask_continue_follows_the_last_conversation(
    fixture_workspace: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    def ask(question: str, *extra: str) -> str:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "kebab.cli",
                "ask",
                question,
                "--root",
                str(fixture_workspace),
                "--index-dir",
                str(tmp_path / "idx"),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout

    ask("How is Postgres set up on nas01?")
    assert "5433" in ask("and which port does it listen on?", "--continue")

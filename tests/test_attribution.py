"""Citations that survive small models (tests/llm_server.py scripts the replies a small local
model gives: markers dropped, misplaced, values made up), in English and Korean.

kebab cites a sentence the model left unmarked, or marked with a passage that does not hold it,
with the packed passage that supports it (`citations[].by == "kebab"`); a value no packed
passage holds is never attributed, and the answer is then shown under a warning, never as
grounded and never as "Not answered". An answer that only repeats the question is not one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MakeWorkspace
from kebab.llm import Evidence
from kebab.rag.attribution import attribute, invented_values, is_echo
from llm_server import ModelServer, ask, llm_settings

BACKUP = "What time does the nightly backup job run?"
KEPT = "How long are daily snapshots kept?"
KIMCHI = "김치찌개는 중약불로 몇 분 끓여야 해?"


@pytest.mark.parametrize(
    ("question", "reply", "path", "heading"),
    [
        (BACKUP, "The backup runs every day at 02:30.", "ops/backup.md", "Schedule"),
        (BACKUP, "The backup runs every day at 02:30 [#2].", "ops/backup.md", "Schedule"),
        (KEPT, "Daily snapshots are kept for 7 days.", "ops/backup.md", "Retention policy"),
        (KIMCHI, "중약불로 줄여 15분 끓입니다.", "korean/kimchi-jjigae.md", "끓이기"),
        (KIMCHI, "중약불로 줄여 15분 끓입니다 [#4].", "korean/kimchi-jjigae.md", "끓이기"),
    ],
)
async def test_a_sentence_with_no_or_the_wrong_marker_is_cited_by_kebab(
    server: ModelServer,
    make_ws: MakeWorkspace,
    question: str,
    reply: str,
    path: str,
    heading: str,
) -> None:
    server.answer(reply)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, question, explain=True)
    assert answer.grounded is True and answer.refusal_reason is None
    [c] = answer.citations
    assert (c.path, c.heading_path[-1], c.by) == (path, heading, "kebab")
    # the marker is kebab's, where the model's wrong one was
    assert re.sub(r" ?\[#\d+\]", "", answer.answer) == re.sub(r" ?\[#\d+\]", "", reply)
    assert f"[#{c.marker}]" in answer.answer and answer.answer.count("[#") == 1
    assert "[^kb-1]" in answer.markdown and answer.unsupported == []


@pytest.mark.parametrize(
    ("question", "reply", "invented", "warning"),
    [
        (KEPT, "Daily snapshots are kept for 20 days.", "20", "The notes do not support"),
        (KEPT, "Daily snapshots are kept for 20 days [#1].", "20", "The notes do not support"),
        (BACKUP, "Run `restic backup --all` at 02:30.", "restic backup --all", "The notes do"),
        (KIMCHI, "중약불로 37분 끓입니다.", "37", "노트가 이 답을 뒷받침하지 않습니다"),
    ],
)
async def test_a_value_no_passage_holds_is_never_grounded(
    server: ModelServer,
    make_ws: MakeWorkspace,
    question: str,
    reply: str,
    invented: str,
    warning: str,
) -> None:
    server.answer(reply)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, question)
    assert answer.grounded is False and answer.refusal_reason == "llm_self_judge"
    assert answer.citations == [] and answer.candidates  # the nearest passages stay
    assert invented in answer.unsupported
    assert (answer.refusal_text or "").startswith(warning) and invented in answer.refusal_text
    assert answer.markdown == f"> ⚠ {answer.refusal_text}\n\n{reply}\n"


async def test_a_supported_sentence_does_not_ground_made_up_ones_beside_it(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer("The backup runs at 02:30. Snapshots are kept for 20 days.")
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, BACKUP)
    assert answer.grounded is False and answer.unsupported[0] == "20"


async def test_an_unsupported_sentence_is_not_grounded(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer("The moon is made of green cheese and goes well with bread.")
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, BACKUP)
    assert answer.grounded is False and answer.citations == []
    assert answer.refusal_text == "The notes do not support this answer."


@pytest.mark.parametrize(
    ("question", "reply", "said"),
    [
        (KIMCHI, KIMCHI, "모델이 답하지 않고 질문을 되풀이했습니다."),
        (BACKUP, "What time does the nightly backup job run?", "The model repeated the question"),
    ],
)
async def test_an_echo_of_the_question_is_not_an_answer(
    server: ModelServer, make_ws: MakeWorkspace, question: str, reply: str, said: str
) -> None:
    server.answer(reply)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, question)
    assert answer.grounded is False and answer.refusal_reason == "llm_self_judge"
    assert (answer.refusal_text or "").startswith(said)
    assert answer.unsupported == [] and answer.citations == []  # "Not answered", not a warning


def test_the_cli_shows_an_unsupported_answer_under_a_warning_not_as_not_answered(
    server: ModelServer, fixture_copy: tuple[Path, Path]
) -> None:
    root, index_dir = fixture_copy[0], fixture_copy[1]
    server.answer("Daily snapshots are kept for 20 days.")
    run = kebab_ask(server, root, index_dir, KEPT)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    warning = "⚠ The notes do not support this answer. No passage holds: 20."
    assert out.startswith(f"{warning}\n\nDaily snapshots are kept for 20 days.\n")
    assert "Not answered" not in out and "Sources:" not in out
    assert "Closest passages:\n  ops/backup.md" in out


def test_the_cli_says_which_sources_kebab_cited(
    server: ModelServer, fixture_copy: tuple[Path, Path]
) -> None:
    root, index_dir = fixture_copy[0], fixture_copy[1]
    server.answer("The backup runs every day at 02:30.")
    run = kebab_ask(server, root, index_dir, BACKUP)
    assert run.returncode == 0, run.stderr
    assert "Not answered" not in run.stdout and "⚠" not in run.stdout
    # the model left no marker: its text is shown with kebab's, numbered as the sources are
    assert run.stdout.startswith("The backup runs every day at 02:30[1].\n")
    assert re.search(r"\[1\] ops/backup.md:\d+-\d+ .*Schedule  \(cited by kebab\)", run.stdout)


def kebab_ask(
    server: ModelServer, root: Path, index_dir: Path, question: str
) -> subprocess.CompletedProcess[str]:
    main = "import sys; from kebab.cli import main; sys.exit(main())"
    where = ["--root", str(root), "--index-dir", str(index_dir)]
    model = ["--backend", "openai", "--endpoint", server.url, "--model", "m"]
    return subprocess.run(
        [sys.executable, "-c", main, "ask", question, *where, *model],
        capture_output=True,
        text=True,
        timeout=120,
    )


# the rules on their own (words only: no embedder) -----------------------------------------------

SCHEDULE = Evidence(
    1,
    "ops/backup.md",
    ["Home server backups", "Schedule"],
    12,
    26,
    "The backup job runs **every day at 02:30** local time via a systemd timer "
    "(`restic-backup.timer`). A `restic check` runs every Sunday at 04:00.",
)
COOKING = Evidence(
    2, "cooking/sourdough.md", ["Baking"], 1, 5, "Bake at 230 degrees for 20 minutes."
)


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("It runs at 2:30.", True),  # 02:30
        ("A check runs on Sundays at 04:00.", True),
        ("The timer is `restic-backup.timer`.", True),
        ("It runs at 03:30.", False),
        ("The timer is `restic.timer`.", False),
        ("It runs on Mondays.", False),
        ("Snapshots are kept 20 days.", True),  # 20 is in the sourdough passage...
    ],
)
def test_values_are_held_when_some_packed_passage_holds_them(text: str, held: bool) -> None:
    assert (invented_values(text, [SCHEDULE, COOKING]) == []) is held


def test_a_value_held_by_an_unrelated_passage_is_not_attributed_to_it() -> None:
    # ...but no unit of that passage supports the sentence, so it is not cited
    att = attribute("Snapshots are kept 20 days.", [SCHEDULE, COOKING])
    assert att.by == {} and not att.grounded and att.unsupported


def test_markers_go_before_the_final_stop_and_pleasantries_are_not_claims() -> None:
    att = attribute("Sure! The backup job runs every day at 02:30 local time.", [SCHEDULE])
    assert att.text == "Sure! The backup job runs every day at 02:30 local time [#1]."
    assert att.by == {1: "kebab"} and att.grounded


def test_echoes() -> None:
    assert is_echo(KIMCHI, KIMCHI + " " + KIMCHI)
    assert not is_echo(KIMCHI, "중약불로 15분 끓입니다.")
    assert not is_echo("What does the zorblax frobnicate?", "The zorblax frobnicates quux.")

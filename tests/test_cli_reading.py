"""What a person reads in the terminal (issue 23): a note that holds questions is not the
answer, sources numbered as the editors number them, one refusal wording, history and search in
words, lists quoted as lists, and follow-ups led by their own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from kebab.cli import main
from llm_server import ModelServer

BACKUP = "What time does the nightly backup job run?"


@pytest.fixture
def where(fixture_copy: tuple[Path, Path]) -> list[str]:
    root, index_dir = fixture_copy
    (root / "Inbox.md").write_text(
        "# Inbox\n\nHow do I sync tasks with Todoist?\nMore notes below.\n", encoding="utf-8"
    )
    return ["--root", str(root), "--index-dir", str(index_dir)]


def ask(where: list[str], capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["ask", *args, *where]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("question", "head", "listed"),
    [
        ("Can I sync my tasks to Todoist?", "Not answered. ", "Nearest passages:\n"),
        # a Korean answer is not wrapped in English: the words around it are Korean too
        ("Todoist에 할 일을 동기화할 수 있나요?", "답하지 못했습니다. ", "가까운 구절:\n"),
    ],
)
def test_a_note_that_holds_the_question_is_not_the_answer(
    where: list[str], capsys: pytest.CaptureFixture[str], question: str, head: str, listed: str
) -> None:
    out = ask(where, capsys, question)
    assert out.startswith(head) and "Todoist" in out.split("\n")[0], out
    assert "More notes below. [" not in out and "Sources:" not in out
    nearest = out.split(listed)[1]
    assert "Inbox.md:1-4  Inbox" in nearest  # still shown: it is what was found
    assert ("Not answered" in out) == (head == "Not answered. ")


def test_a_continued_question_is_not_answered_from_the_note_that_asks_it(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    ask(where, capsys, BACKUP)
    out = ask(where, capsys, "And can I sync my tasks to Todoist?", "--continue")
    assert out.startswith("Not answered. "), out


def test_refusals_have_one_wording(where: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = ask(where, capsys, "Does Redis cache the sessions?")
    assert out.split("\n")[0] == "Not answered. The notes never mention: Redis."
    assert out.count("Redis") == 1  # said once, not streamed and said again


def test_a_single_source_is_1_as_in_the_editors(
    server: ModelServer, where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    server.answer("It runs ", "at 02:30 [#3].\nDaily [#3].")
    model = ["--backend", "openai", "--endpoint", server.url, "--model", "m"]
    out = ask(where, capsys, BACKUP, *model)
    assert out.startswith("It runs at 02:30[1].\nDaily[1].\n"), out
    assert "[#" not in out and "\nSources:\n  [1] " in out and "[2]" not in out


def test_history_says_in_words_what_became_of_each_question(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    ask(where, capsys, BACKUP)
    ask(where, capsys, "How long should croissant dough rest in the fridge?")  # only closest
    ask(where, capsys, "Does Redis cache the sessions?")  # no note names Redis
    assert main(["history", *where]) == 0
    listing = capsys.readouterr().out
    assert "extractive:extractive-v2  answered" in listing
    assert "extractive:extractive-v2  closest" in listing
    assert "extractive:extractive-v2  not answered" in listing
    assert "llm_self_judge" not in listing and "score_gate" not in listing


def _first_excerpt(
    where: list[str], capsys: pytest.CaptureFixture[str], path: str, text: str, query: str
) -> str:
    """The excerpt `kebab search` prints for its first hit, which must be the note `path`."""
    (Path(where[1]) / path).write_text(text, encoding="utf-8")
    assert main(["search", query, "-k", "1", *where]) == 0
    out = capsys.readouterr().out
    assert path in out, out
    return out.split("\n")[1].strip()


def test_search_prints_clean_excerpts(where: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    note = (
        "# Snippets\n\n<!-- snippet: parsnip-roast -->\n```sh\nroast --parsnips\n```\n\n"
        "Roast the _parsnips_ as in [[#Oven]] for **forty** minutes.\n"
    )
    excerpt = _first_excerpt(where, capsys, "tools/snippets.md", note, "roast parsnips")
    assert excerpt == "roast --parsnips Roast the parsnips as in Oven for forty minutes."


def test_an_excerpt_shows_code_as_written(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Tags and emphasis marks are Markdown in prose and code inside backticks or a fence: the
    keys `<Ctrl b><d>` and `__init__.py` were shown as nothing and as "init.py". An image is
    not text: a pasted screenshot's alt, "image", was shown as a word; nor is a block's
    `/// tip` marker. An autolink shows its address (it read "More: .")."""
    note = (
        "# Tmux keys\n\nDetach with `<Ctrl b><d>`, then edit `__init__.py` in <b>vim</b> now. "
        "More: <https://example.org/tmux>.\n\n"
        "![image](https://example.org/shot.png)\n\n/// tip | Tip\n\nList them with `tmux ls`.\n\n///\n\n"
        "```html\n<!-- quit -->\n# then\n<kbd>q</kbd>\n```\n"
    )
    excerpt = _first_excerpt(where, capsys, "tools/tmux.md", note, "tmux detach keys")
    assert excerpt == (
        "Detach with <Ctrl b><d>, then edit __init__.py in vim now. More: "
        "https://example.org/tmux. List them with tmux ls. "
        "# then <kbd>q</kbd>"  # a comment mid-excerpt keeps its `#`: without it, code
    )


def test_numbered_steps_are_quoted_as_a_list(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(where[1])
    (root / "tools" / "tasks.md").write_text(
        "# Tasks plugin\n\n## Enable the tasks plugin\n\nTo enable the tasks plugin in Obsidian:\n\n"
        "1. Open Obsidian **Settings**.\n2. Go to **Community plugins**.\n"
        "3. Turn on **Tasks**.\n",
        encoding="utf-8",
    )
    out = ask(where, capsys, "How do I enable the tasks plugin in Obsidian?")
    assert "To enable the tasks plugin in Obsidian:\n1. Open Obsidian **Settings**.\n" in out, out
    assert "2. Go to **Community plugins**.\n3. Turn on **Tasks**.[1]" in out
    assert ".;" not in out


def test_a_follow_up_that_says_what_it_asks_is_answered_as_if_asked_alone(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Where does the restic repository password live?"
    alone = ask(where, capsys, question)
    ask(where, capsys, BACKUP)
    follow = ask(where, capsys, question, "--continue")
    assert follow == alone and "/root/.restic-pass" in follow
    assert "02:30" not in follow  # the earlier answer's lines are not repeated
    # ...while one that leaves out what it is about still leans on the thread
    ask(where, capsys, BACKUP)
    unit = ask(where, capsys, "and which systemd unit starts it?", "--continue")
    assert "restic-backup.timer" in unit.split("\n\n")[0], unit


def test_filters_as_flags_and_as_words_and_a_filter_no_note_passes(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "backup", "--tag", "postgres", "--json", *where]) == 0
    out = capsys.readouterr().out
    assert '"ops/postgres.md"' in out and '"ops/backup.md"' not in out
    out = ask(where, capsys, "#ops path:ops/ when does the backup run?")
    assert "Only notes matching: path:ops/ #ops" in out and "ops/backup.md" in out, out
    assert main(["ask", "when?", "--where", "status=archived", *where]) == 1
    err = capsys.readouterr().err
    assert "no note matches the filter status=archived" in err, err

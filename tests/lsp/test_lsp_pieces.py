"""The front end's pure pieces, without a server: settings, params, the footnote resolver and
question detection."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from kebab import footnotes
from kebab.lsp import params, settings
from kebab.lsp.insert import question_at
from kebab.markdown import parse
from kebab.model import Citation, Range

SOURCE = (
    "\ufeff# Backups\r\n\r\nIntro line.\r\n\r\n## Schedule\r\n\r\nThe job runs at 02:30.\r\n"
    "It uses restic.\r\n\r\n## Retention\r\n\r\nSeven daily snapshots.\r\n"
)


def test_invalid_settings_are_dropped_one_by_one_and_named() -> None:
    raw = {
        "index_dir": "/tmp/i",
        "search": {"k": "many", "mode": "lexical"},
        "nope": 1,
        "llm": {"backend": "gpt-9"},
    }
    kept, problems = settings.clean(raw)
    assert kept == {"index_dir": "/tmp/i", "search": {"mode": "lexical"}, "llm": {}}
    assert [p.split("(setting ")[1] for p in problems] == [
        "`search.k` ignored)",
        "`nope` ignored)",
        "`llm.backend` ignored)",
    ]


def test_a_broken_kebab_toml_falls_back_to_the_client_settings(tmp_path: Path) -> None:
    (tmp_path / "kebab.toml").write_text("[search\nk = 3\n", encoding="utf-8")
    cfg, problems = settings.folder_config(tmp_path, {"search": {"k": 4}})
    assert cfg.search.k == 4
    assert problems and "kebab.toml" in problems[0]


def test_client_options_accept_a_kebab_section_or_the_settings_themselves() -> None:
    assert settings.client_options({"kebab": {"search": {"k": 3}}}) == {"search": {"k": 3}}
    assert settings.client_options({"search": {"k": 3}}) == {"search": {"k": 3}}
    assert settings.client_options(None) == {}


def test_params_come_back_from_pygls_namedtuples_and_errors_name_the_param() -> None:
    Obj = namedtuple("Obj", ["question", "history"])
    Turn = namedtuple("Turn", ["question", "answer"])
    p = params.ask_params(Obj("Why?", [Turn("a", "b")]))
    assert p.question == "Why?" and p.history[0].answer == "b"
    with pytest.raises(JsonRpcInvalidParams, match=r"`temperature`: expected `float` <= 2"):
        params.ask_params({"question": "Why?", "temperature": 7})
    with pytest.raises(JsonRpcInvalidParams, match=r"missing required param `history\[0\].answer`"):
        params.ask_params({"question": "Why?", "history": [{"question": "q"}]})


def cite_chunk(root: Path, heading: str) -> footnotes.Definition:
    """A definition written the way an answer writes it, for the chunk under `heading`."""
    chunk = next(c for c in parse("ops/backup.md", SOURCE).chunks if c.heading_path[-1] == heading)
    citation = Citation(
        marker=1,
        path=chunk.path,
        uri="",
        heading_path=chunk.heading_path,
        range=Range({}, {}),
        chunk_id=chunk.id,
        content_hash=chunk.content_hash,
        score=1.0,
        text=chunk.text,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
    )
    line = footnotes.definition_line("kb-1", citation, "inbox/note.md")
    (d,) = footnotes.definitions(f"A fact.[^kb-1]\n\n{line}\n", "inbox/note.md")
    return d


def read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def test_a_cited_passage_hashes_the_way_the_chunker_hashed_it(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    source = tmp_path / "ops" / "backup.md"
    source.write_bytes(SOURCE.encode("utf-8"))  # BOM and CRLF, as some editors save
    d = cite_chunk(tmp_path, "Schedule")
    fresh = footnotes.resolve(tmp_path, d, read)
    assert fresh.state == "fresh" and fresh.text.startswith("## Schedule")

    source.write_bytes(SOURCE.replace("Intro line.", "Intro line.\r\nOne more line.").encode())
    moved = footnotes.resolve(tmp_path, d, read)
    assert moved.state == "moved"
    assert (moved.start_line, moved.end_line) == (d.start_line + 1, d.end_line + 1)

    source.write_bytes(SOURCE.replace("02:30", "03:30").encode())
    changed = footnotes.resolve(tmp_path, d, read)
    assert changed.state == "changed" and "03:30" in changed.text

    source.write_text("# Backups\n", encoding="utf-8")
    assert footnotes.resolve(tmp_path, d, read).state == "missing"
    source.unlink()
    gone = footnotes.resolve(tmp_path, d, read)
    assert gone.state == "missing" and "no longer exists" in gone.reason


@pytest.mark.parametrize(
    ("lines", "at", "question", "line"),
    [
        (["# T", "", "- [ ] When does it run?", "next"], (2, 3), "When does it run?", 2),
        (["# T", "", "Not a question.", ""], (2, 0), None, 0),
        (
            ["> [!question] How much pork?", "> for two people", "", "x"],
            (1, 2),
            "How much pork?",
            1,
        ),
        (
            ["> [!question]", "> How much pork", "> for two?", "after"],
            (0, 0),
            "How much pork for two?",
            2,
        ),
        (["Tell me about restic backups please", ""], None, "restic backups", 0),
        # front matter, code and HTML are written verbatim: an answer there would become them
        (["---", "summary: Why do we back up?", "---", "# T"], (1, 3), None, 0),
        (["# T", "", "```sh", 'read -p "Continue?" ok', "is it up?", "```"], (4, 0), None, 0),
        (["# T", "", "    is it up?", "", "text"], (2, 6), None, 0),
        (["# T", "", "- a list item:", "", "  ```", "  done?", "  ```"], (5, 3), None, 0),
        (["<details>", "Why?", "</details>"], (1, 0), None, 0),
        (["> ```", "> Why?", "> ```"], (1, 0), None, 0),
        (["- ```sh", "  Why?", "  ```"], (1, 0), None, 0),
        (["<!--", "", "Why?", "", "-->"], (2, 0), None, 0),
        (["---", "title: T", "---", "", "Why do we back up?"], (4, 0), "Why do we back up?", 4),
    ],
)
def test_questions_are_lines_ending_in_a_question_mark_callouts_or_selections(
    lines: list[str], at: tuple[int, int] | None, question: str | None, line: int
) -> None:
    if at is None:  # a selection of "restic backups"
        start = lines[0].index("restic")
        found = question_at(lines, (0, start), (0, start + len("restic backups")))
    else:
        found = question_at(lines, at, at)
    assert (found.text if found else None) == question
    if found:
        assert found.line == line


def test_a_selection_too_long_to_ask_offers_no_answer() -> None:
    """A whole long note selected (past the 20,000 characters a question may hold) is no
    question: the action is not offered, rather than failing once the answer has begun."""
    lines = ["Why does the backup fail? " * 40] * 30
    assert question_at(lines, (0, 0), (29, len(lines[29]))) is None
    assert question_at(lines[:3], (0, 0), (2, len(lines[2]))) is not None


NOTE_LINES = [
    "# 주간 점검",  # 0
    "",  # 1
    "매주 월요일에 백업 로그를 확인한다.",  # 2
    "I check the restic logs every Monday.",  # 3
    "매주 백업은 몇 시에 돌아가?",  # 4
    "## Notes",  # 5
    "## Why restic?",  # 6
    "Answered before.[^kb-1]",  # 7
    '[^kb-1]: [Backups › Schedule](../ops/backup.md#schedule "kb:1a2b3c4d5e6f") L12–L23',  # 8
    "[^1]: Is this one mine?",  # 9
]


def _word(line: int, word: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The range eglot sends for the word at point (the bounds of the sexp there)."""
    start = NOTE_LINES[line].index(word)
    return (line, start), (line, start + len(word))


@pytest.mark.parametrize(
    ("where", "question"),
    [
        (_word(4, "매주"), "매주 백업은 몇 시에 돌아가?"),  # a word of a question: its line
        (_word(4, "돌아가?"), "매주 백업은 몇 시에 돌아가?"),
        (_word(2, "매주"), None),  # a word of a statement: nothing to ask
        (_word(3, "I"), None),
        (_word(8, "L12–L23"), None),  # the end of a footnote definition
        (((8, 0), (8, len(NOTE_LINES[8]))), None),  # the whole definition, selected
        (((9, 3), (9, 3)), None),  # a definition that ends in "?" is still a definition
        (_word(5, "Notes"), None),  # a heading
        (((5, 0), (6, 0)), None),  # the heading line, selected
        (_word(6, "restic?"), "Why restic?"),  # a heading that asks
        (((1, 0), (1, 0)), None),  # an empty line
        (((1, 0), (2, 0)), None),  # the empty line, selected whole
        (((3, 2), (3, 23)), "check the restic logs"),  # words selected are asked as they are
    ],
)
def test_a_range_inside_one_word_asks_its_line_and_only_a_line_that_can_ask(
    where: tuple[tuple[int, int], tuple[int, int]], question: str | None
) -> None:
    found = question_at(NOTE_LINES, *where)
    assert (found.text if found else None) == question

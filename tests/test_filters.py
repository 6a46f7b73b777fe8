"""Filters as a person writes them (issue 29, item 1): at the start of a question, or as
flags; a note passes on its path, its tags and its front matter, dates compared as dates."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from kebab.errors import InvalidParams, NothingMatches
from kebab.filters import Filters, build, from_question
from kebab.model import AskRequest


def test_filter_words_at_the_start_of_a_question_are_taken_off_it() -> None:
    filters, question = from_question("#ops path:infra/ status=draft how do I restore?")
    assert question == "how do I restore?"
    assert filters.path_glob == "infra/"
    assert filters.tags == ("ops",)
    assert [str(c) for c in filters.where] == ["status=draft"]
    assert str(filters) == "path:infra/ #ops status=draft"


@pytest.mark.parametrize(
    "question",
    [
        "how do I set max_age=3600 in the cookie?",  # `=` later in the question is asked about
        "what does #include do in C?",
        "#1 priority for the week?",  # a number is not a tag
        "#ops",  # nothing but filter words: that is the question
        "도커 캐시 비우는 명령?",
    ],
)
def test_words_that_only_look_like_filters_stay_in_the_question(question: str) -> None:
    assert from_question(question) == (Filters(), question)


def test_a_korean_question_keeps_its_filter_words_apart() -> None:
    filters, question = from_question("#docker tag:트러블슈팅 캐시 비우는 명령 뭐였지?")
    assert filters.tags == ("docker", "트러블슈팅")
    assert question == "캐시 비우는 명령 뭐였지?"


def test_a_note_passes_on_path_tags_and_front_matter() -> None:
    f = build("infra/**", ["#Ops"], ["status=Draft", "reviewed>=2024-03-01", "priority<=2"])
    fields: dict[str, object] = {
        "status": "draft",
        "reviewed": datetime.date(2024, 3, 15),
        "priority": 2,
    }
    assert f.allows("infra/backup.md", ["ops", "backup"], fields)
    assert not f.allows("home/backup.md", ["ops"], fields)  # path
    assert not f.allows("infra/backup.md", ["backup"], fields)  # tag
    assert not f.allows("infra/backup.md", ["ops"], {**fields, "reviewed": "2024-02-28"})
    assert not f.allows("infra/backup.md", ["ops"], {**fields, "priority": 10})  # 10 > 2
    assert not f.allows("infra/backup.md", ["ops"], {"reviewed": "2024-04-01", "priority": 1})


def test_a_list_field_matches_any_item_and_not_equal_needs_none() -> None:
    assert build(where=["aliases=Backups"]).allows("a.md", [], {"aliases": ["nightly", "backups"]})
    assert not build(where=["status!=draft"]).allows("a.md", [], {"status": "Draft"})
    assert build(where=["status!=draft"]).allows("a.md", [], {})
    assert build(where=["publish=true"]).allows("a.md", [], {"publish": True})


def test_a_malformed_condition_is_an_error_that_shows_how_to_write_one() -> None:
    with pytest.raises(InvalidParams, match=r"key=value.*status=draft"):
        build(where=["status"])


# over an index ---------------------------------------------------------------------------------


def _with_front_matter(root: Path) -> None:
    """Two notes gain fields a person filters on: a status and a review date."""
    for rel, fields in (
        ("ops/backup.md", "status: draft\nreviewed: 2024-03-15\n"),
        ("ops/postgres.md", "status: done\nreviewed: 2023-11-02\n"),
    ):
        path = root / rel
        path.write_text(
            path.read_text(encoding="utf-8").replace("---\n", f"---\n{fields}", 1),
            encoding="utf-8",
        )


def test_search_keeps_the_notes_whose_front_matter_passes(
    fixture_workspace: Path, open_workspace: Any
) -> None:
    _with_front_matter(fixture_workspace)
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    assert {h.path for h in ws.search("port", k=10, where=["status=done"])} == {"ops/postgres.md"}
    assert {h.path for h in ws.search("reviewed>=2024-01-01 port backup", k=10)} == {
        "ops/backup.md"
    }
    with pytest.raises(NothingMatches, match="status=archived"):
        ws.search("port", where=["status=archived"])


async def test_an_answer_is_limited_to_the_filter_and_says_so(
    fixture_workspace: Path, open_workspace: Any
) -> None:
    _with_front_matter(fixture_workspace)
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    answer = await ws.ask(AskRequest(question="#ops status=done which port does it listen on?"))
    assert answer.question == "which port does it listen on?"
    assert answer.filters == "#ops status=done"
    cited = answer.citations or answer.candidates
    assert cited and {c.path for c in cited} == {"ops/postgres.md"}, answer.answer
    with pytest.raises(NothingMatches, match=r"no note matches the filter path:cooking/\*\* #ops"):
        await ws.ask(AskRequest(question="what port?", path_glob="cooking/**", tags=["ops"]))


def test_a_hashtag_no_note_carries_is_the_questions_own_word() -> None:
    """ "#task 태그가 붙은 항목만…" asks about the #task tag: it filters only when notes carry it."""
    question = "#task 태그가 붙은 체크리스트 항목만 작업으로 인식하게 하려면?"
    assert from_question(question, {"ops", "backup"}) == (Filters(), question)
    filters, rest = from_question("#ops tag:backup path:infra/ restore?", {"ops"})
    assert (filters.tags, filters.path_glob, rest) == (("ops", "backup"), "infra/", "restore?")


CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "obsidian-tasks"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpora/obsidian-tasks is not here")
def test_obsidian_tasks_front_matter_filters_as_a_grep_finds_it() -> None:
    """Over a real vault: `publish=true` passes exactly the notes whose front matter says
    `publish: true` (a grep of the front matter), and an alias filters by any item of a list."""
    from kebab.markdown import parse

    grep, passed, aliased = set(), set(), set()
    alias_ok = 0
    for path in CORPUS.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(CORPUS).as_posix()
        head = text.split("\n---", 1)[0] if text.startswith("---\n") else ""
        if any(line.strip() == "publish: true" for line in head.split("\n")):
            grep.add(rel)
        note = parse(rel, text)
        if build(where=["publish=true"]).allows(rel, note.tags, note.fields):
            passed.add(rel)
        aliases = note.fields.get("aliases")
        if isinstance(aliases, list) and aliases:
            aliased.add(rel)
            last = f"aliases={aliases[-1]}"
            alias_ok += build(where=[last]).allows(rel, note.tags, note.fields)
    assert len(grep) > 50 and passed == grep
    assert aliased and alias_ok == len(aliased)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpora/obsidian-tasks is not here")
async def test_obsidian_tasks_searched_and_asked_within_a_filter(
    tmp_path: Path, open_workspace: Any
) -> None:
    """The filters over a real vault's index (read, not embedded: lexical search and the
    quoting answerer need no stored vectors): every hit and citation passes the filter."""
    ws = open_workspace(CORPUS, index_dir=tmp_path / "index")
    ws.sync()
    published = {p for p, d in ws.index.store.documents().items() if d.fields.get("publish")}
    hits = ws.search("recurring task", k=20, mode="lexical", where=["publish=true"])
    assert hits and {h.path for h in hits} <= published
    inside = ws.search("path:Queries/ sort by due date", k=10, mode="lexical")
    assert inside and all(h.path.startswith("Queries/") for h in inside)
    answer = await ws.ask(
        AskRequest(
            question="How do I sort tasks by due date?", path_glob="Queries/**", mode="lexical"
        )
    )
    assert answer.filters == "path:Queries/**"
    assert all(c.path.startswith("Queries/") for c in answer.citations + answer.candidates)

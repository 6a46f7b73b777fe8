"""Three outcomes a person can trust (issue 26): `answered` when a quoted unit holds what was
asked, `closest` (the passages, no claim) when search found the topic but not the thing asked,
`not_answered` when the notes have nothing; and for a note that describes a problem, the fix is
quoted, not the symptom. Over real notes, the real index and the embedded model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import MakeWorkspace
from kebab import text
from kebab.model import Hit
from kebab.rag import outcome
from kebab.rag.retrieval import with_fixes
from kebab.workspace import Workspace
from llm_server import ask

NOTES = {
    "docker/cache.md": (
        "## 문제\n"
        "- 도커 이미지 빌드할 때마다 예전 캐시 데이터가 쌓여서 디스크가 꽉 차는 문제\n\n"
        "## 해결\n"
        "- `docker system prune -a` 로 안 쓰는 이미지와 빌드 캐시를 한 번에 지운다\n"
    ),
    "git/tags.md": (
        "## Problem\n"
        "`git fetch` fails with `! [rejected] v1.2 -> v1.2 (would clobber existing tag)` after "
        "someone deleted a tag on the remote and pushed it again.\n\n"
        "## Fix\n"
        "Overwrite the local tags with the remote ones: `git fetch --tags --force`.\n"
    ),
    "ops/trash.md": (
        "# Emptying the trash on the NAS\n\n"
        "Deleted files sit in `/volume1/#recycle` for 30 days. To empty it by hand, run "
        "`synoshare --recycle-clean all` as root.\n"
    ),
    "ops/backup.md": (
        "# Nightly backup\n\n"
        "The backup job runs every day at 02:30 through a systemd timer, "
        "`restic-backup.timer`. Snapshots are kept for 7 days.\n"
    ),
}


@pytest.fixture
def notes_ws(make_ws: MakeWorkspace, tmp_path: Path) -> Workspace:
    return make_ws(root=tmp_path / "notes", notes=NOTES)


async def test_a_question_the_notes_answer_is_answered_and_cited(notes_ws: Workspace) -> None:
    answer = await ask(notes_ws, "what time does the nightly backup start?")
    assert answer.outcome == "answered" and answer.grounded, answer.answer
    assert "02:30" in answer.answer
    assert answer.citations and answer.citations[0].path == "ops/backup.md"


async def test_a_stricter_answered_at_makes_the_same_answer_closest(
    make_ws: MakeWorkspace, tmp_path: Path
) -> None:
    """`rag.answered_at` is how sure the quote must be: the same question, the same notes,
    answered at the default and only listed (the same note first) when the bar is higher than
    its confidence."""
    question = "what time does the nightly backup start?"
    sure = await ask(make_ws(root=tmp_path / "a", notes=NOTES), question, explain=True)
    assert sure.outcome == "answered", sure.answer
    confidence = sure.explain["outcome"]["confidence"]
    strict = make_ws(
        root=tmp_path / "b", notes=NOTES, rag={"answered_at": min(confidence + 0.01, 1.0)}
    )
    unsure = await ask(strict, question)
    assert unsure.outcome == "closest" and not unsure.grounded, unsure.answer
    # what it would have quoted comes first, every passage of it, in the order it quoted them
    quoted = list(dict.fromkeys(c.chunk_id for c in sure.citations))
    assert [c.chunk_id for c in unsure.candidates][: len(quoted)] == quoted, unsure.candidates
    assert [c.path for c in unsure.candidates][:1] == ["ops/backup.md"]


def test_answered_at_outside_zero_to_one_is_an_error_naming_it(tmp_path: Path) -> None:
    from kebab.config import load
    from kebab.errors import ConfigError

    (tmp_path / "kebab.toml").write_text("[rag]\nanswered_at = 1.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="answered_at"):
        load(tmp_path, env={})


async def test_the_fix_is_quoted_not_the_symptom_the_question_describes(
    notes_ws: Workspace,
) -> None:
    """The question describes the error (what the `## Problem` section says); the answer is
    what the `## Fix` section says, found and quoted even when search ranked the problem first."""
    answer = await ask(
        notes_ws,
        "fetching from the remote gets rejected because it would clobber an existing tag. "
        "what do I run?",
    )
    assert "git fetch --tags --force" in answer.answer, answer.answer
    assert "would clobber" not in answer.answer
    korean = await ask(notes_ws, "도커 빌드 캐시가 계속 쌓여서 디스크가 꽉 찼어. 어떻게 비워?")
    assert "docker system prune -a" in korean.answer + " ".join(
        c.text for c in korean.candidates
    ), korean.answer


async def test_a_near_miss_gets_the_closest_passages_and_no_claim(notes_ws: Workspace) -> None:
    """The notes cover the trash, not restoring from it: the closest passage is shown, under a
    sentence that says it may not answer, and nothing is quoted as the answer."""
    answer = await ask(notes_ws, "how do I get back a file I deleted from the NAS by mistake?")
    assert answer.outcome in ("closest", "answered")
    if answer.outcome == "closest":
        assert not answer.grounded and answer.citations == []
        assert "synoshare" not in answer.answer, "no claim is quoted as the answer"
        assert answer.refusal_text and answer.answer.strip() == answer.refusal_text
        assert answer.candidates[0].path == "ops/trash.md"
        assert 1 < len(answer.candidates) <= 5


async def test_a_name_no_note_holds_is_not_answered(notes_ws: Workspace) -> None:
    answer = await ask(notes_ws, "What port does Redis listen on?")
    assert answer.outcome == "not_answered" and not answer.grounded
    # the name first, then the other words the notes lack (these notes say nothing of ports)
    assert answer.refusal_text == "The notes never mention: Redis, port, listen."


async def test_the_start_of_an_identifier_a_note_holds_is_no_unknown_name(
    make_ws: MakeWorkspace, tmp_path: Path
) -> None:
    """ "Methods starting with deleteBy" asks about `deleteByCardInfo`, which the index keeps
    as one word: the notes do mention it."""
    ws = make_ws(
        root=tmp_path / "notes",
        notes={
            **NOTES,
            "spring/jpa-delete.md": "## Problem\nA derived delete query removes nothing.\n\n"
            "## Fix\nDerived delete queries need a transaction: annotate the service method "
            "with `@Transactional` before calling `cardRepository.deleteByCardInfo(info)`.\n",
        },
    )
    answer = await ask(ws, "My Spring repository method that starts with deleteBy deletes nothing")
    assert answer.outcome != "not_answered", answer.answer
    assert "deleteBy" not in (answer.refusal_text or ""), answer.refusal_text
    assert answer.candidates[0].path == "spring/jpa-delete.md"
    answer = await ask(ws, "How do I call findByEmail on the repository?")
    # `repository` too: the index keeps `cardRepository` as one word, and only a camelCase
    # word's start is read as held (`Index._camel_prefixes_held`)
    why = answer.refusal_text or ""
    assert why.startswith("The notes never mention: findByEmail"), answer.answer


async def test_a_name_no_note_holds_beside_names_it_holds_is_a_detail_not_nothing(
    make_ws: MakeWorkspace, tmp_path: Path
) -> None:
    """A terse fix note names `ScriptManager` and the reference to add, never ".NET": the
    asker's setup is a detail, and the note comes closest (not "nothing in the notes"). A
    question whose only name no note holds is still not answered."""
    ws = make_ws(
        root=tmp_path / "notes",
        notes={
            **NOTES,
            "webforms/missing-types.md": "## Problem\n- The build says `ScriptManager` and "
            "`UpdatePanel` cannot be found.\n\n## Fix\n- Project > Add Reference\n"
            "- add `System.Web.Extensions`\n",
        },
    )
    answer = await ask(
        ws, "My .NET web forms build breaks because ScriptManager is unknown. What do I add?"
    )
    assert answer.outcome != "not_answered", answer.answer
    assert answer.candidates[0].path == "webforms/missing-types.md"
    answer = await ask(ws, "How do I install the .NET SDK?")
    assert answer.outcome == "not_answered", answer.answer
    assert answer.refusal_text == "The notes never mention: NET, SDK.", answer.refusal_text


async def test_a_name_no_note_holds_in_a_question_the_notes_match_gets_the_closest(
    notes_ws: Workspace,
) -> None:
    """The notes cover the nightly backup, not Kopia: the backup note is near in meaning, so it
    is shown as the closest passage (not "nothing in the notes"), and nothing is quoted as the
    answer, since no passage can hold the thing named."""
    answer = await ask(notes_ws, "When does the nightly Kopia backup job run?")
    assert answer.outcome == "closest" and not answer.grounded and answer.citations == []
    assert "Kopia" in (answer.refusal_text or "")
    assert answer.candidates[0].path == "ops/backup.md"
    assert "02:30" not in answer.answer  # listed, never claimed


def test_confidence_grows_with_what_the_quoted_unit_holds() -> None:
    """The fitted weights read the figures the right way round: a unit close in meaning that
    holds the question's words is surer than one that shares only the
    topic, from passages likelier to hold the answer (`lead`), and a missing name lowers it."""
    strong = {"cosine": 0.7, "cover": 0.8, "margin": 0.3, "shape": 1.0, "lead": 0.9}
    weak = {"cosine": 0.3, "cover": 0.2, "margin": 0.0, "lead": 0.3}
    assert outcome.confidence(strong) > outcome.ANSWERED_AT > outcome.confidence(weak)
    assert outcome.after_quoting(strong) == "answered"
    assert outcome.after_quoting(weak) == "closest"
    assert outcome.confidence({**strong, "names_missing": 1.0}) < outcome.confidence(strong)
    assert outcome.after_quoting({}) == "closest", "nothing quoted is never an answer"


@pytest.mark.parametrize("k", [6, 10])
async def test_how_sure_the_quote_is_does_not_move_with_how_many_passages_are_asked_for(
    make_ws: MakeWorkspace, k: int
) -> None:
    """A near miss over the fixture's sourdough note (croissant, dough and rest are in no note)
    comes closest whatever `search.k` is: the quote's likelihood is shared among the likeliest
    passages, not among all that were packed, and half a question's words in no note at all
    is a thing the notes lack. The same settings answer what the sourdough note does hold."""
    ws = make_ws(search={"k": k})
    near = await ask(ws, "How long should croissant dough rest in the fridge?")
    assert near.outcome == "closest" and not near.grounded, near.answer
    assert near.candidates and near.candidates[0].path == "cooking/sourdough.md"
    held = await ask(ws, "How long does the sourdough bulk ferment, and at what temperature?")
    assert held.outcome == "answered", held.answer
    assert "5 hours" in held.answer and "24 °C" in held.answer


def test_a_quote_that_holds_no_word_of_the_question_needs_its_meaning_close() -> None:
    """Sure of its passage, the asked-for shape held, and not one word of the question in the
    quote: it stands on its meaning alone, which must be as close as a question with a word no
    note holds needs (`unknown_word_cosine`)."""
    sure = {"lead": 1.0, "cosine": 0.3, "cover": 0.0, "asks_shape": 1.0, "shape": 1.0}
    assert outcome.confidence(sure) >= outcome.ANSWERED_AT
    assert outcome.after_quoting(sure) == "answered"  # no cosine to hold it to
    assert outcome.after_quoting(sure, wordless_cos=0.5) == "closest"
    assert outcome.after_quoting({**sure, "cosine": 0.6}, wordless_cos=0.5) == "answered"
    assert outcome.after_quoting({**sure, "cover": 0.2}, wordless_cos=0.5) == "answered"
    # in the other language, the words held are the glossary's: `마리아DB` of a note on MariaDB
    assert outcome.after_quoting({**sure, "other_language": 1.0}, wordless_cos=0.5) == "answered"


async def test_a_korean_question_on_nothing_the_notes_hold_is_not_answered_from_a_recipe(
    make_ws: MakeWorkspace,
) -> None:
    """ "How many times a day do I feed the cat?" of the sample notes was answered with the
    kimchi stew's steps: a number asked, numbers in the steps, the one Korean note found; no
    word of the question in them."""
    ws = make_ws()
    answer = await ask(ws, "고양이 사료는 하루에 몇 번 줘?")
    assert answer.outcome != "answered" and not answer.grounded, answer.answer
    assert "쌀뜨물" not in answer.answer and answer.lang == "ko"


async def test_a_question_with_a_word_no_note_holds_is_not_answered_by_a_quote_far_from_it(
    make_ws: MakeWorkspace,
) -> None:
    """ "How many vacation days do I get per year?" of the sample notes quoted the backup
    retention table: days and numbers, the asked-for shape, far from the question in meaning
    and lacking the word it is about, which no note holds. The same quote figures close in
    meaning are an answer."""
    ws = make_ws()
    answer = await ask(ws, "How many vacation days do I get per year?")
    assert answer.outcome == "closest" and not answer.grounded, answer.answer
    assert "vacation" in answer.refusal_text, answer.refusal_text
    assert "--keep-daily" not in answer.answer
    far = {"lead": 1.0, "cosine": 0.2, "cover": 0.5, "asks_shape": 1.0, "shape": 1.0}
    assert outcome.after_quoting({**far, "unknown_share": 0.5}) == "answered"  # no cosine bar
    assert outcome.after_quoting({**far, "unknown_share": 0.5}, wordless_cos=0.5) == "closest"
    assert outcome.after_quoting(far, wordless_cos=0.5) == "answered"
    near = {**far, "cosine": 0.45, "unknown_share": 0.12}
    assert outcome.after_quoting(near, wordless_cos=0.5) == "answered"


async def test_a_korean_question_naming_an_english_notes_dish_as_it_sounds_is_not_refused(
    make_ws: MakeWorkspace,
) -> None:
    """ "What goes into shakshuka?" in Korean (`샥슈카`, as the word sounds) of the sample
    notes: search finds the note by the loanword, and weak in meaning across the languages, the
    question held none of its words by its Korean bigrams alone: it was not answered at all."""
    answer = await ask(make_ws(), "샥슈카에 뭐 들어가?")
    assert answer.outcome != "not_answered", answer.refusal_text
    found = answer.citations or answer.candidates
    assert found and found[0].path == "cooking/shakshuka.md"


def test_the_share_of_a_question_no_note_holds_counts_its_content_words() -> None:
    question = "How long should croissant dough rest in the fridge?"
    share = outcome.unknown_share(question, ["croissant", "dough", "rest"])
    assert share == pytest.approx(3 / 5)  # long, croissant, dough, rest, fridge
    assert outcome.after_quoting({"lead": 1.0, "cosine": 1.0, "unknown_share": share}) == "closest"
    assert outcome.unknown_share("what time does the nightly backup start?", ["time"]) == 0.25


async def test_closest_lists_one_passage_per_note_before_a_second_of_any(
    make_ws: MakeWorkspace,
) -> None:
    """Five excerpts of five notes reach the note a person half-remembers more often than five
    of two: a long note whose every section is near the question does not fill the list. The
    first note shows a second passage right after its first."""
    sections = "\n\n".join(
        f"## Proofing step {i}\n\nLet the bread dough proof {i} hours in a warm spot before baking."
        for i in range(1, 7)
    )
    ws = make_ws(notes={"cooking/proofing.md": f"# Proofing bread\n\n{sections}\n"})
    near = await ask(ws, "How long should croissant dough rest in the fridge?")
    assert near.outcome == "closest", near.answer
    paths = [c.path for c in near.candidates]
    assert len(paths) == 5, paths
    distinct = len(set(paths))
    if paths[1] == paths[0]:
        paths = paths[:1] + paths[2:]
    assert paths[:distinct] == list(dict.fromkeys(paths)), paths  # every other note once, first
    assert distinct >= 3, paths


async def test_closest_lists_a_second_passage_of_the_first_note_right_after_it(
    make_ws: MakeWorkspace,
) -> None:
    """When the first passage of the note that matches best is not the one asked about, the
    next often is: a person sees both before the other notes."""
    notes = {
        **NOTES,
        "ops/backup.md": "# Nightly backup\n\n## Schedule\n\nThe backup job runs every day at "
        "02:30 through a systemd timer.\n\n## Retention\n\nDaily snapshots are kept for 7 "
        "days and weekly ones for 4 weeks.\n",
    }
    ws = make_ws(notes=notes, rag={"answered_at": 1.0})
    near = await ask(ws, "How long do we hold on to the nightly backups?")
    assert near.outcome == "closest", near.answer
    listed = [(c.path, c.heading_path[-1]) for c in near.candidates]
    assert sorted(listed[:2]) == [("ops/backup.md", "Retention"), ("ops/backup.md", "Schedule")]
    assert len(listed) == 5 and len({p for p, _ in listed[2:]}) == 3, listed


TROUBLES = {
    f"troubles/{name}.md": f"## 문제\n\n{problem}\n\n## 해결\n\n{fix}\n"
    for name, problem, fix in [
        (
            "compose-name",
            "도커 컴포즈로 올리면 컨테이너 이름 앞에 상위 폴더 이름이 자동으로 붙는다.",
            "실행할 때 `-p` 옵션으로 프로젝트 이름을 직접 지정한다.",
        ),
        (
            "compose-network",
            "도커 컴포즈로 올린 컨테이너끼리 서로 이름으로 접속이 안 된다.",
            "두 서비스를 같은 `networks:` 항목에 넣는다.",
        ),
        (
            "compose-volume",
            "도커 컴포즈 볼륨에 넣은 파일이 컨테이너 안에서 보이지 않는다.",
            "볼륨 경로를 `./data:/app/data`처럼 상대 경로로 적는다.",
        ),
    ]
}


async def test_a_question_describing_a_problem_is_answered_with_its_fix(
    make_ws: MakeWorkspace,
) -> None:
    """The question restates the note's problem nearly word for word; the answer is the fix
    under it, said with the confidence the problem's match gives (the problem was quoted)."""
    ws = make_ws(notes=TROUBLES)
    answer = await ask(
        ws, "도커 컴포즈 컨테이너 이름 앞에 폴더 이름이 자동으로 붙는데 어떻게 바꿔?"
    )
    assert answer.outcome == "answered", answer.answer
    assert "`-p` 옵션" in answer.answer, answer.answer
    assert "자동으로 붙는다" not in answer.answer, answer.answer
    assert [c.path for c in answer.citations] == ["troubles/compose-name.md"]


async def test_closest_lists_a_notes_fix_before_the_problem_it_resolves(
    make_ws: MakeWorkspace,
) -> None:
    """A question that describes a problem matches the note's problem section best; what a
    person needs from the listing is the section that resolves it, listed first for its note."""
    ws = make_ws(notes=TROUBLES)
    near = await ask(ws, "도커 컴포즈 컨테이너의 시간대를 한국 시간으로 맞추려면?")
    assert near.outcome == "closest", near.answer
    listed = [(c.path, c.heading_path[-1]) for c in near.candidates if c.path in TROUBLES]
    assert len({p for p, _ in listed}) == 3, listed
    for path in TROUBLES:
        assert next(h for p, h in listed if p == path) == "해결", listed


def test_a_problems_fix_found_further_down_is_moved_right_after_it(
    make_ws: MakeWorkspace,
) -> None:
    """Search found the note's fix eighth, below the other notes' problems, whose fixes are
    brought along right after them: it fell past the evidence's end, and the note whose
    problem matched best was listed by its error message alone."""
    ws = make_ws(notes=TROUBLES)
    sections = {
        (c.path.split("/")[-1], c.heading_path[-1]): c
        for path in TROUBLES
        for _, c in ws.index.store.chunks_of(path)
    }

    def hit(name: str, heading: str, score: float) -> Hit:
        c = sections[(f"{name}.md", heading)]
        return Hit(c.id, c.path, c.heading_path, c.start_line, c.end_line, c.text, "", score)

    found = [
        hit("compose-name", "문제", 0.9),
        hit("compose-network", "문제", 0.7),
        hit("compose-volume", "문제", 0.6),
        hit("compose-name", "해결", 0.5),
    ]
    order = [(h.path.split("/")[-1], h.heading_path[-1]) for h in with_fixes(ws.index, found)]
    assert order == [
        ("compose-name.md", "문제"),
        ("compose-name.md", "해결"),
        ("compose-network.md", "문제"),
        ("compose-network.md", "해결"),
        ("compose-volume.md", "문제"),
        ("compose-volume.md", "해결"),
    ], order


DML = (
    "## 문제\n\n"
    "- JPQL로 삭제 쿼리를 작성해 실행하면 `Not supported for DML operations [DELETE ...` "
    "예외가 난다.\n\n"
    "## 해결\n\n"
    "- 리포지토리 메서드에 `@Modifying`을 붙인다\n"
    "- 서비스 메서드에 `@Transactional`을 붙인다\n\n"
    "```java\n"
    "@Modifying\n"
    '@Query("DELETE FROM Post p WHERE p.createdAt < :cutoff")\n'
    'void deleteOlderThan(@Param("cutoff") LocalDateTime cutoff);\n'
    "```\n"
)


async def test_a_fix_is_answered_with_the_confidence_its_problems_match_gives(
    make_ws: MakeWorkspace,
) -> None:
    """The question describes the error; the fix under it shares few of its words. How near the
    question the quote is comes from the problem it resolves (was `closest` at 0.45)."""
    ws = make_ws(notes={"troubles/jpql-delete.md": DML, **TROUBLES})
    answer = await ask(
        ws, "@Query에 DELETE 문을 JPQL로 써서 돌렸더니 DML 작업은 지원 안 한다고 예외가 나요"
    )
    assert answer.outcome == "answered", answer.answer
    assert "`@Modifying`" in answer.answer and "Not supported" not in answer.answer


def test_closest_lists_the_passages_the_quote_would_have_held_first() -> None:
    """The quote's second passage (from another note, nearly as likely to hold the answer) is
    part of what it would have said: listed right after its first, not after every note
    search ranked above it. Answerable `closest` questions on seven corpora: the passage
    holding the key facts listed 0.752 -> 0.766. A second passage of the first note comes
    right after them; any other second passage waits for one passage of each other note."""
    from kebab.model import AskRequest, Hit
    from kebab.rag.nearest import nearest
    from kebab.rag.retrieval import Prepared

    def hit(chunk: str, score: float) -> Hit:
        return Hit(chunk, f"{chunk[0]}.md", [chunk], 1, 2, chunk, chunk, score)

    hits = [hit(c, s) for c, s in [("a1", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6), ("a2", 0.5)]]
    p = Prepared(AskRequest(question="q"), hits, [], [], "", None, 0.5, 0.5, "t", 0.0)
    p.extra["first"] = ["a1", "d"]
    assert [h.chunk_id for h in nearest(p, 5)] == ["a1", "d", "a2", "b", "c"]
    p.extra["first"] = ["c", "a2"]
    assert [h.chunk_id for h in nearest(p, 5)] == ["c", "a2", "b", "d", "a1"]
    # a quote of more passages than are listed: the ones it held still come before the rest
    p.extra["first"] = ["a1", "a2", "c", "d"]
    assert [h.chunk_id for h in nearest(p, 3)] == ["a1", "c", "d"]
    # the first note's second passage: never where the question is written (held), and after
    # the fix that stands for the quote's problem section
    p.held, p.extra["first"] = [hit("a9", 0.85)], ["a1"]
    assert [h.chunk_id for h in nearest(p, 5)] == ["a1", "a2", "b", "c", "d"]
    fix, problem = (
        Hit(c, "d.md", [h], s, s + 1, c, c, v)
        for c, h, s, v in [("dF", "Fix", 5, 0.4), ("dP", "Problem", 1, 0.6)]
    )
    p.hits, p.held, p.extra["first"] = [*hits, fix, problem], [], ["a1", "dP"]
    assert [h.chunk_id for h in nearest(p, 5)][:3] == ["a1", "dF", "a2"]


def test_closest_says_what_the_notes_lack_only_when_the_question_is_about_it() -> None:
    """Under passages that come close, "The notes never mention: squished." is no news: how
    the asker put it is not what the notes lack. A name or a word the question is about is."""
    squished = "In the columns view the columns are squished. How do I set each column's width?"
    assert outcome.closest_text(squished, ["squished"]) == outcome.closest_words(squished)
    croissant = "How long should croissant dough rest in the fridge?"
    assert outcome.closest_text(croissant, ["croissant"]).endswith(
        "The notes never mention: croissant."
    )
    named = "Does HEALTHCHECK retry a slowly starting container?"
    assert outcome.closest_text(named, ["HEALTHCHECK", "slowly"]).endswith(
        "The notes never mention: HEALTHCHECK."
    )
    idiom = "The API docs act up when I nest dataclasses: what do I swap them for?"
    assert outcome.closest_text(idiom, ["act"]) == outcome.closest_words(idiom)
    besides = "Which checkbox besides the half-done one counts as in progress?"
    assert outcome.closest_text(besides, ["besides"]) == outcome.closest_words(besides)
    # a preposition after a noun is no particle: the croissants are what the notes lack
    winter = "Can I freeze croissants over the winter?"
    assert outcome.closest_text(winter, ["croissants"]).endswith(
        "The notes never mention: croissants."
    )
    lock = "Which lrzip switch makes sure nobody opens the archive without a passphrase?"
    assert outcome.closest_text(lock, ["nobody"]) == outcome.closest_words(lock)
    assert outcome.closest_text("pem 키 권한을 Windows에서 줄이려면?", []) == (
        outcome.closest_words("pem 키 권한을 Windows에서 줄이려면?")
    )


async def test_when_the_asker_met_it_is_no_word_the_notes_lack(notes_ws: Workspace) -> None:
    """ "Last week", "yesterday" say when the asker met the problem, not what it is about: a
    note that answers is not doubted for lacking them ("The notes never mention: week.")."""
    question = "How do I empty the NAS trash by hand? It filled up last week."
    assert text.is_phrasing("week", question)
    assert text.is_phrasing("yesterday", "Which file did I delete yesterday?")
    assert not text.is_phrasing("week", "Which week does the on-call rota start?")
    answer = await ask(notes_ws, question)
    assert answer.outcome == "answered", answer.answer
    assert "synoshare --recycle-clean all" in answer.answer
    assert "never mention" not in answer.answer


async def test_a_closest_passage_shows_the_line_that_comes_closest_not_only_its_opening(
    make_ws: MakeWorkspace,
) -> None:
    """A person judges a listed passage by its excerpt. The opening of a long page (what the
    tool is) said nothing of the entry asked about, nine entries down; the excerpt now leads
    with that entry after `…`."""
    entries = "".join(
        f"- Show the {word} messages of the journal:\n\n`journalctl --{word}`\n\n"
        for word in ["kernel", "boot", "user", "system", "catalog", "merged", "header", "disk"]
    )
    page = (
        "# journalctl\n\n> Query the systemd journal, the log of every service.\n\n"
        + entries
        + "- Delete journal logs which are older than 2 days:\n\n`journalctl --vacuum-time 2d`\n"
    )
    ws = make_ws(notes={"tools/journalctl.md": page}, rag={"answered_at": 0.99})
    near = await ask(ws, "how do I throw away journal logs older than two days?")
    assert near.outcome == "closest", near.answer
    [listed] = [c for c in near.candidates if c.path == "tools/journalctl.md"]
    assert listed.excerpt.startswith("… Delete journal logs which are older than 2 days"), listed
    # and reads on from it: the command under the entry is what the person came for
    assert "journalctl --vacuum-time 2d" in listed.excerpt, listed.excerpt


async def test_a_closest_excerpt_reads_on_from_the_command_its_closest_line_explains(
    make_ws: MakeWorkspace,
) -> None:
    """The line nearest the question often explains the command above it ("This starts a
    proxy…" under `kubectl proxy`): an excerpt that began at that line showed the explanation
    without the command a person came for."""
    note = (
        "# Kubernetes\n\n## Talking to the API server\n\n"
        "The clusters run on DigitalOcean, and kubeconfig keeps the credentials of each context. "
        "I switch contexts with kubectx and keep one namespace per project, so most commands "
        "need -n. The dashboard add-on is off everywhere, and metrics go to Prometheus through "
        "the usual exporter, scraped every thirty seconds by the shared instance. Node pools "
        "scale between two and five machines.\n\n"
        "```bash\nkubectl proxy --port 9000\n```\n\n"
        "This starts a proxy on localhost port 9000 that signs every call to the API server "
        "with your kubeconfig credentials, so plain curl works against it.\n"
    )
    ws = make_ws(notes={"k8s.md": note}, rag={"answered_at": 0.99})
    near = await ask(ws, "how can I curl the API server from my laptop using my kubeconfig auth?")
    assert near.outcome == "closest", near.answer
    [listed] = [c for c in near.candidates if c.path == "k8s.md"]
    assert (listed.excerpt or "").startswith("… kubectl proxy --port 9000 This starts a proxy"), (
        listed.excerpt
    )


async def test_the_passage_the_quote_would_have_held_shows_more_than_an_opening(
    make_ws: MakeWorkspace,
) -> None:
    """Under `closest`, the passage kebab would have quoted is listed first, and its key fact is
    often a sentence past the opening: "…swap the standard dataclasses with" was where its
    excerpt stopped, one word before the answer. It gets twice the room of the others."""
    section = (
        "# Dataclasses\n\n## Nested dataclasses\n\n"
        "When nested dataclasses break the generated API docs, you need Pydantic's version of "
        "dataclasses. You can combine dataclasses with other type annotations to make nested "
        "data structures: a list of dataclasses inside another dataclass, a dict of them, or "
        "an optional one. Each is validated and serialised the same way as a Pydantic model, "
        "and the response model of a path operation can be one too. Type checkers still see "
        "them as plain classes. To fix it, swap the standard dataclasses for "
        "`pydantic.dataclasses`, which is a drop-in replacement.\n"
    )
    other = (
        "# Models\n\nA Pydantic model declares the shape of a request body. "
        + "Its fields are validated when a request comes in, and errors name the field. " * 6
    )
    ws = make_ws(notes={"dataclasses.md": section, "models.md": other}, rag={"answered_at": 0.99})
    near = await ask(ws, "The API docs break when I nest dataclasses: what do I swap them for?")
    assert near.outcome == "closest", near.answer
    first, *rest = near.candidates
    assert first.path == "dataclasses.md", near.candidates
    assert "pydantic.dataclasses" in (first.excerpt or ""), first.excerpt
    assert all(len(c.excerpt or "") <= 321 for c in rest), [c.excerpt for c in rest]


async def test_a_sentence_many_notes_repeat_is_listed_once(make_ws: MakeWorkspace) -> None:
    """Theme notes that each open with the same sentence took three of five places under
    `closest`, one excerpt three times over; the list now shows it once and reads on. A long
    one too: the copy the quote would have held has twice the room, and the others, cut
    shorter, read as its start."""
    for same in [
        "Tasks' setting pane has a one-click button to add the custom checkboxes of this theme.",
        "Tasks' setting pane has a one-click button to add the custom checkboxes of this theme. "
        + "Each checkbox has a symbol, a name, the status it moves to next and its type. " * 6,
    ]:
        notes = {
            f"themes/{name}.md": f"# {name} theme\n\n{same}\n"
            for name in ["Aura", "Ebullientworks", "Minimal"]
        } | {
            "statuses.md": "# Custom statuses\n\nA checkbox with a slash marks a task in progress.\n",
            "styling.md": "# Styling\n\nA CSS snippet can colour each checkbox status differently.\n",
        }
        ws = make_ws(notes=notes, rag={"answered_at": 0.99})
        near = await ask(ws, "Which theme checkboxes can Tasks add for me with one button?")
        assert near.outcome == "closest", near.answer
        excerpts = [c.excerpt or "" for c in near.candidates]
        themes = [e for e in excerpts if e.startswith("Tasks' setting pane")]
        assert len(themes) == 1, excerpts
        assert {c.path for c in near.candidates} >= {"statuses.md", "styling.md"}, excerpts


async def test_a_refusal_names_every_thing_asked_the_notes_lack(make_ws: MakeWorkspace) -> None:
    """ "how do I set up TLS on a kubernetes ingress?" of the sample notes said only "The notes
    never mention: TLS.", as if they held kubernetes and ingress: the name comes first, then
    the other words asked about, not how the question is put."""
    answer = await ask(make_ws(), "how do I set up TLS on a kubernetes ingress?")
    assert not answer.grounded
    assert answer.refusal_text == "The notes never mention: TLS, kubernetes, ingress."

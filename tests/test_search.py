"""Search as a user sees it: lexical, vector and hybrid hits, filters, Korean, odd queries."""

from __future__ import annotations

import re

import pytest

from kebab.errors import NothingMatches
from kebab.model import to_builtins

MODES = ("hybrid", "lexical", "vector")


def paths(hits) -> list[str]:
    return [h.path for h in hits]


# Korean and identifiers ---------------------------------------------------------------------

KOREAN_NOTES = {
    "vpn.md": "# VPN\n\nWireGuard 설정을 바꾸려면 wg0.conf 파일을 편집하고 서비스를 다시 시작한다.\n",
    "lunch.md": "# 점심\n\n오늘 점심은 김치찌개를 먹었다. 다음 주에는 비빔밥을 먹자.\n",
    "meeting.md": "# 회의록\n\n다음 회의는 월요일 오전에 열린다. 안건은 채용 계획이다.\n",
}


def test_a_korean_question_finds_a_note_that_uses_another_particle(
    notes, write_note, open_workspace
):
    for rel, text in KOREAN_NOTES.items():
        write_note(notes, rel, text)
    ws = open_workspace(notes)
    ws.refresh()
    assert "설정은" not in KOREAN_NOTES["vpn.md"]
    for mode in ("lexical", "hybrid"):
        hits = ws.search("설정은 어떻게 바꾸나요?", k=3, mode=mode)
        assert paths(hits)[0] == "vpn.md", mode
    assert ws.search("설정은 어떻게 바꾸나요?", k=3, mode="lexical")[0].lexical_score > 0


IDENTIFIER_NOTES = {
    "cors.md": "# CORS\n\nThe API gateway sets `allow_credentials: true` for the admin origin.\n",
    "vault.md": "# Vault\n\nCredentials for the staging database live in the team vault.\n",
    "guests.md": "# Guests\n\nWe allow guests on the wifi after they sign the form.\n",
}


def test_an_identifier_with_colons_and_underscores_is_found(notes, write_note, open_workspace):
    for rel, text in IDENTIFIER_NOTES.items():
        write_note(notes, rel, text)
    ws = open_workspace(notes)
    ws.refresh()
    for query in (
        "allow_credentials:",
        "allow_credentials",
        "cors.allow_credentials: true",
        "What does allow_credentials: do?",
    ):
        for mode in ("lexical", "hybrid"):
            assert paths(ws.search(query, k=3, mode=mode))[0] == "cors.md", (query, mode)


ODD_QUERIES = [
    "",
    "   ",
    ":",
    "AND OR NOT",
    '"unclosed',
    "title:foo",
    "(*)",
    "+-!^~?",
    "field:[a TO b]",
    "\x00",
    "🍣",
    "a" * 2000,
    "설",
    "\u200b\ufeff",
]


def test_queries_that_break_query_parsers_do_not_crash(notes, write_note, open_workspace):
    write_note(notes, "a.md", "# A\n\nSome text about foo and title fields. 🍣 설정\n")
    ws = open_workspace(notes)
    ws.refresh()
    for query in ODD_QUERIES:
        for mode in MODES:
            hits = ws.search(query, k=5, mode=mode)
            assert all(h.path == "a.md" for h in hits), (query, mode)


# modes, scores, determinism -----------------------------------------------------------------


@pytest.fixture
def small_vault(notes, write_note):
    write_note(
        notes,
        "ops/backup.md",
        "---\ntags: [ops, homelab]\n---\n# Backups\n\nThe nightly backup runs at 02:30 with restic.\n"
        "\n## Retention\n\nDaily snapshots are kept for seven days.\n",
    )
    write_note(
        notes,
        "ops/nginx.md",
        "# Nginx\n\nnginx listens on port 8443 for public HTTPS. #ops #web\n",
    )
    write_note(
        notes,
        "rust/ownership.md",
        "# Ownership\n\nEach value in Rust has one owner; borrowing lends it out.\n\n"
        "## Backup of values\n\nClone a value to keep a backup copy before moving it.\n",
    )
    write_note(
        notes,
        "cooking/bread.md",
        "# Sourdough\n\nFeed the starter the night before baking. #baking\n",
    )
    return notes


def test_every_mode_returns_hits_with_the_raw_scores_behind_them(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    query = "when does the nightly backup run?"
    by_mode = {mode: ws.search(query, k=5, mode=mode) for mode in MODES}
    for mode, hits in by_mode.items():
        assert hits, mode
        assert paths(hits)[0] == "ops/backup.md", mode
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), mode
        assert all(0.0 <= s <= 1.0 for s in scores), mode
    lexical, vector, hybrid = by_mode["lexical"], by_mode["vector"], by_mode["hybrid"]
    assert all(h.lexical_score and h.lexical_score > 0 and h.vector_score is None for h in lexical)
    assert [h.lexical_rank for h in lexical] == list(range(1, len(lexical) + 1))
    assert all(h.vector_score is not None and h.lexical_score is None for h in vector)
    assert all(-1.0 <= h.vector_score <= 1.0 for h in vector)  # cosine
    assert [h.vector_rank for h in vector] == list(range(1, len(vector) + 1))
    top = hybrid[0]
    assert top.lexical_score is not None and top.vector_score is not None
    assert top.lexical_rank == 1


def test_the_same_query_twice_gives_identical_hits(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    for mode in MODES:
        for query in ("backup", "How long are snapshots kept?", "백업 보관 기간"):
            first = to_builtins(ws.search(query, k=10, mode=mode))
            second = to_builtins(ws.search(query, k=10, mode=mode))
            assert first == second, (mode, query)


def test_hits_point_at_the_lines_they_quote(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    hits = ws.search("backup", k=10, mode="hybrid")
    assert len(hits) >= 3
    for h in hits:
        lines = re.split(r"\r\n|\r|\n", (small_vault / h.path).read_text(encoding="utf-8"))
        assert "\n".join(lines[h.start_line - 1 : h.end_line]) == h.text
    retention = next(h for h in hits if h.heading_path == ["Backups", "Retention"])
    assert (retention.start_line, retention.end_line) == (8, 10)  # "## Retention" .. its text


def test_k_limits_the_number_of_hits(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    for mode in MODES:
        assert len(ws.search("backup ops nginx rust bread", k=2, mode=mode)) == 2


def test_a_heading_match_outranks_the_same_word_in_a_body(notes, write_note, open_workspace):
    write_note(notes, "a.md", "# Groceries\n\nBuy apples, flour and a new whisk for the kitchen.\n")
    write_note(notes, "b.md", "# Whisk\n\nBuy apples, flour and a new bowl for the kitchen.\n")
    ws = open_workspace(notes)
    ws.sync()
    assert paths(ws.search("whisk", k=2, mode="lexical")) == ["b.md", "a.md"]


def test_search_answers_from_bm25_before_any_vectors_exist(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    summary = ws.sync()  # chunks and BM25 only; embedding has not run
    assert summary.pending_vectors == summary.chunks
    hybrid = ws.search("nightly backup", k=5, mode="hybrid")
    assert paths(hybrid)[0] == "ops/backup.md"
    assert all(h.vector_score is None for h in hybrid)
    assert ws.search("nightly backup", k=5, mode="vector") == []


def test_wikilinks_and_embeds_are_found_by_their_link_text(notes, write_note, open_workspace):
    write_note(
        notes,
        "index.md",
        "# Index\n\nStart with [[k8s-cluster|the cluster runbook]].\n\n![[architecture-diagram.png]]\n",
    )
    write_note(notes, "other.md", "# Other\n\nNothing to see here about clusters.\n")
    ws = open_workspace(notes)
    ws.sync()
    assert paths(ws.search("runbook", k=3, mode="lexical")) == ["index.md"]
    assert paths(ws.search("architecture diagram", k=3, mode="lexical")) == ["index.md"]


# filters ------------------------------------------------------------------------------------


def test_a_path_glob_keeps_only_matching_notes(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    assert "rust/ownership.md" in paths(ws.search("backup", k=10))
    for mode in MODES:
        hits = ws.search("backup", k=10, mode=mode, path_glob="ops/**")
        assert hits, mode
        assert {h.path for h in hits} <= {"ops/backup.md", "ops/nginx.md"}, mode
        assert paths(ws.search("backup", k=10, mode=mode, path_glob="rust/*.md"))[0] == (
            "rust/ownership.md"
        )
        with pytest.raises(NothingMatches, match=r"no note matches the filter path:nowhere/\*\*"):
            ws.search("backup", k=10, mode=mode, path_glob="nowhere/**")


def test_a_tag_filter_keeps_only_notes_with_that_tag(small_vault, open_workspace):
    ws = open_workspace(small_vault)
    ws.refresh()
    for mode in MODES:
        front_matter = ws.search("backup", k=10, mode=mode, tags=["homelab"])
        assert paths(front_matter) and set(paths(front_matter)) == {"ops/backup.md"}, mode
        inline = ws.search("port https backup", k=10, mode=mode, tags=["#Web"])
        assert set(paths(inline)) == {"ops/nginx.md"}, mode
        both = ws.search("backup", k=10, mode=mode, tags=["ops"], path_glob="ops/nginx.md")
        assert set(paths(both)) <= {"ops/nginx.md"}, mode
        with pytest.raises(NothingMatches, match="#nonexistent"):
            ws.search("backup", k=10, mode=mode, tags=["nonexistent"])
        written = ws.search("#homelab path:ops/ backup", k=10, mode=mode)
        assert set(paths(written)) == {"ops/backup.md"}, mode


# across languages ---------------------------------------------------------------------------


def test_a_korean_question_finds_the_english_note_by_meaning(fixture_workspace, open_workspace):
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    hits = ws.search("백업은 몇 시에 실행되나요?", k=3, mode="vector")
    assert "ops/backup.md" in paths(hits)
    assert all(h.vector_score is not None for h in hits)


def test_an_index_note_of_links_ranks_after_the_note_it_links_to(notes, write_note, open_workspace):
    """A "map of content" names every topic; the note that holds the answer comes first."""
    write_note(
        notes,
        "index.md",
        "# Index\n\n- [[Sourdough starter feeding]]\n- [[Sourdough starter feeding log]]\n"
        "- [[Bike chain cleaning]]\n- [[Sourdough starter feeding schedule]]\n",
    )
    write_note(
        notes,
        "kitchen/starter.md",
        "# Keeping it alive\n\nSourdough starter feeding: feed the starter twice a day with equal weights of "
        "flour and water; keep it at room temperature. Discard half before each meal, and "
        "move the jar to the fridge when you bake less than once a week; bring it back a day "
        "before baking so it doubles again.\n",
    )
    write_note(notes, "Bike chain cleaning.md", "# Bike chain cleaning\n\nDegrease, rinse, oil.\n")
    for i, food in enumerate(("rye bread", "pancakes", "pizza dough")):
        write_note(notes, f"recipes/{i}.md", f"# {food}\n\nA {food} recipe; sourdough works too.\n")
    ws = open_workspace(notes)
    ws.refresh()
    for mode in ("lexical", "hybrid"):
        found = paths(ws.search("sourdough starter feeding", k=3, mode=mode))
        assert found[0] == "kitchen/starter.md", (mode, found)


# Across the two languages (kebab.lexicon) ---------------------------------------------------

ENGLISH_NOTES = {
    "tasks/sorting.md": "# Sorting\n\nSort tasks in a random order to review a few every day.\n",
    "tasks/priority.md": "# Priority\n\nTasks without a priority rank between medium and low.\n",
    "tools/venv.md": "# Python environments\n\nCreate a virtual environment with a chosen Python "
    "version before you install any dependency.\n",
}


def test_a_korean_question_finds_the_english_note_by_its_translated_words(
    notes, write_note, open_workspace
):
    """No identifier is shared: only the glossary's `무작위` = random and `정렬` = sort match."""
    for rel, text in ENGLISH_NOTES.items():
        write_note(notes, rel, text)
    ws = open_workspace(notes)
    ws.refresh()
    hits = ws.search("할 일을 무작위로 정렬하려면?", k=3, mode="lexical")
    assert paths(hits)[0] == "tasks/sorting.md"
    hits = ws.search("가상환경 만들 때 파이썬 버전 지정", k=3, mode="lexical")
    assert paths(hits)[0] == "tools/venv.md"


def test_in_notes_written_in_both_languages_each_question_gets_its_own_language_first(
    notes, write_note, open_workspace
):
    write_note(notes, "en/backup.md", "# Backup\n\nThe backup runs every night and keeps a copy.\n")
    write_note(notes, "ko/backup.md", "# 백업\n\n백업은 매일 밤 실행되고 복사본을 남긴다.\n")
    write_note(notes, "en/garden.md", "# Garden\n\nWater the tomatoes every night in July.\n")
    write_note(notes, "ko/garden.md", "# 정원\n\n7월에는 매일 밤 토마토에 물을 준다.\n")
    ws = open_workspace(notes)
    ws.refresh()
    assert paths(ws.search("when does the backup run?", k=2, mode="lexical"))[0] == "en/backup.md"
    assert paths(ws.search("백업은 언제 실행되나요?", k=2, mode="lexical"))[0] == "ko/backup.md"


def test_the_glossary_reads_the_longest_word_first():
    from kebab.lexicon import english_for

    assert english_for("마감일이 지난 작업")[:3] == ["due", "date", "deadline"]
    assert "log" not in english_for("백로그에 쌓인 일")
    assert english_for("가상 환경") == english_for("가상환경")


LOANWORD_NOTES = {
    "git/rebase.md": "# Rewriting history\n\nSquash the last three commits: `git rebase -i HEAD~3`.\n",
    "git/remotes.md": "# Remotes\n\nAdd a second remote with `git remote add upstream URL`.\n",
    "linux/memory.md": "# Memory\n\nCheck free memory with `free -h` before resizing the swap file.\n",
    "linux/disks.md": "# Disks\n\n`df -h` shows how full each mounted filesystem is.\n",
}


@pytest.mark.parametrize(
    ("question", "note"),
    [
        ("리베이스로 커밋 세 개 합치기", "git/rebase.md"),
        ("스왑 크기 늘리기 전에 확인할 것", "linux/memory.md"),
    ],
)
def test_a_korean_loanword_finds_the_english_note_that_spells_it(
    question, note, notes, write_note, open_workspace
):
    """`리베이스` and `스왑` are in no glossary: read as they sound, they are rebase and swap,
    words the notes hold, and lexical search finds the note by them."""
    for rel, text in LOANWORD_NOTES.items():
        write_note(notes, rel, text)
    ws = open_workspace(notes)
    ws.refresh()
    hits = ws.search(question, k=3, mode="lexical")
    assert hits and paths(hits)[0] == note


def test_a_loanword_pattern_spells_the_word_it_came_from():
    from kebab.loanwords import latin_pattern
    from kebab.text import latin_terms

    pairs = {"도커": "docker", "리베이스": "rebase", "쿠버네티스": "kubernetes", "버전": "version"}
    for korean, english in pairs.items():
        pattern = latin_pattern(korean)
        assert pattern is not None and re.fullmatch(pattern, latin_terms(english)[0]), korean
    assert latin_pattern("docker") is None and latin_pattern("가") is None


# A note and its translation --------------------------------------------------------------------

TRANSLATED = {
    "docs/en/backup.md": "# Backups\n\nThe NAS backs up every night at 02:30 with restic. "
    "Snapshots are kept for 30 days; `restic forget --keep-daily 30 --prune` removes older "
    "ones.\n",
    "docs/ko/backup.md": "# 백업\n\nNAS는 매일 밤 02:30에 restic으로 백업한다. 스냅샷은 30일 동안 "
    "보관하며, 오래된 스냅샷은 `restic forget --keep-daily 30 --prune`으로 지운다.\n",
    # the same file name in the other language, about something else: not a translation
    "memo/ko/backup.md": "# 백업 메모\n\n사진 앨범은 외장 하드에 따로 옮겨 두었다. 다음 달에 "
    "클라우드에도 올릴 예정이다.\n",
}


@pytest.mark.parametrize(
    ("query", "mine", "translation"),
    [
        ("how long are restic snapshots kept?", "docs/en/backup.md", "docs/ko/backup.md"),
        ("restic 스냅샷은 며칠 동안 보관해?", "docs/ko/backup.md", "docs/en/backup.md"),
    ],
    ids=["english", "korean"],
)
def test_a_note_and_its_translation_are_listed_once_in_the_askers_language(
    make_ws, query: str, mine: str, translation: str
) -> None:
    ws = make_ws(notes=TRANSLATED)
    found = paths(ws.search(query, k=10))
    assert mine in found, found
    assert translation not in found, found


def test_a_note_of_the_same_name_in_the_other_language_that_says_something_else_stays(
    make_ws,
) -> None:
    ws = make_ws(notes=TRANSLATED)
    found = paths(ws.search("backup", k=20, mode="lexical"))
    assert {"docs/en/backup.md", "memo/ko/backup.md"} <= set(found), found


def test_a_passages_translation_is_not_among_its_related_passages(make_ws) -> None:
    ws = make_ws(notes=TRANSLATED)
    related = paths(ws.related("docs/en/backup.md", 3, k=10, linked=False))
    assert "docs/ko/backup.md" not in related, related
    assert related, "other notes are still related"


# Problem → fix notes ------------------------------------------------------------------------

TROUBLESHOOTING = {
    "docker/cache.md": "## Problem\n\n- Every image build and compose up trips over stale cached "
    "data left from earlier builds, and the containers end up tangled.\n\n## Fix\n\n"
    "- `docker system prune -a`\n- prune: to cut away\n",
    "docker/compose-name.md": "## Problem\n\nCompose puts the folder name in front of every "
    "container name.\n\n## Fix\n\nRun compose with `-p` to choose the project name.\n",
    "docker/jar.md": "## Fix\n\nMount the built jar into the container with a volume and start "
    "it from the entrypoint; rebuild the image after every change.\n",
    "docker/daemon.md": "## Fix\n\nReinstall Docker Desktop without the WSL 2 option and start "
    "the engine again; delete the old settings file first.\n",
}


def test_a_question_that_describes_a_problem_finds_the_fix_in_the_same_note(
    notes, write_note, open_workspace
):
    """The asker describes the symptom; the note's problem section matches it, and its fix,
    which shares none of the asker's words, is listed right after it, before other notes'
    fixes that share a few."""
    for rel, text in TROUBLESHOOTING.items():
        write_note(notes, rel, text)
    ws = open_workspace(notes)
    ws.refresh()
    hits = ws.search(
        "Every compose up runs into old cache junk from previous image builds. "
        "How do I clear everything at once?",
        k=3,
    )
    assert [(h.path, h.heading_path[-1]) for h in hits[:2]] == [
        ("docker/cache.md", "Problem"),
        ("docker/cache.md", "Fix"),
    ], [(h.path, h.heading_path) for h in hits]


def test_a_loanword_pattern_reads_korean_spelling_rules_and_stemming():
    """One l between vowels is written ㄹㄹ (`릴리즈` release), and the index keeps `postgres`
    as `postgr`: the vowel before a closing 스 may go with it (`포스트그레스`)."""
    from kebab.loanwords import latin_pattern
    from kebab.text import latin_terms

    pairs = {
        "릴리즈": "release",
        "갤러리": "gallery",
        "포스트그레스": "postgres",
        "젠킨스": "jenkins",
    }
    for korean, english in pairs.items():
        pattern = latin_pattern(korean)
        assert pattern is not None and re.fullmatch(pattern, latin_terms(english)[0]), korean
    assert not re.fullmatch(latin_pattern("릴리즈") or "", "rerelease")
    assert not re.fullmatch(latin_pattern("마우스") or "", "mas")  # only an e goes with -s
    assert re.fullmatch(latin_pattern("마우스") or "", "mous")


def test_a_korean_question_holds_its_words_as_an_english_note_writes_them():
    """What the gate reads as the question's words in a passage: a Korean question over an
    English note holds them through the glossary and read as loanwords, as search found it."""
    from kebab.search import term_coverage

    text = "# Shakshuka\n\n## Ingredients\n\n- 4 eggs\n- 1 can crushed tomatoes"
    assert term_coverage("샥슈카 재료가 뭐야?", text) >= 0.5
    assert term_coverage("김치찌개 재료가 뭐야?", text) < term_coverage("샥슈카 재료가 뭐야?", text)
    assert term_coverage("What goes into shakshuka?", text) > 0.0

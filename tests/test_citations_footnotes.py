"""Strict `[#n]` citations and `[^kb-n]` footnotes.

Only `[#n]` naming a packed passage counts as the model's citation; `[1]`, `vec![1]`, `[ #1 ]` are
prose or code (a sentence carrying one is cited by kebab when a passage supports it:
tests/test_attribution.py). An answer whose first sentence says the evidence is lacking
(English or Korean) is not grounded, whatever it cites. Grounded answers render as Markdown footnotes whose definitions link the cited note and
lines, and read back to the same source.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import MakeWorkspace
from kebab import footnotes
from kebab.model import Citation, citation_range
from kebab.rag import citations
from llm_server import ModelServer, ask, llm_settings

QUESTION = "What time does the nightly backup job run?"

# what counts as a citation, through the whole pipeline ----------------------------------------

NOT_CITATIONS = [
    "The backup runs at 02:30 [1].",
    "Build the list with vec![1] and run it at 02:30.",
    "The backup runs at 02:30 [ #1 ].",
    "The backup runs at 02:30 [# 1].",
    "The backup runs at 02:30, see [the notes][1].",
    "The backup runs at 02:30 (#1).",
    "The backup runs at 02:30 [^1].",
]

REFUSALS = [
    "The notes do not contain enough evidence to answer this question.",
    "I cannot answer this from the notes [#1].",
    "There is not enough information in the passages [#1]. The backup may run at night.",
    "The provided passages don't mention a nightly job [#1].",
    "근거가 부족합니다.",
    "노트에 이 질문에 답할 근거가 부족합니다 [#1].",
    "제공된 노트로는 답할 수 없습니다 [#1].",
    "노트에서 관련 정보를 찾을 수 없습니다.",
]

GROUNDED = [
    "The backup job runs every day at 02:30 [#1].",
    "It runs at 02:30 (see [#1]); a `restic check` follows on Sundays [#1].",
    "백업은 매일 02:30에 실행된다 [#1].",
    # a fact stated in the negative is not a refusal
    "The backup does not include /srv/media/movies; it runs at 02:30 [#1].",
    "It doesn't run at midnight but at 02:30 [#1].",
]


@pytest.mark.parametrize("text", REFUSALS)
async def test_answers_saying_the_evidence_is_lacking_are_not_grounded(
    server: ModelServer, make_ws: MakeWorkspace, text: str
) -> None:
    server.answer(text)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)
    assert answer.answer == text
    assert answer.grounded is False and answer.refusal_reason == "llm_self_judge"
    assert answer.error is None  # the model answered; it just did not ground its answer
    assert answer.markdown == text + "\n"  # no footnotes for an ungrounded answer
    assert answer.candidates  # the nearest passages instead
    assert answer.unsupported == []  # a refusal of its own, not an unsupported answer


@pytest.mark.parametrize("text", NOT_CITATIONS)
async def test_look_alike_markers_are_never_the_models_citations(
    server: ModelServer, make_ws: MakeWorkspace, text: str
) -> None:
    server.answer(text)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)
    assert all(c.by == "kebab" for c in answer.citations)  # only kebab's own, if any
    bare = re.sub(r" ?\[#\d+\]", "", answer.answer)
    assert bare == text  # the look-alike stays as the model wrote it
    if not answer.grounded:
        assert answer.citations == [] and answer.candidates


@pytest.mark.parametrize("text", GROUNDED)
async def test_answers_citing_a_packed_passage_are_grounded(
    server: ModelServer, make_ws: MakeWorkspace, text: str
) -> None:
    server.answer(text)
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION)
    assert answer.grounded is True and answer.refusal_reason is None
    by = {c.marker: c.by for c in answer.citations}
    assert by[1] == "model"
    # kebab cites only the clause the model left unmarked (`/srv/media/movies`)
    assert by == {1: "model"} or ("/srv/media/movies" in text and len(by) == 2)
    assert "[^kb-1]" in answer.markdown and "[#1]" not in answer.markdown


# the judge on its own --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "packed", "expected"),
    [
        ("Fact [#1].", 1, (True, [1], [])),
        ("Fact [#2], and [#1], again [#2].", 3, (True, [2, 1], [])),
        ("Fact [#4].", 3, (False, [], [4])),
        ("Fact [#1] and [#99].", 3, (False, [1], [99])),
        ("Fact [#0].", 3, (False, [], [0])),
        ("Fact [#1].", 0, (False, [], [1])),
        ("", 3, (False, [], [])),
        ("   ", 3, (False, [], [])),
        ("Fact [1], vec![1], [ #1 ], [#one].", 3, (False, [], [])),
        # a link whose text looks like a marker is the note's, not a citation: an issue link
        ("See [#11](https://github.com/o/r/issues/11). [#1]", 3, (True, [1], [])),
    ],
)
def test_judge(text: str, packed: int, expected: tuple[bool, list[int], list[int]]) -> None:
    assert citations.judge(text, packed) == expected


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_recognised(text: str) -> None:
    assert citations.self_declared_lack(text)


@pytest.mark.parametrize("text", GROUNDED)
def test_answers_are_not_mistaken_for_refusals(text: str) -> None:
    assert not citations.self_declared_lack(text)


@given(st.text(alphabet=st.characters(blacklist_characters="#"), max_size=200))
def test_no_hash_no_markers(text: str) -> None:
    assert citations.markers(text) == []


@given(st.lists(st.integers(min_value=0, max_value=999), max_size=8), st.text(max_size=40))
def test_markers_are_the_bracket_hash_numbers_in_order(numbers: list[int], filler: str) -> None:
    filler = filler.replace("[", "(").replace("]", ")")
    # ...unless written as a link's text, `[#11](https://…/issues/11)`: a note's issue link
    assume(not re.match(r"\([^()\s]*\)", filler))
    text = filler.join(f"[#{n}]" for n in numbers)
    assert citations.markers(text) == list(dict.fromkeys(numbers))


# footnotes through the pipeline ----------------------------------------------------------------


async def test_footnotes_number_citations_in_order_of_appearance(
    server: ModelServer, make_ws: MakeWorkspace
) -> None:
    server.answer("Backups go to a B2 bucket [#5]. The job runs at 02:30 [#1]; it is restic [#5].")
    ws = make_ws(llm_settings(server))
    answer = await ask(ws, QUESTION, explain=True)
    assert answer.grounded is True
    assert [(c.marker, c.by) for c in answer.citations] == [(5, "model"), (1, "model")]
    packed = answer.explain["packed"]
    for c in answer.citations:
        assert (c.path, c.start_line, c.end_line) == (
            packed[c.marker - 1]["path"],
            packed[c.marker - 1]["start_line"],
            packed[c.marker - 1]["end_line"],
        )
    body, _, defs = answer.markdown.partition("\n\n")
    assert body == (
        "Backups go to a B2 bucket[^kb-1]. The job runs at 02:30[^kb-2]; it is restic[^kb-1]."
    )
    lines = defs.strip().split("\n")
    assert [line.split("]:")[0] for line in lines] == ["[^kb-1", "[^kb-2"]
    # each definition reads back to its citation's note, lines and content hash
    read = footnotes.definitions(answer.markdown, "answer.md")
    assert [(d.label, d.path, d.start_line, d.end_line, d.content_hash) for d in read] == [
        (f"kb-{i}", c.path, c.start_line, c.end_line, c.content_hash[:12])
        for i, c in enumerate(answer.citations, 1)
    ]
    for d in read:
        assert (ws.root / d.path).is_file()


async def test_numeric_footnote_labels(server: ModelServer, make_ws: MakeWorkspace) -> None:
    server.answer("The job runs at 02:30 [#1].")
    ws = make_ws(llm_settings(server), footnote_labels="numeric")
    answer = await ask(ws, QUESTION)
    assert answer.markdown.startswith("The job runs at 02:30[^1].\n\n[^1]: [")
    [d] = footnotes.definitions(answer.markdown, "answer.md")
    assert (d.label, d.path) == ("1", answer.citations[0].path)


# footnotes on their own ------------------------------------------------------------------------


def citation(marker: int, path: str, heading: list[str], start: int, end: int) -> Citation:
    return Citation(
        marker=marker,
        path=path,
        uri=f"file:///ws/{path}",
        heading_path=heading,
        range=citation_range(start, end),
        chunk_id=f"c{marker}",
        content_hash=f"{marker:x}" * 16,
        score=0.5,
        text="…",
        start_line=start,
        end_line=end,
    )


RULES = citation(
    1, "rust/ownership.md", ["Rust ownership cheat sheet", "The borrowing rule"], 21, 23
)
BACKUP = citation(2, "ops/my backups (old).md", ["Home server backups", "Schedule"], 12, 26)


def test_definition_links_relative_to_the_note_and_reads_back() -> None:
    body, defs = footnotes.render(
        "Borrow rules [#1]; backups [#2].", [RULES, BACKUP], note_path="journal/2024/today.md"
    )
    assert body == "Borrow rules[^kb-1]; backups[^kb-2]."
    assert defs == [
        "[^kb-1]: [Rust ownership cheat sheet › The borrowing rule]"
        '(../../rust/ownership.md#the-borrowing-rule "kb:111111111111") L21–L23',
        "[^kb-2]: [Home server backups › Schedule]"
        '(../../ops/my%20backups%20%28old%29.md#schedule "kb:222222222222") L12–L26',
    ]
    note = "# Today\n\n" + body + "\n\n" + "\n".join(defs) + "\n"
    read = footnotes.definitions(note, "journal/2024/today.md")
    assert [
        (d.label, d.line, d.path, d.anchor, d.start_line, d.end_line, d.content_hash) for d in read
    ] == [
        ("kb-1", 4, "rust/ownership.md", "the-borrowing-rule", 21, 23, "111111111111"),
        ("kb-2", 5, "ops/my backups (old).md", "schedule", 12, 26, "222222222222"),
    ]


def test_labels_continue_after_the_notes_own_footnotes() -> None:
    note = "Text[^kb-2] and[^1] and[^kb-7].\n\n[^kb-2]: x\n[^1]: mine\n[^kb-7]: y\n[^kb-x]: z\n"
    assert footnotes.next_label(note) == 8
    assert footnotes.next_label(note, style="numeric") == 2
    assert footnotes.next_label("no footnotes here") == 1
    body, defs = footnotes.render("A [#1], B [#2], A again [#1].", [RULES, BACKUP], first_label=8)
    assert body == "A[^kb-8], B[^kb-9], A again[^kb-8]."
    assert [d.split("]:")[0] for d in defs] == ["[^kb-8", "[^kb-9"]
    body, defs = footnotes.render("A [#1].", [RULES], first_label=2, style="numeric")
    assert body == "A[^2]." and defs[0].startswith("[^2]: [")


def test_unknown_markers_are_dropped_from_the_markdown() -> None:
    md = footnotes.markdown("A [#1] and B [#5].", [RULES])
    assert md.startswith("A[^kb-1] and B")
    assert "[#5]" not in md and "[^kb-2]" not in md
    assert md.count("\n[^kb-") == 1


def test_label_under_the_cursor() -> None:
    line = "Fact[^kb-3] and more[^kb-12]."
    assert footnotes.label_at(line, line.index("[^kb-3]") + 2) == "kb-3"
    assert footnotes.label_at(line, line.index("[^kb-12]")) == "kb-12"
    assert footnotes.label_at(line, 1) is None
    assert footnotes.label_at("[^kb-4]: [T](a.md#t) L1–L2", 3) == "kb-4"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Schedule", "schedule"),
        ("The `?` operator", "the--operator"),
        ("Rust's *borrowing* rule", "rusts-borrowing-rule"),
        ("배포 절차", "배포-절차"),
    ],
)
def test_heading_anchor(heading: str, anchor: str) -> None:
    assert footnotes.slug(heading) == anchor


@given(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=12), st.integers(1, 50))
def test_every_reference_has_exactly_one_definition(markers: list[int], first: int) -> None:
    cites = [citation(m, f"n{m}.md", [f"H{m}"], m, m + 1) for m in (1, 2, 3)]
    answer = " ".join(f"claim {i} [#{m}]." for i, m in enumerate(markers))
    body, defs = footnotes.render(answer, cites, first_label=first)
    refs = re.findall(r"\[\^(kb-\d+)\]", body)
    labels = [d.split("]:")[0][2:] for d in defs]
    assert sorted(set(refs)) == sorted(labels) and len(set(labels)) == len(labels)
    used = list(dict.fromkeys(m for m in markers if m <= 3))
    assert labels == [f"kb-{first + i}" for i in range(len(used))]
    assert "[#" not in body


async def test_a_quoted_issue_link_is_no_marker(make_ws: MakeWorkspace) -> None:
    """A note that links an issue as `[#11](…)`, quoted by the extractive answerer: read as a
    marker naming no passage, the answer ended `closest` with the quote as its text."""
    note = (
        "# Different steps on a schedule\n\nTo run a step only on the daily schedule, compare "
        "`github.event.schedule` in its `if:` condition, see "
        "[#11](https://github.com/o/r/issues/11).\n"
    )
    ws = make_ws(notes={"ci/schedule.md": note})
    answer = await ask(
        ws, "In GitHub Actions, what do I compare to run a step only on the schedule?"
    )
    assert answer.grounded and answer.outcome == "answered", answer.answer
    assert "[#11](https://github.com/o/r/issues/11)" in answer.markdown

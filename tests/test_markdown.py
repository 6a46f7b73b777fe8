"""The chunker: Markdown notes → chunks with heading paths, 1-based line spans and stable ids."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kebab import markdown, tokens
from kebab.model import Chunk


def file_lines(text: str) -> list[str]:
    """The file's lines as an editor numbers them (LF, CRLF and lone CR all end a line)."""
    return re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff"))


def span_text(text: str, chunk: Chunk) -> str:
    """The file's lines start_line..end_line (1-based, inclusive), joined with LF."""
    return "\n".join(file_lines(text)[chunk.start_line - 1 : chunk.end_line])


def by_heading(note: markdown.Note) -> dict[tuple[str, ...], list[Chunk]]:
    out: dict[tuple[str, ...], list[Chunk]] = {}
    for c in note.chunks:
        out.setdefault(tuple(c.heading_path), []).append(c)
    return out


# headings -----------------------------------------------------------------------------------


def test_a_heading_with_no_body_is_no_chunk_and_lives_on_in_its_childrens_paths() -> None:
    text = "# Backups\n\nNightly.\n\n## Restore\n\n### One file\n\nRun `restic restore`.\n"
    note = markdown.parse("b.md", text)
    assert [c.heading_path for c in note.chunks] == [
        ["Backups"],
        ["Backups", "Restore", "One file"],
    ]
    assert all("## Restore" not in c.text for c in note.chunks)
    # a note that is only headings keeps them, so it can still be found
    only = markdown.parse("h.md", "# Title\n\n## Part\n")
    assert [c.heading_path for c in only.chunks] == [["Title"], ["Title", "Part"]]


def test_atx_headings_start_chunks_and_nest_into_heading_paths() -> None:
    text = (
        "# Alpha\n\nintro\n\n## Beta\n\nbeta text\n\n### Gamma\n\ngamma text\n\n"
        "## Delta\n\ndelta text\n\n# Epsilon\n\n### Zeta skips a level\n\nzeta text\n"
    )
    note = markdown.parse("n.md", text)
    assert [c.heading_path for c in note.chunks] == [
        ["Alpha"],
        ["Alpha", "Beta"],
        ["Alpha", "Beta", "Gamma"],
        ["Alpha", "Delta"],
        ["Epsilon", "Zeta skips a level"],  # Epsilon has no body of its own: no chunk
    ]
    assert all(c.text.lstrip().startswith("#") for c in note.chunks)


def test_setext_headings_are_headings() -> None:
    text = "Big Title\n=========\n\nintro text\n\nSmaller part\n------------\n\npart text\n"
    note = markdown.parse("n.md", text)
    assert note.title == "Big Title"
    assert [c.heading_path for c in note.chunks] == [["Big Title"], ["Big Title", "Smaller part"]]
    assert (note.chunks[1].start_line, note.chunks[1].end_line) == (6, 9)


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_a_hash_inside_a_fence_is_not_a_heading(fence: str) -> None:
    text = f"# Real\n\n{fence}bash\n# install it\n## not a heading either\n{fence}\n\nafter\n"
    note = markdown.parse("n.md", text)
    assert [c.heading_path for c in note.chunks] == [["Real"]]
    assert "# install it" in note.chunks[0].text


def test_heading_anchors_and_closing_hashes_are_not_part_of_the_heading() -> None:
    text = "# Setup { #setup }\n\nx\n\n## Install {#install .big}\n\ny\n\n## Run ##\n\nz\n"
    note = markdown.parse("n.md", text)
    assert note.title == "Setup"
    assert [c.heading_path for c in note.chunks] == [
        ["Setup"],
        ["Setup", "Install"],
        ["Setup", "Run"],
    ]


# front matter -------------------------------------------------------------------------------


def test_front_matter_title_tags_and_aliases_become_note_fields() -> None:
    text = (
        "---\ntitle: Home server backups\ntags: [Ops, backup]\naliases:\n  - restic\n  - b2\n---\n"
        "# Heading that is not the title\n\nBody text.\n"
    )
    note = markdown.parse("ops/backup.md", text)
    assert note.title == "Home server backups"
    assert note.tags == ["ops", "backup"]
    assert note.aliases == ["restic", "b2"]
    assert note.warnings == []
    [chunk] = note.chunks
    assert chunk.title == "Home server backups"
    assert chunk.tags == ["ops", "backup"]
    assert chunk.start_line == 8  # the front matter is metadata, not a passage
    assert "title:" not in chunk.text


def test_front_matter_tags_may_be_one_comma_separated_string() -> None:
    note = markdown.parse("n.md", "---\ntags: 'alpha, #beta gamma'\n---\ntext\n")
    assert note.tags == ["alpha", "beta", "gamma"]


def test_title_falls_back_to_the_first_h1_then_the_file_name() -> None:
    assert markdown.parse("a/b.md", "## Two\n\n# One\n\ntext\n").title == "One"
    assert markdown.parse("a/my note.md", "just text\n").title == "my note"


@pytest.mark.parametrize(
    "front_matter",
    [
        "title: [unclosed",  # not YAML
        "date: 2024-02-30",  # YAML, but a date that does not exist
        "- just\n- a list",  # YAML, but not a mapping
    ],
)
def test_broken_front_matter_is_a_warning_and_the_note_is_still_indexed(front_matter: str) -> None:
    text = f"---\n{front_matter}\n---\n# Kept\n\nThe body survives.\n"
    note = markdown.parse("broken.md", text)
    assert len(note.warnings) == 1
    assert "front matter" in note.warnings[0]
    assert [c.text for c in note.chunks] == ["# Kept\n\nThe body survives."]
    assert note.title == "Kept"


# splitting ----------------------------------------------------------------------------------


def test_a_long_section_splits_on_block_boundaries_under_its_heading_path() -> None:
    paragraphs = [f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 8 for i in range(12)]
    text = "# Top\n\n## Long\n\n" + "\n\n".join(paragraphs) + "\n\n## Next\n\nshort\n"
    note = markdown.parse("n.md", text, target_tokens=100, max_tokens=200)
    long_parts = by_heading(note)[("Top", "Long")]
    assert len(long_parts) > 2
    joined = "\n\n".join(c.text for c in long_parts)
    for p in paragraphs:  # every paragraph is whole in exactly one piece
        assert sum(p in c.text for c in long_parts) == 1
        assert p in joined
    assert all(c.tokens <= 200 for c in long_parts)
    assert all(c.tokens == tokens.count(c.text) for c in note.chunks)
    assert by_heading(note)[("Top", "Next")][0].text == "## Next\n\nshort"


def test_a_table_is_never_split() -> None:
    rows = "\n".join(f"| key{i} | value number {i} with a few words |" for i in range(60))
    table = "| key | value |\n|-----|-------|\n" + rows
    text = f"# T\n\nintro\n\n{table}\n\nafter the table\n"
    note = markdown.parse("n.md", text, target_tokens=30, max_tokens=60)
    holding = [c for c in note.chunks if "| key" in c.text]
    assert len(holding) == 1
    assert table in holding[0].text


def test_fenced_code_is_never_split() -> None:
    code = (
        "```python\n" + "\n".join(f"x{i} = compute({i})  # step {i}" for i in range(80)) + "\n```"
    )
    text = f"# Code\n\nbefore\n\n{code}\n\n\nafter\n"
    note = markdown.parse("n.md", text, target_tokens=30, max_tokens=60)
    holding = [c for c in note.chunks if "compute(" in c.text]
    assert len(holding) == 1
    assert code in holding[0].text


def test_a_code_block_stays_with_the_paragraph_that_introduces_it() -> None:
    """Cut at a token target, a section must not end on "run the commands below." and start
    the next passage with the commands: neither passage then says what the block is for."""
    filler = "\n\n".join(f"Background {i}: " + "some context words here " * 10 for i in range(3))
    lead = "If the iOS build keeps failing, run these from the project root:"
    code = "```shell\n$ flutter clean\n$ pod cache clean --all\n$ pod install\n```"
    text = f"# Upgrade\n\n{filler}\n\n{lead}\n\n{code}\n\n    $ flutter run\n"
    note = markdown.parse("n.md", text, target_tokens=155, max_tokens=160)
    assert len(note.chunks) > 1
    [holding] = [c for c in note.chunks if "pod install" in c.text]
    assert holding.text.startswith(lead) and code in holding.text
    # an indented code block too
    code = "    $ flutter clean\n    $ pod cache clean --all\n    $ pod install"
    indented = f"# Upgrade\n\n{filler}\n\n{lead}\n\n{code}\n"
    note = markdown.parse("n.md", indented, target_tokens=155, max_tokens=160)
    assert len(note.chunks) > 1
    [holding] = [c for c in note.chunks if "pod install" in c.text]
    assert holding.text == f"{lead}\n\n{code}"


# lines and spans ----------------------------------------------------------------------------


def test_spans_are_1_based_inclusive_and_hold_exactly_the_chunk_text() -> None:
    text = "intro line\n   \n\n# A\n\nalpha one\nalpha two\n \t \n\n## B\nbeta\n\n\n"
    note = markdown.parse("n.md", text)
    assert [(c.start_line, c.end_line) for c in note.chunks] == [(1, 1), (4, 7), (10, 11)]
    for c in note.chunks:
        assert span_text(text, c) == c.text


@pytest.mark.parametrize(
    "newline_style",
    ["\r\n", "\r", "mixed"],
)
def test_crlf_and_mixed_line_endings_keep_spans_on_the_files_lines(newline_style: str) -> None:
    lines = ["# Title", "", "first para", "", "## Part", "part body", "more body", "", "tail"]
    if newline_style == "mixed":
        seps = ["\r\n", "\n", "\r", "\r\n", "\n", "\r\n", "\n", "\r"]
        text = "".join(line + sep for line, sep in zip(lines, seps, strict=False)) + lines[-1]
    else:
        text = newline_style.join(lines) + newline_style
    note = markdown.parse("n.md", text)
    assert [c.heading_path for c in note.chunks] == [["Title"], ["Title", "Part"]]
    assert [(c.start_line, c.end_line) for c in note.chunks] == [(1, 3), (5, 9)]
    for c in note.chunks:
        assert "\r" not in c.text
        assert span_text(text, c) == c.text


def test_a_byte_order_mark_does_not_hide_the_first_heading() -> None:
    text = "\ufeff# Title\n\nbody\n"
    note = markdown.parse("n.md", text)
    assert note.title == "Title"
    assert note.chunks[0].heading_path == ["Title"]
    assert (note.chunks[0].start_line, note.chunks[0].text) == (1, "# Title\n\nbody")


@pytest.mark.parametrize("text", ["", "\n", "\n\n   \n\t\n", "---\ntitle: Only meta\n---\n"])
def test_an_empty_note_has_no_chunks_and_no_error(text: str) -> None:
    note = markdown.parse("empty.md", text)
    assert note.chunks == []
    assert note.title in ("empty", "Only meta")


# links and tags -----------------------------------------------------------------------------


def test_wikilinks_and_embeds_are_indexed_by_their_link_text() -> None:
    out = markdown.plain_text(
        "See [[Other Note|the other one]], [[Page#Section]] and ![[diagram.png]]."
    )
    assert out == "See the other one, Page Section and diagram.png."


def test_inline_tags_become_note_tags_but_code_urls_and_numbers_do_not() -> None:
    text = (
        "# Heading is not a tag\n\nWorking on #Project/alpha and #todo, issue #12.\n"
        "Not `#inline-code`, not https://example.com/#fragment, not a#b.\n\n"
        "```\n#fenced\n```\n"
    )
    note = markdown.parse("n.md", text)
    assert note.tags == ["project/alpha", "todo"]
    assert note.chunks[0].tags == ["project/alpha", "todo"]


# ids ----------------------------------------------------------------------------------------

THREE_SECTIONS = (
    "# Doc\n\nintro\n\n## One\n\none text\n\n## Two\n\ntwo text\n\n## Three\n\nthree text\n"
)


def test_the_same_note_gives_the_same_chunk_ids() -> None:
    a = markdown.parse("doc.md", THREE_SECTIONS)
    b = markdown.parse("doc.md", THREE_SECTIONS)
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
    assert len({c.id for c in a.chunks}) == len(a.chunks)
    # the same text in another note is other chunks
    other = markdown.parse("other.md", THREE_SECTIONS)
    assert not {c.id for c in a.chunks} & {c.id for c in other.chunks}


def test_editing_one_section_leaves_the_other_sections_ids_and_hashes_unchanged() -> None:
    before = by_heading(markdown.parse("doc.md", THREE_SECTIONS))
    edited = THREE_SECTIONS.replace("two text", "two text\n\nwith a new paragraph\nover lines")
    after = by_heading(markdown.parse("doc.md", edited))
    assert before.keys() == after.keys()
    for path in before:
        [b], [a] = before[path], after[path]
        assert a.id == b.id
        changed = path == ("Doc", "Two")
        assert (a.content_hash != b.content_hash) is changed
    assert after[("Doc", "Three")][0].start_line > before[("Doc", "Three")][0].start_line


def test_inserting_a_section_does_not_renumber_the_others() -> None:
    before = markdown.parse("doc.md", THREE_SECTIONS)
    inserted = THREE_SECTIONS.replace("## Two", "## New\n\nnew text\n\n## Two")
    after = markdown.parse("doc.md", inserted)
    assert {c.id for c in before.chunks} < {c.id for c in after.chunks}


def test_repeated_headings_get_distinct_ids() -> None:
    text = "# Log\n\n## Notes\n\nmonday\n\n## Notes\n\ntuesday\n"
    note = markdown.parse("log.md", text)
    assert [c.heading_path for c in note.chunks] == [["Log", "Notes"]] * 2  # "# Log" has no body
    assert len({c.id for c in note.chunks}) == 2


# property -----------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "# H",
        "## Sub { #id }",
        "### Deep ###",
        "Title",
        "=====",
        "-----",
        "---",
        "title: x",
        "tags: [a, b",
        "```",
        "~~~",
        "    indented code",
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "> quote [!note]",
        "- item #tag",
        "1. item",
        "[[link|text]] ![[embed]]",
        "plain words here",
        "설정을 바꾼다",
        "<div>",
        "</div>",
        "",
        "   ",
        "\t",
        "\ufeff",
        "\x00",
    ]
)
_NEWLINES = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])
_MARKDOWNISH = st.lists(st.tuples(_PIECES | st.text(max_size=12), _NEWLINES), max_size=40).map(
    lambda parts: "".join(p + nl for p, nl in parts)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=400) | _MARKDOWNISH)
def test_any_text_parses_into_ordered_non_overlapping_chunks_inside_the_file(text: str) -> None:
    note = markdown.parse("prop.md", text, target_tokens=20, max_tokens=40)
    n_lines = len(file_lines(text))
    previous_end = 0
    for c in note.chunks:
        assert 1 <= c.start_line <= c.end_line <= n_lines
        assert c.start_line > previous_end
        previous_end = c.end_line
        assert c.text.strip()
        assert span_text(text, c).replace("\x00", "\ufffd") == c.text
    assert len({c.id for c in note.chunks}) == len(note.chunks)

"""Inserting an answer never breaks a note (issue 27, item 1): every code block and list that
the extractive answerer can quote, inserted under a question in a note with text, a list and a
code block after it, leaves the note's own blocks before and after it as they were, parsed with
markdown-it as every editor's preview does. Over the fixtures always, and over every corpus
beside the checkout when it is there (`../shared/corpora`, as CI has it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kebab import footnotes
from kebab.llm import Evidence
from kebab.llm.quoting import render
from kebab.model import Citation, citation_range
from kebab.syntax import QUOTE_MARKERS
from kebab.units import is_block, units

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora"
BEFORE = "# Host note\n\nSome text before.\n\nWhat does it say?"
AFTER = "Text after the answer.\n\n- an item after\n\n```\ncode after\n```\n"
_md = MarkdownIt("commonmark", {"html": True}).enable("table")


def _blocks(text: str) -> list[tuple[str, str]]:
    """The note's top-level blocks as (kind, their source lines)."""
    lines = text.split("\n")
    return [
        (t.type.removesuffix("_open"), "\n".join(lines[t.map[0] : t.map[1]]))
        for t in _md.parse(text)
        if t.level == 0 and t.map is not None
    ]


def inserted(unit: str, path: str = "src/note.md") -> str:
    """`unit` quoted as the answer and inserted under the host note's question, as Insert does:
    a blank line, the body, a blank line, what followed, and the definitions at the end."""
    ev = Evidence(1, path, ["Section"], 1, 9, unit, "0" * 64, 1.0)
    body, defs = footnotes.render(render([(ev, unit)], [0], ""), [_citation(path)], "host.md")
    return f"{BEFORE}\n\n{body}\n\n{AFTER}\n" + "\n".join(defs) + "\n"  # defs: a paragraph


def _citation(path: str) -> Citation:
    return Citation(1, path, "", ["Section"], citation_range(1, 9), "", "0" * 64, 1.0, "", 1, 9)


def breaks(unit: str) -> bool:
    """Whether inserting `unit` changes the host note's own blocks before or after it."""
    host_before, host_after = _blocks(BEFORE), _blocks(AFTER)
    got = _blocks(inserted(unit))
    tail = [b for b in got if not b[1].startswith("[^kb-")]
    return got[: len(host_before)] != host_before or tail[-len(host_after) :] != host_after


def quotable(text: str) -> Iterator[str]:
    """The code blocks and lists among a note's units."""
    for unit in units(text):
        if is_block(unit) or "\n- " in unit or "\n1. " in unit or unit[:2] in ("- ", "1."):
            yield unit


NESTED = """Group by a function:

    ```tasks
    group by function task.due.format("YYYY-MM")
    ```

More text after the example.
"""


def test_an_indented_example_holding_a_fence_stays_one_block_when_inserted() -> None:
    (unit,) = [u for u in quotable(NESTED) if is_block(u)]
    assert "```tasks" in unit and unit.split("\n")[1].startswith("````")
    assert not breaks(unit)
    assert ("paragraph", "Text after the answer.") in _blocks(inserted(unit))


def test_a_fenced_block_quoting_a_fence_is_one_unit() -> None:
    text = "Write this:\n\n````md\n```tasks\nnot done\n```\n````\n\nAfter."
    blocks = [u for u in units(text) if is_block(u)]
    assert len(blocks) == 1 and "not done" in blocks[0] and "```tasks" in blocks[0]
    assert not breaks(blocks[0])


def test_fixture_blocks_and_lists_never_break_a_note() -> None:
    notes = sorted((ROOT / "fixtures").rglob("*.md"))
    checked = [u for p in notes for u in quotable(p.read_text(encoding="utf-8", errors="replace"))]
    assert checked, "the fixtures hold code blocks and lists"
    assert [u for u in checked if breaks(u)] == []


def corpus_check() -> tuple[int, list[tuple[str, str]]]:
    """(units checked, (note, unit) of those that broke the host note) over every corpus."""
    checked, broke = 0, []
    for note in sorted(CORPORA.rglob("*.md")):
        text = note.read_text(encoding="utf-8", errors="replace")
        for unit in quotable(text):
            checked += 1
            if breaks(unit):
                broke.append((str(note.relative_to(CORPORA)), unit))
    return checked, broke


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora is not beside the checkout")
def test_no_block_or_list_of_any_corpus_breaks_a_note() -> None:
    checked, broke = corpus_check()
    assert checked > 1000
    assert broke == [], f"{len(broke)} of {checked} broke a note, first: {broke[:3]}"


# Where the question is: the note's own structure around it ------------------------------------

ANSWER = "The job runs at 02:30.[^kb-1]\n\n```sh\nrestic backup /srv\n```\n[^kb-1]"
_STRUCTURE = {
    "bullet_list_open",
    "ordered_list_open",
    "list_item_open",
    "heading_open",
    "fence",
    "code_block",
    "table_open",
    "paragraph_open",
}


def structure(
    text: str, skip: range = range(0), asked: frozenset[str] = frozenset()
) -> list[tuple[str, int, str]]:
    """(kind, depth, first line) of the note's items, headings, paragraphs, code, tables and
    quotes, less those that start on the lines in `skip` (the answer's) and the paragraph the
    question was a line of (`asked`: its lines; the answer goes in the middle of it)."""
    lines = text.split("\n")
    return [
        (t.type, t.level, lines[t.map[0]])
        for t in _md.parse(text)
        if t.map is not None
        and t.map[0] not in skip
        and (t.type in _STRUCTURE or t.type == "blockquote_open")
        and not (t.type == "paragraph_open" and _bare(lines[t.map[0]]) in asked)
    ]


def _bare(line: str) -> str:
    """A line without its quote markers and indentation: the paragraph the question was in may
    go on after the answer, its lazy lines written again inside the question's quote or item."""
    return QUOTE_MARKERS.sub("", line).strip()


def _paragraph_of(text: str, line: int) -> frozenset[str]:
    """The lines of the paragraph `line` is in."""
    lines = text.split("\n")
    return next(
        (
            frozenset(_bare(s) for s in lines[t.map[0] : t.map[1]])
            for t in _md.parse(text)
            if t.type == "paragraph_open" and t.map and t.map[0] <= line < t.map[1]
        ),
        frozenset(),
    )


# Answers that open with a list, or with a line leading into a quote of the note: a model's
# answer, or the extractive answerer quoting a list (one answer in eight).
OPENS_WITH_A_LIST = "- Stop the job.[^kb-1]\n- Run `restic check`.[^kb-1]\n  - then prune[^kb-1]"
LEADS_INTO_A_QUOTE = "The notes say:\n\n> Run `restic check` first.\n> Then prune.[^kb-1]"


def answered_under(lines: list[str], line: int, body: str = ANSWER) -> tuple[str, range]:
    """The note with `body` inserted under `line` as Insert writes it, and the answer's lines."""
    from kebab.placement import answer_text

    added, stop = answer_text(lines, line, line, body)
    rest = lines[stop + 1 :]
    new = "\n".join(lines[: line + 1]) + added + "\n" + "\n".join(rest)
    last = max(i for i, s in enumerate(added.split("\n")) if "[^kb-1]" in s)  # its last line
    return new, range(line + 1, line + last + 1)


def host_check(notes: list[Path], body: str = ANSWER) -> tuple[int, list[tuple[str, int]]]:
    """(question lines answered, (note, line) of those whose note's structure changed or where
    Insert would not find `body` again to replace it) over the lines of `notes` that "Answer
    with kebab" is offered on and that Insert writes `body` under (a list that ends the answer
    refuses a question whose children are indented past its items' text: they would be its)."""
    from kebab.lsp.questions import question_at
    from kebab.placement import keeps_structure

    checked, broke = 0, []
    for note in notes:
        text = note.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        lines = text.split("\n")
        for i, s in enumerate(lines):
            q = question_at(lines, (i, 0), (i, 0)) if s.rstrip().endswith("?") else None
            if q is None or not keeps_structure(lines, q.line, body):
                continue
            checked += 1
            new, answer = answered_under(lines, q.line, body)
            asked = _paragraph_of(text, q.line)
            if (
                structure(new, answer, asked) != structure(text, range(0), asked)
                or footnotes.answer_below(new.split("\n"), q.line) != answer[-1]
            ):
                broke.append((str(note), q.line + 1))
    return checked, broke


HOSTS = """# Inbox

- [ ] What time does the backup run?
  - asked after the upgrade
- [ ] Next question?

1. Why is the disk full?
2. second

> What is restic?
> A quote's own line.

> [!question] How much pork?

> Why is it quoted?
> [!note] My own callout
> my own text

> - Is a list in a quote kept?
> - a sibling

-\tIs a tab after the marker kept?
  - a nested item

```sh
read -p "Continue?"
is it up?
```
"""


@pytest.mark.parametrize("body", [ANSWER, OPENS_WITH_A_LIST, LEADS_INTO_A_QUOTE])
def test_an_answer_keeps_the_notes_lists_quotes_and_nesting_where_the_question_is(
    tmp_path: Path, body: str
) -> None:
    note = tmp_path / "inbox.md"
    note.write_text(HOSTS, encoding="utf-8")
    checked, broke = host_check([note], body)
    assert checked == 8 and broke == []  # no action in the code block


DEEPER = """# Deeper

> outer
> > Why is it doubly quoted?
> > more inner text
> outer again

- item
  > Why is this quoted in an item?
- next item

- > Why is the quote the item?
- next

- a
  > - Why so deep?
  >   - child
- b

- Why is the disk full?
lazy continuation of the item
- next

> Why is it full?
lazy line of the quote

1. first
   1. Why nested ordered?
      text of it
2. second
"""


@pytest.mark.parametrize("body", [ANSWER, OPENS_WITH_A_LIST, LEADS_INTO_A_QUOTE])
def test_an_answer_stays_in_nested_quotes_quotes_in_items_and_takes_lazy_lines_along(
    tmp_path: Path, body: str
) -> None:
    """Every quote and item the question is in holds its answer (`> > Q?`, `  > Q?` in an
    item, `- > Q?`); a line that went on with the question's paragraph without its markers
    stays in its quote or item after the answer, and no list is cut in two."""
    note = tmp_path / "deeper.md"
    note.write_text(DEEPER, encoding="utf-8")
    checked, broke = host_check([note], body)
    assert checked == 7 and broke == []


LISTS_AND_LAZY = [  # what a review found: each its own part of one note
    "- a\n  - b\n    - Why three deep?\n    - sibling",
    "- a\n    - Why four-space style?\n    - sibling\n- b",
    "- Why tabs?\n\t- child\n\t\t- grandchild\n- next",
    "- parent\n\t- Why tabbed child?\n\t\t- child\n\t\t\t- grandchild\n\t- sibling",
    "> - Why in a quoted list?\n> more\n> - next",
    "> 1. Why ordered in a quote?\n> more\n> 2. next",
    "> > Why inner?\n> more\n> > inner again",
    "> Why spaced marker?\n > more",
    "> > Why tight markers?\n>> more",
    ">\t- Why a tab after the marker?\n>\t- next",
    "10. first line\n   Why on a wide item's second line?\n11. next",
    "- item\nWhy on a lazy second line?\n- next",
    "> text\nWhy on a quote's lazy line?",
    "- item\n      Why indented six?\n- next",
    "> Why before a lazy table-like line?\n| a |",
]
NO_ACTION = [
    "Why is this a heading?\n---\n\ntext",
    "Why is this one too?\n===",
    "| Q | A |\n|---|---|\n| x | Why a row?\n| y | z |",
    "a | b\n--|--\nx | Why a row without pipes at its ends?\ny | z",
    "| a | b |\n|---|---|\nWhy a row without pipes?\n| 2 | 3 |",
    "Why a heading two lines long?\nmore\n---",
    "- Why a heading in an item?\n  ---",
    "> Why a heading in a quote?\n> more\n> ---",
]
# Lines that went on with the question's paragraph but, written apart after the answer, would
# open a block (a list, code, a heading, HTML, a table), and lines whose place the line rules
# misread (`14.` cannot start a list inside a paragraph): the parser's check says no.
READ_OTHERWISE_APART = [
    "> Why with a list indented four?\n    - foo",
    "> Why with a list indented a tab?\n\t- foo",
    "> - Why in an item?\n    - foo",
    "> Why with a numbered line?\n    2. foo",
    "> Why with a hash?\n    # not a heading",
    "> Why with a fence?\n    ```",
    "> Why with a tag?\n<foo-bar>",
    "> Why with an image?\n<img src=x.png>",
    "> Why with a table?\n| a | b |\n|---|---|\n| 1 | 2 |",
    "- Why with a table in an item?\n| a | b |\n|---|---|\n- b",
    "- item text\n<b>Why</b> after a tag?\n- b",
    "The number is\n14. Why is this no list?",
    "- a\n    b\n        Why so deep?\n- c",
]
AFTER_OTHER_BLOCKS = [  # a second review: the question's paragraph starts on its own line
    "Run it like this:\n\n    restic backup /srv\nWhy does the code above fail?",
    "- Step one:\n\n      make build\n  Why does the step fail?\n- Step two",
    "---\ntags:\n    - a\n...\nWhy after front matter?",
    "> ```\n> code\nWhy after quoted code?",
    "> Why before a rule?\n---",
    "- Why before a rule after an item?\n---",
    "- Why with text indented six?\n      more\n- b",
    "Why with text indented four?\n    see below",
]


def test_nested_lists_tabs_and_lazy_lines_keep_their_places_and_headings_and_tables_get_none(
    tmp_path: Path,
) -> None:
    """A list three deep, four-space or tab indented, keeps its siblings and children where
    they were; a line that went on with the question without all its markers stays in its
    quote or item; a question on a paragraph's second line is answered in its first line's
    item or quote; re-answering replaces. A heading's underlined text and a table row offer no
    action: an answer there would unmake the heading or cut the table; nor does a question
    whose lazy lines would open a block once written apart after the answer."""
    note = tmp_path / "lists.md"
    note.write_text("\n\n# part\n\n".join(LISTS_AND_LAZY) + "\n", encoding="utf-8")
    # a list ending the answer is refused under the two questions with a tab-indented child:
    # the child, at its items' text column, would become their last item's
    for body, refused in ((ANSWER, 0), (OPENS_WITH_A_LIST, 2), (LEADS_INTO_A_QUOTE, 0)):
        checked, broke = host_check([note], body)
        assert checked == len(LISTS_AND_LAZY) - refused and broke == [], body
    none = tmp_path / "none.md"
    none.write_text("\n\n# part\n\n".join(NO_ACTION) + "\n", encoding="utf-8")
    assert host_check([none]) == (0, [])
    apart = tmp_path / "apart.md"
    apart.write_text("\n\n# part\n\n".join(READ_OTHERWISE_APART) + "\n\nafter\n", "utf-8")
    assert host_check([apart]) == (0, [])
    for i, part in enumerate(AFTER_OTHER_BLOCKS):  # each alone: front matter opens a note
        other = tmp_path / f"other{i}.md"
        other.write_text(part + "\n\nafter\n", encoding="utf-8")
        assert host_check([other]) == (1, []), part


# A third review: where the line rules misread a note and only the parse tells.
UNSAFE_BY_THE_PARSE = [
    "> Why does the build fail?\n<https://ci.example.com/run/42>\n\nafter",  # would leave the quote
    "> Why does it fail?\n<b>CI</b> says timeout.\n\nafter",
    "- Why is it slow?\n<https://example.com/issue/1>\n\nafter",
    "Why does restic skip files?\n[docs]: https://restic.readthedocs.io\n\nSee [docs].",  # a link
    "<?php\n\n// Why does this print twice?\necho $x;\n?>\n\nText.",  # inside HTML
    "```pip install kebab``` installs it.\n\n```\nimport os\n\n# Why is this needed?\n```\n",
    "- Run:\n\n  ```sh\n  make\n```\n\nWhy does it fail?\n\nafter",  # code: the item's fence
    "```\ncode\n    ```\n\nWhy does it fail?\n\nafter",  # ended with its item, or never closed
    '> See [docs].\n>\n> [docs]: https://x.org/search?\n> "Search help"\n\nafter',  # title
    "> <details>\n> Why is it hidden?\n\nafter",  # raw HTML in a quote
    "\n".join(["| host |", "|---|", *[f"db{i}" for i in range(560)], "db is down?", "db"]),
    "\n".join(  # a row past the parse's reach under the header: the rows below would be text
        ["| host | note", "|---|---", *[f"| h{i} | ok" for i in range(560)], "| h | down?", "| z |"]
    ),
]
SAFE_BY_THE_PARSE = [
    "## How do I install it?\n    pip install kebab\n\nafter",  # the code stays code
    "> ## How do I install it?\n>     pip install kebab\n\nafter",
    "Why does it fail?\n>\n\nafter",  # a bare quote line after it
    "> [!question] Why does it fail?\n>\n\nafter",  # a callout closed by a bare `>`
    "# Log\n\nMonday was fine.\n\n---\nTuesday: why did the job fail?\n\n---\nWednesday.",
    "<pre>\n- x\n</pre>\nWhy is it?\n\nafter",
    "> [!question] Why does the deploy hang?\n> It prints:\n>\n> > waiting for lock\n>\n\nafter",
    "> [!question] Why is it?\n> ```\n> code\n> ```\n>\n\nafter",  # the answer under the bare `>`
    "> [!question] Why is it?\n> text\n>\n>     indented code\n>\n\nafter",
    "> [!question]\n> Why is it?\n>\n> more text\n> > - x\n> text",  # the nested item stays
]


def test_where_the_line_rules_misread_a_note_the_parse_decides(tmp_path: Path) -> None:
    """A line that went on with the question but would leave its quote or become a link
    definition once apart, a question inside raw HTML or after a code span that looks like a
    fence, a row deep in a long table: no action. A heading over indented code, a bare `>` after
    the question, `---` rules around it, `<pre>` above it: answered, the note otherwise kept, and
    answered again in place."""
    for i, part in enumerate(UNSAFE_BY_THE_PARSE):
        note = tmp_path / f"unsafe{i}.md"
        note.write_text(part + "\n", encoding="utf-8")
        assert host_check([note]) == (0, []), part
    for i, part in enumerate(SAFE_BY_THE_PARSE):
        note = tmp_path / f"safe{i}.md"
        note.write_text(part + "\n", encoding="utf-8")
        assert host_check([note]) == (1, []), part
        lines = part.split("\n")
        at = next(j for j, s in enumerate(lines) if s.rstrip().endswith("?"))
        once = _answered(lines, at)
        assert _answered(once, at) == once, part
        assert [s for s in lines if s not in once] == [], part  # nothing of the note is lost


def test_a_stored_answer_goes_under_no_line_of_front_matter_code_or_html() -> None:
    """Insert at cursor takes any line: only text and the blank lines between blocks take an
    answer, never front matter (it would become YAML), code or an HTML block."""
    from kebab.placement import keeps_structure

    note = ["---", "title: Backups?", "---", "", "```sh", 'read -p "Continue?"', "```", ""]
    note += ["<div>", "Why here?", "</div>", "", "Why?"]
    assert [i for i in range(len(note)) if keeps_structure(note, i)] == [3, 7, 11, 12]


def _answered(lines: list[str], line: int) -> list[str]:
    """The note once Insert has answered the question at `line` (again, if it was before)."""
    from kebab.lsp.questions import question_at
    from kebab.placement import answer_text

    q = question_at(lines, (line, 0), (line, 0))
    assert q is not None
    end = footnotes.answer_below(lines, q.line)
    end = q.line if end is None else end
    text, stop = answer_text(lines, q.line, end, ANSWER)
    rest = lines[stop + 1 :]
    return [*lines[: q.line + 1], *text.split("\n")[1:], *rest]


def test_a_question_callout_with_a_lazy_line_is_answered_again_in_place() -> None:
    """The lazy line moves into the callout after the first answer; asking again replaces
    that answer instead of taking it for part of the question and stacking a second."""
    once = _answered(["> [!question]", "> Why is it?", "lazy", "", "after"], 1)
    assert once[-5:] == ["> [^kb-1]", ">", "> lazy", "", "after"]
    assert _answered(once, 1) == once


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora is not beside the checkout")
@pytest.mark.parametrize("body", [ANSWER, OPENS_WITH_A_LIST, LEADS_INTO_A_QUOTE])
def test_an_answer_under_any_question_of_any_corpus_keeps_its_note_whole(body: str) -> None:
    checked, broke = host_check(sorted(CORPORA.rglob("*.md")), body)
    assert checked > 100
    assert broke == [], f"{len(broke)} of {checked} changed their note, first: {broke[:3]}"


if __name__ == "__main__":  # the count for a closing note: python tests/test_insert_markdown.py
    n, bad = corpus_check()
    print({"checked": n, "broke": len(bad), "first": bad[:3]})
    hosts, changed = host_check(sorted(CORPORA.rglob("*.md")))
    print({"question_lines": hosts, "changed": len(changed), "first": changed[:3]})


def test_a_quoted_link_or_image_points_where_it_did_once_inserted_elsewhere() -> None:
    """A link is relative to the note it is written in: quoted from `tools/setup.md` into
    `journal/2026/today.md`, `../img/shot.png` pointed at nothing and the image broke."""
    unit = (
        "Press Save: ![the dialog](../img/save%20dialog.png) and see "
        "[Filters](filters.md#due-dates), [odd](a%29b%23c.md), [home](/index.md), "
        "[web](https://example.org/a.md), [plan](<backup plan.md>) "
        "and `[code](not/a/link.md)`."
    )
    ev = Evidence(1, "tools/setup.md", ["Section"], 1, 9, unit, "0" * 64, 1.0)
    answer = render([(ev, unit)], [0], "")
    body, _ = footnotes.render(answer, [_citation("tools/setup.md")], "journal/2026/today.md")
    assert "![the dialog](../../img/save%20dialog.png)" in body, body
    assert "[Filters](../../tools/filters.md#due-dates)" in body, body
    assert "[odd](../../tools/a%29b%23c.md)" in body, body  # still one file, not a cut link
    assert "[plan](<../../tools/backup%20plan.md>)" in body, body  # a target with spaces
    assert "[home](/index.md)" in body and "[web](https://example.org/a.md)" in body, body
    assert "`[code](not/a/link.md)`" in body, body  # code, as written
    same, _ = footnotes.render(answer, [_citation("tools/setup.md")], "tools/today.md")
    assert "](../img/save%20dialog.png)" in same and "](filters.md#due-dates)" in same, same


def test_a_list_ending_the_answer_takes_another_marker_than_the_notes_list_after_it() -> None:
    """With the same marker the note's list after the answer would become the answer's (one
    list, its items the answer's); another bullet or delimiter starts a list of its own."""
    from kebab.placement import answer_text, keeps_structure

    for mine, quoted, written in (
        ("- mine", "- Do X.", "* Do X."),
        ("* mine", "* Do X.", "- Do X."),
        ("+ mine", "+ Do X.", "* Do X."),
        ("1. mine", "1. Do X.", "1) Do X."),
        ("3) mine", "1) Do X.", "1. Do X."),
        ("* mine", "- Do X.", "- Do X."),  # another marker already: as quoted
    ):
        lines = ["Q?", "", mine, mine.replace("mine", "also mine")]
        body = f"Steps:[^kb-1]\n\n{quoted}[^kb-1]\n{quoted.replace('X', 'Y')}[^kb-1]"
        text, _ = answer_text(lines, 0, 0, body)
        assert f"\n{written}[^kb-1]\n" in text, (mine, text)
        assert keeps_structure(lines, 0, body), mine
    # the answer's own two lists (`* x` then `- a`) stay two: a third bullet for the last
    body = "Intro.[^kb-1]\n\n* x[^kb-1]\n\n- a[^kb-1]"
    text, _ = answer_text(["Q?", "", "- mine"], 0, 0, body)
    assert text.endswith("\n* x[^kb-1]\n\n+ a[^kb-1]"), text
    assert keeps_structure(["Q?", "", "- mine"], 0, body)

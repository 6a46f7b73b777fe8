"""The hover on a kebab footnote reads in any editor (issue 27, item 10): its first line says
which note and lines, and no line is wider than an 80-column echo area (Emacs's eldoc shows a
message taller than its window from the end, so a wrapped line pushed the header out), while
the quoted passage renders exactly as before (markdown-it: the same blocks, the same text).
Over every passage of the fixtures, and of the corpora beside the checkout when they are there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kebab.footnotes import Cited, Definition
from kebab.lsp.hover import WIDTH, columns, header, preview, quote
from kebab.markdown import parse

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora"
_md = MarkdownIt("commonmark", {"html": True}).enable("table")
LONG = (
    "The tasks plugin groups by any function of the task, and the groups are sorted by "
    "their names, so a function returning a date string sorts them in date order."
)


def cited(text: str, title: str = "Queries › Grouping", path: str = "Queries/Grouping.md") -> Cited:
    d = Definition("kb-1", 1, path, "", 3, 9, "", title)
    return Cited(d, ROOT / path, "fresh", text, 3, 9)


def rendered(markdown: str) -> list[tuple[str, str, int, str]]:
    """What a renderer shows: each token's kind and nesting, and its text with line breaks
    in paragraphs read as the spaces they render as."""
    out = []
    for t in _md.parse(markdown):
        content = t.content
        if t.type == "inline":
            content = " ".join(content.split())
        out.append((t.type, t.tag, t.nesting, content))
    return out


def unwrapped(text: str) -> str:
    """The passage quoted line for line, as the hover quoted it before (leading headings out)."""
    lines = text.split("\n")
    while lines and (not lines[0].strip() or re.match(r"^\s{0,3}#{1,6}(\s|$)", lines[0])):
        lines.pop(0)
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def named(text: str) -> str:
    """The header's title for a passage: its headings, so the hover leaves them out."""
    return " › ".join(m.group(1) for m in re.finditer(r"^\s{0,3}#{1,6}\s+(.*)$", text, re.M))


def passages() -> list[tuple[str, str]]:
    """Every passage of the fixtures, and of one corpus note in 60 (a few seconds' worth)."""
    notes = sorted((ROOT / "fixtures").rglob("*.md"))
    if CORPORA.is_dir():
        notes += sorted(CORPORA.rglob("*.md"))[::60]
    out = []
    for note in notes:
        text = note.read_text(encoding="utf-8", errors="replace")
        out += [(str(note), c.text) for c in parse(str(note), text).chunks]
    return out


def test_the_first_line_says_which_note_and_lines_and_fits() -> None:
    value = preview(cited(f"## Grouping\n\n{LONG}"))
    first = value.split("\n")[0]
    assert first == "**Queries › Grouping** · `Queries/Grouping.md` lines L3–L9"
    assert all(columns(line) <= WIDTH for line in value.split("\n")), value
    assert "## Grouping" not in value  # the header names it; the quote starts with the text


def test_a_long_heading_path_loses_its_first_headings_not_the_note_or_lines() -> None:
    title = "Queries › Grouping › Custom Groups › Examples of grouping by a function of a task"
    line = header(title, "Queries/Grouping.md", 1096, 1120)
    assert line == "**… › Examples of grouping by a…** · `Queries/Grouping.md` lines L1096–L1120"
    assert columns(line.replace("**", "").replace("`", "")) <= WIDTH


@pytest.mark.parametrize(
    "text",
    [
        LONG,
        f"- {LONG}\n    - {LONG}\n1. {LONG}",
        f"> {LONG}",
        "김치찌개는 중약불로 15분 끓입니다. 돼지고기를 먼저 볶고 김치를 넣어 충분히 볶은 다음 "
        "물을 붓고 끓이면 맛이 깊어집니다. 두부는 마지막에 넣습니다.",
        f"{LONG} - 1. # > ``` <b> --- = +\n{LONG}  \nafter a hard break",
    ],
)
def test_prose_is_wrapped_to_the_width_and_renders_the_same(text: str) -> None:
    quoted = quote(text, named(text))
    assert all(columns(line) <= WIDTH for line in quoted.split("\n")), quoted
    assert rendered(quoted) == rendered(unwrapped(text))


def test_code_and_tables_are_quoted_as_they_are() -> None:
    code = 'group by function task.due.format("YYYY-MM-DD dddd") + " a code line this long stays"'
    text = f"```tasks\n{code}\n```\n\n| a | {LONG} |\n| - | - |\n\n    {LONG}"
    assert quote(text, named(text)) == unwrapped(text)


def test_every_passage_renders_as_it_did_and_most_fit_the_width() -> None:
    """The same blocks and text for every passage; the lines still too wide are code, tables
    and long links (over the corpora, 16410 of 23362 passages had one, 6796 after wrapping)."""
    found = passages()
    assert len(found) > 50
    changed = [
        (note, text)
        for note, text in found
        if rendered(quote(text, named(text))) != rendered(unwrapped(text))
    ]
    assert changed == []
    wide_before = sum(_too_wide(unwrapped(text)) for _, text in found)
    wide_after = sum(_too_wide(quote(text, named(text))) for _, text in found)
    assert wide_after * 2 < wide_before, (wide_before, wide_after)


def _too_wide(quoted: str) -> bool:
    return any(columns(line) > WIDTH for line in quoted.split("\n"))


def test_a_heading_the_header_does_not_name_stays_in_the_quote() -> None:
    """A footnote titled "Source" names no heading: the passage's own heading is the only place
    the reader sees which section it is."""
    assert quote("# Note 0\n\nneedle text", "Source").startswith("> # Note 0")
    assert quote("# Note 0\n\nneedle text", "Note 0") == "> needle text"

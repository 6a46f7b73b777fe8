"""The Markdown grammar (`kebab.syntax`): each construct read one way, the readings that must
differ side by side and differing as they say, and no reader of notes writing a construct's
pattern again (issue 28, item 3)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kebab import syntax

SERVER = Path(__file__).resolve().parent.parent / "server" / "kebab"


@pytest.mark.parametrize(
    ("lines", "open_after"),
    [
        (["```py", "x = 1", "```"], ["```", "```", ""]),
        (["````", "```tasks", "```", "````"], ["````", "````", "````", ""]),  # an inner fence
        (["~~~", "```", "~~~~"], ["~~~", "~~~", ""]),  # the same character closes it
        (["   ```", "  code", "  ```  "], ["```", "```", ""]),
        (["```", "``` not a close"], ["```", "```"]),
        (["text", "    ```"], ["", "```"]),
        (["```pip install kebab``` installs it.", "text"], ["", ""]),  # a code span, no fence
        (["~~~ `x`", "code", "~~~"], ["~~~", "~~~", ""]),  # a tilde fence's info may hold one
    ],
)
def test_a_fence_closes_on_its_own_character_at_least_as_long(
    lines: list[str], open_after: list[str]
) -> None:
    fence, seen = "", []
    for line in lines:
        fence = syntax.fence_after(line, fence)
        seen.append(fence)
    assert seen == open_after


def test_headings_as_commonmark_reads_them_and_as_an_excerpt_strips_them() -> None:
    for heading in ["# A", "###### A", "   ## A", "#", "##\tA"]:
        assert syntax.HEADING.match(heading), heading
    for not_heading in ["#tag", "####### A", "    # code", "\\# A"]:
        assert not syntax.HEADING.match(not_heading), not_heading
    assert syntax.HEADING_MARK.sub("", "    ## Setup") == "Setup"  # any indentation
    assert not syntax.HEADING_MARK.match("#")  # a stray `#` is text to an excerpt
    assert syntax.HEADING_OPENING.sub("", "#hashtag") == "hashtag"  # the parser said heading


def test_a_link_whose_target_in_angle_brackets_holds_a_parenthesis_shows_its_text() -> None:
    """`[plan](<backup (old).md>)` is one link, as CommonMark reads it: an excerpt shows "plan",
    not "plan.md>)"."""
    from kebab.excerpts import excerpt

    line = "See [the plan](<backup (old).md>) and ![shot](<a (1).png>) or [x](y.md) first."
    assert excerpt(line) == "See the plan and or x first."
    assert syntax.MARKDOWN_LINK_SHOWN.sub(r"\1", "[the plan](<backup plan.md>)") == "the plan"


def test_quote_markers_of_prose_code_and_excerpts() -> None:
    assert syntax.QUOTE_MARKER.sub("", "> > a", count=1) == "> a"  # one level
    assert syntax.QUOTE_PREFIX.sub("", ">  > [!note] a") == "[!note] a"
    assert syntax.QUOTED_CODE_MARKERS.sub("", "> >\tindented") == "\tindented"
    assert syntax.QUOTE_MARKERS.sub("", "> >\ttext") == "text"


def test_callouts_narrow_for_units_loose_for_excerpts() -> None:
    m = syntax.CALLOUT.search("text\n> [!Tip]- Title")
    assert m is not None and m.group(2) == "Tip"
    assert syntax.CALLOUT_TYPE.sub("", "[!note]+ Body") == "Body"
    assert syntax.CALLOUT_TYPE.sub("", "[!메모] Body") == "[!메모] Body"
    assert syntax.CALLOUT_TYPE_LOOSE.sub("", " [!메모] Body") == "Body"
    assert syntax.CALLOUT_START.match("> [!anything")
    q = syntax.QUESTION_CALLOUT.match("> [!QUESTION]- Why?")
    assert q is not None and q["rest"] == "Why?"


def test_footnote_references_definitions_and_kebabs_own() -> None:
    line = "A fact.[^kb-2] B.[^note]"
    assert [m["label"] for m in syntax.FOOTNOTE_REFERENCE.finditer(line)] == ["kb-2", "note"]
    assert not syntax.FOOTNOTE_REFERENCE.search("[^kb-2]: a definition")
    assert syntax.FOOTNOTE_LABEL.search("[^kb-2]: a definition")
    text = "x\n[^a]: one\n [^b]: indented is not one\n[^kb-1]: two"
    assert [m["label"] for m in syntax.FOOTNOTE_DEFINITION.finditer(text)] == ["a", "kb-1"]
    ours = '[^kb-3]: [Ops › Backup](../ops/backup.md#backup "kb:1a2b3c") L12–L30'
    d = syntax.KEBAB_DEFINITION.match(ours)
    assert d is not None and (d["link"], d["hash"], d["start"], d["end"]) == (
        "../ops/backup.md#backup",
        "1a2b3c",
        "12",
        "30",
    )
    edited = '[^kb-3]: [Ops](../ops/backup.md "kb:1a2b3c") (see also the runbook)'
    assert not syntax.KEBAB_DEFINITION.match(edited)
    assert syntax.KEBAB_DEFINITION_START.match(edited)  # still kebab's: its answer is left out
    assert syntax.KEBAB_REFERENCE.search("x[^kb-12].") and not syntax.KEBAB_REFERENCE.search("[^1]")


def test_wikilinks_as_links_and_as_text() -> None:
    m = syntax.WIKILINK.search("see ![[Backup#^block1|the block]]")
    assert m is not None and m.group(1, 2, 3) == ("!", "Backup", "block1")
    shown = syntax.WIKILINK_SHOWN.search("see [[Backup#^block1|the block]]")
    assert shown is not None and shown.group(1, 2, 3) == ("Backup", "^block1", "the block")
    assert not syntax.WIKILINK.search("[[a\nb]]") and syntax.WIKILINK_SHOWN.search("[[a\nb]]")
    assert syntax.WIKILINK_ALIAS.sub(r"\1", "[[n#h|alias]]") == "alias"
    assert syntax.WIKILINK_HEADING.sub(r"\1 › \2", "[[n#h]]") == "n › h"


def test_markdown_links_images_and_lines_of_nothing_but_links() -> None:
    m = syntax.MARKDOWN_LINK.search('![a](<b.md> "t")')
    assert m is not None and m.group(1, 2) == ("!", "b.md")
    targets = [m[2] for m in syntax.MARKDOWN_LINK.finditer('[b](../x.md#h "title") [c](y.md)')]
    assert targets == ["../x.md#h", "y.md"]
    assert syntax.MARKDOWN_LINK_SHOWN.sub(r"\1", "![shot](a b.png)") == "shot"
    assert syntax.LINKS_ONLY.match("[[a]], [b](b.md) / [[c|C]]")
    assert not syntax.LINKS_ONLY.match("[[a]] says more")
    assert syntax.IMAGE.sub("", "![x](a.png)![[b.png]]<img src=c>") == ""


def test_tags_and_what_is_not_prose() -> None:
    text = "#ops and #ops/backup, not #1 or a.md#anchor or `#code` or [x](y.md#z)"
    assert syntax.TAG.findall(syntax.NOT_PROSE.sub(" ", text)) == ["ops", "ops/backup"]


def test_tables_comments_and_dialect_markup() -> None:
    assert syntax.TABLE_RULE.match("| --- | :--: |") and not syntax.TABLE_RULE.match("| - |")
    assert syntax.TABLE_RULE_CHARS.fullmatch("- - -")  # a thematic break ends a paragraph too
    assert syntax.HTML_COMMENT.sub("", "a<!-- b") == "a<!-- b"
    assert syntax.HTML_COMMENT_TO_END.sub("", "a<!-- b\nc") == "a"
    for marker in ["/// tip", "::: note", '!!! warning "Title"', "???+ info", '<div class="x">']:
        assert syntax.DIALECT_MARKER.match(marker), marker
    assert syntax.SNIPPET_INCLUDE.sub("", "{* docs/app.py ln[1:3] *}") == ""


def test_emphasis_marks_leave_snake_case_whole() -> None:
    assert syntax.EMPHASIS_MARKS.sub("", "**max_age** is _set_") == "max_age is set"
    assert syntax.STAR_ITALIC.sub(r"\1", "a *b c* d") == "a b c d"
    assert syntax.UNDERSCORE_ITALIC.sub(r"\1", "snake_case_name _x_") == "snake_case_name x"


def test_a_soft_break_joins_a_sentence_but_not_blocks() -> None:
    assert (
        syntax.SOFT_BREAK.sub(r"\1 ", "The backup runs\nat 02:30.") == "The backup runs at 02:30."
    )
    for text in ["Done.\nNext", "Steps:\n- one", "# Title\ntext", "text\n```", "a\n> b"]:
        assert syntax.SOFT_BREAK.sub(r"\1 ", text) == text, text


# Regex text that reads one of these constructs: found in a module's own pattern, it is the
# grammar written again.
_CONSTRUCTS = {
    "wikilink": r"\[\[",
    "footnote": r"\[\^",
    "heading": "#{1,6}",
    "fence": "`{3",
    "backtick fence": "```",
    "tilde fence": "~{3",
    "list marker": r"\d+[.)]",
    "callout": r"\[!",
    "quote": r">\s",
}
# (module, pattern): what reads a construct outside the grammar, and why it may
_ELSEWHERE = {
    # a model's misspelt citation marker (`[^1]`, `[# 2]`), not a footnote
    ("rag/attribution.py", r"\[\^?\s*#?\s*\d{1,3}\s*\]|\(#\d{1,3}\)"),
    # a model's reply, not a note: JSON in a fence, an answer wrapped whole in one
    ("rag/calls.py", r"```[a-zA-Z]*\s*\n?(.*?)```"),
    ("rag/generate.py", r"^\s*```(?:markdown|md)?\s*\n(.*)\n```\s*$"),
}


def _patterns(path: Path) -> list[str]:
    """The string literals passed first to a `re` function in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute)):
            continue
        if isinstance(node.func.value, ast.Name) and node.func.value.id == "re":
            found += [
                c.value
                for c in ast.walk(node.args[0])
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
    return found


def test_the_markdown_grammar_is_written_once() -> None:
    again = [
        f"{rel}: {pattern} ({name})"
        for path in sorted(SERVER.rglob("*.py"))
        if (rel := path.relative_to(SERVER).as_posix()) != "syntax.py"
        for pattern in _patterns(path)
        if (rel, pattern) not in _ELSEWHERE
        for name, construct in _CONSTRUCTS.items()
        if construct in pattern
    ]
    assert again == []


def test_the_grammar_imports_nothing_of_kebabs() -> None:
    tree = ast.parse((SERVER / "syntax.py").read_text(encoding="utf-8"))
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m in modules if m.split(".")[0] == "kebab"] == []


def test_front_matter_ends_where_yaml_ends_it_for_every_reader() -> None:
    """`---` or `...` closes front matter, for the code action (no answer inside it) and Find
    References on its `title:` line alike."""
    assert syntax.front_matter_end(["---", "title: A", "...", "text"]) == 2
    assert syntax.front_matter_end(["---", "title: A", "---"]) == 2
    assert syntax.front_matter_end(["# A", "---"]) == 0
    assert syntax.front_matter_end(["---", "title: never closed"]) == 0


def test_container_prefix_keeps_every_quote_and_item_a_line_is_in() -> None:
    assert syntax.container_prefix("> > Q?") == "> > "
    assert syntax.container_prefix("  > Q?") == "  > "
    assert syntax.container_prefix("> - [ ] Q?") == ">   "
    assert syntax.container_prefix("- > Q?") == "  > "
    assert syntax.container_prefix("10. Q?") == "    "
    assert syntax.container_prefix("Q?") == ""
    assert syntax.shared_quote("> >", "> outer") == ">"
    assert syntax.shared_quote(">", "text") == ""

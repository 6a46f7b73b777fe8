"""Answering a line that already has kebab's answer under it, as VS Code and Neovim drive it:
the answer is replaced, never inserted a second time, its footnote definitions with it, and
the rest of the note is left as it was (issue 27, item 5)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsp_client import KebabClient, serving, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIRST = "What time does the nightly backup job run?"
OTHER = "How do I restore a single file from the restic backup?"
AFTER = (
    "My own remark about parsnips and the garden shed.[^1]\n\n"
    "Is it worth moving Grafana to its own VM?\n\n"
    "[^1]: my own footnote, kept as it is\n"
)
NOTE = f"# Questions\n\n{FIRST}\n\n{AFTER}"


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=["vscode", "neovim"])
async def editor(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[KebabClient]:
    async with serving(tmp_path_factory.mktemp(request.param), request.param) as client:
        await client.wait_ready()
        yield client


def kb_definitions(text: str) -> list[str]:
    return re.findall(r"^\[\^kb-\d+\]: .*$", text, re.MULTILINE)


def after_answer(text: str) -> str:
    """The note from the writing that followed the question on: what an answer must not touch
    (less the kebab definitions at its end)."""
    rest = text[text.index(AFTER.split("\n")[0]) :]
    return "\n".join(ln for ln in rest.split("\n") if not ln.startswith("[^kb-"))


async def answer_line(editor: KebabClient, uri: str, line_text: str, *asked: str) -> dict:
    line = editor.text(uri).split("\n").index(line_text)
    result = await editor.command("kebab.insertAnswer", uri, line, *asked, timeout=60)
    assert result["applied"], result["answer"]["answer"]
    return result


async def test_asking_twice_leaves_one_answer_and_one_set_of_definitions(
    editor: KebabClient,
) -> None:
    uri = editor.open(editor.root / "inbox" / "twice.md", NOTE)
    first = await answer_line(editor, uri, FIRST)
    once = editor.text(uri)
    assert not first.get("replaced")
    said = len(editor.messages)

    again = await answer_line(editor, uri, FIRST)
    twice = editor.text(uri)
    body = first["answer"]["answer"].split("[#")[0].strip()
    assert twice.count(body) == 1, twice  # one answer under the question, not two
    assert kb_definitions(twice) == kb_definitions(once), twice  # one set of definitions
    assert after_answer(twice) == after_answer(NOTE), twice  # the rest of the note untouched
    assert twice == once  # the same answer again: re-answering changes nothing
    assert again["replaced"] is True
    await until(
        lambda: any("replaced" in m.message for m in editor.messages[said:]),
        "a message saying the earlier answer was replaced",
    )
    editor.close(uri)


async def test_a_different_answer_replaces_the_earlier_one_and_its_unused_definitions(
    editor: KebabClient,
) -> None:
    mine = "I keep [^kb-1] here as a reminder of the schedule."
    uri = editor.open(editor.root / "inbox" / "other.md", NOTE)
    first = await answer_line(editor, uri, FIRST)
    once = editor.text(uri)
    assert "[^kb-1]" in once
    # the person cites the first answer's source in their own writing: that definition stays
    editor.replace(uri, once.replace(AFTER.split("\n")[0], f"{AFTER.split(chr(10))[0]} {mine}"))

    await answer_line(editor, uri, FIRST, OTHER)
    text = editor.text(uri)
    lines = text.split("\n")
    assert lines[lines.index(FIRST) + 1] == ""
    assert first["answer"]["answer"].split("[#")[0].strip() not in text, text
    assert mine in text and re.search(r"^\[\^kb-1\]: ", text, re.MULTILINE), text
    referenced = set(re.findall(r"\[\^(kb-\d+)\](?!:)", text))
    defined = re.findall(r"^\[\^(kb-\d+)\]:", text, re.MULTILINE)
    assert set(defined) == referenced and len(defined) == len(set(defined)), text
    assert after_answer(text).replace(f" {mine}", "") == after_answer(NOTE), text
    editor.close(uri)


async def test_a_callout_answered_twice_holds_one_answer(editor: KebabClient) -> None:
    note = f"# Callout\n\n> [!question] {FIRST}\n\nAfter the callout.\n"
    uri = editor.open(editor.root / "inbox" / "callout-twice.md", note)
    await answer_line(editor, uri, f"> [!question] {FIRST}")
    once = editor.text(uri)
    await answer_line(editor, uri, f"> [!question] {FIRST}")
    assert editor.text(uri) == once, editor.text(uri)
    assert once.endswith("After the callout.\n\n" + "\n".join(kb_definitions(once)) + "\n")
    editor.close(uri)


INBOX = (
    "# Inbox\n\n"
    f"- [ ] {FIRST}\n"
    "  - asked after the restic upgrade\n"
    "- [ ] Is it worth moving Grafana to its own VM?\n"
)


async def test_a_question_in_a_list_is_answered_inside_its_item(editor: KebabClient) -> None:
    """The answer is the item's content: the list stays one list, the person's nested item
    stays nested under the question, and answering again replaces it."""
    from markdown_it import MarkdownIt

    def items(text: str) -> list[tuple[int, str]]:
        """(nesting level, first line) of every list item."""
        tokens = MarkdownIt("commonmark").parse(text)
        lines = text.split("\n")
        return [(t.level, lines[t.map[0]]) for t in tokens if t.type == "list_item_open" and t.map]

    uri = editor.open(editor.root / "inbox" / "list.md", INBOX)
    await answer_line(editor, uri, f"- [ ] {FIRST}")
    once = editor.text(uri)
    assert items(once) == items(INBOX), once
    lines = once.split("\n")
    below = lines[lines.index(f"- [ ] {FIRST}") + 2]
    assert below.startswith("  ") and "[^kb-1]" in once, once
    await answer_line(editor, uri, f"- [ ] {FIRST}")
    assert editor.text(uri) == once  # replaced, not stacked
    editor.close(uri)


QUOTED = f"# Meeting\n\n> {FIRST}\n> The team asked this on Monday.\n\nAfter the quote.\n"


async def test_a_question_in_a_quote_is_answered_inside_the_quote(editor: KebabClient) -> None:
    """The answer stays in the quote, and the quote's own next line stays a paragraph of its
    own rather than running on from the answer; answering again replaces it."""
    from markdown_it import MarkdownIt

    uri = editor.open(editor.root / "inbox" / "quote.md", QUOTED)
    await answer_line(editor, uri, f"> {FIRST}")
    once = editor.text(uri)
    tokens = MarkdownIt("commonmark").parse(once)
    assert [t.type for t in tokens].count("blockquote_open") == 1, once
    paragraphs = [t.content for t in tokens if t.type == "inline"]
    assert "The team asked this on Monday." in paragraphs, once
    assert "After the quote." in paragraphs and "[^kb-1]" in once, once
    await answer_line(editor, uri, f"> {FIRST}")
    assert editor.text(uri) == once  # replaced, not stacked
    editor.close(uri)


STARTER = "Where is the sourdough starter kept?"
LISTED = f"# Baking\n\n{STARTER}\n\n- my own item\n- another of mine\n"


async def test_an_answer_that_is_a_list_goes_in_apart_from_the_notes_list(
    editor: KebabClient,
) -> None:
    """The extractive answer quotes the note's list (one answer in eight opens with a list):
    it was refused as changing the blocks around it. Now it goes in, written with another
    bullet so the note's own list after it stays a list of its own, and answering again
    replaces it."""
    from markdown_it import MarkdownIt

    uri = editor.open(editor.root / "inbox" / "listed.md", LISTED)
    await answer_line(editor, uri, STARTER)
    once = editor.text(uri)
    assert "* Kept in the fridge, fed once a week.[^kb-1]" in once, once
    tokens = MarkdownIt("commonmark").parse(once)
    lists = [t.map for t in tokens if t.type == "bullet_list_open" and t.level == 0]
    mine = once.split("\n").index("- my own item")
    assert len(lists) == 2 and lists[1] is not None and lists[1][0] == mine, once
    await answer_line(editor, uri, STARTER)
    assert editor.text(uri) == once  # replaced, not stacked
    editor.close(uri)

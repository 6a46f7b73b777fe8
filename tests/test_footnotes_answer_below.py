"""Finding the answer kebab inserted under a line, so that answering the line again replaces it
(issue 27, item 5): where the answer ends, and which of its definitions nothing else cites."""

from __future__ import annotations

from kebab.footnotes import answer_below, unused_definitions
from kebab.llm import Evidence
from kebab.llm.quoting import render
from kebab.syntax import content_indent
from kebab.units import units

DEF1 = '[^kb-1]: [Backups › Schedule](../ops/backup.md#schedule "kb:4701d6a9a16c") L12–L26'
DEF2 = '[^kb-2]: [Backups › Restore](../ops/backup.md#restore "kb:976a5b5a408d") L49–L62'


def lines(text: str) -> list[str]:
    return text.split("\n")


def test_the_answer_ends_where_the_notes_own_writing_starts() -> None:
    note = lines(
        "When does the backup run?\n\n"
        "The job runs every day at 02:30.[^kb-1]\n"
        "A check runs on Sundays.[^kb-1]\n\n"
        "- one step[^kb-2]\n- another step[^kb-2]\n\n"
        "My own remark about parsnips.\n\n"
        f"{DEF1}\n{DEF2}\n"
    )
    assert answer_below(note, 0) == 6  # the list's last item
    assert answer_below(note, 2) is None  # no blank line under it: nothing kebab wrote there
    assert answer_below(note, len(note) - 1) is None


def test_a_quoted_code_block_is_part_of_the_answer_whichever_side_its_marker_is() -> None:
    note = lines(
        "How do I restore a file?\n\n"
        "Restoring a single file:[^kb-2]\n```bash\n# list snapshots\n\nrestic snapshots\n```\n\n"
        "```bash\nrestic restore latest\n```\n[^kb-2]\n\n"
        "```sh\nmy own script\n```\n\n"
        f"{DEF2}"
    )
    assert answer_below(note, 0) == 12  # the marker line after the second block
    between = lines("Q?\n\nLead-in:[^kb-1]\n\n```\ncode\n```\n\nAfter the block.[^kb-1]\n\nMine.")
    assert answer_below(between, 0) == 8  # a code block between two of its paragraphs
    unclosed = lines("Q?\n\nLead-in:[^kb-1]\n```\nnever closed\n\nMine.[^kb-1]")
    assert answer_below(unclosed, 0) is None  # where it ends is not known: nothing is replaced


def test_a_persons_writing_that_cites_the_answers_source_is_not_the_answer() -> None:
    mid = lines("Q?\n\nAt 02:30.[^kb-1]\n\nI keep [^kb-1] here as a reminder.\n\nMore.[^kb-1]")
    assert answer_below(mid, 0) == 2
    mixed = lines("Q?\n\nAt 02:30.[^kb-1]\n\nMy view[^1] agrees.[^kb-1]\n\n[^1]: mine")
    assert answer_below(mixed, 0) == 2  # it also cites the person's own footnote
    heading = lines("Q?\n\nAt 02:30.[^kb-1]\n## Next section\nText.[^kb-1]")
    assert answer_below(heading, 0) == 2


def test_numeric_labels_count_when_kebab_defined_them() -> None:
    kebab = DEF1.replace("kb-1", "3")
    note = lines(f"Q?\n\nAt 02:30.[^3]\n\nMine.[^1]\n\n[^1]: my own footnote\n{kebab}")
    assert answer_below(note, 0) == 2
    assert answer_below(lines("Q?\n\nMine.[^1]\n\n[^1]: my own footnote"), 0) is None


def test_in_a_callout_the_answer_is_the_rest_of_the_callout() -> None:
    note = lines(
        "> [!question] When?\n>\n> At 02:30.[^kb-1]\n>\n> Kept 7 days.[^kb-1]\n"
        "> [!question] Another?\n\nAfter."
    )
    assert answer_below(note, 0) == 4
    assert answer_below(note, 5) is None


def test_a_callout_quoted_as_code_in_the_answer_does_not_end_it() -> None:
    """A note about callouts quotes one in a fence (`> [!NOTE] Title`): read as a callout's
    start, it cut the answer short, and answering again left its second half behind."""
    note = lines(
        "> [!question] Why is the task not found?\n>\n> Not found in 1.6.3:[^kb-1]\n"
        "> ```text\n> [!NOTE] Some Title\n> - [ ] Task in callout\n> ```\n>\n"
        "> The cache is off.[^kb-1]\n> [!note] My own callout\n\nAfter."
    )
    assert answer_below(note, 0) == 8


def test_under_a_list_items_question_the_answer_is_the_items_indented_content() -> None:
    note = lines("- [ ] When?\n\n  At 02:30.[^kb-1]\n\n  - a nested item of mine\n- another item")
    assert answer_below(note, 0) == 2  # the nested item of the person's stays theirs
    margin = lines("- When?\n\nAt 02:30.[^kb-1]\n\n- another item")
    assert answer_below(margin, 0) == 2  # written at the margin by an earlier kebab
    assert answer_below(lines("10. When?\n\n    At 02:30.[^kb-1]\n11. Next"), 0) == 2
    assert [content_indent(s) for s in ("-\tQ?", "\t-\tQ?", "- [ ] Q?", "1) Q?")] == [
        " " * 4,
        " " * 8,
        " " * 2,
        " " * 3,
    ]


def test_under_a_quoted_question_the_answer_is_inside_the_quote_or_where_kebab_wrote_it() -> None:
    inside = lines("> - When?\n>\n>   At 02:30.[^kb-1]\n>\n> - a sibling")
    assert answer_below(inside, 0) == 2
    margin = lines("> When?\n\nAt 02:30.[^kb-1]\n\nMine.")  # an earlier kebab's, at the margin
    assert answer_below(margin, 0) == 2
    # the person's own line in the quote first: theirs, and nothing below is taken for kebab's
    mine = lines("> When?\n>\n> My own thoughts.\n>\n> At 02:30.[^kb-1]")
    assert answer_below(mine, 0) is None


def test_a_model_answer_quoting_the_note_or_leading_into_its_quote_is_found_again() -> None:
    """A model quotes the note (`> …[^kb-1]`), or opens with an uncited line leading into what
    it cites: answering again replaced neither, and stacked a second answer above the first."""
    quoted = lines("Q?\n\n> Restart it with `make run`.\n> Then check.[^kb-1]\n\nMine.")
    assert answer_below(quoted, 0) == 3
    lead = lines("Q?\n\nThe notes say:\n\n> Restart it.[^kb-1]\n\nThen check.[^kb-1]\n\nMine.")
    assert answer_below(lead, 0) == 6
    # a person's follow-up quote that asks and cites kebab's answer is theirs, never deleted
    asks = lines("Q?\n\n> Does it hang?\n> I think so, same lock.[^kb-1]\n\nMine.")
    assert answer_below(asks, 0) is None
    in_callout = lines("> [!question] Q?\n>\n> Steps:\n>\n> > Restart it.[^kb-1]\n\nMine.")
    assert answer_below(in_callout, 0) == 4
    # the note's own: a quote citing nothing of kebab's, a line leading into nothing it cites
    assert answer_below(lines("Q?\n\nAt 02:30.[^kb-1]\n\n> my log\n> more[^kb-1] x"), 0) == 2
    assert answer_below(lines("Q?\n\nMy thoughts:\n\n- mine\n\nAt 02:30.[^kb-1]"), 0) is None
    assert answer_below(lines("Q?\n\nAt 02:30.[^kb-1]\n\nMy list:\n\n- mine"), 0) == 2
    lazy = lines("Q?\n\n> > log\nAt 02:30.[^kb-1]")  # a quote's lazy line is the quote's
    assert answer_below(lazy, 0) is None
    code = lines("Q?\n\nTo restart:\n\n```sh\nmake run\n```\n\nIt clears the lock.[^kb-1]\n\nMine.")
    assert answer_below(code, 0) == 8  # the lead-in, its command, what cites them


def test_a_question_answered_in_a_quote_below_or_a_line_that_is_no_lead_in_is_the_notes() -> None:
    """A review's cases: a quote or callout holding another question and its answer, right
    under the one asked, was replaced with it; so were a heading, an item or a table row
    ending in `:`, and a line leading into an answer further down."""
    below = "\n\n> [!question] Why does it hang?\n>\n> The lock file stays.[^kb-2]\n\nMine."
    assert answer_below(lines(f"How do I restart?{below}"), 0) is None
    asked = lines("Q1?\n\n> Why does it hang?\n>\n> The lock file stays.[^kb-2]\n\nMine.")
    assert answer_below(asked, 0) is None
    inner = "> [!question] Q1?\n>\n> A1.[^kb-1]\n>\n> > [!question] Q2?\n> >\n> > A2.[^kb-2]"
    assert answer_below(lines(inner), 0) == 2
    for own in ("## Details:", "- Todo:", "| a:", "> Mine:"):
        assert answer_below(lines(f"Q?\n\n{own}\n\nRestart it.[^kb-1]\n\nMine."), 0) is None
    later = lines("Q?\n\nIt times out.[^kb-1]\n\nSummary:\n\nRestart nightly.[^kb-2]")
    assert answer_below(later, 0) == 2
    # a second review's: a line asked itself (selected) with its answer; a person's footnote
    asked = lines("Why does it hang?\n\nSummarise the restart steps:\n\nRun make.[^kb-2]")
    assert answer_below(asked, 0) is None
    theirs = lines("Q?\n\nAs my runbook says[^ops]:\n\n> Restart it.[^kb-1]\n\n[^ops]: mine")
    assert answer_below(theirs, 0) is None
    remark = lines("Q?\n\nPer my runbook[^ops]: wait, then check.[^kb-1]\n\n[^ops]: mine")
    assert answer_below(remark, 0) is None  # cites the person's footnote, before a colon


def test_definitions_only_the_answer_cites_are_unused_once_it_goes() -> None:
    note = lines(
        f"Q?\n\nAt 02:30.[^kb-1] Restore it so.[^kb-2]\n\nI keep [^kb-1] in mind.\n\n"
        f"{DEF1}\n{DEF2}\n[^kb-3]: a definition I wrote by hand"
    )
    assert unused_definitions(note, 1, 2) == [7]  # kb-1 is cited by the person too


def test_an_answer_ending_in_two_blocks_of_one_passage_is_found_to_its_last_line() -> None:
    """Insert finds an answer's end by its markers: a last block quoted with none of its own
    (right under another, the marker above covering both) stayed in the note when the answer
    was replaced, once more on every re-ask. Every quoted block leads with its marker."""
    text = "# Install\n\n```\nbrew install foo\n```\n\n```\nfoo --init\n```\n"
    ev = Evidence(1, "tools/foo.md", ["Install"], 1, 9, text, "", 0.8)
    found = [(ev, u) for u in units(text)]
    answer = render(found, list(range(len(found))), "how do I install foo?")
    body = answer.replace("[#1]", "[^kb-1]").split("\n")
    note = ["# Journal", "", "How do I install foo?", "", *body, "", "My own text after."]
    end = answer_below(note, 2)
    assert end is not None and note[end] == "```" and note[end - 1] == "foo --init", (end, note)

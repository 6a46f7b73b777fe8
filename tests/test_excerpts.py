"""What an excerpt (answer.v1 `candidates[].excerpt`, `kebab search`) shows of a passage: what a
person reads, never the Markdown dialect's markup, and never a command changed."""

from __future__ import annotations

from kebab.excerpts import excerpt


def test_a_pipe_in_a_command_is_the_commands_and_a_tables_pipes_split_its_cells() -> None:
    """A tldr line's `{{a|b}}` alternatives and a shell pipe were shown as " · ", as if they
    split a table's cells: `watch "a | b"` read `watch "a · b"`, a different command."""
    line = '- Watch a pipeline: `watch "{{command1}} | {{command2}}"`'
    assert excerpt(line) == 'Watch a pipeline: watch "{{command1}} | {{command2}}"'
    options = "- Check out a PR: `gh {{[co|pr checkout]}} {{pr_number|url|branch}}`"
    assert excerpt(options) == "Check out a PR: gh {{[co|pr checkout]}} {{pr_number|url|branch}}"
    table = "| flag | what |\n|---|---|\n| `-q|--quiet` | say less |"
    assert excerpt(table) == "flag · what -q|--quiet · say less"


def test_an_excerpt_leaves_out_mkdocs_markup() -> None:
    """An image's attribute list (`{ loading=lazy }`), a nested tab marker (`//// tab | Linux`)
    and a file include in a fenced block (`{! a.css !}`) were shown as text."""
    note = (
        "![shot](img/a.png){ loading=lazy }\n\nSet it so.\n\n//// tab | Linux, macOS\n\n"
        "Run it.\n\n////\n\n```css\n{!../../docs_src/static/styles.css!}\n```\n\n"
        "A [button](x.md){ .md-button } and a set `{ a=1 }`."
    )
    assert excerpt(note) == "Set it so. Run it. A button and a set { a=1 }."

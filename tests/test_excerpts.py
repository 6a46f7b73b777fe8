"""What an excerpt (answer.v1 `candidates[].excerpt`, `kebab search`) shows of a passage: what a
person reads, never the Markdown dialect's markup, and never a command changed."""

from __future__ import annotations

import time

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


def test_what_only_looks_like_an_attribute_list_is_text_and_never_slow() -> None:
    """A review's cases: a formula, a template and a value mid-sentence are text; a long line
    of quoted attributes with no closing brace took seconds (each pair doubled the time)."""
    assert excerpt("$\\sum_{i=1}^{n} x_i$ and {{ .Title }} then {{#if}}") == (
        "$\\sum_{i=1}^{n} x_i$ and {{ .Title }} then {{#if}}"
    )
    assert excerpt("The config is {a=1, b=2} in use.") == "The config is {a=1, b=2} in use."
    long = "![shot](a.png){ " + " ".join(f'w{i}="{i}"' for i in range(40))
    started = time.perf_counter()
    assert excerpt(long).startswith("{ w0=")  # no closing brace: not an attribute list
    assert time.perf_counter() - started < 0.5


def test_a_bash_expansion_is_code_not_an_include() -> None:
    assert excerpt("```bash\necho ${!BASH*}\n```") == "echo ${!BASH*}"


def test_a_content_tab_is_its_title_and_a_code_comment_keeps_its_mark() -> None:
    """A reader saw `=== "Tail Recursion"` in an excerpt, and a Python comment inside a block
    without its `#` ("… help=… Causes [default: 1] to show …"), where it read as code."""
    note = (
        '=== "Tail Recursion"\n\n    ```python\n    def f(n):\n        # stop at zero\n'
        '        return n\n    ```\n\n=== "Production"\n\n    Use it.'
    )
    assert excerpt(note) == "Tail Recursion: def f(n): # stop at zero return n Production: Use it."
    # where the excerpt starts, a comment's `#` would read as a heading: it is left out there
    assert excerpt("```sh\n# install it\npip install x  # quietly\n```") == (
        "install it pip install x # quietly"
    )
    # ...a code line's only: prose and a table that start with code or a `#` keep it
    assert excerpt("`>=3.8` is required.") == ">=3.8 is required."
    assert excerpt("| # | Name |\n|---|---|\n| 1 | foo |") == "# · Name 1 · foo"
    assert excerpt('=== "`uv`"\n\n    run it') == "uv: run it"

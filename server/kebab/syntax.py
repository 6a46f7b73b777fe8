"""The Markdown kebab reads, in one place: a named pattern (or a tiny function) for each piece of
syntax in a note — code fences, headings, list markers and task boxes, quotes and callouts,
footnotes, wikilinks, embeds and Markdown links, tags, tables, emphasis, and the dialect markup
around text (mkdocs includes, admonitions, HTML comments and tags).

Every reader of notes (the chunker, the unit splitter, the excerpts, the link reader, the footnote
reader, attribution, the editor's question finder) matches Markdown with these, so a construct is
read the same way wherever it is read and a fix to its reading reaches them all. Where two readers
need one construct read differently (a prose line's quote markers take the spaces after them, a
code line's leave its indentation), both patterns are here side by side, each saying how it
differs and why.

What is not Markdown stays with the module that reads it: kebab's `[#n]` citation marker
(`footnotes.MARKER`), sentence ends, the values an answer states. This module imports nothing of
kebab's: it is the bottom of the layer map.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Code fences ------------------------------------------------------------------------------------
FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})")
"""A line that opens or closes a fenced code block, at any indentation; group 1 is its fence
(```` ``` ````, `~~~~`)."""

BACKTICK_FENCES = re.compile(r"^`{3,}", re.MULTILINE)
"""A backtick fence at the start of any line of a text: where a unit's code block starts (kebab
writes the blocks it quotes with backticks, `units.fence_for`), not three backticks inside a code
span. Tildes and indented fences are not looked for: kebab never writes them."""

LEADING_BACKTICKS = re.compile(r"\s*(`{3,})")
"""A run of backticks that starts a line after its indentation (matched, not searched): what
could close a backtick fence written around the line (`units.fence_for`)."""


def closes(opener: str, line: str) -> bool:
    """Whether `line` closes a block opened by `opener` (CommonMark: the same character, at
    least as many, nothing after it): a ```` ```tasks ```` line inside a block is code."""
    bare = line.strip()
    return len(bare) >= len(opener) and bare[0] == opener[0] and bare == bare[0] * len(bare)


def fence_after(line: str, fence: str) -> str:
    """The fence open after `line`: `fence` until a line closes it (`closes`); the fence `line`
    opens when none is open; "" otherwise. What a line-by-line reader keeps to skip code."""
    if fence:
        return "" if closes(fence, line) else fence
    opened = FENCE_LINE.match(line)
    if opened is None or (opened.group(1)[0] == "`" and "`" in line[opened.end() :]):
        return ""  # a backtick fence's info string holds no backtick: ```pip``` is a code span
    return opened.group(1)


def front_matter_end(lines: list[str]) -> int:
    """The 0-based line that closes the note's front matter (`---` or `...`, as YAML and the
    parser close it), 0 when the note has none."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)


def fence_open_at(lines: list[str], line: int) -> str:
    """The fence open when `line` starts (`fence_after` over the lines before it): "" outside
    code."""
    fence = ""
    for text in lines[:line]:
        fence = fence_after(text, fence)
    return fence


VERBATIM_INSIDE = re.compile(
    r"^\s*(?:>\s?)+\s*(?:`{3,}|~{3,})"
    r"|^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:`{3,}|~{3,})"
    r"|^[ \t]+(?:`{3,}|~{3,})"
    r"|^\s{0,3}<(?:!--|pre|script|style|textarea|\?|![A-Za-z]|!\[CDATA\[)",
    re.IGNORECASE,
)
"""A fence opened in a quote (`> ````), on a list marker's line (`- ````) or indented (an item's
fence ends with its item; a closing fence indented four closes nothing), or an HTML comment,
`<pre>`, `<script>`, `<style>`, `<textarea>`, `<?php`, `<!DOCTYPE` or `<![CDATA[` (which run
across blank lines): code or HTML a line-by-line fence reader (`fence_after`) does not see; the
parser decides."""

MAYBE_INDENTED_CODE = re.compile(r"\n[ \t]*\n( {4}|\t)[ \t]*\S")
"""A blank line, then a line indented four spaces or a tab: where a CommonMark indented code block
may start (searched in "\\n\\n" + the text, so a passage may start with one). Only a hint: the
parser decides (a list item's indented paragraph is not code)."""

# Headings ---------------------------------------------------------------------------------------
HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
"""An ATX heading line (`## Setup`, `#` alone): up to three spaces, one to six `#`, then a space
or the line's end (CommonMark)."""


def heading_level(line: str) -> int:
    """The level (1-6) of the ATX heading on `line`; 0 when it is not one."""
    text = line.strip()
    return len(text) - len(text.lstrip("#")) if HEADING.match(line) else 0


HEADING_MARK = re.compile(r"^\s*#{1,6}\s+")
"""A heading's `#` marks and the space after them, at any indentation: what an excerpt matches
and strips (`render`). Unlike `HEADING`, a `#` with nothing after it is not one, and an
indented `    # x` is."""

HEADING_OPENING = re.compile(r"^#{1,6}\s*")
"""A stripped heading's opening `#` marks and any space after them (`markdown.clean_heading`,
on the lines the parser found to be a heading). Unlike `HEADING_MARK`, no space is needed after
them: a setext heading's text that starts `#hashtag` loses its `#` too."""

HEADING_CLOSING = re.compile(r"\s+#+\s*$")
"""An ATX heading's optional closing `#` marks (`## Setup ##`)."""

HEADING_ATTRIBUTES = re.compile(r"\s*\{\s*[#.][^{}]*\}\s*$")
"""mkdocs-style attributes at a heading's end (`## Setup { #setup }`)."""

# List items -------------------------------------------------------------------------------------
LIST_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+")
"""A list item's marker (`-`, `*`, `+`, `1.`, `1)`) and the space after it, at the start of a
stripped line or unit."""

_ITEM_START = re.compile(r"^(\s*(?:[-*+]|\d{1,9}[.)]))( {1,4}|\t)?")


def content_indent(line: str) -> str:
    """The indentation that continues `line`'s block: a list item's content column (`- [ ] Q?`:
    two spaces, `10. Q?`: four), an indented line's own, "" at the margin. A block written at
    it after a blank line stays in the item instead of ending the list."""
    item = _ITEM_START.match(line)
    if item and (item.group(2) or line[item.end() :] == ""):
        marker = len(item.group(1).expandtabs(4))
        width = len(item.group(0).expandtabs(4)) if item.group(2) else marker + 1
        return " " * (width if width - marker <= 4 else marker + 1)  # `-\tQ?`: a tab to column 4
    return line[: len(line) - len(line.lstrip(" "))]


_QUOTE_LEVEL = re.compile(r"^( *)> ?")


def container_prefix(line: str) -> str:
    """What a line needs at its start to stand in `line`'s innermost block: its quote markers
    (`> > Q?`: `> > `), each list marker as the spaces of its content column (`> - Q?`: `>   `;
    `  > Q?` in an item: `  > `), an indented line's own indentation; tabs read as columns of
    four (`>\t- Q?`: `>     `). Text written at it after a blank line (`rstrip`ped) stays in
    every quote and item `line` is in."""
    prefix, rest = "", line.expandtabs(4)
    while True:
        if quote := _QUOTE_LEVEL.match(rest):
            prefix, rest = prefix + quote.group(1) + "> ", rest[quote.end() :]
            continue
        item = _ITEM_START.match(rest)
        if item and (item.group(2) or rest[item.end() :] == ""):
            prefix, rest = prefix + content_indent(rest), rest[item.end() :]
            continue
        return prefix + rest[: len(rest) - len(rest.lstrip(" "))]


# What a line's text (its quote markers and indentation gone) starts that a paragraph cannot
# take in as a line of its own: a list item, a heading, a fence, a quote, a thematic break, an
# HTML block's tag, and `===`, which would make the paragraph a heading.
_OPENS = re.compile(
    r"^(?:[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|#{1,6}(?:[ \t]|$)|>|`{3}|~{3}|<[A-Za-z/!?]"
    r"|[-*_](?:[ \t]*[-*_]){2,}[ \t]*$|=+[ \t]*$)"
)


def _depth(line: str) -> int:
    """How many quotes `line` is written in (its leading `>` markers)."""
    markers = QUOTE_MARKERS.match(line)
    return markers.group(0).count(">") if markers else 0


def bare_text(line: str) -> str:
    """A line without its quote markers and indentation."""
    return QUOTE_MARKERS.sub("", line).strip()


def paragraph_start(lines: list[str], line: int) -> int:
    """The line the paragraph holding `line` begins on: a question written on a paragraph's
    later line stands in the quotes and items of its first (`- item` then `Why?` at the margin
    or indented six: the item's content column either way). Conservative: it stops at a line
    that is not plain text (code indented four, a table row, HTML, a heading, a fence, front
    matter) and, where the lines above are quoted deeper, at a fence's code; stopping early
    only leaves the answer at the question line's own place."""
    i, top = line, front_matter_end(lines)
    if not bare_text(lines[line]):
        return line  # a blank line (a callout's bare `>`) is in no paragraph: its own place
    while i > top:
        above, here = lines[i - 1], lines[i]
        text = bare_text(above)
        # an item's line opens a block unless indented four past the text above (then text)
        column = len(container_prefix(QUOTE_MARKERS.sub("", above.expandtabs(4))))
        opens = _OPENS.match(bare_text(here)) and _indent(here) < column + 4
        if not text or opens or _depth(here) > _depth(above):
            break
        if (_OPENS.match(text) and not LIST_LEAD.match(text)) or text.startswith(("|", "<")):
            break
        if _indent(above) >= 4 and not LIST_LEAD.match(text):  # code, or a deeper item's text
            break
        if _depth(here) < _depth(above) and _in_quoted_fence(lines, i - 1):
            break
        i -= 1
    return i


def _in_quoted_fence(lines: list[str], line: int) -> bool:
    """Whether quoted `line` is code: a fence opened inside its quote and not yet closed."""
    first = line
    while first > 0 and _depth(lines[first - 1]):
        first -= 1
    inside = [QUOTE_MARKERS.sub("", s) for s in lines[first : line + 1]]
    return bool(fence_open_at(inside, len(inside) - 1) or FENCE_LINE.match(inside[-1]))


def _indent(line: str) -> int:
    """Columns of space before a line's text, past its quote markers."""
    rest = QUOTE_MARKERS.sub("", line.expandtabs(4))
    return len(rest) - len(rest.lstrip(" "))


def quote_part(prefix: str) -> str:
    """A `container_prefix`'s quote markers without the list indentation after them (`>   `:
    `> `); "" outside quotes."""
    return prefix[: prefix.rfind(">") + 1] + " " if ">" in prefix else ""


def answer_prefix(lines: list[str], line: int) -> str:
    """Where an answer under `line` is written: `container_prefix` of its paragraph's first line."""
    return container_prefix(lines[paragraph_start(lines, line)])


def lazy_lines(lines: list[str], line: int, prefix: str) -> int:
    """How many lines after `line` continue its paragraph where a blank line would move them:
    lazily, without all the markers of its quotes and list items (`prefix`): `> Q?` then
    `more`, `> - Q?` then `> more`; or indented four past it (`Q?` then `    see below`), which
    after a blank line would be code. The paragraph holds them as text."""
    if HEADING.match(bare_text(lines[line])):
        return 0  # a heading is one line: the next is a block of its own, code if indented
    count = 0
    for s in lines[line + 1 :]:
        text, wide = bare_text(s), s.expandtabs(4)
        if not text:
            break
        if wide.startswith(prefix):
            rest = wide[len(prefix) :]
            if len(rest) - len(rest.lstrip(" ")) < 4:
                break  # the paragraph's own next line, written in its place
        elif _OPENS.match(text) or _depth(s) > prefix.count(">"):  # a block, a deeper quote
            break
        count += 1
    return count


def shared_quote(prefix: str, line: str) -> str:
    """The blank line, written at `prefix`, that keeps `line` in the quotes it shares with the
    text above (`> > ` and `> text`: `>`; ` > text` too): as many quote levels as both have."""
    levels = min(prefix.count(">"), _depth(line))
    at = -1
    for _ in range(levels):
        at = prefix.index(">", at + 1)
    return prefix[: at + 1]


TABLE_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
"""A table's delimiter row (`|---|:--:|`, `--|--`), read on a line's text without its quote
markers and indentation; with a `|` in it (`---` alone is a rule), the rows that follow it, up to
a blank line, are the table's, with or without pipes."""

FRESH_BLOCK = re.compile(r"^(?![-*_](?:[ \t]*[-*_]){2,}[ \t]*$)(?:#{1,6}(?:[ \t]|$)|[-*+] +\S)")
"""A line at the margin that starts a block whatever the line before it was: an ATX heading, or
a bullet list item with text (such an item interrupts a paragraph and ends a quote); not a
thematic break, and not an ordered item (`14.` starts a list inside a paragraph only as `1.`)."""


TASK_BOX = re.compile(r"^\[[ xX]\]\s+")
"""A task list item's box (`[ ]`, `[x]`) once its list marker is gone."""

LIST_LEAD = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
"""`LIST_ITEM` at any indentation, with the task box after it: all an excerpt leaves out of a
list item's line (`render`)."""

# Quotes and callouts ----------------------------------------------------------------------------
QUOTE_MARKER = re.compile(r"^\s*>\s?")
"""One quote marker and the space after it: a line of a quote (or of a callout), one level off."""

QUOTE_MARKERS = re.compile(r"^\s*(?:>\s?)+")
"""All of a line's quote markers, each with the one space or tab after it (`render`)."""

QUOTED_CODE_MARKERS = re.compile(r"^\s*(?:> ?)+")
"""`QUOTE_MARKERS` for a line of a quoted code block (`units`): only a space goes with each `>`,
so a code line indented with a tab keeps it."""

QUOTE_PREFIX = re.compile(r"^(>\s*)+")
"""All of a stripped prose line's quote markers and all the space after each (`units`). Unlike
`QUOTE_MARKERS`, `>  > text` loses all its space too: the callout type after it
(`CALLOUT_TYPE`) is matched at the text's very start."""

CALLOUT = re.compile(r"^(\s*>\s*)\[!([A-Za-z-]+)\][+-]?", re.MULTILINE)
"""A callout's first line (`> [!note]-`) in a text: group 1 its quote marker, group 2 its type."""

CALLOUT_TYPE = re.compile(r"^\[![A-Za-z-]+\][+-]?\s*")
"""A callout's `[!type]` (and fold mark) at a line's start once its quote markers are gone
(`units`; the type as `CALLOUT` reads it)."""

CALLOUT_TYPE_LOOSE = re.compile(r"^\s*\[![\w-]+\][+-]?\s*")
"""`CALLOUT_TYPE` after spaces too, and with any word characters for a type (`[!메모]`, `[!tip2]`):
what an excerpt leaves out (`render`, after `QUOTE_MARKERS`, which leaves the spaces past one).
The unit splitter keeps the narrower reading: a change there changes the units (`units.VERSION`)."""

CALLOUT_START = re.compile(r"^\s*>\s*\[!")
"""A line that starts a callout, whatever its type: where the answer kebab wrote inside one ends
(`footnotes.answer_below`)."""

QUESTION_CALLOUT = re.compile(r"^\s*>\s*\[!question\][+-]?\s*(?P<rest>.*)$", re.IGNORECASE)
"""A `> [!question]` callout's first line; `rest` is its title, the question when it has one."""

# A line's lead, and where blocks start -----------------------------------------------------------
QUESTION_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)*")
"""Every mark before a line's text, in any order: heading marks, list markers (a bullet's task
box), quote markers. What a question is asked without (`lsp.questions`)."""

WRAP_LEAD = re.compile(r"^((?:\s{0,3}>\s?)*)(\s*(?:[-*+]|\d{1,9}[.)])\s+)?")
"""Where a line's text starts, for rewrapping it (`lsp.hover`): group 1 its quote markers (each
taking one space), group 2 a list item's marker. CommonMark's own limits (three spaces before a
`>`, nine digits in an ordered marker), as a renderer reads the line that is rewrapped."""

OPENS_BLOCK = re.compile(r"^(?:[-*+]|\d{1,9}[.)]|#{1,6}|[-=_*]+|[>|<].*|`{3}.*|~{3}.*)$")
"""A word that would start a block (a list item, a heading, a rule, a quote, a table, HTML, a
fence) if a rewrapped line began with it (`lsp.hover`)."""

SOFT_BREAK = re.compile(
    r"^(?![ \t]{0,3}#{1,6}\s)(.*[^\s.!?。:|])\n(?=[ \t]*[^\s#>|`*+\-\d])", re.MULTILINE
)
"""A line break inside a paragraph's sentence (a space, as a renderer shows it): after a line
that is no heading and ends no sentence (nor a lead-in `:`, nor a table row), before a line that
starts no block (a heading, quote, table, fence, list item or a number). Group 1 is the line
before it (`rag.attribution`)."""

# Footnotes --------------------------------------------------------------------------------------
_LABEL = r"\[\^(?P<label>[^\]\s]+)\]"

FOOTNOTE_REFERENCE = re.compile(_LABEL + r"(?!:)")
"""A footnote reference (`[^kb-1]`, `[^3]`) anywhere in a line; `label` is its label."""

FOOTNOTE_DEFINITION = re.compile("^" + _LABEL + ":", re.MULTILINE)
"""The start of a footnote definition (`[^kb-1]:`), any line of a text; `label` is its label."""

FOOTNOTE_LABEL = re.compile(r"\[\^[^\]\s]+\]")
"""A footnote label wherever it is: a reference, or a definition's label."""

KEBAB_DEFINITION = re.compile(
    r"^\[\^(?P<label>[^\]\s]+)\]:\s*\[(?P<title>[^\]]*)\]\((?P<link>[^)\s]*)"
    r"(?:\s+\"kb:(?P<hash>[0-9a-f]+)\")?\)\s*L(?P<start>\d+)\s*[–-]\s*L?(?P<end>\d+)\s*$"
)
"""A definition as kebab writes it, whole: `[^kb-3]: [Title](../a.md#anchor "kb:1a2b") L12–L30`;
groups label, title, link, hash (none in one written by hand), start and end."""

KEBAB_DEFINITION_START = re.compile(
    r'^\[\^(?P<label>[^\]\s]+)\]:\s*\[[^\]]*\]\([^)\s]*\s+"kb:[0-9a-f]+"\)'
)
"""How `KEBAB_DEFINITION` starts, up to the link title holding the cited passage's hash, which is
what makes a definition kebab's (`units.own_writing`). Unlike `KEBAB_DEFINITION`, what follows the
link (the `L12–L30` span) is not read: a definition missing it, or with more text after it, is
kebab's too."""

KEBAB_REFERENCE = re.compile(r"\[\^kb-\d+\](?!:)")
"""A reference to a footnote of kebab's own numbering (`[^kb-3]`)."""

SPACE_BEFORE_FOOTNOTE = re.compile(r"[ \t]+(?=\[\^)")
"""The spaces before a footnote reference, which kebab writes against its word (`fact[^kb-1]`)."""

# Links ------------------------------------------------------------------------------------------
_ANY_WIKILINK = r"\[\[[^\]]+\]\]"
_ANY_MARKDOWN_LINK = r"\[[^\]]*\]\([^)]*\)"

WIKILINK = re.compile(r"(!?)\[\[([^\]|#^\n]*)(?:#\^?([^\]|\n]*))?(?:\|[^\]\n]*)?\]\]")
"""A wikilink or embed on one line, read as a link (`links`): group 1 the embed's `!`, group 2
the note it names, group 3 the heading or block after `#` (a block's `^` left out)."""

WIKILINK_SHOWN = re.compile(r"!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]")
"""A wikilink or embed read as the text it shows (`markdown.plain_text`): group 1 the
note, group 2 the heading, group 3 the alias. Unlike `WIKILINK`, a name may hold `^` and a block's
`^` is kept: this is text to read and to index, not a target to resolve, and indexed text changes
with it."""

# A wikilink's forms, one pattern each, for an excerpt to show (`render`, in this order, each over
# the whole line): `[[note|alias]]` → alias, `[[#Heading]]` → Heading, `[[note#Heading]]` → note ›
# Heading, `[[note]]` → note. Not `WIKILINK_SHOWN` in one pass: each form finds its own leftmost
# `[[`, so `[[[#h]]` shows `[h` here where one pass would read a note named `[`.
WIKILINK_ALIAS = re.compile(r"\[\[[^\]|]*\|([^\]]*)\]\]")
WIKILINK_HEADING_HERE = re.compile(r"\[\[#([^\]]*)\]\]")
WIKILINK_HEADING = re.compile(r"\[\[([^\]#]*)#([^\]]*)\]\]")
WIKILINK_NOTE = re.compile(r"\[\[([^\]]*)\]\]")

MARKDOWN_LINK = re.compile(
    r"(!?)\[[^\]\n]*\]\(<?((?<=<)[^<>\n]+(?=>)|(?<!<)[^)\s<>]+)>?(?:\s+\"[^\"\n]*\")?\)"
)
"""A Markdown link or image on one line, read as a link (`links`): group 1 the image's `!`,
group 2 its target (`<...>` and a title around it left out). Between `<` and `>` a target may
hold spaces (`[plan](<backup plan.md>)`), as CommonMark allows."""

# A link's target in parentheses; one written in `<>` may hold `)` (`<backup (old).md>`).
_SHOWN_TARGET = r"\((?:<[^<>\n]*>)?[^)]*\)"

MARKDOWN_LINK_SHOWN = re.compile(r"!?\[([^\]]*)\]" + _SHOWN_TARGET)
"""A Markdown link or image read as the text it shows (`render`): group 1 its text. Unlike
`MARKDOWN_LINK`, any target (spaces, an empty one) is a link's: only its text is kept."""

ANY_LINK = re.compile(_ANY_WIKILINK + "|" + _ANY_MARKDOWN_LINK)
"""A wikilink or a Markdown link, loosely (any target, no `!`): what an index note's entries are
made of (`units.is_navigation`)."""

LINKS_ONLY = re.compile(r"^(" + _ANY_WIKILINK + "|" + _ANY_MARKDOWN_LINK + r"|[\s,;·|/-])+$")
"""A line of nothing but links (`ANY_LINK`) and separators: no words of its own."""

IMAGE = re.compile(r"!\[[^\]]*\]" + _SHOWN_TARGET + "|!" + _ANY_WIKILINK + r"|<img\b[^>]*>")
"""An image: a Markdown image, an embed (`![[shot.png]]`) or an HTML `<img>`."""

URL = re.compile(r"<https?://[^>\s]+>|https?://\S+")
"""A web address, as an autolink (`<https://…>`) or bare."""

# Code spans, tags, emphasis ---------------------------------------------------------------------
_CODE_SPAN = r"`[^`\n]*`"

CODE_SPAN = re.compile(_CODE_SPAN)
"""An inline code span on one line (`` `restic backup` ``)."""


def outside_code(line: str, clean: Callable[[str], str], code: Callable[[str], str] = str) -> str:
    """`line` with `clean` applied to its prose only: a code span is code, and what it holds
    (`<Ctrl b><d>`, `List<String>`, `__init__`) is shown as written (or as `code` makes it of
    the whole span, backticks included). `clean` sees each span as a placeholder, so what
    encloses one (`*see `x` here*`, `[`x`](url)`) is still read whole."""
    spans: list[str] = []

    def hold(m: re.Match[str]) -> str:
        spans.append(m.group())
        return f"\x00{len(spans) - 1}\x00"

    cleaned = clean(CODE_SPAN.sub(hold, line.replace("\x00", "")))
    return _HELD.sub(lambda m: code(spans[int(m.group(1))]), cleaned)


_HELD = re.compile("\x00(\\d+)\x00")


def in_prose(text: str, clean: Callable[[str], str]) -> str:
    """`text` with `clean` applied to its prose only (`outside_code`), fenced code blocks kept
    as written: a Django or Jekyll note's `{% csrf_token %}` is its code, not a directive."""
    out: list[str] = []
    run: list[str] = []
    fence = ""
    for line in text.split("\n"):
        after = fence_after(line, fence)
        if fence or after:  # a fence line or a line inside the block
            if run:
                out.append(outside_code("\n".join(run), clean))
                run = []
            out.append(line)
        else:
            run.append(line)
        fence = after
    if run:
        out.append(outside_code("\n".join(run), clean))
    return "\n".join(out)


NOT_PROSE = re.compile(
    r"```.*?```|~~~.*?~~~|" + _CODE_SPAN + r"|\{[^{}\n]*\}|\]\([^)\n]*\)", re.DOTALL
)
"""What in a text is not prose, for finding `#tags` in it or reading its language: fenced code
(up to the next fence), code spans, `{...}` attributes, and link targets."""

TAG = re.compile(r"(?<![\w/#&])#([^\W\d][\w/-]*)")
"""An inline `#tag` (`#ops/backup`); not a heading's `#`, `#1`, a URL's `/#anchor` or `&#39;`."""

EMPHASIS_MARKS = re.compile(r"\*\*|__|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)")
"""Emphasis marks, one at a time: `**`, `__`, and a `*` or `_` at a word's edge (`snake_case` is
left whole). For reading the words under them (`rag.attribution`)."""

CODE_AND_STRONG_MARKS = re.compile(r"`+|\*\*|__|~~")
"""Backticks and strong or strikethrough marks, wherever they are (`render`)."""

STAR_ITALIC = re.compile(r"(?<![\w*])\*(\S(?:[^*]*\S)?)\*(?![\w*])")
"""`*italics*`; group 1 the text."""

UNDERSCORE_ITALIC = re.compile(r"(?<!\w)_(\S(?:[^_]*\S)?)_(?!\w)")
"""`_italics_` (not `snake_case_name`); group 1 the text."""

# Tables -----------------------------------------------------------------------------------------
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
"""A table's delimiter row (`|---|:--:|`): cells of two or more `-`, maybe aligned with `:`."""

TABLE_RULE_CHARS = re.compile(r"\|?[\-: |]+\|?")
"""A line of nothing but `|`, `-`, `:` and spaces, in full (`fullmatch`; the unit splitter also
asks for a `-` in it). Looser than `TABLE_RULE`: a thematic break (`---`, `- - -`) passes too, and
ends the paragraph before it as a table's rule would; the units depend on it (`units.VERSION`)."""

# HTML and dialect markup ------------------------------------------------------------------------
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
"""A closed HTML comment, across lines."""

HTML_COMMENT_TO_END = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
"""`HTML_COMMENT`, or one left open, which runs to the text's end: an excerpt shows none of a
comment cut short by the passage's end (`render`); the unit splitter leaves an unclosed `<!--`
as text, which keeps its units (`units.VERSION`)."""

_SCHEME = r"[A-Za-z][\w+.-]*:"  # `https:`, `mailto:`

LINK_ELSEWHERE = re.compile(_SCHEME + r"|[/#]")
"""A link target that is not a path relative to its note: a URL, a site path, an anchor."""

HTML_TAG = re.compile(r"(?<!\]\()<(?!" + _SCHEME + r")/?[A-Za-z][^<>]*>")
"""An HTML tag, opening or closing; never across a stray `<` (`if a<b then … <kbd>`), nor an
autolink (`<https://example.org>`, `<mailto:a@b.c>`), nor a link's target written in `<>`
(`[plan](<backup plan.md>)`)."""

AUTOLINK = re.compile(r"<(" + _SCHEME + r"[^<>\s]+)>")
"""An autolink (`<https://example.org>`); group 1 the address it shows."""

BREAK_TAG = re.compile(r"</?(?:br|p|div|li|ul|ol|tr|td|th)\b[^<>]*>", re.IGNORECASE)
"""A tag that breaks a line or a block (`a<br>b`, `<li>a</li><li>b</li>` in a table cell): a
space where it stood, not nothing, or two code spans run into one."""

_ATTRIBUTE = r'(?:[.#][\w-]+|[\w-]+=(?:"[^"\n]*"|[^\s{}"][^\s{}]*))'
_ATTRIBUTES = r"\{:?[ \t]*" + _ATTRIBUTE + r"(?:[ \t]+" + _ATTRIBUTE + r")*[ \t]*\}"
ATTRIBUTE_LIST = re.compile(
    r"(?<=[)\]]) ?" + _ATTRIBUTES + r"|(?<!\S)" + _ATTRIBUTES + r"(?=[ \t]*$)", re.M
)
"""A Markdown attribute list (`{ loading=lazy }`, `{ .md-button }`, `{#id width="300"}`) right
after an image or a link, or ending a line, as mkdocs' attr_list writes it: styling, never
text. Not a template's `{{ .Title }}`, a formula's `_{i=1}`, nor `{a=1}` mid-sentence."""

SNIPPET_INCLUDE = re.compile(r"(?<!\$)\{[*!%][^{}\n]*[*!%]\}")
"""A mkdocs / snippet include (`{* file.py *}`, `{! a.md !}`) or a template tag (`{% x %}`) in
prose: a file's contents or a directive, never text of its own (in code, `in_prose`, it is
code)."""

FILE_INCLUDE = re.compile(r"(?<!\$)\{[*!][^{}\n]*[*!]\}")
"""A mkdocs / snippet include (`{* file.py *}`, `{!> a.py !}`), in prose or in a fenced block:
the file's contents go there when the site is built."""

MKDOCS_BLOCK = re.compile(
    r"^([ ]*)(?:(!!!|\?\?\?\+?)[ \t]+([\w-]+(?:[ \t]+\"[^\"]*\")?)[ \t]*|(===\+?)[ \t]+(\"[^\"]*\"))$"
)
"""A mkdocs-material block whose body is indented four spaces under it: an admonition (`!!! tip`,
`??? note "Title"`, `???+ tip`) or a content tab (`=== "Python"`); group 1 its indentation, 2 and
3 an admonition's marker and type (and title), 4 and 5 a tab's marker and quoted title. Not a
setext heading's `===` rule, nor prose that starts `??? no idea why` or `!!! Important:`."""

DIALECT_MARKER = re.compile(r"^(/{3,}|:{3,}|!!!|\?\?\?\+?)(\s|$)|^(</?[A-Za-z][^<>]*>)+$")
"""A block marker of a Markdown dialect on a stripped line: pymdownx `/// tip` (`//// tab`
nested in it), fenced divs
`::: note`, mkdocs admonitions `!!! warning "Title"` and `???+`, and lines of nothing but HTML
tags (`<div class="termy">`): markup around text, never text to quote."""

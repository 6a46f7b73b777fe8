"""Quotable units of a Markdown passage: whole sentences, list items, table rows, code blocks.

One definition serves the index (each unit of a passage gets its own vector, the evidence that a
passage holds the answer somewhere inside it) and the extractive answerer (which quotes units).
A unit is never a fragment: sentences are split only at a sentence end outside brackets, quotes
and code, never after an abbreviation ("e.g.", "v2."); fence markers are never units; a table
row reads with its header ("Column: value; ..."); a line ending in ':' takes the next unit with
it (tldr's "Description:" and its command).
"""

from __future__ import annotations

import re
import textwrap
from functools import lru_cache
from typing import TYPE_CHECKING

from kebab.syntax import (
    ANY_LINK,
    ATTRIBUTE_LIST,
    BACKTICK_FENCES,
    BREAK_TAG,
    CALLOUT_TYPE,
    DIALECT_MARKER,
    FENCE_LINE,
    FILE_INCLUDE,
    FOOTNOTE_DEFINITION,
    FOOTNOTE_REFERENCE,
    HTML_COMMENT,
    IMAGE,
    KEBAB_DEFINITION_START,
    LEADING_BACKTICKS,
    LINKS_ONLY,
    LIST_ITEM,
    MAYBE_INDENTED_CODE,
    MKDOCS_BLOCK,
    QUOTE_PREFIX,
    QUOTED_CODE_MARKERS,
    SNIPPET_INCLUDE,
    TABLE_RULE_CHARS,
    TASK_BOX,
    URL,
    closes,
    fence_after,
    in_prose,
    outside_code,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

# Words after which a period does not end a sentence.
_ABBREV = re.compile(
    r"(\b(e\.g|i\.e|etc|vs|cf|approx|incl|resp|fig|no|nr|mr|mrs|dr|st|ca|al)\.|\b[A-Za-z]\.)$",
    re.IGNORECASE,
)
_END = re.compile(r"(?<=[.!?。])\s+(?=[A-Z가-힣\"'`(\[*_])|(?<=[다요음함죠까][.!?])\s+")
_GLOSS_WORDS = 8  # an index entry's gloss; a longer line after a link states something itself
EMBEDDED_CHARS = 1500  # of one unit
MAX_UNITS = 16  # units embedded per passage (the rest are still quotable, embedded when asked)
# Stored unit vectors are rows in the order `units()` returns: any change to the splitting
# changes this, and vectors made by another version are recomputed rather than misread.
# 11: a block a sentence points at ("아래와 같은 명령"), `cmd -x`; `////` tabs; a line leading
# into a file include leads into nothing after it
VERSION = "units-11"
_QUESTION_END = re.compile(r"[?？]$|[가-힣](까|까요|나요|가요|는가|는지|을지|니|냐)$")


def units(text: str) -> list[str]:
    """The passage's quotable units in reading order; questions written in the notes (lines
    ending in '?') and links with no words of their own are not answers, so they are left out."""
    out: list[str] = []
    para: list[str] = []
    header: list[str] = []  # the current table's column names
    text = own_writing(text)

    def flush() -> None:
        if para:
            joined = " ".join(para)
            if joined.startswith("|") or LIST_ITEM.match(joined):
                out.append(joined)
            else:
                out.extend(split_sentences(joined))
            para.clear()

    fence: list[str] | None = None  # the open code block: its opening line, then its lines
    opener = ""  # the open block's fence: one opened with four backticks closes on four or more
    text = in_prose(HTML_COMMENT.sub("", text), _includes_marked)
    lines = outside_code(text, lambda t: FILE_INCLUDE.sub("", t)).split("\n")
    lines = _mkdocs_bodies(lines)
    indented = _indented_code(lines)
    for i, raw in enumerate(lines):
        line = CALLOUT_TYPE.sub("", QUOTE_PREFIX.sub("", raw.strip())).strip()
        if i in indented:  # an indented code block reads as a fenced one
            if fence is None:
                flush()
                fence = [FENCE]
            fence.append(raw.replace(_INCLUDED, ""))
            if i + 1 not in indented:
                if _worth_quoting(fence, out):
                    out.append(_block(fence))
                fence = None
            continue
        if fence is None and (opened := FENCE_LINE.match(line)):
            flush()
            fence, opener = [line], opened.group(1)
            continue
        if fence is not None and closes(opener, line):
            # A code block is one unit, quoted whole as a block: a file or a script read one
            # line at a time is unreadable, and the line that matters loses its place.
            if _worth_quoting(fence, out):
                out.append(_block(fence))
            fence = None
            continue
        if fence is not None:
            fence.append(QUOTED_CODE_MARKERS.sub("", raw))
            continue
        if TABLE_RULE_CHARS.fullmatch(line) and "-" in line:
            flush()
            if out and out[-1].startswith("|"):
                header = _cells(out.pop())
            continue
        if not line or line.startswith("#") or DIALECT_MARKER.match(line) or line == _INCLUDED:
            flush()
            header = []
            if line == _INCLUDED:
                out.append(line)  # kept until the lead-ins are merged, so none takes what follows
            continue
        if FOOTNOTE_DEFINITION.match(line):  # an aside on another sentence, not one of its own
            flush()
            continue
        if line.startswith("|"):
            flush()
            cells = _cells(line)
            if header and len(cells) == len(header):
                out.append("; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True) if c))
                continue
        elif LIST_ITEM.match(line):
            flush()
        para.append(line)
    flush()
    if fence is not None and _worth_quoting(fence, out):
        out.append(_block(fence))  # a block left open at the passage's end
    # A lead-in ending in ':' takes what it introduces: the next unit, or a whole short list
    # ("allowed characters: a-z; 0-9; _; -"), so the quote holds the answer and not its preface.
    merged: list[str] = []
    lead = False  # the last merged unit is a lead-in still taking list items
    for unit in out:
        item = LIST_ITEM.match(unit)
        if unit == _INCLUDED:  # what led into a file's code leads into nothing here
            merged.append(unit)
            lead = False
        elif is_block(unit) and merged and _introduces(merged[-1]):
            merged[-1] = f"{merged[-1]}\n{unit}"  # "Run this:" and the block it introduces
            lead = False
        # A list stays a list: its items keep their own lines and markers (numbered steps read
        # as steps, not as one sentence joined with ';').
        elif merged and merged[-1].rstrip("*_ ").endswith(":") and len(merged[-1]) < 200:
            merged[-1] = f"{merged[-1]}\n{unit}" if item else f"{merged[-1]} {unit}"
            lead = bool(item)
        elif lead and item and len(merged[-1]) < 400:
            merged[-1] = f"{merged[-1]}\n{unit}"
        else:
            merged.append(unit)
            lead = False
    return [u for u in merged if u != _INCLUDED and _quotable(u)]


FENCE = "```"
_INCLUDED = "\ue000"  # a line where the note includes a file (`{* app.py *}`)


def _includes_marked(prose: str) -> str:
    """Prose with its includes and template tags gone, and a line holding only a file include
    marked: "to serve it at `/api/v1`:" then `{* app.py *}` leads into code the passage does
    not hold, never into the sentence after it ("`openapi_url=None` turns it off")."""
    lines = [
        s[: len(s) - len(s.lstrip())] + _INCLUDED if FILE_INCLUDE.fullmatch(s.strip()) else s
        for s in prose.split("\n")
    ]  # in its list item or admonition still: the prose after it stays prose
    return SNIPPET_INCLUDE.sub("", "\n".join(lines))


@lru_cache(maxsize=1)
def _commonmark() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def _mkdocs_bodies(lines: list[str]) -> list[str]:
    """`lines` with each mkdocs-material admonition's and content tab's body one level out: read
    as CommonMark, a body's second paragraph or its fenced block, four spaces in, is an indented
    code block, and prose was quoted in a code block or a fence inside another. A tab's title
    (`=== "SciPy"`) leads into its body as `SciPy:`; an admonition's line stays markup."""
    joined = "\n".join(lines)
    if not any(marker in joined for marker in ("!!!", "???", "===")):
        return lines
    out = list(lines)
    fence = ""
    for i in range(len(out)):
        inside, fence = fence, fence_after(out[i], fence)
        block = None if inside or fence else MKDOCS_BLOCK.match(out[i])
        if block is None:
            continue
        inner = len(block.group(1)) + 4
        j = i + 1
        while j < len(out) and (
            not out[j].strip() or len(out[j]) - len(out[j].lstrip(" ")) >= inner
        ):
            out[j] = out[j][4:] if out[j].strip() else out[j]
            j += 1
        if block.group(4):
            title = block.group(5).strip().strip('"')
            out[i] = f"{block.group(1)}{title}:" if title else ""
    return out


def _indented_code(lines: list[str]) -> set[int]:
    """The lines of CommonMark indented code blocks (four spaces after a blank line, outside a
    list): personal notes write shell sessions this way, and read as prose they are quoted one
    sentence at a time. The parser decides (a list item's indented paragraph is not code), and
    only runs on a passage that might hold one."""
    text = "\n".join(lines)
    if not MAYBE_INDENTED_CODE.search("\n\n" + text):  # the passage may start with one
        return set()
    found: set[int] = set()
    for token in _commonmark().parse(text):
        if token.type == "code_block" and token.map:
            start, end = token.map
            while end > start and not lines[end - 1].strip():
                end -= 1  # the block's trailing blank lines are not code
            found.update(range(start, end))
    return found


def is_block(unit: str) -> bool:
    """Whether a unit holds a fenced code block (alone or after the line introducing it): a
    line that starts with a fence, not three backticks inside a code span."""
    return "\n" in unit and bool(BACKTICK_FENCES.search(unit))


def split_block(unit: str) -> tuple[str, str, list[str]]:
    """A block unit as (the line introducing it, the opening fence with its language, the
    code lines); the first is empty for a block that stands alone."""
    fence = BACKTICK_FENCES.search(unit)
    at = fence.start() if fence else 0
    head, rest = unit[:at], unit[at:]
    opening, _, body = rest.partition("\n")
    marker = fence.group() if fence else FENCE
    code = body.rsplit(marker, 1)[0].rstrip("\n").split("\n")
    return head.strip(), opening.strip(), code


def fence_for(code: list[str]) -> str:
    """A fence longer than any run of backticks starting a line of `code`, so a block that
    quotes a fenced block (an example of a `tasks` query) is never closed by its inner fence."""
    inner = max((len(m.group()) for ln in code if (m := LEADING_BACKTICKS.match(ln))), default=0)
    return "`" * max(3, inner + 1)


def _block(fence: list[str]) -> str:
    """The unit of one fenced code block: its lines dedented, trailing blank lines dropped."""
    lang = FENCE_LINE.sub("", fence[0]).strip()
    body = textwrap.dedent("\n".join(ln.rstrip() for ln in fence[1:])).strip("\n")
    marker = fence_for(body.split("\n"))
    return f"{marker}{lang}\n{body}\n{marker}"


def _worth_quoting(fence: list[str], before: list[str]) -> bool:
    """A block that only gives a file its shape (`}`, `[Timer]`) says nothing; one a sentence
    introduces ("adding the following line:" `AllowUsers *@100.64.0.0/10`, "아래와 같은 명령을
    사용한다." `swapoff -a`) is what it is about."""
    return any(_says(ln.strip()) for ln in fence[1:]) or bool(
        before
        and (_introduces(before[-1]) or bool(_POINTS_BELOW.search(before[-1])))
        and any(ln.strip() for ln in fence[1:])
    )


def _introduces(unit: str) -> bool:
    """A line that leads into what follows it ("Run this:", "The config looks like this:")."""
    return unit.rstrip("*_ ").endswith(":") and len(unit) < 300 and not is_block(unit)


_BELOW = r"\b(below|following|as follows|like this|like so)\b|아래|다음|이렇게"
_POINTS_BELOW = re.compile(_BELOW, re.I)
"""A sentence that says what comes next is shown ("아래와 같은 명령을 사용한다."), not only
that something is done ("We use nginx")."""

_POINTS_AHEAD = re.compile(
    _BELOW + r"|\b(this command|these commands|run|add|use|type|paste|put)\b|명령(어)?(을|를)|실행",
    re.I,
)
"""`_POINTS_BELOW`, or a sentence that says to run, add or use something (`leads_into`)."""


def leads_into(unit: str) -> bool:
    """Whether a sentence just before a code block introduces it ("Run the following.",
    "프로젝트 루트에서 순서대로 아래 명령을 실행한다."): quoted with the block, it says what the
    block is for. (Units stay apart, so stored unit vectors keep their rows.)"""
    if len(unit) >= 300 or is_block(unit) or unit.rstrip().endswith("?"):
        return False
    return bool(_POINTS_AHEAD.search(unit))


def own_writing(text: str) -> str:
    """The passage without the answers kebab wrote into it (their paragraphs and footnote
    definitions as blank lines, so lines keep their numbers): an answer restates other notes,
    so it is neither evidence nor a related passage; the note's own writing around it is."""
    if "[^" not in text:
        return text
    lines = text.split("\n")
    ours = {m["label"] for ln in lines if (m := KEBAB_DEFINITION_START.match(ln))}
    blank = {i for i, ln in enumerate(lines) if KEBAB_DEFINITION_START.match(ln)}
    for para in _paragraphs(lines):
        if any(
            r["label"].startswith("kb-") or r["label"] in ours
            for i in para
            for r in FOOTNOTE_REFERENCE.finditer(lines[i])
        ):
            blank.update(para)
    return "\n".join("" if i in blank else ln for i, ln in enumerate(lines))


def only_kebab_answers(text: str) -> bool:
    """A passage whose only writing is answers kebab inserted (and their definitions): not a
    note about their subject, so never evidence, a search hit or a related passage."""
    own = own_writing(text)
    return own != text and not units(own)


def is_question(line: str) -> bool:
    """A line that asks (ends in '?', '？' or a Korean question ending), list and quote markers,
    task boxes and emphasis aside; or one that starts with a question struck through, as an
    inbox marks the ones it settled ("~~Which port does Postgres use?~~ Answered in [[pg]])."""
    bare = TASK_BOX.sub("", LIST_ITEM.sub("", QUOTE_PREFIX.sub("", line.strip())).strip())
    struck = _STRUCK.match(bare)
    return any(
        bool(b) and not b.startswith("#") and bool(_QUESTION_END.search(b))
        for b in (a.rstrip("~*_ ") for a in ([bare, struck.group(1)] if struck else [bare]))
    )


_STRUCK = re.compile(r"~~([^~]+)~~")


@lru_cache(maxsize=2048)
def question_blocks(text: str) -> tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]:
    """(questions, the block's line numbers) for each paragraph or list of the passage that asks
    something: the lines written around a question belong to it (an inbox's "More notes
    below."), not to an answer. Line numbers are 0-based in `text`. Kept per text: every ask
    reads the same passages for it."""
    lines = text.split("\n")
    out = []
    for block in _paragraphs(lines, lists=True):
        asked = tuple(lines[i].strip() for i in block if is_question(lines[i]))
        if asked:
            out.append((asked, tuple(block)))
    return tuple(out)


def _paragraphs(lines: list[str], lists: bool = False) -> list[list[int]]:
    """Runs of text lines (headings and blank or bare `>` lines end one; a fenced code block,
    blank lines and all, belongs to the run it is written in, as in an answer that quotes a
    block); with `lists`, the items of one list stay one block across blank lines."""
    blocks: list[list[int]] = []
    run: list[int] = []
    gap = False  # a blank line since the run's last line
    fence = ""  # the open code block's fence
    for i, raw in enumerate(lines):
        line = raw.strip()
        if fence:
            run.append(i)
            fence = fence_after(line, fence)
            continue
        if fence := fence_after(line, ""):
            pass
        elif line in ("", ">") or line.startswith("#"):
            gap = gap or bool(run)
            if line and run:
                blocks.append(run)
                run, gap = [], False
            continue
        joins = lists and run and LIST_ITEM.match(lines[run[0]].strip())
        if gap and not (joins and LIST_ITEM.match(line)):
            blocks.append(run)
            run = []
        run.append(i)
        gap = False
    if run:
        blocks.append(run)
    return blocks


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph, split only where a sentence really ends."""
    pieces: list[str] = []
    start = 0
    for m in _END.finditer(paragraph):
        before = paragraph[start : m.start()]
        if _ABBREV.search(before) or not _balanced(before):
            continue
        pieces.append(before.strip())
        start = m.end()
    pieces.append(paragraph[start:].strip())
    return [p for p in pieces if p]


def embedding_text(heading_path: list[str], unit: str) -> str:
    """What the embedding model sees for one unit: where it sits, then the unit (a long code
    block by its start: its meaning is set there, and its length would only cost time)."""
    return (" › ".join(heading_path) + "\n" if heading_path else "") + unit[:EMBEDDED_CHARS]


@lru_cache(maxsize=65536)
def is_navigation(text: str) -> bool:
    """A passage that is mostly a list of links (an index or "map of content" note): it points
    at answers but states none, so it ranks after passages with content and is never quoted."""
    lines = [
        ln.strip() for ln in text.split("\n") if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if len(lines) < 3:
        return False
    links = sum(1 for ln in lines if _points_elsewhere(LIST_ITEM.sub("", ln)))
    return links >= 0.6 * len(lines)


def _points_elsewhere(line: str) -> bool:
    """A line of links, or a link with a short gloss (`[[backup]]: nightly restic backups`):
    an index note's entry, which names where the answer is rather than stating it."""
    if LINKS_ONLY.match(line):
        return True
    lead = ANY_LINK.match(line)
    return bool(lead) and len(re.findall(r"\w+", ANY_LINK.sub(" ", line))) <= _GLOSS_WORDS


def _says(code_line: str) -> bool:
    """Two or more words, a setting (`Persistent=true`, `port: 80`), or a command and its
    option (`swapoff -a`)."""
    return len(re.findall(r"[^\W\d_]{2,}", code_line)) >= 2 or bool(
        re.search(r"\w\s*[=:]|[^\W\d_]{2,}\s+--?[A-Za-z]", code_line)
    )


def _quotable(unit: str) -> bool:
    bare = LIST_ITEM.sub("", unit).strip()
    if len(bare) <= 3 or LINKS_ONLY.match(bare):
        return False
    if URL.search(bare) and URL.sub("", bare).strip(" .").endswith(":"):
        return False  # "More information: <https://…>." points elsewhere, answers nothing
    return not unit.rstrip("~*_ ").endswith("?") and "?~~" not in unit


# A label that points elsewhere, before what it points at: "See also:", "Related:", "관련:".
# Only such words: "Owner: [[alice]]", "Runs on: [[nas01]]" state a fact by their link.
POINTER_LABEL = re.compile(
    r"^(?:see(?: also)?|related(?: notes?)?|more(?: information| info)?|further reading|"
    r"references?|links?|sources?|관련(?: ?문서| ?노트)?|참고(?: ?자료| ?문서)?|출처|더 보기)\s?:\s",
    re.I,
)


def is_wordless(unit: str) -> bool:
    """A unit of nothing but images and links (a list item holding a screenshot), or links
    under a label that points elsewhere ("관련: [[deploy-process]]", `POINTER_LABEL`): it stays
    a unit, so stored unit vectors keep their rows, but it states nothing to quote. An image's
    attribute list (`{ loading=lazy }`) is styling, not words, and so is a line break between
    links (`[참고자료](…) <br /> [참고자료22](…)`, quoted as a troubleshooting answer's first
    line)."""
    bare = IMAGE.sub(" ", ATTRIBUTE_LIST.sub(" ", BREAK_TAG.sub(" ", LIST_ITEM.sub("", unit))))
    bare = POINTER_LABEL.sub("", bare.strip(), count=1)
    return bool(LINKS_ONLY.match(bare.strip() or "-"))


def _balanced(text: str) -> bool:
    """No bracket or code span left open (a period inside `(e.g. [#1])` ends nothing)."""
    return (
        text.count("(") <= text.count(")")
        and text.count("[") <= text.count("]")
        and text.count("`") % 2 == 0
    )


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


@lru_cache(maxsize=65536)
def is_asking(text: str) -> bool:
    """A passage or note that is mostly questions (an inbox of things to look up): two or more,
    and more than half its lines (a FAQ's questions and answers tie). It is where the asker
    wrote questions down, not where anything is answered, so the lines around them ("More notes
    below.") are never quoted as an answer, and it ranks after passages with content, like an
    index note (`is_navigation`)."""
    lines = asked = 0
    fenced = False
    for raw in own_writing(text).split("\n"):
        line = raw.strip()
        if FENCE_LINE.match(line):
            fenced = not fenced
        elif not line or (line.startswith("#") and not fenced):
            continue
        lines += 1
        asked += not fenced and is_question(line)
    return asked >= 2 and 2 * asked > lines

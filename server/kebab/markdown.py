"""Markdown → a note's metadata and its chunks, with heading paths and 1-based line spans.

A real CommonMark parser (markdown-it-py) finds the blocks, so a `#` inside a fence is never a
heading and setext headings count. A heading always starts a chunk (unless its section has no
body of its own); a long section splits at block boundaries (paragraphs, lists, quotes) near a
token target; code blocks and tables are never split, and a code block stays with the paragraph
just before it, which says what it is for.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from kebab import tokens
from kebab.model import Chunk
from kebab.syntax import (
    CALLOUT,
    FENCE_LINE,
    HEADING_ATTRIBUTES,
    HEADING_CLOSING,
    HEADING_OPENING,
    NOT_PROSE,
    TAG,
    VERBATIM_INSIDE,
    WIKILINK_SHOWN,
    fence_open_at,
    front_matter_end,
)
from kebab.units import own_writing

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@functools.cache
def _parser() -> MarkdownIt:
    """The parser, built on first use: a command that parses no note (status, a search of an
    unchanged index) does not pay for importing it."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    return MarkdownIt("commonmark", {"html": True}).enable("table").use(front_matter_plugin)


class Note(msgspec.Struct):
    """A parsed note: its metadata, its chunks, and what was odd about it."""

    title: str
    tags: list[str]
    aliases: list[str]
    chunks: list[Chunk]
    warnings: list[str]
    fields: dict[str, object] = {}  # front matter's scalars and lists of them (`filters`)


@dataclass
class _Block:
    start: int  # 0-based line, inclusive
    end: int  # 0-based line, exclusive
    heading_level: int = 0
    heading_text: str = ""
    kind: str = ""  # the parser's token type: "paragraph_open", "fence", "code_block", ...


@dataclass
class _Section:
    heading_path: list[str]
    blocks: list[_Block] = field(default_factory=list)


def normalise_newlines(text: str) -> str:
    """The text with CRLF / CR endings as LF and no BOM: the line numbering every layer shares."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse(path: str, text: str, target_tokens: int = 320, max_tokens: int = 640) -> Note:
    """Parse one note. Never raises on odd Markdown: problems become `warnings`."""
    text = normalise_newlines(text).replace("\x00", "\ufffd")
    lines = text.split("\n")
    warnings: list[str] = []
    meta: dict[str, object] = {}
    blocks: list[_Block] = []
    for tok in _parser().parse(text):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        start, end = tok.map
        if tok.type == "front_matter":
            meta = _front_matter(tok.content, warnings)
            continue
        if tok.type == "heading_open":
            raw = _heading_source(lines[start:end], tok.markup)
            blocks.append(_Block(start, end, int(tok.tag[1:]), raw))
        else:
            blocks.append(_Block(start, end, kind=tok.type))

    title = _first_str(meta.get("title")) or _first_h1(blocks) or _stem(path)
    tags = _dedupe([t.lower() for t in _str_list(meta.get("tags"))] + inline_tags(text))
    aliases = _str_list(meta.get("aliases"))
    chunks = _chunk(path, lines, _sections(blocks), title, tags, target_tokens, max_tokens)
    return Note(
        title=title,
        tags=tags,
        aliases=aliases,
        chunks=chunks,
        warnings=warnings,
        fields=_fields(meta),
    )


# Blocks whose lines are written verbatim: a line added among them becomes YAML, code or HTML.
VERBATIM_BLOCKS = frozenset({"fence", "code_block", "html_block"})
"""The blocks (of `block_tokens`, which does not look for front matter: `verbatim_at` reads it
line by line) whose lines are no one's prose: an answer is never written inside them."""


@functools.cache
def _block_parser() -> MarkdownIt:
    """The parser for blocks alone: inline runs are left unread (nine tenths of the time) and
    front matter is not looked for (a window of a note that starts at a `---` rule is no note's
    start)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").disable("inline")


def block_tokens(text: str) -> list[Token]:
    """The block tokens of `text` (and its inline runs, unread), each block with the lines it
    spans (`map`): where each line stands, for a line-by-line reader to check against."""
    return _block_parser().parse(normalise_newlines(text))


def verbatim_at(lines: list[str], line: int) -> bool:
    """Whether 0-based `line` is inside front matter, a fenced or indented code block or an
    HTML block, at any depth (a fence in a list item too): no answer may be inserted there.
    Front matter and fences are read line by line; an indented line, one after a tag with no
    blank line between, and a note with a fence in a quote or a list item or a multi-line
    comment are left to the parser (a tenth of a second on a 7,000-line note)."""
    end = front_matter_end(lines)
    if end and line <= end:
        return True
    text = lines[line] if 0 <= line < len(lines) else ""
    if fence_open_at(lines, line) or FENCE_LINE.match(text):
        return True
    start = next((i + 1 for i in range(line - 1, -1, -1) if not lines[i].strip()), 0)
    html = any(s.lstrip().startswith("<") for s in lines[start : line + 1])  # since a blank
    # a fence in a quote or opened on a list marker's line, or a comment or `<pre>` that runs
    # across blank lines: the line scan above does not see them
    nested = any(VERBATIM_INSIDE.match(s) for s in lines[: line + 1])
    if not html and not nested and not text.startswith(("    ", "\t")):
        return False
    # front matter as blank lines: the block parser does not look for it
    tokens = block_tokens(
        "\n" * (end + 1 if end else 0) + "\n".join(lines[end + 1 if end else 0 :])
    )
    return any(
        t.type in VERBATIM_BLOCKS and t.map is not None and t.map[0] <= line < t.map[1]
        for t in tokens
    )


def plain_text(markdown: str) -> str:
    """Text for indexing: wikilinks become their link text, callout markers their type word;
    answers kebab inserted are left out (they restate other notes: `units.own_writing`)."""
    out = WIKILINK_SHOWN.sub(
        lambda m: m.group(3) or " ".join(filter(None, m.group(1, 2))), own_writing(markdown)
    )
    return CALLOUT.sub(lambda m: m.group(1) + m.group(2).lower(), out)


def inline_tags(text: str) -> list[str]:
    """`#tags` written in the prose (not in code, not headings, not numbers like #1)."""
    prose = NOT_PROSE.sub(" ", text)
    return [t.lower() for t in TAG.findall(prose)]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _sections(blocks: list[_Block]) -> list[_Section]:
    sections: list[_Section] = [_Section([])]
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.heading_level:
            while stack and stack[-1][0] >= block.heading_level:
                stack.pop()
            stack.append((block.heading_level, clean_heading(block.heading_text)))
            sections.append(_Section([h for _, h in stack], [block]))
        else:
            sections[-1].blocks.append(block)
    return [s for s in sections if s.blocks]


def _chunk(
    path: str,
    lines: list[str],
    sections: list[_Section],
    title: str,
    tags: list[str],
    target: int,
    hard_max: int,
) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    # A heading with no body of its own ("## Restore" right above "### One file") is not a
    # passage: it would match the question's words and quote nothing. Its text stays in its
    # children's heading paths. A note that is nothing but headings keeps them.
    bodied = [len(s.blocks) > 1 or not s.blocks[0].heading_level for s in sections]
    for i, section in enumerate(sections):
        if not bodied[i] and any(bodied):
            continue
        # A section owns the lines up to the next section's first block, so blank lines and
        # anything the parser skipped stay covered.
        first = section.blocks[0].start
        last = sections[i + 1].blocks[0].start if i + 1 < len(sections) else len(lines)
        for start, end in _split(lines, section.blocks, first, last, target, hard_max):
            s, e = _trim(lines, start, end)
            body = "\n".join(lines[s:e])  # exactly the lines of the span
            if not body.strip():
                continue
            key = "\x1f".join([path, *section.heading_path])
            ordinal = seen.get(key, 0)
            seen[key] = ordinal + 1
            cid = hashlib.sha1(f"{key}\x1e{ordinal}".encode("utf-8", "surrogatepass")).hexdigest()[
                :16
            ]
            chunks.append(
                Chunk(
                    id=cid,
                    path=path,
                    heading_path=section.heading_path,
                    start_line=s + 1,
                    end_line=e,
                    text=body,
                    content_hash=content_hash(body),
                    tokens=tokens.count(body),
                    title=title,
                    tags=tags,
                )
            )
    return chunks


_CODE = frozenset({"fence", "code_block"})


def _split(
    lines: list[str], blocks: list[_Block], first: int, last: int, target: int, hard_max: int
) -> list[tuple[int, int]]:
    """Line ranges [start, end) covering [first, last), cut only between blocks."""
    sizes = [tokens.count("\n".join(lines[b.start : b.end])) for b in blocks]
    if sum(sizes) <= hard_max:
        return [(first, last)]
    spans: list[tuple[int, int]] = []
    start, acc = first, 0
    for j, block in enumerate(blocks):
        if acc and acc + sizes[j] > target and block.start > start:
            cut = j
            # A code block stays with the paragraph just before it, which says what it is for
            # ("run the following from the project root:"): cut before both.
            if block.kind in _CODE and j and blocks[j - 1].kind == "paragraph_open":
                cut = j - 1 if blocks[j - 1].start > start else j
            spans.append((start, blocks[cut].start))
            start = blocks[cut].start
            acc = sum(sizes[cut:j])
        acc += sizes[j]
    spans.append((start, last))
    return spans


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """0-based start and 1-based end of [start, end) without leading/trailing blank lines."""
    while start < end - 1 and not lines[start].strip():
        start += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return start, end


def clean_heading(raw: str) -> str:
    """Heading text as a reader sees it: no `#` markers, closing hashes or `{ #anchor }`."""
    text = raw.strip()
    text = HEADING_OPENING.sub("", text)
    text = HEADING_CLOSING.sub("", text)
    return HEADING_ATTRIBUTES.sub("", text).strip()


def _heading_source(span: list[str], markup: str) -> str:
    if markup in ("=", "-"):  # setext: text lines above the underline
        return " ".join(line.strip() for line in span[:-1])
    return span[0] if span else ""


def _front_matter(source: str, warnings: list[str]) -> dict[str, object]:
    import yaml  # only notes with front matter need it

    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        warnings.append(f"front matter is not valid YAML{where}; indexed as text without it")
        return {}
    except (ValueError, TypeError, RecursionError) as e:  # e.g. `date: 2024-02-30`
        warnings.append(
            f"front matter has a value YAML cannot read ({e}); indexed as text without it"
        )
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        warnings.append("front matter is not a YAML mapping; ignored")
        return {}
    return {str(k): v for k, v in data.items()}


def _first_h1(blocks: list[_Block]) -> str:
    for b in blocks:
        if b.heading_level == 1:
            return clean_heading(b.heading_text)
    return ""


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _scalar(value: object) -> bool:
    """A YAML scalar. Only scalars are turned into text: YAML aliases can nest a list a billion
    items deep in a few lines (`&a [*b, *b, …]`), and `str()` of that never returns."""
    return isinstance(value, str | int | float | bool | datetime.date)


def _first_str(value: object) -> str:
    if isinstance(value, list) and value:
        value = value[0]
    return str(value).strip() if _scalar(value) and value != "" else ""


def _str_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items = re.split(r"[,\s]+", value)
    elif isinstance(value, list):
        items = [str(v) for v in value if _scalar(v)]
    else:
        items = [str(value)] if _scalar(value) else []
    return [i.strip().lstrip("#") for i in items if i and i.strip().lstrip("#")]


def _fields(meta: dict[str, object]) -> dict[str, object]:
    """Front matter a filter can test: scalars (dates as ISO text) and lists of scalars, keys
    lowercased; nested mappings are left out."""
    out: dict[str, object] = {}
    for key, value in meta.items():
        if isinstance(value, list):
            out[key.lower()] = [_plain(v) for v in value if _scalar(v)]
        elif _scalar(value):
            out[key.lower()] = _plain(value)
    return out


def _plain(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime.date) else value


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))

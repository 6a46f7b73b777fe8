"""`[^kb-n]` footnotes: rendering an answer into a note, and reading kebab's definitions back.

A definition names its source so that a person can follow it and kebab can resolve it:

    [^kb-3]: [Ownership › Rules](../rust/ownership.md#rules "kb:1a2b3c4d5e6f") L12–L30

The link is relative to the note the answer lands in (so it works in VS Code's and GitHub's
preview), the anchor is the heading's GitHub-style slug, and the link title carries the cited
passage's content hash, which hover and diagnostics compare with the current text: `resolve`
says whether the cited passage is still there, moved, changed or gone.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from kebab.markdown import content_hash, normalise_newlines
from kebab.model import Chunk, Citation
from kebab.paths import resolve_inside
from kebab.syntax import (
    CALLOUT_START,
    FOOTNOTE_DEFINITION,
    FOOTNOTE_LABEL,
    FOOTNOTE_REFERENCE,
    HEADING,
    KEBAB_DEFINITION,
    LINK_ELSEWHERE,
    LIST_ITEM,
    MARKDOWN_LINK,
    QUOTE_MARKERS,
    SPACE_BEFORE_FOOTNOTE,
    answer_prefix,
    fence_after,
    outside_code,
    quote_part,
)

# The model's citation marker: only `[#n]` counts (`[1]` and `vec![1]` are prose or code), and
# never as a link's text: `see [#11](https://github.com/…/issues/11)`, an issue a note links to,
# quoted by the extractive answerer, read as a marker naming no passage and the answer failed.
MARKER = re.compile(r"\[#(\d{1,3})\](?!\([^()\s]*\))")

# a line that ends citing a footnote, then only punctuation or closing emphasis
_ENDS_CITED = re.compile(FOOTNOTE_LABEL.pattern + r"[\s.,;:!?)\]\"'*_…。]*$")


@dataclass(frozen=True)
class Definition:
    """A kebab footnote definition found in a note."""

    label: str
    line: int  # 0-based line of the definition in the note
    path: str  # workspace-relative path of the cited note
    anchor: str
    start_line: int  # 1-based, inclusive
    end_line: int
    content_hash: str  # may be "" for definitions written by hand
    title: str


def slug(heading: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation dropped, spaces to hyphens."""
    s = re.sub(r"[`*_~]", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def next_label(note_text: str, style: str = "kb") -> int:
    """The first free number: after the highest `kb-` label (or numeric label) in the note."""
    labels = [m.group("label") for m in FOOTNOTE_DEFINITION.finditer(note_text)]
    labels += [m.group("label") for m in FOOTNOTE_REFERENCE.finditer(note_text)]
    if style == "numeric":
        nums = [int(lab) for lab in labels if lab.isdigit()]
    else:
        nums = [int(lab[3:]) for lab in labels if lab.startswith("kb-") and lab[3:].isdigit()]
    return max(nums, default=0) + 1


def render(
    answer: str,
    citations: list[Citation],
    note_path: str | None = None,
    first_label: int = 1,
    style: str = "kb",
    cited: dict[tuple[str, str], str] | None = None,
    all_defs: bool = False,
) -> tuple[str, list[str]]:
    """(body with `[^label]` references, definition lines) for an answer with `[#n]` markers.

    `note_path` is where the answer will live (workspace-relative); links are relative to it.
    `cited` (`cited_in`) holds the labels the note already has for passages: a passage cited
    there before keeps its label and gets no second definition (unless `all_defs`: the answer
    shown on its own, every reference defined).
    """
    by_marker = {c.marker: c for c in citations}
    labels, new = _labels(answer, by_marker, first_label, style, cited or {})
    if note_path is not None:
        answer = _links_from(answer, by_marker, posixpath.dirname(note_path))

    def ref(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[^{labels[n]}]" if n in labels else ""

    body = MARKER.sub(ref, answer)
    body = SPACE_BEFORE_FOOTNOTE.sub("", body)  # "fact [^kb-1]" → "fact[^kb-1]"
    defs = [
        definition_line(labels[n], by_marker[n], note_path) for n in (labels if all_defs else new)
    ]
    return body, defs


def _links_from(answer: str, by_marker: dict[int, Citation], base: str) -> str:
    """The answer with the relative links and images it quotes made relative to the folder
    `base` it lands in: `![shot](../img/a.png)` quoted from `tools/setup.md` into
    `journal/2026/today.md` becomes `../../img/a.png`, so Insert leaves no broken link. A line's
    links are relative to the passage its last marker cites; code is left as written."""
    out: list[str] = []
    fence = ""
    for line in answer.split("\n"):
        after = fence_after(line, fence)
        cites = [int(n) for n in MARKER.findall(line)]
        source = by_marker.get(cites[-1]) if cites and not (fence or after) else None
        if source is not None and posixpath.dirname(source.path) != base:
            move = _moved(posixpath.dirname(source.path), base)
            line = outside_code(line, partial(MARKDOWN_LINK.sub, move))
        out.append(line)
        fence = after
    return "\n".join(out)


def _moved(here: str, base: str) -> Callable[[re.Match[str]], str]:
    def move(m: re.Match[str]) -> str:
        target = m.group(2)
        if LINK_ELSEWHERE.match(target):
            return m.group()
        path, hash_, anchor = target.partition("#")
        where = posixpath.normpath(posixpath.join(here, unquote(path)))
        moved = href(posixpath.relpath(where, base or ".")) + hash_ + anchor
        at = m.start(2) - m.start()
        return m.group()[:at] + moved + m.group()[at + len(target) :]

    return move


def labels(
    answer: str,
    citations: list[Citation],
    note_text: str | None = None,
    note_path: str | None = None,
    style: str = "kb",
) -> dict[int, str]:
    """Marker → the footnote label Insert writes for it: after the note's own labels, and the
    label the note already gives a passage it cites (`kb-1`, `kb-2`… in a new note or with no
    note). answer.v1 `citations[].label`: what every client shows, so none counts again."""
    by_marker = {c.marker: c for c in citations}
    if note_text is None or note_path is None:
        return _labels(answer, by_marker, 1, style, {})[0]
    first = next_label(note_text, style)
    return _labels(answer, by_marker, first, style, cited_in(note_text, note_path))[0]


def _labels(
    answer: str,
    by_marker: dict[int, Citation],
    first_label: int,
    style: str,
    cited: dict[tuple[str, str], str],
) -> tuple[dict[int, str], list[int]]:
    """(marker → label, the markers that need a new definition) in order of first citation."""
    labels: dict[int, str] = {}
    new: list[int] = []
    for n in (int(m) for m in MARKER.findall(answer)):
        if n in by_marker and n not in labels:
            c = by_marker[n]
            labels[n] = cited.get((c.path, c.content_hash[:12]), "")
            if not labels[n]:
                number = first_label + len(new)
                labels[n] = f"kb-{number}" if style == "kb" else str(number)
                new.append(n)
    return labels, new


def for_note(
    answer: str,
    citations: list[Citation],
    note_text: str,
    note_path: str,
    style: str = "kb",
    all_defs: bool = False,
) -> tuple[str, list[str]]:
    """`render` for the note the answer goes into: links relative to it, labels after its own,
    and the labels it already has for passages cited before. The one numbering: what the panel
    and the float show for an answer asked from a note is what Insert writes there."""
    return render(
        answer,
        citations,
        note_path,
        next_label(note_text, style),
        style,
        cited_in(note_text, note_path),
        all_defs,
    )


def cited_in(note_text: str, note_path: str) -> dict[tuple[str, str], str]:
    """(cited path, content-hash prefix) → label, for kebab's definitions already in a note."""
    return {
        (d.path, d.content_hash[:12]): d.label
        for d in definitions(note_text, note_path)
        if d.content_hash
    }


def href(path: str) -> str:
    """A file path as a Markdown link target: what would end the target early or change its
    meaning is percent-encoded (`%`, space, parentheses, `#`, `?`); the rest, Hangul too, reads
    as written."""
    for char, code in (("%", "%25"), (" ", "%20"), ("(", "%28"), (")", "%29"), ("#", "%23")):
        path = path.replace(char, code)
    return path.replace("?", "%3F")


def definition_line(label: str, c: Citation, note_path: str | None) -> str:
    base = posixpath.dirname(note_path) if note_path else ""
    link = href(posixpath.relpath(c.path, base or ".") if base else c.path)
    anchor = f"#{slug(c.heading_path[-1])}" if c.heading_path else ""
    title = " › ".join(c.heading_path) or posixpath.basename(c.path)
    title = title.replace("[", "(").replace("]", ")")
    return f'[^{label}]: [{title}]({link}{anchor} "kb:{c.content_hash[:12]}") L{c.start_line}–L{c.end_line}'


def markdown(
    answer: str,
    citations: list[Citation],
    note_path: str | None = None,
    first_label: int = 1,
    style: str = "kb",
) -> str:
    """The answer as standalone Markdown: body, a blank line, then the definitions."""
    return joined(*render(answer, citations, note_path, first_label, style))


def joined(body: str, defs: list[str]) -> str:
    """Body and definitions as one Markdown text."""
    return body.rstrip() + ("\n\n" + "\n".join(defs) if defs else "") + "\n"


def definitions(note_text: str, note_path: str) -> list[Definition]:
    """kebab's footnote definitions in a note, with their links resolved to workspace paths."""
    out = []
    for i, line in enumerate(note_text.split("\n")):
        m = KEBAB_DEFINITION.match(line.rstrip("\r"))
        if not m:
            continue
        link, _, anchor = m.group("link").partition("#")
        target = posixpath.normpath(posixpath.join(posixpath.dirname(note_path), unquote(link)))
        out.append(
            Definition(
                m.group("label"),
                i,
                target,
                anchor,
                int(m.group("start")),
                int(m.group("end")),
                m.group("hash") or "",
                m.group("title"),
            )
        )
    return out


def label_at(line: str, character: int) -> str | None:
    """The footnote label under `character` on `line` (a reference or a definition's label)."""
    for m in FOOTNOTE_REFERENCE.finditer(line):
        if m.start() <= character <= m.end():
            return m.group("label")
    d = FOOTNOTE_DEFINITION.match(line)
    if d and character <= d.end():
        return d.group("label")
    return None


# kebab's answer already in a note ----------------------------------------------------------------
def answer_below(lines: list[str], line: int) -> int | None:
    """The last line of the answer kebab inserted under `line`, None when there is none. Insert
    writes a blank line, then paragraphs whose every source is a kebab footnote and that end
    citing one (`…02:30.[^kb-1]`; a code block's marker is on the line leading into it, or just
    after it); the first paragraph that is not like that is the note's own writing and ends the
    answer. A model's quote of a note (`> …[^kb-1]`, asking nothing) is a paragraph of it, and
    so is an uncited line right under the question that leads into a quote, list or code ("The
    notes say:"). Under a question in a quote or callout, the answer is inside it, every line
    quoted, up to the callout's end; under a list item's question, at the item's content
    indent: where `syntax.answer_prefix` says. One an earlier kebab wrote one quote in, or at
    the margin (once the quote has ended), is found too."""
    below = lines[line + 1] if line + 1 < len(lines) else "x"
    if QUOTE_MARKERS.sub("", below).strip():
        return None  # the cheap test first: code actions ask for every line the cursor is on
    prefix = answer_prefix(lines, line)
    quoted = ">" in prefix  # in a quote or callout (`- > Q?` too: a quote that is a list item)
    if below.strip() and not quoted:
        return None
    tries = [prefix]
    if quoted:  # inside the quotes, or where an earlier kebab wrote: one quote in, or at the
        # margin once the quote has ended
        tries += [quote_part(prefix), "> "] + ([""] if not below.strip() else [])
    else:
        tries.append("")
    for at in dict.fromkeys(tries):
        end = _answer_end(lines, line, at)
        if end is not None:
            return end
    return None


def _answer_end(lines: list[str], line: int, prefix: str) -> int | None:
    """`answer_below` for an answer written after `prefix` (`syntax.answer_prefix`): the
    lines below that begin with it (or are its blank line), up to a callout's start (outside
    fenced code: a quoted note's example `> [!NOTE] Title` is no callout)."""
    blank, body, fence = prefix.rstrip(), [], ""
    for s in lines[line + 1 :]:
        if not (s.startswith(prefix) or s.rstrip() == blank):
            break
        if ">" in prefix and not fence and CALLOUT_START.match(s):
            break
        body.append(s[len(prefix) :])
        fence = fence_after(body[-1], fence)
    last, lead = None, ""  # "in": a lead-in just read; "code": code after it
    for first, end in _blocks(body):
        block = body[first : end + 1]
        quoted = [s.lstrip().startswith(">") for s in block]
        if any(quoted) and not (all(quoted) and _quotes_kebab(block, lines)):
            break  # a quote of the note's own (`> > log`, a question asked in a quote)
        if lead == "in" and not _opens_apart(block):
            break  # a lead-in leads into a quote, a list or code; before a paragraph it is a
            # line asked itself (a selection ending in `:`), with the answer Insert wrote
        if _answers(_unquoted(block), lines):
            last, lead = end, ""
        elif last is None and not lead and _leads_in(block, lines):
            lead = "in"  # "The notes say:" right under the question, before what it cites
        elif lead and _is_code(block):
            lead = "code"  # "To restart:", the command, then the paragraph citing its source
        elif lead or last is None or not _is_code(block):  # code after one of its paragraphs
            break  # is the answer's; before the first, the note's own (`>     indented code`)
    return None if last is None else line + 1 + last


def _unquoted(block: list[str]) -> list[str]:
    """The block without its quote markers (a line without any as it is)."""
    return [QUOTE_MARKERS.sub("", s) for s in block]


def _quotes_kebab(block: list[str], lines: list[str]) -> bool:
    """Whether a quoted block is kebab's: a model quoting a note (`> Restart it.[^kb-1]`).
    Each of its paragraphs ends citing kebab's footnotes, and it asks nothing: a question in
    a quote or a callout (`> [!question] Why?`), with the answer Insert wrote under it, is the
    note's own writing. (A model's quote of lines that ask, `> Does it hang?` then `> Only
    when the lock stays.[^kb-1]`, is not found again and a second answer stacks above it: a
    person's own follow-up quote citing kebab's answer reads the same, and deleting it would
    be worse.)"""
    inner = _unquoted(block)
    if any(s.lstrip().startswith("[!") or s.rstrip().endswith("?") for s in inner):
        return False
    return all(_answers(inner[a : b + 1], lines) for a, b in _blocks(inner))


def _leads_in(block: list[str], lines: list[str]) -> bool:
    """A line of text that leads into what follows ("The notes say:"), citing nothing but
    kebab's footnotes: a model's answer may open so, uncited, before the quote, list or code
    whose source it cites. Not a heading, an item, a table row or a quote, which are the
    note's own."""
    text = block[0].strip()
    if len(block) != 1 or not text.endswith(":") or _is_code(block) or HEADING.match(text):
        return False
    if LIST_ITEM.match(text) or text.startswith(("|", ">")):
        return False
    labels = _labels_cited(block)
    return all(x.startswith("kb-") for x in labels) or labels <= kebab_labels(lines)


def _opens_apart(block: list[str]) -> bool:
    """Whether a block is what a lead-in leads into: a quote, a list or code."""
    text = block[0].strip()
    return text.startswith(">") or bool(LIST_ITEM.match(text)) or _is_code(block)


def unused_definitions(lines: list[str], first: int, last: int) -> list[int]:
    """The lines, outside `first`..`last`, of kebab's definitions that only those lines cite:
    once they are gone, nothing in the note does (a label the person cited elsewhere keeps its
    definition)."""
    there = _labels_cited(lines[first : last + 1])
    there -= _labels_cited(lines[:first] + lines[last + 1 :])
    return [
        i
        for i, s in enumerate(lines)
        if not first <= i <= last
        and (m := KEBAB_DEFINITION.match(s))
        and m["hash"]
        and m["label"] in there
    ]


def kebab_labels(lines: list[str]) -> set[str]:
    """The labels kebab's own definitions name (their link title holds the passage's hash)."""
    return {m["label"] for s in lines if (m := KEBAB_DEFINITION.match(s)) and m["hash"]}


def _labels_cited(lines: list[str]) -> set[str]:
    """The footnote labels the lines cite: every label but a definition's own at a line's
    start, one a `:` follows mid-line too (`As my runbook says[^ops]: wait`), which
    `FOOTNOTE_REFERENCE` passes over as if it opened a definition."""
    out: set[str] = set()
    for s in lines:
        own = FOOTNOTE_DEFINITION.match(s)
        out |= {m[0][2:-1] for m in FOOTNOTE_LABEL.finditer(s, own.end() if own else 0)}
    return out


def _answers(block: list[str], lines: list[str]) -> bool:
    """A paragraph as Insert writes it: it cites kebab's footnotes only (a `kb-` label, or one
    kebab defined in `lines`: `footnote_labels = "numeric"`), and its last line of text ends
    citing one. A person's remark that cites the answer's source mid-sentence is their own."""
    labels = _labels_cited(block)
    prose = _prose(block)
    end = _ENDS_CITED.search(prose[-1]) if prose else None
    if end is None or not labels:
        return False
    foreign = {x for x in labels if not x.startswith("kb-")}
    return not foreign or foreign <= kebab_labels(lines)


def _is_code(block: list[str]) -> bool:
    """A paragraph that is only code: fenced, or indented as a code block."""
    return not _prose(block) or block[0].startswith(("    ", "\t"))


def _prose(block: list[str]) -> list[str]:
    """The paragraph's lines outside its fenced code."""
    out, fence = [], ""
    for s in block:
        after = fence_after(s, fence)
        if not fence and not after and s.strip():
            out.append(s)
        fence = after
    return out


def _blocks(lines: list[str]) -> Iterator[tuple[int, int]]:
    """(first, last) line of each paragraph: runs between blank lines, a fenced block's blank
    lines inside its run, a heading or a definition a block of its own. A fence that never
    closes ends them: where its paragraph ends is not known."""
    run: list[int] = []
    fence = ""
    for i, s in enumerate(lines):
        if fence:
            run.append(i)
            fence = fence_after(s, fence)
        elif not s.strip() or HEADING.match(s) or FOOTNOTE_DEFINITION.match(s):
            if run:
                yield run[0], run[-1]
            run = []
            if s.strip():
                yield i, i
        else:
            run.append(i)
            fence = fence_after(s, "")
    if run and not fence:
        yield run[0], run[-1]


# What a definition points to now -------------------------------------------------------------
State = Literal["fresh", "unverified", "moved", "changed", "missing"]
Reader = Callable[[Path], "str | None"]  # current text of a note, None when it is gone
ChunksOf = Callable[[str], "list[Chunk]"]  # the index's chunks of a workspace-relative path

_MAX_SCAN_LINES = 20_000  # past this, a moved passage is looked up in the index only


@dataclass(frozen=True)
class Cited:
    """A kebab footnote definition and the state of the passage it cites. The passage's
    current text is the cited lines of the note (the editor's buffer when `read` gives it),
    numbered as the index numbers them and stripped of leading and trailing newlines: how the
    chunker built the chunk, so its hash starts with the recorded digits while nothing changed."""

    definition: Definition
    path: Path  # the cited note on disk
    state: State
    text: str  # current text of the cited passage ("" when missing)
    start_line: int  # where the passage is now (1-based, inclusive); the recorded span if unknown
    end_line: int
    reason: str = ""  # for "missing" and "changed": what a person should know

    @property
    def label(self) -> str:
        return self.definition.label


def resolve(root: Path, d: Definition, read: Reader, chunks_of: ChunksOf | None = None) -> Cited:
    """Compare the passage a definition cites with the current text of the cited note."""
    path = root / d.path
    if resolve_inside(root, d.path) is None:  # `../../etc/passwd`, `/etc/passwd`, a symlink out
        return _missing(d, path, f"{d.path} is outside the workspace; kebab does not read it")
    current = read(path)
    if current is None:
        return _missing(d, path, f"{d.path} no longer exists")
    lines = _lines(current)
    here = passage(lines, d.start_line, d.end_line)
    if not d.content_hash:
        if here is None:
            return _gone(d, path, lines)
        return Cited(d, path, "unverified", here, d.start_line, d.end_line)
    if here is not None and _same(content_hash(here), d.content_hash):
        return Cited(d, path, "fresh", here, d.start_line, d.end_line)
    moved = locate(lines, d, chunks_of(d.path) if chunks_of else [])
    if moved is not None:
        start, end = moved
        return Cited(
            d,
            path,
            "moved",
            passage(lines, start, end) or "",
            start,
            end,
            f"the passage moved to L{start}–L{end}",
        )
    if here is None:
        return _gone(d, path, lines)
    return Cited(
        d, path, "changed", here, d.start_line, d.end_line, "source changed since this answer"
    )


def passage(lines: list[str], start_line: int, end_line: int) -> str | None:
    """The text of lines start_line..end_line (1-based), None when they are not all there."""
    if start_line < 1 or end_line < start_line or end_line > len(lines):
        return None
    return "\n".join(lines[start_line - 1 : end_line]).strip("\n")


def locate(lines: list[str], d: Definition, chunks: list[Chunk]) -> tuple[int, int] | None:
    """Where the cited passage is now, when it only moved within the note (same text)."""
    for c in chunks:  # the index knows its chunks' hashes: the cheap way first
        if _same(c.content_hash, d.content_hash) and _same(
            content_hash(passage(lines, c.start_line, c.end_line) or ""), d.content_hash
        ):
            return c.start_line, c.end_line
    size = d.end_line - d.start_line + 1
    if size < 1 or len(lines) > _MAX_SCAN_LINES:
        return None
    starts = sorted(range(1, len(lines) - size + 2), key=lambda s: abs(s - d.start_line))
    for start in starts:
        text = passage(lines, start, start + size - 1)
        if text and _same(content_hash(text), d.content_hash):
            return start, start + size - 1
    return None


def _same(hash_: str, recorded: str) -> bool:
    return bool(recorded) and hash_[: len(recorded)] == recorded


def _lines(text: str) -> list[str]:
    return normalise_newlines(text.replace("\x00", "\ufffd")).split("\n")


def _gone(d: Definition, path: Path, lines: list[str]) -> Cited:
    return _missing(
        d,
        path,
        f"lines L{d.start_line}–L{d.end_line} are past the end of {d.path} ({len(lines)} lines)",
    )


def _missing(d: Definition, path: Path, reason: str) -> Cited:
    return Cited(d, path, "missing", "", d.start_line, d.end_line, reason)

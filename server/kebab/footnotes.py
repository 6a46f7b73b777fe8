"""`[^kb-n]` footnotes: rendering an answer into a note, and reading kebab's definitions back.

A definition names its source so that a person can follow it and kebab can resolve it:

    [^kb-3]: [Ownership › Rules](../rust/ownership.md#rules "kb:1a2b3c4d5e6f") L12–L30

The link is relative to the note the answer lands in (so it works in VS Code's and GitHub's
preview), the anchor is the heading's GitHub-style slug, and the link title carries the cited
passage's content hash, which hover and diagnostics compare with the current text.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from kebab.model import Citation
from kebab.rag.citations import MARKER

DEFINITION = re.compile(
    r"^\[\^(?P<label>[^\]\s]+)\]:\s*\[(?P<title>[^\]]*)\]\((?P<link>[^)\s]*)"
    r"(?:\s+\"kb:(?P<hash>[0-9a-f]+)\")?\)\s*L(?P<start>\d+)\s*[–-]\s*L?(?P<end>\d+)\s*$"
)
REFERENCE = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")
_ANY_DEFINITION = re.compile(r"^\[\^(?P<label>[^\]\s]+)\]:", re.MULTILINE)


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
    labels = [m.group("label") for m in _ANY_DEFINITION.finditer(note_text)]
    labels += [m.group("label") for m in REFERENCE.finditer(note_text)]
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
) -> tuple[str, list[str]]:
    """(body with `[^label]` references, definition lines) for an answer with `[#n]` markers.

    `note_path` is where the answer will live (workspace-relative); links are relative to it.
    """
    by_marker = {c.marker: c for c in citations}
    labels: dict[int, str] = {}
    for n in (int(m) for m in MARKER.findall(answer)):
        if n in by_marker and n not in labels:
            number = first_label + len(labels)
            labels[n] = f"kb-{number}" if style == "kb" else str(number)

    def ref(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[^{labels[n]}]" if n in labels else ""

    body = MARKER.sub(ref, answer)
    body = re.sub(r"[ \t]+(?=\[\^)", "", body)  # "fact [^kb-1]" → "fact[^kb-1]"
    defs = [definition_line(labels[n], by_marker[n], note_path) for n in labels]
    return body, defs


def definition_line(label: str, c: Citation, note_path: str | None) -> str:
    base = posixpath.dirname(note_path) if note_path else ""
    link = posixpath.relpath(c.path, base or ".") if base else c.path
    link = link.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
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
    body, defs = render(answer, citations, note_path, first_label, style)
    return body.rstrip() + ("\n\n" + "\n".join(defs) if defs else "") + "\n"


def definitions(note_text: str, note_path: str) -> list[Definition]:
    """kebab's footnote definitions in a note, with their links resolved to workspace paths."""
    out = []
    for i, line in enumerate(note_text.split("\n")):
        m = DEFINITION.match(line.rstrip("\r"))
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
    for m in REFERENCE.finditer(line):
        if m.start() <= character <= m.end():
            return m.group("label")
    d = _ANY_DEFINITION.match(line)
    if d and character <= d.end():
        return d.group("label")
    return None

"""Links between notes: wikilinks (`[[Note]]`, `[[Note#Heading|alias]]`, `[[Note#^block]]`),
embeds (`![[Note]]`) and Markdown links to other notes (`[text](../other.md#heading)`), read
out of a note and resolved the way Obsidian resolves them: a path from the vault's root, else
the note's file name (case-insensitive, with or without `.md`), and among notes of the same name
the one in the linking note's folder, else the one with the shortest path. Code (fenced blocks,
inline spans) links nothing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from urllib.parse import unquote

import msgspec

from kebab.footnotes import slug
from kebab.syntax import CODE_SPAN, MARKDOWN_LINK, WIKILINK, fence_after

_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, obsidian:


class Link(msgspec.Struct, frozen=True):
    """One link of a note: where it is, what it names, and the note it reaches (None: no note
    of the workspace has that name)."""

    source: str  # the linking note, workspace-relative
    line: int  # 1-based
    target: str  # as written: `Installation`, `../ops/backup.md`
    heading: str | None  # `#Heading` or `#^block` after the name
    embed: bool  # `![[...]]` or `![...](...)`
    path: str | None  # the note it resolves to


def links_in(source: str, text: str, resolve: Callable[[str, str], str | None]) -> list[Link]:
    """The links `text` (the note at `source`) makes, in reading order."""
    out: list[Link] = []
    fence = ""
    for n, raw in enumerate(text.split("\n"), 1):
        was, fence = fence, fence_after(raw, fence)
        if was or fence:
            continue  # a fence line, or code inside one
        line = CODE_SPAN.sub(lambda m: " " * len(m.group()), raw)
        found = [(m.start(), m, True) for m in WIKILINK.finditer(line)]
        found += [(m.start(), m, False) for m in MARKDOWN_LINK.finditer(line)]
        for _, m, wiki in sorted(found, key=lambda f: f[0]):
            link = _wiki(source, n, m, resolve) if wiki else _markdown(source, n, m, resolve)
            if link is not None:
                out.append(link)
    return out


def _wiki(
    source: str, n: int, m: re.Match[str], resolve: Callable[[str, str], str | None]
) -> Link | None:
    target = m.group(2).strip().removesuffix("\\")  # `[[Sorting\|sort]]` inside a table
    if _not_a_note(target) or _EXTERNAL.match(target) or "](" in target:
        return None  # `![[diagram.png]]`, an attachment; `[[https://…](…)]`, a bracketed link
    heading = (m.group(3) or "").strip().removesuffix("\\") or None
    path = resolve(source, target) if target else source  # `[[#Heading]]`: this note
    return Link(source, n, target, heading, bool(m.group(1)), path)


def _markdown(
    source: str, n: int, m: re.Match[str], resolve: Callable[[str, str], str | None]
) -> Link | None:
    href = m.group(2)
    if _EXTERNAL.match(href) or href.startswith("[") or href == "#":
        return None
    where, _, anchor = unquote(href).partition("#")
    if _not_a_note(where):
        return None  # an image or another file, not a note
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), where)) if where else ""
    path = resolve(source, "/" + joined) if where else source
    return Link(source, n, where or "", anchor or None, bool(m.group(1)), path)


def _not_a_note(target: str) -> bool:
    """A file name with an extension other than `.md` (an image, a PDF)."""
    name = posixpath.basename(target)
    return "." in name and not name.lower().endswith(".md") and len(name.rsplit(".", 1)[1]) <= 4


def resolver(paths: Iterable[str]) -> Callable[[str, str], str | None]:
    """`resolve(source, target)`: the note `target` names, seen from the note `source`; a
    target starting with `/` is a path from the root (a Markdown link, already joined)."""
    by_path: dict[str, str] = {}
    by_name: dict[str, list[str]] = {}
    for p in paths:
        key = p.lower().removesuffix(".md")
        by_path[key] = p
        by_name.setdefault(posixpath.basename(key), []).append(p)

    def resolve(source: str, target: str) -> str | None:
        key = target.strip().lower().removesuffix(".md").lstrip("/")
        if key in by_path:
            return by_path[key]
        if target.startswith("/"):
            return None
        same = by_name.get(posixpath.basename(key), [])
        if "/" in key:  # a partial path: the notes whose path ends with it
            same = [p for p in same if p.lower().removesuffix(".md").endswith("/" + key)]
        if not same:
            return None
        here = posixpath.dirname(source)
        return min(same, key=lambda p: (posixpath.dirname(p) != here, p.count("/"), len(p), p))

    return resolve


def written(
    source: str,
    target: str,
    heading: str | None,
    resolve: Callable[[str, str], str | None],
    wiki: bool,
    title: str = "",
) -> str:
    """A link from the note `source` to the note `target` (at `heading`), as the note writes its
    links: `[[Name#Heading]]` with the shortest name `resolve` (the vault's `resolver`) takes to
    `target` from `source`, or `[Title › Heading](relative/path.md#slug)`."""
    if wiki:
        stem = target.removesuffix(".md")
        parts = stem.split("/")
        name = next(
            (
                tail
                for tail in ("/".join(parts[-n:]) for n in range(1, len(parts) + 1))
                if resolve(source, tail) == target
            ),
            stem,
        )
        return f"[[{name}#{heading}]]" if heading else f"[[{name}]]"
    link = posixpath.relpath(target, posixpath.dirname(source) or ".")
    link = link.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    shown = " › ".join(
        filter(None, [title or posixpath.basename(target).removesuffix(".md"), heading])
    )
    anchor = f"#{slug(heading)}" if heading else ""
    return f"[{shown.replace('[', '(').replace(']', ')')}]({link}{anchor})"


def writes_wikilinks(text: str, obsidian: bool) -> bool:
    """Whether a note's new links are wikilinks: as the note writes its links, or, with none,
    as its vault does (an Obsidian vault: wikilinks; elsewhere Markdown links every previewer
    follows)."""
    wiki = len(WIKILINK.findall(text))
    markdown = sum(
        1
        for m in MARKDOWN_LINK.finditer(text)
        if not _EXTERNAL.match(m.group(2)) and not _not_a_note(m.group(2).partition("#")[0])
    )
    return wiki > markdown if wiki or markdown else obsidian

"""A note's place in the link graph over LSP: `kebab/links` (its links and backlinks, as
`kebab links` prints them) and `textDocument/references` on a heading or the note's title (the
links elsewhere that reach it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from kebab import links as links_mod
from kebab.footnotes import slug
from kebab.lsp import text as textmod
from kebab.lsp.context import note_at
from kebab.lsp.core import KebabServer, target
from kebab.lsp.folders import Folder
from kebab.markdown import clean_heading
from kebab.model import citation_range, to_builtins
from kebab.syntax import HEADING

LINKS = "kebab/links"


async def links(ls: KebabServer, raw: Any) -> Any:
    """`kebab/links` {uri}: {links, backlinks}, each with the note it reaches (`path`, `uri`,
    null when no note matches), the heading or block named, the line (1-based) and its range."""
    uri = raw.get("uri") if isinstance(raw, dict) else getattr(raw, "uri", None)
    if not isinstance(uri, str) or not uri:
        raise JsonRpcInvalidParams(f"{LINKS}: `uri` must name a note")
    folder, path = target(ls, uri, LINKS)
    if path is None:
        raise JsonRpcInvalidParams(f"{LINKS}: `uri` must name a note, not a folder")
    found = await _graph(folder, path)
    return {kind: [_link_json(folder, link) for link in found[kind]] for kind in found}


async def references(ls: KebabServer, params: types.ReferenceParams) -> list[types.Location]:
    """The links that reach the heading under the cursor (`[[Note#Heading]]`), or, on the
    note's title or its first heading, every link to the note."""
    note = note_at(ls, ls.folders, params.text_document.uri)
    if note is None:
        return []
    line, _ = textmod.to_server(ls, note.lines, params.position)
    level, heading = _heading_at(note.lines, line)
    if heading is None and not _in_front_matter_title(note.lines, line):
        return []
    found = await _graph(note.folder, note.path)
    wanted = None if heading is None or level == 1 else slug(heading)
    return [
        types.Location(
            uri=(note.folder.root / link.source).as_uri(),
            range=textmod.whole_lines(link.line, link.line),
        )
        for link in found["backlinks"]
        if wanted is None or slug((link.heading or "").lstrip("#")) == wanted
    ]


async def _graph(folder: Folder, path: str) -> dict[str, list[links_mod.Link]]:
    async with folder.use() as ws:
        return await asyncio.to_thread(ws.links, path)


def _link_json(folder: Folder, link: links_mod.Link) -> dict[str, Any]:
    out = to_builtins(link)
    assert isinstance(out, dict)
    out["uri"] = (folder.root / link.path).as_uri() if link.path else None
    out["source_uri"] = (folder.root / link.source).as_uri()
    out["range"] = to_builtins(citation_range(link.line, link.line))
    return out


def _heading_at(lines: list[str], line: int) -> tuple[int, str | None]:
    """(level, text) of the ATX heading on `line`; (0, None) when it is not one."""
    text = lines[line] if 0 <= line < len(lines) else ""
    if not HEADING.match(text):
        return 0, None
    return len(text.strip()) - len(text.strip().lstrip("#")), clean_heading(text)


def _in_front_matter_title(lines: list[str], line: int) -> bool:
    """The `title:` line of the note's front matter."""
    if not lines or lines[0].strip() != "---":
        return False
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
    return 0 < line < end and lines[line].startswith("title:")

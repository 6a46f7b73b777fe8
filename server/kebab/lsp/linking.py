"""A note's place in the link graph over LSP: `kebab/links` (its links and backlinks, as
`kebab links` prints them), `textDocument/references` on a heading or the note's title (the
links elsewhere that reach it), and `kebab.linkRelated`, which adds links to related notes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from kebab import links as links_mod
from kebab.footnotes import slug
from kebab.lsp import params as params_mod
from kebab.lsp import relations
from kebab.lsp import text as textmod
from kebab.lsp.context import note_at
from kebab.lsp.core import KebabServer, follow_request_cancel, target
from kebab.lsp.folders import Folder
from kebab.markdown import clean_heading
from kebab.model import citation_range, to_builtins
from kebab.syntax import front_matter_end, heading_level

LINKS = "kebab/links"


async def links(ls: KebabServer, raw: Any) -> Any:
    """`kebab/links` {uri}: {links, backlinks}, each with the note it reaches (`path`, `uri`,
    null when no note matches), the heading or block named, the line (1-based) and its range."""
    folder, path = target(ls, params_mod.links_params(raw).uri, LINKS)
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
    level = heading_level(text)
    return (level, clean_heading(text)) if level else (0, None)


def _in_front_matter_title(lines: list[str], line: int) -> bool:
    """The `title:` line of the note's front matter."""
    return 0 < line < front_matter_end(lines) and lines[line].startswith("title:")


async def link_related(ls: KebabServer, *args: Any) -> Any:
    """`kebab.linkRelated` (uri, line): a line of links to the notes most related to the
    section at `line` (0-based), after that section's text, written as the note writes links.
    Returns {applied, links}."""
    follow_request_cancel(ls)
    if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
        raise JsonRpcInvalidParams(f"{relations.COMMAND} takes (uri, line)")
    uri, line = args[0], args[1]
    folder, path = target(ls, uri, relations.COMMAND)
    snap = await asyncio.to_thread(textmod.read_snapshot, ls, uri)
    if path is None or snap is None or not 0 <= line < len(snap.lines):
        raise JsonRpcInvalidParams(f"{relations.COMMAND}: line {line} is not in {uri}")
    with folder.answering():
        if folder.indexer is not None:
            await folder.indexer.flush()
        async with folder.use() as ws:
            found = await asyncio.to_thread(ws.related_links, path, line + 1, 3, snap.text)
    if not found:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Info,
                message="kebab: no note close enough in meaning that this note does not link already",
            )
        )
        return {"applied": False, "links": []}
    now = await asyncio.to_thread(textmod.read_snapshot, ls, uri)
    if now is None:
        return {"applied": False, "links": found}
    after = relations.placed_after(now.lines, min(line, len(now.lines) - 1))
    text = "\n\n" + relations.LEAD + " " + ", ".join(found)
    if after + 1 < len(now.lines) and now.lines[after + 1].strip():
        text += "\n"
    at = textmod.end_of_line(ls, now.lines, after)
    edit = textmod.workspace_edit(
        ls, now, [types.TextEdit(range=types.Range(start=at, end=at), new_text=text)]
    )
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=relations.TITLE)
    )
    return {"applied": bool(result.applied), "links": found}

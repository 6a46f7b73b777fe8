"""Following a citation: hover on `[^kb-n]` previews the cited passage, go to definition opens
the cited lines, and each definition's link is a document link.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.capabilities import get_capability

from kebab import footnotes
from kebab.lsp import notes
from kebab.lsp import text as textmod
from kebab.lsp.context import note_at
from kebab.lsp.core import KebabServer
from kebab.lsp.hover import preview
from kebab.paths import resolve_inside


async def hover(ls: KebabServer, params: types.HoverParams) -> types.Hover | None:
    source = await cited_at(ls, params.text_document.uri, params.position)
    if source is None:
        return None
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=preview(source))
    )


async def definition(ls: KebabServer, params: types.DefinitionParams) -> types.Location | None:
    source = await cited_at(ls, params.text_document.uri, params.position)
    if source is None or source.state == "missing":
        return None
    return types.Location(
        uri=textmod.uri_of(source.path),
        range=textmod.whole_lines(source.start_line, source.end_line),
    )


def document_links(ls: KebabServer, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
    note = note_at(ls, ls.folders, params.text_document.uri)
    if note is None:
        return []
    tooltips = get_capability(
        note.capabilities, "text_document.document_link.tooltip_support", False
    )
    links = []
    for d in notes.definitions(note.text, note.path):
        cols = notes.link_columns(note.lines[d.line])
        if cols is None or resolve_inside(note.folder.root, d.path) is None:
            continue  # not a kebab link, or one that leads out of the workspace
        target = f"{textmod.uri_of(note.folder.root / d.path)}#L{d.start_line}"
        links.append(
            types.DocumentLink(
                range=textmod.span(ls, note.lines, d.line, *cols),
                target=target,
                tooltip=f"{d.path} L{d.start_line}–L{d.end_line}" if tooltips else None,
            )
        )
    return links


async def cited_at(ls: KebabServer, uri: str, position: types.Position) -> footnotes.Cited | None:
    """The kebab footnote under the cursor, resolved against the cited note's current text."""
    note = note_at(ls, ls.folders, uri)
    if note is None:
        return None
    line, column = textmod.to_server(ls, note.lines, position)
    d = notes.definition_at(note.lines, note.path, line, column)
    if d is None:
        return None
    return await asyncio.to_thread(footnotes.resolve, note.folder.root, d, notes.reader(ls))

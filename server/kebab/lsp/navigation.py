"""Following a citation: hover on `[^kb-n]` previews the cited passage, go to definition opens
the cited lines, and each definition's link is a document link.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.capabilities import get_capability

from kebab.lsp import notes
from kebab.lsp import text as textmod
from kebab.lsp.server import KebabServer
from kebab.paths import resolve_inside

_NOTICE = {
    "changed": "⚠ source changed since this answer",
    "missing": "⚠ source not found",
    "moved": "↪ the passage moved",
}


def register(server: KebabServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
    server.feature(types.TEXT_DOCUMENT_DEFINITION)(definition)
    server.feature(
        types.TEXT_DOCUMENT_DOCUMENT_LINK, types.DocumentLinkOptions(resolve_provider=False)
    )(document_links)


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
        uri=source.uri, range=textmod.whole_lines(source.start_line, source.end_line)
    )


def document_links(ls: KebabServer, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
    uri = params.text_document.uri
    snap = textmod.open_snapshot(ls, uri)
    found = ls.folders.at(uri)
    if snap is None or found is None:
        return []
    folder, path = found
    tooltips = get_capability(
        ls.client_capabilities, "text_document.document_link.tooltip_support", False
    )
    links = []
    for d in notes.definitions(snap.text, path):
        cols = notes.link_columns(snap.lines[d.line])
        if cols is None or resolve_inside(folder.root, d.path) is None:
            continue  # not a kebab link, or one that leads out of the workspace
        target = f"{textmod.uri_of(folder.root / d.path)}#L{d.start_line}"
        links.append(
            types.DocumentLink(
                range=textmod.span(ls, snap.lines, d.line, *cols),
                target=target,
                tooltip=f"{d.path} L{d.start_line}–L{d.end_line}" if tooltips else None,
            )
        )
    return links


async def cited_at(ls: KebabServer, uri: str, position: types.Position) -> notes.CitedSource | None:
    """The kebab footnote under the cursor, resolved against the cited note's current text."""
    snap = textmod.open_snapshot(ls, uri)
    found = ls.folders.at(uri)
    if snap is None or found is None:
        return None
    folder, path = found
    line, column = textmod.to_server(ls, snap.lines, position)
    d = notes.definition_at(snap.lines, path, line, column)
    if d is None:
        return None
    return await asyncio.to_thread(notes.resolve, folder.root, d, notes.reader(ls))


def preview(s: notes.CitedSource) -> str:
    """The hover: heading path, `path` lines L–L, a notice when it changed, then the text."""
    d = s.definition
    head = f"**{d.title}** · `{d.path}` lines L{s.start_line}–L{s.end_line}"
    parts = [head]
    if s.state in _NOTICE:
        notice = _NOTICE[s.state]
        parts.append(f"{notice}: {s.reason}" if s.reason and s.state != "changed" else notice)
    if s.text:
        parts.append("\n".join(f"> {line}" if line else ">" for line in s.text.split("\n")))
    return "\n\n".join(parts)

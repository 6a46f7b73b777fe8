"""`workspace/symbol`: the editor's "go to symbol in workspace" picker answered by kebab's hybrid
search, so any LSP editor finds passages by meaning, not only by heading text.

The query is the user's words; each result is a passage: its heading path as the name, its note as
the container, its whole lines as the location (line-based, so right in any position encoding).
An empty query lists nothing rather than the whole vault. Typing sends a request per keystroke:
the client cancels the stale ones, and each answers in milliseconds from the loaded index.
"""

from __future__ import annotations

from lsprotocol import types

from kebab.lsp import text as textmod
from kebab.lsp.core import KebabServer
from kebab.lsp.searching import search_folders

LIMIT = 20  # results per query: a picker shows about this many


async def workspace_symbols(
    ls: KebabServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    query = params.query.strip()
    if not query:
        return []
    found = await search_folders(list(ls.folders), query, LIMIT, "hybrid")
    return [
        types.SymbolInformation(
            name=" › ".join(h.heading_path) or h.title or h.path,
            kind=types.SymbolKind.String,
            location=types.Location(
                uri=(folder.root / h.path).as_uri(),
                range=textmod.whole_lines(h.start_line, h.end_line),
            ),
            container_name=h.path,
        )
        for folder, h in found
    ]

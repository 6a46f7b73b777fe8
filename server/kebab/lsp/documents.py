"""Notes changing: open buffers (open, change, save, close) and files changed on disk.

The unsaved buffer of an open note is what gets indexed (debounced); when it closes, the file's
text takes over again. Files changed outside the editor arrive through the `**/*.md` watcher.
"""

from __future__ import annotations

from lsprotocol import types

from kebab.lsp import text as textmod
from kebab.lsp.core import KebabServer
from kebab.lsp.folders import is_note


def did_open(ls: KebabServer, params: types.DidOpenTextDocumentParams) -> None:
    _buffer_changed(ls, params.text_document.uri)


def did_change(ls: KebabServer, params: types.DidChangeTextDocumentParams) -> None:
    _buffer_changed(ls, params.text_document.uri)


def did_save(ls: KebabServer, params: types.DidSaveTextDocumentParams) -> None:
    _buffer_changed(ls, params.text_document.uri)


def did_close(ls: KebabServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    found = ls.folders.at(uri)
    if found is not None and is_note(found[1]) and found[0].indexer is not None:
        found[0].indexer.buffer_closed(found[1])
    ls.diagnostics.clear(uri)


def did_change_watched_files(ls: KebabServer, params: types.DidChangeWatchedFilesParams) -> None:
    touched = set()
    for change in params.changes:
        if textmod.open_snapshot(ls, change.uri) is not None:
            continue  # the editor's buffer wins over the file while the note is open
        for folder in ls.folders:
            path = textmod.path_of(change.uri)
            if path is not None and (folder.relpath(path) is not None or path == folder.root):
                touched.add(folder.root)
                if folder.indexer is not None:
                    folder.indexer.files_changed()
    if touched:
        ls.diagnostics.refresh_open()


def _buffer_changed(ls: KebabServer, uri: str) -> None:
    found = ls.folders.at(uri)
    doc = textmod.document(ls, uri)
    if found is not None and doc is not None and is_note(found[1]) and found[0].indexer is not None:
        found[0].indexer.buffer_changed(found[1], doc.source)
    ls.diagnostics.refresh_open()

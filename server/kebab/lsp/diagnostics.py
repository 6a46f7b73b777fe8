"""Diagnostics on open notes: kebab citations whose source changed (Information) or vanished
(Warning), and the quick fix that points a definition at the lines its passage moved to.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from kebab import footnotes
from kebab.links import Link
from kebab.lsp import notes
from kebab.lsp import text as textmod
from kebab.lsp.context import note_at
from kebab.lsp.folders import Folder, Folders, is_note
from kebab.lsp.params import plain
from kebab.model import Chunk

log = logging.getLogger(__name__)

SOURCE = "kebab"
DEBOUNCE_S = 0.3
_SEVERITY = {
    "changed": types.DiagnosticSeverity.Information,
    "moved": types.DiagnosticSeverity.Information,
    "missing": types.DiagnosticSeverity.Warning,
}


class Diagnostics:
    """Publishes kebab's diagnostics for every open note, a moment after things change.

    The server object (`core`) holds one: it takes the server's folders, not the server's own
    type, which would make the two modules import each other."""

    def __init__(self, ls: LanguageServer, folders: Folders) -> None:
        self.ls = ls
        self.folders = folders
        self._timer: asyncio.TimerHandle | None = None
        self._published: set[str] = set()
        self._stopped = False

    def stop(self) -> None:
        """No more publishing: the server is shutting down (its worker threads are going)."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()

    def refresh_open(self) -> None:
        """Recheck every open note soon (a note or a cited source changed)."""
        if self._stopped:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(DEBOUNCE_S, lambda: loop.create_task(self._publish_all()))

    def clear(self, uri: str) -> None:
        if uri in self._published:
            self._published.discard(uri)
            self.ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    async def _publish_all(self) -> None:
        for doc in list(self.ls.workspace.text_documents.values()):
            if self._stopped:
                return
            try:
                await self.publish(doc.uri)
            except Exception:  # one note's trouble must not stop the others
                if self._stopped:
                    return  # shut down mid-publish: the worker threads are gone, nothing failed
                log.exception("diagnostics failed for %s", doc.uri)

    async def publish(self, uri: str) -> None:
        note = note_at(self.ls, self.folders, uri)
        if note is None or not is_note(note.path):
            return
        snap = note.snapshot
        defs = notes.definitions(snap.text, note.path)
        asked = note.folder.cfg is not None and note.folder.cfg.unresolved_links
        if not defs and not asked and uri not in self._published:
            return
        sources = await asyncio.to_thread(_resolve_all, self.ls, note.folder, defs)
        unresolved = (
            await asyncio.to_thread(_unresolved, note.folder, note.path, snap.text) if asked else []
        )
        current = textmod.open_snapshot(self.ls, uri)
        if current is None or current.version != snap.version:
            return  # the note moved on; the next refresh covers it
        diagnostics = [diagnostic(self.ls, snap.lines, s) for s in sources if s.state in _SEVERITY]
        diagnostics += [unreached(self.ls, snap.lines, link) for link in unresolved]
        self._published.add(uri)
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=snap.version)
        )


def diagnostic(ls: LanguageServer, lines: list[str], s: footnotes.Cited) -> types.Diagnostic:
    d = s.definition
    where = f"{d.path} L{d.start_line}–L{d.end_line}"
    message = {
        "changed": f"[^{d.label}]: source changed since this answer ({where})",
        "moved": f"[^{d.label}]: the cited passage moved to L{s.start_line}–L{s.end_line} "
        f"of {d.path} (the footnote says L{d.start_line}–L{d.end_line})",
        "missing": f"[^{d.label}]: source not found: {s.reason}",
    }[s.state]
    label_end = lines[d.line].find("]:") + 2
    data = {"label": d.label, "start_line": s.start_line, "end_line": s.end_line}
    return types.Diagnostic(
        range=textmod.span(ls, lines, d.line, 0, max(label_end, 0)),
        message=message,
        severity=_SEVERITY[s.state],
        code=s.state,
        source=SOURCE,
        data=data if s.state == "moved" else None,
    )


def unreached(ls: LanguageServer, lines: list[str], link: Link) -> types.Diagnostic:
    """A link that reaches no note: on the target's words in its line."""
    text = lines[link.line - 1] if 0 < link.line <= len(lines) else ""
    start = max(text.find(link.target), 0)
    return types.Diagnostic(
        range=textmod.span(ls, lines, link.line - 1, start, start + len(link.target)),
        message=f"no note named '{link.target}': this link reaches nothing",
        severity=types.DiagnosticSeverity.Information,
        code="unresolved-link",
        source=SOURCE,
    )


def _unresolved(folder: Folder, path: str, text: str) -> list[Link]:
    ws = folder.ws
    try:
        return ws.unresolved_links(path, text) if ws is not None else []
    except Exception:  # the Workspace closed under us (settings changed): the next refresh
        return []


def quick_fixes(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """For each 'moved' diagnostic in the request: rewrite the definition's `L..–L..` span."""
    snap = textmod.open_snapshot(ls, params.text_document.uri)
    if snap is None:
        return []
    actions = []
    for diag in params.context.diagnostics:
        data = plain(diag.data)
        if diag.source != SOURCE or diag.code != "moved" or not isinstance(data, dict):
            continue
        fix = _refresh_span(ls, snap, diag, data)
        if fix is not None:
            actions.append(fix)
    return actions


def _refresh_span(
    ls: LanguageServer, snap: textmod.Snapshot, diag: types.Diagnostic, data: dict[str, Any]
) -> types.CodeAction | None:
    label, start, end = data.get("label"), data.get("start_line"), data.get("end_line")
    if not isinstance(label, str) or not isinstance(start, int) or not isinstance(end, int):
        return None
    line = next((i for i, text in enumerate(snap.lines) if text.startswith(f"[^{label}]:")), None)
    cols = notes.span_columns(snap.lines[line]) if line is not None else None
    if line is None or cols is None:
        return None
    edit = types.TextEdit(
        range=textmod.span(ls, snap.lines, line, *cols), new_text=f"L{start}–L{end}"
    )
    return types.CodeAction(
        title=f"Point [^{label}] at L{start}–L{end}, where the passage is now",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=True,
        edit=textmod.workspace_edit(ls, snap, [edit]),
    )


def _resolve_all(
    ls: LanguageServer, folder: Folder, defs: list[notes.Definition]
) -> list[footnotes.Cited]:
    read = notes.reader(ls)
    ws = folder.ws

    def chunks_of(path: str) -> list[Chunk]:
        try:
            return ws.chunks_of(path) if ws is not None else []
        except Exception:  # the Workspace closed under us (settings changed): scan the text
            return []

    return [footnotes.resolve(folder.root, d, read, chunks_of) for d in defs]

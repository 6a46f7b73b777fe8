"""Keeping one folder's index current in the background: the first build, open buffers, and
files changed on disk. All index work runs in worker threads, one job at a time per folder.

Open notes are indexed from the editor's buffer (debounced), so an edit is what the next answer
cites. Reading notes and embedding run in short batches and stop between them whenever other work
is waiting; embedding also waits while a question is answered (`Folder.answering()`), so an
answer made during the first build waits for one short batch, not for the backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from kebab.errors import KebabError
from kebab.lsp import progress as progress_mod
from kebab.lsp import text as textmod
from kebab.lsp.folders import Folder, is_note
from kebab.workspace import Workspace

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
FLUSH_TIMEOUT_S = 2.0


class Indexer:
    """The background jobs of one folder."""

    def __init__(self, ls: LanguageServer, folder: Folder, on_change: Callable[[], None]) -> None:
        self.ls = ls
        self.folder = folder
        self.on_change = on_change
        self._waiting: dict[str, str] = {}  # buffers inside their debounce window
        self._due: dict[str, str] = {}  # buffers to index now
        self._reload: set[str] = set()  # closed buffers: back to the file's text
        self._full = False
        self._announce = False
        self._embed = False
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._progress: progress_mod.WorkDone | None = None
        self._edits_done = asyncio.Event()
        self._edits_done.set()

    # what callers ask for -------------------------------------------------------------------
    def build(self, announce: bool = True) -> None:
        """Sync the whole folder, then embed (with visible progress when `announce`)."""
        self._full = True
        self._announce = self._announce or announce
        self._kick()

    def buffer_changed(self, path: str, text: str) -> None:
        self._waiting[path] = text
        self._edits_done.clear()
        self._debounce()

    def buffer_closed(self, path: str) -> None:
        self._waiting.pop(path, None)
        self._due.pop(path, None)
        self._reload.add(path)
        self._edits_done.clear()
        self._debounce()

    def files_changed(self) -> None:
        self._full = True
        self._debounce()

    async def flush(self, timeout: float = FLUSH_TIMEOUT_S) -> None:
        """Index pending buffer edits (and closes) now; wait for them, but never long."""
        self._promote()
        self._kick()
        try:
            await asyncio.wait_for(self._edits_done.wait(), timeout)
        except TimeoutError:
            log.info("answering before the latest edits of %s are indexed", self.folder.root)

    def resume(self) -> None:
        """Go on with the work deferred while questions were answered."""
        self._kick()

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._end_progress("stopped")

    # the job loop ---------------------------------------------------------------------------
    def _debounce(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(DEBOUNCE_S, self._fire)

    def _fire(self) -> None:
        self._promote()
        self._kick()

    def _promote(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due.update(self._waiting)
        self._waiting.clear()

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.folder.state != "closed":
            try:
                if self._due:
                    await self._index_buffers()
                elif self._full or self._reload:
                    await self._sync()
                elif self._embed and not self.folder.answers_in_flight:
                    await self._embed_pending()
                else:
                    break
            except KebabError as e:
                self._fail(str(e))
            except Exception as e:  # a bug in one job must not stop indexing for good
                log.exception("indexing %s failed", self.folder.root)
                self._fail(f"indexing failed: {type(e).__name__}: {e}")
        self._edits_settled()
        if self._embed and self.folder.state != "closed":
            return  # waiting for the answers being made: `resume` goes on
        if self.folder.state == "indexing":
            self.folder.state = "ready"
        self._end_progress(f"{self.folder.root.name}: ready")

    async def _index_buffers(self) -> None:
        due, self._due = self._due, {}
        buffers = {**self.open_buffers(), **due}
        async with self.folder.writing() as ws:
            if ws is not None:
                await asyncio.to_thread(_write_buffers, ws, due, buffers)
        self._edits_settled()
        self._embed = True
        self.on_change()

    async def _sync(self) -> None:
        self._full = False
        reload, self._reload = self._reload, set()
        if self._announce:
            self._announce = False
            await self._begin_progress()
        buffers = self.open_buffers()
        closed = reload - buffers.keys()  # an open buffer wins over its file
        report = self._reporter()
        stop = Stop(self._urgent)
        async with self.folder.writing() as ws:
            if ws is None:
                return
            self.folder.state = "indexing"
            self.folder.reading = True
            try:
                await asyncio.to_thread(_resync, ws, closed, buffers, report, stop)
            finally:
                self.folder.reading = stop.stopped
        self._full = self._full or stop.stopped  # the next sync reads the rest
        if stop.stopped:
            self._reload |= closed  # not read back yet
        self._edits_settled()
        self._embed = True
        self.on_change()

    async def _embed_pending(self) -> None:
        self._embed = False
        stop = Stop(lambda: self._urgent() or bool(self._full or self.folder.answers_in_flight))
        report = self._reporter()
        async with self.folder.writing() as ws:
            if ws is None:
                return
            try:
                await asyncio.to_thread(ws.embed, report, stop)
            except asyncio.CancelledError:  # shutting down: the thread stops after its batch
                stop.stopped = True
                raise
        self._embed = stop.stopped

    def _urgent(self) -> bool:
        """Work that a background batch gives way to (checked from the worker thread)."""
        return bool(self._due or self.folder.writers_waiting or self.folder.state == "closed")

    def _edits_settled(self) -> None:
        if not (self._due or self._waiting or self._reload):
            self._edits_done.set()

    # progress -------------------------------------------------------------------------------
    def open_buffers(self) -> dict[str, str]:
        """Workspace-relative path → unsaved text, for the open notes in this folder."""
        out = {}
        for doc in list(self.ls.workspace.text_documents.values()):
            fs_path = textmod.path_of(doc.uri)
            path = self.folder.relpath(fs_path) if fs_path else None
            if path is not None and is_note(path):
                out[path] = doc.source
        return out

    async def _begin_progress(self) -> None:
        token = await progress_mod.server_token(self.ls, "kebab-index")
        if token is None:
            return
        self._end_progress(None)
        self._progress = progress_mod.WorkDone(self.ls, token)
        self._progress.begin(f"kebab: indexing {self.folder.root.name}", "scanning notes", 0)

    def _end_progress(self, message: str | None) -> None:
        if self._progress is not None:
            self._progress.end(message)
            self._progress.close()
            self._progress = None

    def _reporter(self) -> Callable[[str, int, int], None]:
        folder = self.folder
        send = (
            progress_mod.Throttled(self._progress, asyncio.get_running_loop())
            if self._progress is not None
            else None
        )

        def report(phase: str, done: int, total: int) -> None:  # runs in the worker thread
            folder.phase, folder.done, folder.total = phase, done, total
            if send is None or not total:
                return
            if phase == "embedding":
                send(f"{done}/{total} passages embedded", 50 + 50 * done // total, done == total)
            elif phase == "units":
                send(f"{done}/{total} passages read sentence by sentence", 100, done == total)
            else:
                send(f"{done}/{total} files", 50 * done // total, done == total)

        return report

    def _fail(self, message: str) -> None:
        log.warning("%s: %s", self.folder.root, message)
        self.folder.error = message
        self.ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=f"kebab: {message}")
        )


class Stop:
    """`should_stop` for a background job: true once `urgent` says so, and it remembers that
    the job stopped early (the rest is still to do)."""

    def __init__(self, urgent: Callable[[], bool]) -> None:
        self.urgent = urgent
        self.stopped = False

    def __call__(self) -> bool:
        self.stopped = self.stopped or self.urgent()
        return self.stopped


def _resync(
    ws: Workspace,
    reload: set[str],
    buffers: dict[str, str],
    report: Callable[[str, int, int], None],
    stop: Stop,
) -> None:
    # Closed buffers are read back from their files, each replaced in one transaction: never
    # removed first, or a search in between would find the note gone.
    ws.sync(report, overrides=buffers, should_stop=stop, reread=reload)


def _write_buffers(ws: Workspace, due: dict[str, str], buffers: dict[str, str]) -> None:
    """Re-index edited buffers; a note the index does not know goes through sync, which applies
    the ignore rules and size limits."""
    unknown = False
    for path, text in due.items():
        if ws.chunks_of(path):
            ws.update_text(path, text)
        else:
            unknown = True
    if unknown:
        ws.sync(overrides=buffers)

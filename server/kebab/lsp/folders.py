"""The workspace folders the client opened, each with its kebab Workspace and index state.

A folder's Workspace opens in a worker thread; requests wait only for that (not for indexing) and
answer from what is indexed so far. Index writes go through `Folder.writing()`, one at a time;
background embedding yields to any writer that is waiting, and to any question being answered
(`Folder.answering()`): the answer embeds the question with the same model, and would otherwise
queue behind the whole backlog. When settings change, a new Workspace replaces the old one,
which closes once the requests still using it are done.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from kebab import config as config_mod
from kebab.config import Config
from kebab.errors import KebabError, WorkspaceError
from kebab.lsp import text as textmod
from kebab.lsp import words
from kebab.model import Language
from kebab.workspace import Workspace

if TYPE_CHECKING:
    from kebab.workspace import Embedder

log = logging.getLogger(__name__)

State = Literal["opening", "indexing", "ready", "failed", "closed"]
NOTE_SUFFIXES = (".md", ".markdown")


class Indexing(Protocol):
    """What a folder and the features ask of its background indexer (`indexing.Indexer`, which
    works on a Folder: naming it here would make the two modules import each other)."""

    def build(self, announce: bool = True) -> None: ...
    def buffer_changed(self, path: str, text: str) -> None: ...
    def buffer_closed(self, path: str) -> None: ...
    def files_changed(self) -> None: ...
    async def flush(self, timeout: float = ...) -> None: ...
    def resume(self) -> None: ...
    async def stop(self) -> None: ...


class Folder:
    """One workspace root."""

    def __init__(self, uri: str, root: Path) -> None:
        self.uri = uri
        self.root = root
        self.ws: Workspace | None = None
        self.cfg: Config | None = None
        self.state: State = "opening"
        self.phase = ""
        self.done = 0
        self.total = 0
        self.error: str | None = None
        self.reading = True  # notes are still being read into the index (not yet: vectors)
        self.opened = asyncio.Event()
        self.writers_waiting = 0
        self.answers_in_flight = 0  # questions and searches being answered now
        self.indexer: Indexing | None = None
        self._lane = asyncio.Lock()
        self._users: dict[int, int] = {}
        self._retired: dict[int, Workspace] = {}

    # opening and closing -------------------------------------------------------------------
    async def open(self, cfg: Config, embedder: Embedder | None = None) -> None:
        """Open (or, with new settings, reopen) this folder's Workspace."""
        if self.ws is not None and cfg == self.cfg:
            return
        async with self.writing():  # nothing writes to the index while a second one opens on it
            try:
                ws = await asyncio.to_thread(Workspace, self.root, cfg, None, embedder)
                ws.preload_model()  # the first search needs it: load it while the index syncs
            except KebabError as e:
                self.state, self.error = "failed", str(e)
                self.opened.set()
                raise
            old, self.ws, self.cfg = self.ws, ws, cfg
            self.error = None
            if self.state in ("opening", "failed"):
                self.state = "indexing"
        self.opened.set()
        if old is not None:
            self._retire(old)

    async def close(self) -> None:
        self.state = "closed"
        if self.indexer is not None:
            await self.indexer.stop()
        async with self.writing():
            ws, self.ws = self.ws, None
        if ws is not None and self._users.get(id(ws)):
            self._retired[id(ws)] = ws
        elif ws is not None:
            await ws.aclose()

    # using ----------------------------------------------------------------------------------
    async def workspace(self) -> Workspace:
        """The Workspace, once open (indexing may still be running)."""
        await self.opened.wait()
        if self.ws is None:
            raise WorkspaceError(f"the workspace {self.root} could not be opened: {self.error}")
        return self.ws

    @asynccontextmanager
    async def use(self) -> AsyncIterator[Workspace]:
        """The Workspace, kept open until the caller is done even if settings replace it."""
        ws = await self.workspace()
        self._users[id(ws)] = self._users.get(id(ws), 0) + 1
        try:
            yield ws
        finally:
            self._users[id(ws)] -= 1
            if not self._users[id(ws)]:
                del self._users[id(ws)]
                retired = self._retired.pop(id(ws), None)
                if retired is not None:
                    asyncio.get_running_loop().create_task(retired.aclose())

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[Workspace | None]:
        """Hold the folder's one write lane (background embedding gives way while we wait)."""
        self.writers_waiting += 1
        try:
            await self._lane.acquire()
        finally:
            self.writers_waiting -= 1
        try:
            yield self.ws
        finally:
            self._lane.release()

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Mark a question (or search) being answered: background embedding stops after its
        batch in flight, so the answer's own embeddings wait for that batch only, and goes on
        once no answer is being made."""
        self.answers_in_flight += 1
        try:
            yield
        finally:
            self.answers_in_flight -= 1
            if not self.answers_in_flight and self.indexer is not None:
                self.indexer.resume()

    def relpath(self, path: Path) -> str | None:
        """Workspace-relative path of a file inside this root, or None."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts and ".." not in rel.parts else None

    def status_line(self, lang: Language = "en") -> str:
        """Where the folder stands, in `lang` (the first line of an answer's progress)."""
        name = self.root.name
        if self.state == "indexing" and self.total:
            unit: words.Key = "indexing_passages" if self.phase == "embedding" else "indexing_files"
            return words.say(lang, unit, name=name, done=self.done, total=self.total)
        if self.state == "failed":
            return f"{name}: {self.error}"
        return words.say(lang, self.state, name=name)

    def _retire(self, ws: Workspace) -> None:
        if self._users.get(id(ws)):
            self._retired[id(ws)] = ws
        else:
            asyncio.get_running_loop().create_task(ws.aclose())


class Folders:
    """Every open folder, and which one a note belongs to (the deepest root holding it)."""

    def __init__(self) -> None:
        self._items: dict[str, Folder] = {}

    def __iter__(self) -> Iterator[Folder]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def add(self, uri: str) -> Folder | None:
        path = textmod.path_of(uri)
        if path is None or not path.is_dir():
            log.warning("not a local folder, not indexed: %s", uri)
            return None
        root = path.resolve()
        key = root.as_posix()
        if key not in self._items:
            self._items[key] = Folder(uri, root)
        return self._items[key]

    def remove(self, uri: str) -> Folder | None:
        path = textmod.path_of(uri)
        return self._items.pop(path.resolve().as_posix(), None) if path else None

    def first(self) -> Folder | None:
        return next(iter(self._items.values()), None)

    def at(self, uri: str) -> tuple[Folder, str] | None:
        """(folder, workspace-relative path) of the document at `uri`."""
        path = textmod.path_of(uri)
        if path is None:
            return None
        best: tuple[Folder, str] | None = None
        for folder in self._items.values():
            rel = folder.relpath(path)
            if rel is not None and (
                best is None or len(folder.root.parts) > len(best[0].root.parts)
            ):
                best = (folder, rel)
        if best is None:  # the client may name the note through a symlinked folder
            real = path.resolve()
            if real != path:
                return self.at(textmod.uri_of(real))
        return best

    def root_at(self, uri: str) -> Folder | None:
        """The folder whose root is `uri` itself."""
        path = textmod.path_of(uri)
        return self._items.get(path.resolve().as_posix()) if path else None

    def index_dir_taken(self, folder: Folder, index_dir: str) -> bool:
        """Another open folder already keeps its index in `index_dir`."""
        want = Path(index_dir).expanduser().resolve()
        return any(
            f is not folder
            and f.cfg is not None
            and f.cfg.index_dir
            and Path(f.cfg.index_dir).expanduser().resolve() == want
            for f in self
        )

    def embedder_for(self, cfg: Config) -> Embedder | None:
        """An embedder another folder already loaded with the same settings (one model in memory)."""
        for f in self:
            if f.ws is not None and f.cfg is not None and f.cfg.embed == cfg.embed:
                return f.ws.embedder
        return None


def is_note(path: str) -> bool:
    return path.lower().endswith(NOTE_SUFFIXES)


def own_index_dir(cfg: Config, folder: Folder, folders: Folders) -> Config:
    """One index per root: a shared `index_dir` gets a subfolder per root past the first."""
    if cfg.index_dir and folders.index_dir_taken(folder, cfg.index_dir):
        sub = Path(cfg.index_dir).expanduser() / config_mod.default_index_dir(folder.root).name
        return msgspec.structs.replace(cfg, index_dir=str(sub))
    return cfg

"""What an editor feature knows about the note a request is about, built in one place, and the
one wrapper every editor feature runs inside.

Hover, definition, document links, code actions and diagnostics all start from the same four
facts: the editor's buffer (text, lines, version), the workspace folder holding the note, its
workspace-relative path, and what the client can do. `note_at` builds them once; a feature that
gets None has nothing to say about that document (not open, or outside every folder).

`guarded` runs a feature so that a fault in kebab's own code logs its traceback and answers
with the feature's empty result (no hover, no links) instead of failing the request: a hover
that breaks must not cost the user an error popup on every mouse move. A client's mistake
(InvalidParams) and a cancellation still go back as such.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from kebab.lsp import text as textmod
from kebab.lsp.folders import Folder, Folders

log = logging.getLogger(__name__)

S = TypeVar("S")  # the server a feature runs on
P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class NoteContext:
    """An open note as a feature sees it."""

    snapshot: textmod.Snapshot
    folder: Folder
    path: str  # workspace-relative, forward slashes
    capabilities: types.ClientCapabilities

    @property
    def uri(self) -> str:
        return self.snapshot.uri

    @property
    def lines(self) -> list[str]:
        return self.snapshot.lines

    @property
    def text(self) -> str:
        return self.snapshot.text


def note_at(ls: LanguageServer, folders: Folders, uri: str) -> NoteContext | None:
    """The context of the open note at `uri`; None when it is not open in the editor or lies
    outside every workspace folder. `folders` is the server's, passed rather than read off it so
    that diagnostics, which the server object holds, can build a context too."""
    snap = textmod.open_snapshot(ls, uri)
    found = folders.at(uri)
    if snap is None or found is None:
        return None
    folder, path = found
    return NoteContext(snap, folder, path, ls.client_capabilities)


def guarded(
    feature: Callable[[S, P], R | Awaitable[R]], empty: Callable[[], R]
) -> Callable[[S, P], Awaitable[R]]:
    """`feature`, answering `empty()` (and logging why) when kebab's own code fails in it.
    pygls hands the server to a handler whose first parameter is named `ls`, and reads that
    name from `feature` (through `functools.wraps`): every feature's first parameter is `ls`."""

    @functools.wraps(feature)
    async def run(ls: S, params: P) -> R:
        try:
            result: Any = feature(ls, params)
            if inspect.isawaitable(result):
                result = await result
            return result
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("%s failed; answering with nothing", feature.__name__)
            return empty()

    return run

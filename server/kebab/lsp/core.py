"""The server object every feature works on: pygls's LanguageServer with kebab's folders, client
settings and diagnostics publisher, the protocol tweak that answers unreadable requests, and the
two things every request about a note or folder needs of it (`target`, `follow_request_cancel`).

Features import this module; it imports no feature, and `server` (the dispatcher) wires them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from kebab.lsp.diagnostics import Diagnostics
from kebab.lsp.folders import Folder, Folders
from kebab.paths import resolve_inside


@dataclass(frozen=True)
class _Unreadable:
    """A request whose params do not fit its method's LSP schema (a wrong type, a missing field)."""

    id: Any
    method: str
    error: JsonRpcException


class KebabProtocol(LanguageServerProtocol):
    """pygls's protocol, but a request whose params cannot be read gets an InvalidParams reply.

    pygls drops such a request after logging it, so the client would wait for ever.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if "id" in data and isinstance(data.get("method"), str):
                return _Unreadable(data["id"], data["method"], e)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Unreadable):
            error = JsonRpcInvalidParams(
                f"{message.method}: the params do not match the LSP schema for this method"
            )
            self._send_response(message.id, error=error.to_response_error())
            return
        super().handle_message(message)


class KebabServer(LanguageServer):
    """The server object: pygls's LanguageServer plus kebab's folders and client settings."""

    def __init__(self) -> None:
        try:
            version = metadata.version("kebab")
        except metadata.PackageNotFoundError:
            version = "0"
        super().__init__(
            "kebab",
            version,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=KebabProtocol,
        )
        self.folders = Folders()
        self.init_options: dict[str, Any] = {}
        self.folder_options: dict[str, dict[str, Any]] = {}
        self.startup_problems: list[str] = []
        self.diagnostics = Diagnostics(self, self.folders)


def target(ls: KebabServer, uri: str | None, method: str) -> tuple[Folder, str | None]:
    """The folder a request is about and the note's workspace-relative path."""
    if uri:
        found = ls.folders.at(uri)
        if found is None:
            root = ls.folders.root_at(uri)
            if root is not None:
                return root, None
            raise JsonRpcInvalidParams(f"{method}: `uri` {uri} is outside every workspace folder")
        folder, path = found
        if path is not None and resolve_inside(folder.root, path) is None:
            raise JsonRpcInvalidParams(
                f"{method}: `uri` {uri} leads outside the workspace folder (a symlink)"
            )
        return found
    folder = ls.folders.first()
    if folder is None:
        raise JsonRpcInternalError("kebab has no workspace folder open: open a folder first")
    return folder, None


def follow_request_cancel(ls: KebabServer) -> None:
    """Let `$/cancelRequest` on a `workspace/executeCommand` stop the command.

    pygls runs a command as a task of its own and cancels only the request's outer future,
    replying -32800 while the command goes on (and would still edit the note); this links them.
    """
    msg_id = ls.protocol.msg_id
    outer = ls.protocol._request_futures.get(msg_id) if msg_id is not None else None
    task = asyncio.current_task()
    if outer is None or task is None:
        return
    loop = asyncio.get_running_loop()
    outer.add_done_callback(
        lambda f: loop.call_soon_threadsafe(task.cancel) if f.cancelled() else None
    )

"""The kebab language server: the server object, its lifecycle, and where features register.

`kebab serve` calls `run()`. On `initialize` the server learns its folders and settings; on
`initialized` it opens each folder's index and builds it in the background, so requests answer
from what is indexed so far. The features live in their own modules and register themselves.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path

from kebab import config
from kebab.errors import KebabError
from kebab.lsp import settings
from kebab.lsp.diagnostics import Diagnostics
from kebab.lsp.folders import Folder, Folders, own_index_dir

log = logging.getLogger(__name__)

_WORKER_THREADS = 8  # parsing, embedding, index writes, search: never on the event loop
_REQUEST_TIMEOUT_S = 10.0
_GIL_SLICE_S = 0.001


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
        self.diagnostics = Diagnostics(self)


def build() -> KebabServer:
    """A server with every feature registered."""
    from kebab.lsp import actions, ask, documents, insert, navigation, symbols

    server = KebabServer()
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_workspace_folders)
    for feature in (documents, ask, insert, actions, navigation, symbols):
        feature.register(server)
    return server


def run(tcp: str | None = None) -> int:
    """Serve over stdio, or on `HOST:PORT` for debugging."""
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_no_traceback_for_bad_params)
    # Worker threads parse and embed in Python; a shorter GIL slice keeps the event loop
    # answering hover in a few ms while they run (p95 ~22 ms → ~8 ms while indexing).
    sys.setswitchinterval(_GIL_SLICE_S)
    server = build()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise KebabError(f"--tcp takes HOST:PORT (e.g. 127.0.0.1:2087), not {tcp!r}")
        server.start_tcp(host, int(port))
    else:
        server.start_io()
    return 0


# lifecycle ------------------------------------------------------------------------------------
def initialize(ls: KebabServer, params: types.InitializeParams) -> None:
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(_WORKER_THREADS, thread_name_prefix="kebab")
    )
    ls.init_options, ls.startup_problems = settings.clean(
        settings.client_options(params.initialization_options)
    )
    uris = [f.uri for f in params.workspace_folders or []]
    root_uri = params.root_uri or (from_fs_path(params.root_path) if params.root_path else None)
    for uri in uris or ([root_uri] if root_uri else []):
        ls.folders.add(uri)


async def initialized(ls: KebabServer, params: types.InitializedParams) -> None:
    settings.show(ls, ls.startup_problems)
    await _watch_notes(ls)
    await open_folders(ls, list(ls.folders))


async def shutdown(ls: KebabServer, params: Any = None) -> None:
    ls.diagnostics.stop()
    for folder in ls.folders:
        await folder.close()


async def did_change_configuration(
    ls: KebabServer, params: types.DidChangeConfigurationParams
) -> None:
    folders = list(ls.folders)
    if get_capability(ls.client_capabilities, "workspace.configuration", False):
        ls.folder_options = await settings.pull(ls, [f.uri for f in folders])
    else:
        pushed = settings.client_options(params.settings)
        ls.folder_options = {f.uri: pushed for f in folders}
    for folder in folders:
        await open_folder(ls, folder)


async def did_change_workspace_folders(
    ls: KebabServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for removed in params.event.removed:
        folder = ls.folders.remove(removed.uri)
        if folder is not None:
            await folder.close()
    added = [f for f in (ls.folders.add(a.uri) for a in params.event.added) if f is not None]
    await open_folders(ls, added)


# folders --------------------------------------------------------------------------------------
async def open_folders(ls: KebabServer, folders: list[Folder]) -> None:
    """Fetch each folder's settings, open its index and start indexing it in the background."""
    ls.folder_options.update(await settings.pull(ls, [f.uri for f in folders]))
    for folder in folders:
        await open_folder(ls, folder)


async def open_folder(ls: KebabServer, folder: Folder) -> None:
    """Open a folder with its current settings; reopen and reindex when they changed."""
    from kebab.lsp.indexing import Indexer

    options, problems = settings.clean(
        config.merged(ls.init_options, ls.folder_options.get(folder.uri, {}))
    )
    cfg, more = settings.folder_config(folder.root, options)
    settings.show(ls, problems + more)
    before = folder.ws
    try:
        await folder.open(own_index_dir(cfg, folder, ls.folders), ls.folders.embedder_for(cfg))
    except KebabError as e:
        settings.show(ls, [str(e)])
        return
    if folder.indexer is None:
        folder.indexer = Indexer(ls, folder, ls.diagnostics.refresh_open)
    if folder.ws is not before:
        folder.indexer.build(announce=before is None)


async def _watch_notes(ls: KebabServer) -> None:
    """Ask the client to tell us about notes changed on disk, when it lets servers ask."""
    if not get_capability(
        ls.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False
    ):
        return
    watchers = [types.FileSystemWatcher(glob_pattern=g) for g in ("**/*.md", "**/*.markdown")]
    registration = types.Registration(
        id="kebab-notes",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
    )
    try:
        await asyncio.wait_for(
            ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            ),
            _REQUEST_TIMEOUT_S,
        )
    except Exception as e:  # the client said no: edits in the editor still reach the index
        log.info("client did not register the notes watcher: %s", e)


def _no_traceback_for_bad_params(record: logging.LogRecord) -> bool:
    """pygls logs a traceback for every error reply; a client's bad params are not our fault."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, JsonRpcInvalidParams | JsonRpcRequestCancelled)

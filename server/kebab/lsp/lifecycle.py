"""The server's lifecycle and its folders: `initialize`, `initialized`, `shutdown`, and the client
changing its settings or its workspace folders.

On `initialize` the server learns its folders and settings; on `initialized` it opens each
folder's index and builds it in the background, so requests answer from what is indexed so far.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.uris import from_fs_path

from kebab import config
from kebab.errors import KebabError
from kebab.lsp import settings
from kebab.lsp.core import KebabServer
from kebab.lsp.folders import Folder, own_index_dir
from kebab.lsp.indexing import Indexer

log = logging.getLogger(__name__)

_WORKER_THREADS = 8  # parsing, embedding, index writes, search: never on the event loop
_REQUEST_TIMEOUT_S = 10.0


def initialize(ls: KebabServer, params: types.InitializeParams) -> None:
    """Learn the folders and the client's settings; blocking work gets its worker threads."""
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
    """Say which settings were dropped, watch notes on disk, then open and index every folder."""
    settings.show(ls, ls.startup_problems)
    await _watch_notes(ls)
    await open_folders(ls, list(ls.folders))


async def shutdown(ls: KebabServer, params: Any = None) -> None:
    """Stop publishing diagnostics and close every folder's index before the threads go."""
    ls.diagnostics.stop()
    for folder in ls.folders:
        await folder.close()


async def did_change_configuration(
    ls: KebabServer, params: types.DidChangeConfigurationParams
) -> None:
    """Take the new settings (pulled per folder, or as pushed) and reopen what they change."""
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
    """Close the folders the client removed; open and index the ones it added."""
    for removed in params.event.removed:
        folder = ls.folders.remove(removed.uri)
        if folder is not None:
            await folder.close()
    added = [f for f in (ls.folders.add(a.uri) for a in params.event.added) if f is not None]
    await open_folders(ls, added)


async def open_folders(ls: KebabServer, folders: list[Folder]) -> None:
    """Fetch each folder's settings, open its index and start indexing it in the background."""
    ls.folder_options.update(await settings.pull(ls, [f.uri for f in folders]))
    for folder in folders:
        await open_folder(ls, folder)


async def open_folder(ls: KebabServer, folder: Folder) -> None:
    """Open a folder with its current settings; reopen and reindex when they changed."""
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

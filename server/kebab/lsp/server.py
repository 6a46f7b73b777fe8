"""The dispatcher: the one table of every LSP method and command kebab answers and the function
that answers it, the server built from it, and `run()`, which `kebab serve` calls.

Features live in their own modules and import `core`, never this module or each other; a helper
two features share lives in `core` or in a module named for what it holds.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from kebab.errors import KebabError
from kebab.lsp import (
    actions,
    ask,
    documents,
    insert,
    lifecycle,
    linking,
    navigation,
    questions,
    relations,
    symbols,
)
from kebab.lsp.context import guarded
from kebab.lsp.core import KebabServer

_GIL_SLICE_S = 0.001

# LSP method → (handler, its registration options). `guarded` ones answer with nothing, not an
# error, when kebab's own code fails in them (see `context`).
FEATURES: dict[str, tuple[Callable[..., Any], Any]] = {
    types.INITIALIZE: (lifecycle.initialize, None),
    types.INITIALIZED: (lifecycle.initialized, None),
    types.SHUTDOWN: (lifecycle.shutdown, None),
    types.WORKSPACE_DID_CHANGE_CONFIGURATION: (lifecycle.did_change_configuration, None),
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: (lifecycle.did_change_workspace_folders, None),
    types.TEXT_DOCUMENT_DID_OPEN: (documents.did_open, None),
    types.TEXT_DOCUMENT_DID_CHANGE: (documents.did_change, None),
    types.TEXT_DOCUMENT_DID_SAVE: (documents.did_save, None),
    types.TEXT_DOCUMENT_DID_CLOSE: (documents.did_close, None),
    types.WORKSPACE_DID_CHANGE_WATCHED_FILES: (documents.did_change_watched_files, None),
    ask.ASK: (ask.ask, None),
    ask.SEARCH: (ask.search, None),
    ask.STATUS: (ask.status, None),
    ask.RELATED: (ask.related, None),
    linking.LINKS: (linking.links, None),
    types.TEXT_DOCUMENT_REFERENCES: (guarded(linking.references, list), None),
    types.TEXT_DOCUMENT_CODE_ACTION: (
        guarded(actions.code_actions, list),
        types.CodeActionOptions(code_action_kinds=actions.KINDS),
    ),
    types.TEXT_DOCUMENT_HOVER: (guarded(navigation.hover, lambda: None), None),
    types.TEXT_DOCUMENT_DEFINITION: (guarded(navigation.definition, lambda: None), None),
    types.TEXT_DOCUMENT_DOCUMENT_LINK: (
        guarded(navigation.document_links, list),
        types.DocumentLinkOptions(resolve_provider=False),
    ),
    types.WORKSPACE_SYMBOL: (guarded(symbols.workspace_symbols, list), None),
}

# `workspace/executeCommand` command → handler, in the order `initialize` lists them
COMMANDS: dict[str, Callable[..., Any]] = {
    ask.ASK_COMMAND: ask.ask_command,
    ask.REINDEX_COMMAND: ask.reindex_command,
    ask.GENERATE_COMMAND: ask.generate_command,
    questions.COMMAND: insert.insert_answer,
    relations.COMMAND: linking.link_related,
}


def build() -> KebabServer:
    """A server with every feature and command in the tables registered."""
    server = KebabServer()
    for method, (handler, options) in FEATURES.items():
        server.feature(method, options)(handler)
    for command, handler in COMMANDS.items():
        server.command(command)(handler)
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


def _no_traceback_for_bad_params(record: logging.LogRecord) -> bool:
    """pygls logs a traceback for every error reply; a client's bad params are not our fault."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, JsonRpcInvalidParams | JsonRpcRequestCancelled)

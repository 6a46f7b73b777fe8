"""A pytest-lsp client that behaves like an editor: it keeps the notes it opened, applies the
server's workspace edits in the negotiated position encoding (refusing stale versioned ones, as
VS Code does) and sends the resulting didChange, records `$/progress` on any token, and accepts
dynamic registrations.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.protocol import JsonRPCResponseMessage, default_converter
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER = [str(Path(sys.executable).with_name("kebab")), "serve"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROFILES = {"vscode": "visual-studio-code", "neovim": "neovim@v0.11.0", "eglot": "eglot@v1.9"}
# pytest-lsp ships VS Code's and Neovim's capabilities; eglot 1.9's (Debian's elpa-eglot on Emacs
# 28, the one tests/emacs drives) were printed by `(eglot-client-capabilities nil)` into this file.
OWN_CAPABILITIES = {"eglot@v1.9": Path(__file__).with_name("eglot_v1.9.json")}

T = TypeVar("T")


async def until(
    check: Callable[[], T | Awaitable[T]], what: str, timeout: float = 30, every: float = 0.02
) -> T:
    """Wait for an event: call `check` (a function or a coroutine function) every `every` s
    until it returns something truthy, and return that; fail saying `what` never happened once
    `timeout` s have passed. The deadline is generous: the wait ends as soon as the event comes,
    so a slow machine costs time, never a failure."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen in {timeout} s (last: {value!r})")
        await asyncio.sleep(every)


def _converter() -> Any:
    """pygls's converter, but custom responses (kebab/ask…) stay plain JSON, not namedtuples,
    and a CodeAction that carries a command is not mistaken for a Command (lsprotocol 2025.0.0
    looks only for a `command` key; editors check that it is a string)."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))

    def command_or_action(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, command_or_action)
    return converter


def capabilities_of(profile: str) -> types.ClientCapabilities:
    """What the `profile` editor says it supports in `initialize`."""
    spec = PROFILES[profile]
    if spec in OWN_CAPABILITIES:
        saved = json.loads(OWN_CAPABILITIES[spec].read_text(encoding="utf-8"))
        return default_converter().structure(saved, types.InitializeParams).capabilities
    return client_capabilities(spec)


class KebabClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__(converter_factory=_converter)
        self.documents: dict[str, TextDocument] = {}
        self.progress_log: dict[Any, list[dict[str, Any]]] = {}
        self.progress_times: dict[Any, list[float]] = {}
        self.registrations: list[types.Registration] = []
        self.applied: list[types.WorkspaceEdit] = []
        self.refused: list[types.WorkspaceEdit] = []
        self.codec = PositionCodec()
        self.server_capabilities: types.ServerCapabilities | None = None
        self.root = Path()
        self.before_next_edit: Callable[[], None] | None = None
        self.index_dir = Path()

    async def start(
        self, profile: str, root: Path, options: dict[str, Any], env: dict[str, str]
    ) -> KebabClient:
        await self.start_io(*SERVER, env=env)
        return await self.initialize_for(profile, root, options)

    async def initialize_for(
        self, profile: str, root: Path, options: dict[str, Any]
    ) -> KebabClient:
        """`initialize` as the `profile` editor would send it for the folder `root`."""
        result = await self.initialize_session(
            types.InitializeParams(
                capabilities=capabilities_of(profile),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                root_uri=root.as_uri(),
                initialization_options=options,
            )
        )
        self.server_capabilities = result.capabilities
        self.codec = PositionCodec(encoding=result.capabilities.position_encoding or "utf-16")
        return self

    # requests -------------------------------------------------------------------------------
    async def request(
        self, method: str, params: Any, msg_id: str | None = None, timeout: float = 30
    ) -> Any:
        return await asyncio.wait_for(
            self.protocol.send_request_async(method, params, msg_id), timeout
        )

    async def command(self, name: str, *arguments: Any, timeout: float = 30) -> Any:
        return await asyncio.wait_for(
            self.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=list(arguments))
            ),
            timeout,
        )

    async def wait_ready(self, timeout: float = 60) -> dict[str, Any]:
        """Poll kebab/status until every folder is indexed and embedded."""

        async def ready() -> dict[str, Any] | None:
            status = await self.request("kebab/status", {})
            done = status["state"] == "ready" and all(
                f.get("pending_vectors") == 0 for f in status["folders"]
            )
            return status if done else None

        return await until(ready, "the index becoming ready", timeout, every=0.1)

    def reports(self, token: object) -> list[dict[str, Any]]:
        """The `report` values sent on a progress token so far."""
        return [v for v in self.progress_log.get(token, []) if v.get("kind") == "report"]

    def ended(self, token: object) -> dict[str, Any] | None:
        """The `end` value of a progress token, once it has come."""
        values = self.progress_log.get(token) or [{}]
        return values[-1] if values[-1].get("kind") == "end" else None

    # documents ------------------------------------------------------------------------------
    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8") if text is None else text
        self.documents[uri] = TextDocument(uri, text, version=1, position_codec=self.codec)
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
            )
        )
        return uri

    def close(self, uri: str) -> None:
        """Close without saving: the file's text is what counts again."""
        self.documents.pop(uri)
        self.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def replace(self, uri: str, text: str) -> None:
        """The user rewrote the buffer (a full-text change)."""
        doc = self.documents[uri]
        doc.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
        self._changed(doc, [types.TextDocumentContentChangeWholeDocument(text=text)])

    def text(self, uri: str) -> str:
        return self.documents[uri].source

    def _changed(self, doc: TextDocument, changes: list[Any]) -> None:
        doc.version = (doc.version or 0) + 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=doc.uri, version=doc.version
                ),
                content_changes=changes,
            )
        )

    def apply(self, edit: types.WorkspaceEdit) -> bool:
        """Apply a workspace edit like an editor; False when a versioned edit is stale."""
        pairs: list[tuple[str, int | None, list[Any]]] = []
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            pairs.append(
                (change.text_document.uri, change.text_document.version, list(change.edits))
            )
        for uri, edits in (edit.changes or {}).items():
            pairs.append((uri, None, list(edits)))
        for uri, version, _ in pairs:
            doc = self.documents.get(uri)
            if doc is not None and version is not None and version != doc.version:
                return False
        for uri, _, edits in pairs:
            doc = self.documents[uri]
            ordered = sorted(
                enumerate(edits),
                key=lambda ie: (ie[1].range.start.line, ie[1].range.start.character, ie[0]),
            )
            changes = []
            for _, e in reversed(ordered):  # last first; same position: array order preserved
                piece = types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                doc.apply_change(piece)
                changes.append(piece)
            self._changed(doc, changes)
        return True


def make_client() -> KebabClient:
    client = KebabClient()
    register_lsp_features(
        client,
        {
            **DEFAULT_CLIENT_FEATURES,
            types.PROGRESS: _progress,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE: _create,
            types.WORKSPACE_APPLY_EDIT: _apply_edit,
            types.CLIENT_REGISTER_CAPABILITY: _register,
        },
    )
    return client


def server_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KEBAB_") or k == "KEBAB_MODEL_CACHE"
    }
    env.update(XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"))
    return env


def _progress(client: KebabClient, params: types.ProgressParams) -> None:
    value = params.value if isinstance(params.value, dict) else {}
    client.progress_log.setdefault(params.token, []).append(dict(value))
    client.progress_times.setdefault(params.token, []).append(time.monotonic())


def _create(client: KebabClient, params: types.WorkDoneProgressCreateParams) -> None:
    client.progress_log.setdefault(params.token, [])


def _apply_edit(
    client: KebabClient, params: types.ApplyWorkspaceEditParams
) -> types.ApplyWorkspaceEditResult:
    if client.before_next_edit is not None:  # the user types just as the edit arrives
        typing, client.before_next_edit = client.before_next_edit, None
        typing()
    ok = client.apply(params.edit)
    (client.applied if ok else client.refused).append(params.edit)
    return types.ApplyWorkspaceEditResult(
        applied=ok, failure_reason=None if ok else "the document version changed"
    )


def _register(client: KebabClient, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)


@asynccontextmanager
async def serving(
    tmp: Path, profile: str = "vscode", notes: Mapping[str, str] | None = None, **options: Any
) -> AsyncIterator[KebabClient]:
    """A started, initialized server on a fresh copy of fixtures/workspace (plus `notes`, path →
    text, written before the server starts), its index in `tmp`."""
    root = tmp / "workspace"
    shutil.copytree(FIXTURES / "workspace", root)
    for rel, text in (notes or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    options.setdefault("index_dir", str(tmp / "index"))
    client = make_client()
    client.root, client.index_dir = root, Path(options["index_dir"])
    await client.start(profile, root, options, server_env(tmp))
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 10)
        await client.stop()

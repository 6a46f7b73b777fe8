"""Helpers for tests/reliability (issue 7): a language server on any folder with its stderr kept,
the kebab CLI in a subprocess (optionally without root's file-permission override, or with a
file-size limit that makes every write past it fail like a full disk), and generated notes.

The LSP client and the scripted model server are the ones the other suites use
(tests/lsp/lsp_client.py, tests/llm_server.py); this module only puts their folders on sys.path.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import random
import struct
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
for _p in (TESTS, TESTS / "lsp"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from lsp_client import KebabClient, make_client, server_env, until  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.protocol import JsonRPCRequestMessage  # noqa: E402

KEBAB = str(Path(sys.executable).with_name("kebab"))
FIXTURES_WORKSPACE = TESTS.parent / "fixtures" / "workspace"
PROFILES = {"vscode": "visual-studio-code", "neovim": "neovim@v0.11.0"}


# a language server on any folder -----------------------------------------------------------------


class Served:
    """A started server: the client, the folder it serves, and the server's stderr so far."""

    def __init__(self, client: KebabClient, root: Path, index_dir: Path) -> None:
        self.client = client
        self.root = root
        self.index_dir = index_dir
        self.stderr: list[str] = []

    @property
    def log(self) -> str:
        return "".join(self.stderr)

    @property
    def alive(self) -> bool:
        proc = self.client._server
        return proc is not None and proc.returncode is None


async def _collect(stream: asyncio.StreamReader, into: list[str]) -> None:
    while True:
        line = await stream.readline()
        if not line:
            return
        into.append(line.decode("utf-8", "replace"))


@asynccontextmanager
async def serve(
    root: Path,
    tmp: Path,
    profile: str = "vscode",
    verbose: bool = False,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    **options: Any,
) -> AsyncIterator[Served]:
    """`kebab serve` (with `-v`: debug logging) on `root`, its index in `tmp/index` unless
    `index_dir` is given; the server's stderr is kept in `Served.stderr`, not echoed."""
    options.setdefault("index_dir", str(tmp / "index"))
    client = make_client()
    client.root, client.index_dir = root, Path(options["index_dir"])
    served = Served(client, root, client.index_dir)
    command = [KEBAB, "-v", "serve"] if verbose else [KEBAB, "serve"]
    extra = {"preexec_fn": preexec} if preexec is not None else {}
    await client.start_io(*command, env={**server_env(tmp), **(env or {})}, **extra)
    forwarder = getattr(client, "_stderr_forwarder", None)
    if forwarder is not None:
        forwarder.cancel()
    assert client._server is not None and client._server.stderr is not None
    collector = asyncio.create_task(_collect(client._server.stderr, served.stderr))
    await client.initialize_for(profile, root, options)
    try:
        yield served
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 10)
        await client.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(collector, 5)
        collector.cancel()


async def raw_request(client: KebabClient, method: str, params: Any, timeout: float) -> Any:
    """Send `params` exactly as given (any JSON value, whatever the method's schema says) and
    await the reply: its result, or the JSON-RPC error raised as a JsonRpcException. The typed
    client would refuse to send a malformed textDocument/hover, which is the point here."""
    protocol = client.protocol
    msg_id = f"raw-{uuid.uuid4()}"
    future: Future[Any] = Future()
    protocol._request_futures[msg_id] = future
    protocol._send_data(
        JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
    )
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
    finally:
        protocol._request_futures.pop(msg_id, None)


async def wait_indexed(client: KebabClient, files: int | None = None, timeout: float = 60) -> Any:
    """Poll kebab/status until the folder is synced (and, given `files`, holds that many)."""

    async def indexed() -> Any:
        status = await client.request("kebab/status", {})
        folder = status["folders"][0] if status["folders"] else {}
        done = status["state"] == "ready" and (files is None or folder.get("files") == files)
        return status if done else None

    return await until(indexed, f"indexing ({files} files)", timeout, every=0.1)


# the CLI in a subprocess ---------------------------------------------------------------------

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER = 1, 2, 3


def without_root_override() -> None:
    """preexec_fn: as root, give up the capabilities that let root ignore file modes, so a
    `chmod 000` file or a read-only folder is as unreadable/unwritable to the child as to a user.

    Dropped from the bounding set before exec, the capabilities never come back (uid 0 keeps its
    other powers, so the interpreter under /root still runs). A non-root user needs nothing.
    """
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


_CLI = "import sys; from kebab.cli import main; sys.exit(main(sys.argv[1:]))"
_CLI_FSIZE = (
    "import resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "limit = int(sys.argv.pop(1))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "from kebab.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def kebab_cli(
    args: Sequence[str],
    tmp: Path,
    fsize_limit: int | None = None,
    preexec: Callable[[], None] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`kebab ARGS` in a child process with isolated user dirs; with `fsize_limit`, every file
    write past that many bytes fails with EFBIG (SIGXFSZ ignored): a disk that is full."""
    env = server_env(tmp)
    code = [_CLI_FSIZE, str(fsize_limit)] if fsize_limit is not None else [_CLI]
    return subprocess.run(
        [sys.executable, "-c", *code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
    )


def listing(folder: Path) -> dict[str, int]:
    """Every file under `folder` (relative path → size): what a failed write must not change."""
    return {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# generated notes -----------------------------------------------------------------------------

WORDS = [
    "river", "forest", "ocean", "valley", "garden", "engine", "lantern", "harbor", "meadow",
    "copper", "violet", "thunder", "pepper", "marble", "saddle", "window", "candle", "falcon",
]  # fmt: skip


def note_text(i: int, rng: random.Random, version: int = 0) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(40))
    text = f"# Note {i}\n\nneedle mark{i}v{version} {words}\n\n## Details {i}\n\n{words[::-1]}\n"
    if i % 37 == 5:  # a clear winner for a few distinctive queries
        text += f"\n## Special\n\n{'kestrel ' * (i // 37 + 1)}osprey\n"
    return text


def generate(root: Path, n: int, seed: int = 7, folders: int = 9) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for i in range(n):
        path = root / f"group{i % folders}" / f"note {i:04}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(i, rng), encoding="utf-8")
        paths.append(path)
    return paths


CITED = (
    "# Cited\n\nAn answer from the notes.[^kb-1]\n\n"
    '[^kb-1]: [{title}]({link} "kb:{hash}") L{start}–L{end}\n'
)


def cited_note(link: str, start: int = 1, end: int = 3, hash_: str = "0123456789ab") -> str:
    """A note holding one kebab footnote whose definition points at `link` lines start–end."""
    return CITED.format(title="Source", link=link, hash=hash_, start=start, end=end)


def hover_params(uri: str, line: int = 2, character: int = 27) -> types.HoverParams:
    """Hover on the `[^kb-1]` reference of a `cited_note` (line 2, inside the label)."""
    return types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))


# who opens a file ------------------------------------------------------------------------------

_IN_ACCESS, _IN_OPEN, _IN_MODIFY, _IN_CREATE = 0x1, 0x20, 0x2, 0x100
_IN_NONBLOCK = 0o4000


class Opens:
    """inotify on one folder: every open, read, write or create of a file in it, by anyone.

    Proves "kebab never read this" better than checking replies for the file's text. Linux only.
    """

    def __init__(self, folder: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        mask = _IN_ACCESS | _IN_OPEN | _IN_MODIFY | _IN_CREATE
        if self._libc.inotify_add_watch(self._fd, os.fsencode(folder), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder} failed")

    def events(self) -> list[tuple[str, int]]:
        """(file name, mask) of what happened since the last call."""
        out: list[tuple[str, int]] = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return out
            at = 0
            while at < len(data):
                _, mask, _, size = struct.unpack_from("iIII", data, at)
                name = data[at + 16 : at + 16 + size].rstrip(b"\0").decode("utf-8", "replace")
                out.append((name, mask))
                at += 16 + size

    def close(self) -> None:
        os.close(self._fd)

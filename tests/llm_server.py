"""A scripted chat-model server for tests: real HTTP on 127.0.0.1, the real wire formats.

    with ModelServer() as server:
        server.script(Reply(status=429, headers={"Retry-After": "1"}), Reply(["Hi [#1]"]))
        ws = Workspace(root, overrides={"llm": llm_settings(server)}, ...)

It answers `POST /v1/chat/completions` as an OpenAI-compatible server streams (`stream: true`):
Server-Sent Events, one `data: {chat.completion.chunk}` per piece, a final chunk with
`finish_reason`, then `data: [DONE]`. It answers `POST /api/chat` as Ollama does: NDJSON lines
`{"message": {...}, "done": false}` ending with a `"done": true` line.

The n-th request gets the n-th scripted `Reply` (the last one repeats), so one script describes
a whole retry sequence. Every request is recorded with its headers and JSON body, including the
ones that were refused, hung or cut, and with how its reply ended (`Received.wait_end`): sent to
the end, cut as scripted, or cut short by a client that went away (what cancelling must cause).

Tests wait on events, never on the clock: `ModelServer.wait_requests(n)` returns once n requests
have arrived, and a reply with `hold_at` stops mid-stream until the test sets its `release`
event, so "the answer is still streaming" holds for exactly as long as the test needs.

Below the server: `llm_settings` (kebab's `llm` settings that point at it) and `clone_fixture`
(a private copy of fixtures/workspace with an index built once per test session, so a test pays
milliseconds rather than seconds for its workspace).
"""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"


class Raw(str):
    """A line sent exactly as given (garbage, an SSE comment, an `event:` line), newline added."""


@dataclass
class Reply:
    """What the server does with one request.

    pieces   text pieces, each sent as one event; a `Raw` item is sent verbatim instead.
    status   HTTP status; anything but 200 sends `body` (a JSON error) with `headers`.
    headers  extra response headers, e.g. {"Retry-After": "1"}.
    delay    seconds before each piece (before the first one too).
    hang     seconds to wait after reading the request, before sending a single byte.
    cut      drop the connection after the pieces, without the end marker.
    framing  "chunked" (a cut is an incomplete chunked body) or "close" (the body ends when the
             connection closes, so a cut looks like a clean end of stream).
    forever  after the pieces, keep sending `forever_piece` every `delay` (at least 10 ms) until
             the client goes away; after `forever_limit` seconds the stream ends normally, so a
             client that never cuts it fails its test rather than hanging the suite.
    hold_at  stop before piece number `hold_at` (0: before the first) until `release` is set;
             after `hold_limit` seconds the stream goes on anyway, so a test that forgets to
             release fails rather than hangs.
    """

    pieces: Sequence[str] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str = ""
    delay: float = 0.0
    hang: float = 0.0
    cut: bool = False
    framing: Literal["chunked", "close"] = "chunked"
    forever: bool = False
    forever_piece: str = "more "
    forever_limit: float = 30.0
    hold_at: int | None = None
    release: threading.Event = field(default_factory=threading.Event, repr=False)
    hold_limit: float = 30.0


Outcome = Literal["finished", "refused", "cut", "hung_up", "stopped"]


@dataclass
class Received:
    """One request as the server saw it, and how its reply ended.

    outcome  None while the reply is being sent, then "finished" (sent to its end marker),
             "refused" (a status other than 200), "cut" (dropped as the reply said), "hung_up"
             (the client went away before the end) or "stopped" (the server shut down first).
    sent     when each event of a streamed reply was written (time.monotonic()).
    """

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the JSON body, or the raw text when it was not JSON
    at: float  # time.monotonic() when it arrived
    outcome: Outcome | None = None
    ended: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    sent: list[float] = field(default_factory=list, repr=False, compare=False)  # each event's
    # time.monotonic(), the role chunk and the end marker included: how long the stream took

    def end(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.ended.set()

    def wait_end(self, timeout: float = 10) -> Outcome | None:
        """How the reply ended, once it has; None if it is still going after `timeout` s."""
        self.ended.wait(timeout)
        return self.outcome

    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def message(self, role: str) -> str:
        """The content of the last message with `role`."""
        return next(m["content"] for m in reversed(self.messages()) if m["role"] == role)


class ModelServer:
    """A real HTTP server on an ephemeral port, served from a background thread."""

    def __init__(self, model: str = "m") -> None:
        self.model = model
        self.requests: list[Received] = []
        self._script: list[Reply] = [Reply(["Scripted answer [#1]."])]
        self._lock = threading.Condition()
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            name="model-server",
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> ModelServer:
        """Replies for the coming requests, in order; the last one answers all later requests."""
        if not replies:
            raise ValueError("script at least one reply")
        with self._lock:
            self._script = list(replies)
        return self

    def answer(self, *pieces: str, **options: Any) -> ModelServer:
        """Shorthand: every request gets a 200 streaming these pieces."""
        return self.script(Reply(pieces, **options))

    def wait_requests(self, n: int, timeout: float = 10) -> list[Received]:
        """The requests so far, once at least `n` have arrived; AssertionError after `timeout`."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= n, timeout):
                raise AssertionError(
                    f"{len(self.requests)} model requests, not {n}, in {timeout} s"
                )
            return list(self.requests)

    def _next(self, received: Received) -> Reply:
        with self._lock:
            n = len(self.requests)
            self.requests.append(received)
            self._lock.notify_all()
            return self._script[min(n, len(self._script) - 1)]

    def stop(self) -> None:
        self.stopping.set()  # wakes every handler that hangs or streams
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was just free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that went away mid-stream is what several tests are about


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        received = Received(
            "POST",
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            time.monotonic(),
        )
        reply = owner._next(received)
        outcome: Outcome = "stopped"
        try:
            if reply.hang and owner.stopping.wait(reply.hang):
                self.close_connection = True
                return
            if self.path not in (OPENAI_PATH, OLLAMA_PATH):
                self._send_error(404, {}, json.dumps({"error": f"no route {self.path}"}))
                outcome = "refused"
                return
            if reply.status != 200:
                self._send_error(
                    reply.status,
                    reply.headers,
                    reply.body
                    or json.dumps(
                        {"error": {"message": f"status {reply.status}", "type": "scripted"}}
                    ),
                )
                outcome = "refused"
                return
            outcome = self._stream(reply, received, ollama=self.path == OLLAMA_PATH)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
            outcome = "hung_up"
        finally:
            received.end(outcome)

    def _send_error(self, status: int, headers: Mapping[str, str], text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    # streaming --------------------------------------------------------------------------------
    def _stream(self, reply: Reply, received: Received, ollama: bool) -> Outcome:
        owner = self.server.owner
        chunked = reply.framing == "chunked"
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if ollama else "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

        def send(line: str) -> None:
            data = (line + "\n").encode() if ollama else (line + "\n\n").encode()
            if isinstance(line, Raw):
                data = (line + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()
            received.sent.append(time.monotonic())

        def wait(seconds: float) -> bool:
            """Sleep; False when the server is shutting down."""
            return not owner.stopping.wait(seconds) if seconds > 0 else not owner.stopping.is_set()

        def held() -> bool:
            """Wait for `release`; False when the server is shutting down."""
            until = time.monotonic() + reply.hold_limit
            while not reply.release.wait(0.05):
                if owner.stopping.is_set():
                    return False
                if time.monotonic() > until:
                    break
            return True

        if not ollama:
            send(self._sse({"role": "assistant", "content": ""}, None))
        for n, piece in enumerate(reply.pieces):
            if n == reply.hold_at and not held():
                return "stopped"
            if not wait(reply.delay):
                return "stopped"
            if isinstance(piece, Raw):
                send(piece)
            else:
                send(self._ndjson(piece, False) if ollama else self._sse({"content": piece}, None))
        if reply.hold_at is not None and reply.hold_at >= len(reply.pieces) and not held():
            return "stopped"
        until = time.monotonic() + reply.forever_limit
        while reply.forever and time.monotonic() < until:
            if not wait(max(reply.delay, 0.01)):
                return "stopped"
            piece = reply.forever_piece
            send(self._ndjson(piece, False) if ollama else self._sse({"content": piece}, None))
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return "cut"
        if ollama:
            send(self._ndjson("", True))
        else:
            send(self._sse({}, "stop"))
            send("data: [DONE]")
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        return "finished"

    def _sse(self, delta: dict[str, str], finish: str | None) -> str:
        event = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.server.owner.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return "data: " + json.dumps(event, ensure_ascii=False)

    def _ndjson(self, content: str, done: bool) -> str:
        event: dict[str, Any] = {
            "model": self.server.owner.model,
            "created_at": "2024-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": done,
        }
        if done:
            event.update(done_reason="stop", total_duration=1000, eval_count=3)
        return json.dumps(event, ensure_ascii=False)


# pointing kebab at it ---------------------------------------------------------------------------


def llm_settings(
    server: ModelServer | str, backend: str = "openai", **extra: Any
) -> dict[str, Any]:
    """kebab's `llm` settings for the server (or a URL), with timeouts short enough for tests."""
    url = server.url if isinstance(server, ModelServer) else server
    return {
        "backend": backend,
        "endpoint": url,
        "model": "m",
        "max_retries": 2,
        "connect_timeout_s": 2,
        "first_token_timeout_s": 2,
        "idle_timeout_s": 5,
        "max_seconds": 20,
        **extra,
    }


REPO = Path(__file__).resolve().parent.parent
FIXTURE_WORKSPACE = REPO / "fixtures" / "workspace"
_template: dict[str, Path] = {}
_template_lock = threading.Lock()


def clone_fixture(base: Path, dest: Path, embedder: Any) -> tuple[Path, Path]:
    """(root, index_dir) under `dest`: a copy of fixtures/workspace and of its index.

    The index is built once per session under `base` (the embedder is the session's shared one);
    copies keep the notes' mtimes, so `Workspace.refresh()` finds them unchanged.
    """
    from kebab.workspace import Workspace

    with _template_lock:
        if "root" not in _template:
            root, index_dir = base / "template" / "workspace", base / "template" / "idx"
            shutil.copytree(FIXTURE_WORKSPACE, root)
            with Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=embedder) as ws:
                ws.refresh()
            _template.update(root=root, index=index_dir)
    root, index_dir = dest / "workspace", dest / "idx"
    shutil.copytree(_template["root"], root)
    shutil.copytree(_template["index"], index_dir)
    return root, index_dir


def answer_rows(index_dir: Path) -> list[dict[str, Any]]:
    """Every row of the answers table, read from the index's SQLite file (not through kebab)."""
    db = sqlite3.connect(f"file:{index_dir / 'kebab.sqlite'}?mode=ro", uri=True)
    try:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM answers ORDER BY id")]
    finally:
        db.close()


async def ask(ws: Any, question: str, **request: Any) -> Any:
    """`ws.ask(...)` as a front end calls it, checking what holds for every outcome.

    The streamed pieces add up to `answer.answer` (less the markers kebab placed itself, when
    it attributed sentences: `citations[].by == "kebab"`); exactly one answers row is written,
    and the stored `answer.v1` is the one returned.
    """
    from kebab.model import to_builtins
    from kebab.rag.pipeline import AskRequest

    before = len(answer_rows(ws.index.dir))
    streamed: list[str] = []
    answer = await ws.ask(AskRequest(question=question, **request), streamed.append)
    rows = answer_rows(ws.index.dir)
    assert len(rows) == before + 1, "every answer, refusals and errors included, is one row"
    assert rows[-1]["id"] == answer.answer_id
    if any(c.by == "kebab" for c in answer.citations):
        assert without_markers("".join(streamed)) == without_markers(answer.answer)
    else:
        assert "".join(streamed) == answer.answer
    stored = ws.stored_answer(answer.answer_id)
    assert stored is not None
    expected = to_builtins(answer)
    assert isinstance(expected, dict)
    assert to_builtins(stored) == {**expected, "explain": None}  # the stored copy knows its id
    return answer


def without_markers(text: str) -> str:
    """`text` with its `[#n]` markers and the spaces before them taken out."""
    import re

    return re.sub(r"\s*\[#\d+\]", "", text).strip()

"""A real OpenAI-compatible chat server on 127.0.0.1 that streams a scripted answer over SSE, a
piece at a time, as slowly as a test wants. It records each request and whether the client hung
up before the answer was done (what cancelling must cause).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedLLM:
    def __init__(self) -> None:
        self.pieces: list[str] = ["The answer [#1]."]
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.hung_up = threading.Event()
        self.finished = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, pieces: list[str], delay: float) -> None:
        """The next answers: these pieces, `delay` seconds apart."""
        self.pieces, self.delay = pieces, delay
        self.hung_up.clear()
        self.finished.clear()

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port() -> int:
    """A local port nothing listens on (the model server is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection closes

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            llm.requests.append(json.loads(body or b"{}"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            try:
                for piece in llm.pieces:
                    event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(llm.delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                llm.finished.set()
            except (BrokenPipeError, ConnectionResetError):
                llm.hung_up.set()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler

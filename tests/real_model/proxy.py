"""A TCP relay in front of the real model server, so a test can see what a real server cannot
be asked about: when kebab ended its request, how many requests it sent, and "the answer is
still streaming" for exactly as long as the test needs.

    with Relay(llama.port) as relay:
        relay.hold_after_first_piece()   # the next answer stops after its first text piece
        ...                              # kebab shows that piece; the test cancels, asks again
        relay.release()                  # or relay.cut(): the rest never arrives, the stream ends

The server itself generates as it always does; the relay only decides when its bytes reach
kebab (what it holds waits in the socket's buffer). `cut()` drops what the server sent after
the first piece and closes kebab's side: what kebab sees when a server dies mid-stream.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from dataclasses import dataclass, field

_FIRST_TEXT = re.compile(rb'"content":\s*"[^"]')


@dataclass
class Connection:
    """One connection from kebab, relayed to the server."""

    client: socket.socket
    upstream: socket.socket
    requests: int = 0
    kebab_closed: threading.Event = field(default_factory=threading.Event)
    server_closed: threading.Event = field(default_factory=threading.Event)


class Relay:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[Connection] = []
        self._hold = False
        self.held = threading.Event()  # a piece arrived and the rest is being held
        self.held_connection: Connection | None = None  # the one whose answer is held
        self._release = threading.Event()
        self._cut = False
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> int:
        return sum(c.requests for c in self.connections)

    def hold_after_first_piece(self) -> None:
        self._hold, self._cut = True, False
        self.held.clear()
        self._release.clear()

    def release(self) -> None:
        self._hold = False
        self._release.set()

    def cut(self) -> None:
        self._cut = True
        self.release()

    def __enter__(self) -> Relay:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.listener.close()
        for c in self.connections:
            for s in (c.client, c.upstream):
                s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            conn = Connection(client, upstream)
            with self._lock:
                self.connections.append(conn)
            threading.Thread(target=self._to_server, args=(conn,), daemon=True).start()
            threading.Thread(target=self._to_kebab, args=(conn,), daemon=True).start()

    def _to_server(self, conn: Connection) -> None:
        while True:
            try:
                data = conn.client.recv(65536)
            except OSError:
                data = b""
            if not data:
                conn.kebab_closed.set()
                _shut(conn.upstream)
                return
            conn.requests += data.count(b"POST ")
            try:
                conn.upstream.sendall(data)
            except OSError:
                return

    def _to_kebab(self, conn: Connection) -> None:
        while True:
            try:
                data = conn.upstream.recv(65536)
            except OSError:
                data = b""
            if not data:
                conn.server_closed.set()
                _shut(conn.client)
                return
            try:
                conn.client.sendall(data)
            except OSError:
                return
            if self._hold and _FIRST_TEXT.search(data):
                # the first text piece is out: the rest waits (in the socket's buffer: the
                # server goes on generating) until the test releases or cuts it
                self._hold = False
                self.held_connection = conn
                self.held.set()
                self._release.wait(600)
                if self._cut:
                    for s in (conn.client, conn.upstream):
                        _shut(s)
                        s.close()
                    return


def _shut(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)

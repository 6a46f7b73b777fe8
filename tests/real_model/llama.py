"""The real llama.cpp server for the real-model tier: where setup.sh put it, and starting one
on a free port (ready when it says it is listening)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("KBTEST_REAL_MODEL_CACHE", Path.home() / ".cache/kebab-real-model"))
PYTHON = CACHE / "venv/bin/python"
GGUF = CACHE / "model/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2"
# What the README tells people to run, flag for flag.
ARGS = ["--n_threads", "2", "--n_ctx", "8192"]


@dataclass
class LlamaServer:
    """One `python -m llama_cpp.server` process on a free port."""

    proc: subprocess.Popen[str]
    port: int
    log: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGCONT)  # a paused one too
            self.proc.kill()
        self.proc.wait(timeout=30)


def start_server(timeout_s: float = 180) -> LlamaServer:
    """Start the real server and return once it says it is listening (or fail saying why)."""
    port = free_port()
    proc = subprocess.Popen(
        [str(PYTHON), "-m", "llama_cpp.server", "--model", str(GGUF), *_where(port), *ARGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    server = LlamaServer(proc, port)
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            server.log.append(line)
            if "Uvicorn running on" in line:
                ready.set()
        ready.set()  # it exited: stop waiting

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(timeout_s) or proc.poll() is not None:
        server.stop()
        raise AssertionError("the llama.cpp server did not start:\n" + "".join(server.log[-20:]))
    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _where(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port)]

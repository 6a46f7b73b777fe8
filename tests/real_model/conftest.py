"""The real model-server tier: llama-cpp-python's OpenAI-compatible server running
SmolLM2-135M-Instruct Q4_1 on 127.0.0.1, set up by tests/real_model/setup.sh (`make
test-real-model` runs both). Plain `make test` skips this folder and says why.

Everything waits on events: the server is up when it prints that it is listening, an answer
has started when its first piece arrives, a request to the model ended when the proxy in front
of the server saw its connection close.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # llama, proxy
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))  # lsp_client
from llama import CACHE, GGUF, PYTHON, LlamaServer, start_server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    mine = [item for item in items if here in Path(str(item.fspath)).parents]
    if not mine:
        return
    if os.environ.get("KBTEST_REAL_MODEL") != "1":
        reason = "the real-model tier runs with `make test-real-model` (KBTEST_REAL_MODEL=1)"
    elif not PYTHON.exists() or not GGUF.exists():
        reason = f"no llama.cpp server or model in {CACHE}: run tests/real_model/setup.sh"
    else:
        return
    for item in mine:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """The real server, shared by the tests that do not stop or kill it."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_llama() -> Iterator[LlamaServer]:
    """A real server of the test's own, to pause or kill."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()

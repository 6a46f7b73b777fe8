"""Shared fixtures: one embedded model, and workspaces that never touch the user's own dirs.

All fixtures live here, in the one conftest.py: test modules import names from `conftest`, and
a second conftest.py under tests/ (tests/lsp/conftest.py, say) would be imported under the same
module name and break those imports for every module collected after it.

The suite runs in random order (pytest-randomly): a test that needs a server in a state of its
own (still indexing, other settings) gets its own server or workspace from a fixture here, never
from whichever test happened to run before it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from kebab.embed.use import UniversalSentenceEncoder
from kebab.workspace import Workspace
from llm_server import ModelServer, clone_fixture

if TYPE_CHECKING:
    from lsp_client import KebabClient

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Say the random order's seed at the end, -q or not: pytest-randomly names it only in the
    header, which -q (the README's and CI's command) hides, and a failure that depends on the
    order is replayed with that seed."""
    seed = config.getoption("randomly_seed", None)
    if config.pluginmanager.hasplugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(
            f"random order: replay it with -p randomly --randomly-seed={seed}"
        )


@pytest.fixture(scope="session")
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the model's unpacked weights, shared by every server the run starts."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, _model_cache: Path
) -> None:
    """No test reads the user's kebab.toml or KEBAB_* settings, or writes to the user cache."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    for name in [n for n in os.environ if n.startswith("KEBAB_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KEBAB_MODEL_CACHE", str(_model_cache))


@pytest.fixture(scope="session")
def embedder() -> UniversalSentenceEncoder:
    """The embedded USE model, loaded once for the whole run."""
    model = UniversalSentenceEncoder()
    model.embed(["warm up"])
    return model


WorkspaceFactory = Callable[..., Workspace]


@pytest.fixture
def open_workspace(
    tmp_path: Path, embedder: UniversalSentenceEncoder
) -> Iterator[WorkspaceFactory]:
    """`open_workspace(root, index_dir=None, **settings)`: a Workspace closed after the test.

    The index lives under the test's tmp_path unless `index_dir` names another folder there.
    """
    opened: list[Workspace] = []

    def factory(root: Path, index_dir: Path | None = None, **settings: Any) -> Workspace:
        overrides = {"index_dir": str(index_dir or tmp_path / "index"), **settings}
        ws = Workspace(root, overrides=overrides, embedder=embedder)
        opened.append(ws)
        return ws

    yield factory
    for ws in opened:
        ws.close()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """An empty workspace root for the test to fill with `write_note`."""
    root = tmp_path / "notes"
    root.mkdir()
    return root


@pytest.fixture
def fixture_workspace(tmp_path: Path) -> Path:
    """A private copy of fixtures/workspace (the small labelled vault)."""
    root = tmp_path / "workspace"
    shutil.copytree(FIXTURES / "workspace", root)
    return root


NoteWriter = Callable[[Path, str, "str | bytes"], Path]


def _write_note(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.fixture
def write_note() -> NoteWriter:
    """`write_note(root, "a/b.md", text)`: folders created; text stored as UTF-8 exactly as given
    (no newline translation), bytes as they are."""
    return _write_note


MakeWorkspace = Callable[..., Workspace]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """A scripted model server on 127.0.0.1 (OpenAI SSE / Ollama NDJSON), see llm_server.py."""
    with ModelServer() as s:
        yield s


@pytest.fixture
def fixture_copy(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, embedder: UniversalSentenceEncoder
) -> tuple[Path, Path]:
    """(root, index_dir): this test's own copy of fixtures/workspace and of its built index."""
    return clone_fixture(tmp_path_factory.getbasetemp(), tmp_path, embedder)


@pytest.fixture
async def make_ws(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, embedder: UniversalSentenceEncoder
) -> AsyncIterator[MakeWorkspace]:
    """`make_ws(llm_settings, name=None, notes={path: text}, root=None, **settings)`: a refreshed
    copy of fixtures/workspace (or `root`) with extra notes and its own index, closed after."""
    opened: list[Workspace] = []

    def make(
        llm: dict[str, Any] | None = None,
        name: str | None = None,
        notes: dict[str, str] | None = None,
        root: Path | None = None,
        **settings: Any,
    ) -> Workspace:
        where = tmp_path / (name or f"ws{len(opened)}")
        if root is None:
            root, index_dir = clone_fixture(tmp_path_factory.getbasetemp(), where, embedder)
        else:
            index_dir = where / "idx"
        for rel, text in (notes or {}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        ws = Workspace(
            root,
            overrides={"index_dir": str(index_dir), "llm": llm or {}, **settings},
            embedder=embedder,
        )
        opened.append(ws)
        ws.refresh()
        return ws

    yield make
    for ws in opened:
        await ws.aclose()


BULK_NOTES = 600


def bulk_notes(n: int = BULK_NOTES) -> dict[str, str]:
    """`n` small generated notes (path → text) under bulk/."""
    return {
        f"bulk/note-{i:04}.md": f"# Note {i}\n\nMeeting {i} was about item {i * 7}.\n"
        for i in range(n)
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def vscode(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[KebabClient]:
    """A language server over the fixture workspace, as VS Code starts it, ready; one per test
    module (module scope), shared by that module's tests."""
    from lsp_client import serving

    module = request.module.__name__.rsplit(".", 1)[-1]
    async with serving(tmp_path_factory.mktemp(module), "vscode") as client:
        await client.wait_ready()
        yield client


@pytest_asyncio.fixture(loop_scope="module")
async def building(tmp_path: Path) -> AsyncIterator[KebabClient]:
    """A language server (Neovim's profile) on fixtures/workspace plus 600 generated notes,
    handed over as soon as `initialize` returns, its first index still being built: syncing 616
    notes and embedding their passages takes seconds (more on busy cores), a request
    milliseconds. Its own server for each test, so "still indexing" never depends on which test
    ran first. For tests/lsp modules (their folder is on sys.path) whose tests share the module's
    event loop (loop_scope="module")."""
    from lsp_client import serving

    async with serving(tmp_path, "neovim", notes=bulk_notes()) as client:
        yield client


def run_editor(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> str:
    """Run a headless editor (nvim, emacs) to the end and return what it printed; one that runs
    past `timeout_s` is killed with its whole process group and the test fails saying so."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(
            f"{Path(command[0]).name} ran past {timeout_s} s; it printed:\n{output[-4000:]}"
        )
    return f"(exit {proc.returncode})\n{output}"

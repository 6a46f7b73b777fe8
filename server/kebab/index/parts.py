"""What the index's jobs (`opening`, `syncing`, `backlog`) reach of an `Index`: its parts, not
the class, so they import nothing from the package that imports them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from kebab.config import Config
from kebab.embed import Embedder
from kebab.index.lexical import Lexical
from kebab.index.store import Store
from kebab.index.vectors import Vectors

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class IndexParts(Protocol):
    """The attributes and methods of `Index` the jobs read and set (`opening` sets `vectors`,
    `backlog` and `opening` set `embed_error`)."""

    root: Path
    dir: Path
    cfg: Config
    embedder: Embedder | None
    store: Store
    lexical: Lexical
    vectors: Vectors | None
    embed_error: str | None
    read_only: str | None

    def writing(self, probe: bool = False) -> AbstractContextManager[None]: ...

    def units_model(self) -> str: ...

    def pending_vectors(self) -> int: ...

    def save_vectors(self) -> None: ...

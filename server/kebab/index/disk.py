"""Writing the index's own files: one clear error when a write fails, small files replaced
atomically, and permissions that keep the notes' text private."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kebab.errors import IndexError_

log = logging.getLogger(__name__)


@contextmanager
def failing_writes(index_dir: Path) -> Iterator[None]:
    """A write that fails (disk full, read-only, I/O error) is one clear IndexError_."""
    try:
        yield
    except (OSError, sqlite3.Error, ValueError) as e:
        raise IndexError_(
            f"cannot write the index at {index_dir}: {reason(e)}; the previous index still serves"
        ) from None


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise


def keep_private(path: Path) -> None:
    """Take group and other permissions off an index file or folder (the notes' text is in
    there); the owner's own bits stay as they are, so a folder made read-only stays so."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except FileNotFoundError:
        pass
    except PermissionError as e:  # not ours: whether it can be written decides the rest
        log.warning("cannot make %s private: %s", path, e.strerror)


def reason(e: BaseException) -> str:
    """What went wrong, in a few words: 'No space left on device', 'database or disk is full'."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).split("\n")[0][:200] or type(e).__name__

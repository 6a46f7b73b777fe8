"""SQLite: the index's source of truth (documents, chunks, embeddings by content hash, settings).

Tantivy and USearch are derived from these tables and can always be rebuilt from them, which is
what makes a killed indexer harmless: SQLite's transactions decide what the index holds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kebab.links import Link
from kebab.model import Chunk, Document

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
  path TEXT PRIMARY KEY, title TEXT NOT NULL, tags TEXT NOT NULL, aliases TEXT NOT NULL,
  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, content_hash TEXT NOT NULL,
  warnings TEXT NOT NULL, fields TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS chunks (
  key INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
  heading_path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  text TEXT NOT NULL, content_hash TEXT NOT NULL, tokens INTEGER NOT NULL, title TEXT NOT NULL,
  tags TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE TABLE IF NOT EXISTS links (
  path TEXT NOT NULL, line INTEGER NOT NULL, target TEXT NOT NULL, heading TEXT,
  embed INTEGER NOT NULL, key TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS links_path ON links(path);
CREATE TABLE IF NOT EXISTS embeddings (
  content_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL,
  PRIMARY KEY (content_hash, model));
CREATE TABLE IF NOT EXISTS unit_vectors (
  content_hash TEXT NOT NULL, model TEXT NOT NULL, n INTEGER NOT NULL, vectors BLOB NOT NULL,
  PRIMARY KEY (content_hash, model));
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
"""

_DOCUMENT_COLUMNS = "path, title, tags, aliases, size, mtime_ns, content_hash, warnings, fields"
CHUNK_COLUMNS = (
    "key, id, path, heading_path, start_line, end_line, text, content_hash, tokens, title, tags"
)


class Store:
    """One SQLite file. All access goes through `lock`, so threads can share the connection."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.lock = threading.RLock()
        if read_only:
            self.db = _open_read_only(path)
            return
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.executescript(_SCHEMA)
            _add_fields_column(self.db)
        except sqlite3.Error:
            self.db.close()
            raise

    def close(self) -> None:
        with self.lock:
            self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # settings ------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str = "") -> str:
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # documents -----------------------------------------------------------------------------
    def documents(self) -> dict[str, Document]:
        with self.lock:
            rows = self.db.execute(f"SELECT {_DOCUMENT_COLUMNS} FROM documents").fetchall()
        return {r[0]: _document(r) for r in rows}

    def tags(self) -> set[str]:
        """Every tag some note carries (front matter and inline)."""
        with self.lock:
            rows = self.db.execute("SELECT DISTINCT tags FROM documents WHERE tags != '[]'")
            return {t for (stored,) in rows.fetchall() for t in _list(stored)}

    def document(self, path: str) -> Document | None:
        with self.lock:
            r = self.db.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE path=?", (path,)
            ).fetchone()
        return _document(r) if r else None

    def put_document(self, db: sqlite3.Connection, doc: Document) -> None:
        db.execute(
            f"INSERT OR REPLACE INTO documents({_DOCUMENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                doc.path,
                doc.title,
                json.dumps(doc.tags),
                json.dumps(doc.aliases),
                doc.size,
                doc.mtime_ns,
                doc.content_hash,
                json.dumps(doc.warnings),
                json.dumps(doc.fields),
            ),
        )

    def touch_document(self, db: sqlite3.Connection, path: str, size: int, mtime_ns: int) -> None:
        db.execute("UPDATE documents SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def delete_document(self, db: sqlite3.Connection, path: str) -> list[int]:
        """Remove a note and its chunks; returns the removed chunk keys."""
        keys = [r[0] for r in db.execute("SELECT key FROM chunks WHERE path=?", (path,))]
        db.execute("DELETE FROM chunks WHERE path=?", (path,))
        db.execute("DELETE FROM documents WHERE path=?", (path,))
        db.execute("DELETE FROM links WHERE path=?", (path,))
        return keys

    # links -----------------------------------------------------------------------------------
    def put_links(self, db: sqlite3.Connection, found: list[Link]) -> None:
        """A note's links as written: `Link.path` holds what its target is resolved by (the
        name, or the path from the root), since what it reaches depends on the other notes."""
        db.executemany(
            "INSERT INTO links VALUES (?,?,?,?,?,?)",
            [(k.source, k.line, k.target, k.heading, int(k.embed), k.path or "") for k in found],
        )

    def links(self) -> list[Link]:
        """Every note's links, unresolved (`put_links`), each note's in the order written."""
        with self.lock:
            rows = self.db.execute(
                "SELECT path, line, target, heading, embed, key FROM links ORDER BY rowid"
            ).fetchall()
        return [Link(r[0], r[1], r[2], r[3], bool(r[4]), r[5] or None) for r in rows]

    def paths(self) -> list[str]:
        with self.lock:
            return [r[0] for r in self.db.execute("SELECT path FROM documents")]

    def replace_skipped(self, db: sqlite3.Connection, skipped: Iterable[tuple[str, str]]) -> None:
        db.execute("DELETE FROM skipped")
        db.executemany("INSERT OR REPLACE INTO skipped VALUES (?, ?)", skipped)

    def skipped(self) -> list[tuple[str, str]]:
        with self.lock:
            return list(self.db.execute("SELECT path, reason FROM skipped ORDER BY path"))

    # chunks --------------------------------------------------------------------------------
    def insert_chunks(self, db: sqlite3.Connection, chunks: list[Chunk]) -> list[int]:
        keys = []
        for c in chunks:
            cur = db.execute(
                f"INSERT INTO chunks({CHUNK_COLUMNS.split(', ', 1)[1]}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    c.id,
                    c.path,
                    json.dumps(c.heading_path, ensure_ascii=False),
                    c.start_line,
                    c.end_line,
                    c.text,
                    c.content_hash,
                    c.tokens,
                    c.title,
                    json.dumps(c.tags),
                ),
            )
            keys.append(int(cur.lastrowid or 0))
        return keys

    def chunks_by_key(self, keys: Iterable[int]) -> dict[int, Chunk]:
        keys = list(keys)
        out: dict[int, Chunk] = {}
        with self.lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                q = f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE key IN ({','.join('?' * len(part))})"
                for row in self.db.execute(q, part):
                    out[row[0]] = chunk_from_row(row)
        return out

    def chunks_of(self, path: str) -> list[tuple[int, Chunk]]:
        with self.lock:
            rows = self.db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE path=? ORDER BY start_line", (path,)
            ).fetchall()
        return [(r[0], chunk_from_row(r)) for r in rows]

    def iter_chunks(self, batch: int = 2000) -> Iterator[list[tuple[int, Chunk]]]:
        last = -1
        while True:
            with self.lock:
                rows = self.db.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE key>? ORDER BY key LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(r[0], chunk_from_row(r)) for r in rows]

    def sample_texts(self, n: int) -> list[str]:
        """The openings of about `n` passages spread over the whole index (every k-th key)."""
        with self.lock:
            total = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            rows = self.db.execute(
                "SELECT substr(text, 1, 300) FROM chunks WHERE key % ? = 0 LIMIT ?",
                (max(1, total // n), n),
            ).fetchall()
        return [r[0] for r in rows]

    def counts(self) -> tuple[int, int]:
        with self.lock:
            docs = self.db.execute("SELECT count(*) FROM documents").fetchone()[0]
            chunks = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return int(docs), int(chunks)

    # unit vectors: one float16 matrix per passage, a row per quotable unit ------------------


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The database opened for reading only, in a folder this process cannot write to.

    SQLite reads a WAL database read-only when its -shm file can be used; when it cannot (no
    -shm, and none can be made), `immutable` reads the database file as it is.
    """
    error: sqlite3.Error | None = None
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        db = sqlite3.connect(
            f"{path.as_uri()}?{flags}", uri=True, check_same_thread=False, isolation_level=None
        )
        try:
            db.execute("SELECT count(*) FROM chunks").fetchone()
            return db
        except sqlite3.Error as e:
            db.close()
            error = e
    assert error is not None
    raise error


def chunk_from_row(row: tuple[Any, ...]) -> Chunk:
    return Chunk(
        id=row[1],
        path=row[2],
        heading_path=json.loads(row[3]),
        start_line=row[4],
        end_line=row[5],
        text=row[6],
        content_hash=row[7],
        tokens=row[8],
        title=row[9],
        tags=json.loads(row[10]),
    )


def _document(r: tuple[Any, ...]) -> Document:
    fields = {} if r[8] == "{}" else json.loads(r[8])
    return Document(r[0], r[1], _list(r[2]), _list(r[3]), r[4], r[5], r[6], _list(r[7]), fields)


def _add_fields_column(db: sqlite3.Connection) -> None:
    """An index made before notes kept their front matter (idx-4) gains the column; the index
    version's change then reads every note again to fill it."""
    have = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    if "fields" not in have:
        db.execute("ALTER TABLE documents ADD COLUMN fields TEXT NOT NULL DEFAULT '{}'")


def _list(stored: str) -> list[str]:
    """A JSON list column; most are empty, and skipping the parser for them is most of the
    time a freshness check over 14k notes spends here."""
    return [] if stored == "[]" else json.loads(stored)

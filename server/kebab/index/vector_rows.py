"""The passage and unit vectors kept in the index's SQLite file, by content hash and model:
what is still to embed, what is stored, and reading them back. The float32 rows here are the
exact vectors; the USearch file is built from them and only finds candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from kebab.index.store import CHUNK_COLUMNS, Store, chunk_from_row
from kebab.model import Chunk


def pending_embeddings(
    store: Store, model: str, limit: int, after_key: int = -1
) -> list[tuple[int, str, Chunk]]:
    """(key, content hash, chunk) of chunks after `after_key` with no vector for `model` yet,
    walked in key order (an index range scan, not a sort of everything pending)."""
    with store.lock:
        rows = store.db.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.key > ? AND NOT EXISTS (SELECT 1 "
            "FROM embeddings e WHERE e.content_hash=c.content_hash AND e.model=?) "
            "ORDER BY c.key LIMIT ?",
            (after_key, model, limit),
        ).fetchall()
    return [(r[0], r[7], chunk_from_row(r)) for r in rows]


def count_pending(store: Store, model: str, table: str = "embeddings") -> int:
    """Distinct passage texts with no row of `model` in `table` (embeddings, unit_vectors)."""
    assert table in ("embeddings", "unit_vectors")
    with store.lock:
        return int(
            store.db.execute(
                "SELECT count(DISTINCT content_hash) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
                f"{table} e WHERE e.content_hash=c.content_hash AND e.model=?)",
                (model,),
            ).fetchone()[0]
        )


def put_embeddings(store: Store, model: str, hashes: list[str], vectors: np.ndarray) -> None:
    with store.transaction() as db:
        db.executemany(
            "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
            [
                (h, model, v.astype(np.float32).tobytes())
                for h, v in zip(hashes, vectors, strict=True)
            ],
        )


def vectors_for_hashes(store: Store, model: str, hashes: list[str]) -> tuple[list[int], np.ndarray]:
    """(chunk keys, vectors) of the chunks whose content is one of `hashes`."""
    with store.lock:
        marks = ",".join("?" * len(hashes))
        keys = [
            r[0]
            for r in store.db.execute(
                f"SELECT key FROM chunks WHERE content_hash IN ({marks})", hashes
            )
        ]
    return vectors_for(store, model, keys)


def vector_keys(store: Store, model: str) -> set[int]:
    """Keys of the chunks whose content has a vector of `model` (no vector is read)."""
    with store.lock:
        rows = store.db.execute(
            "SELECT c.key FROM chunks c JOIN embeddings e ON "
            "e.content_hash=c.content_hash AND e.model=?",
            (model,),
        ).fetchall()
    return {r[0] for r in rows}


def has_other_units(store: Store, model: str) -> bool:
    """Whether unit vectors of another model (or way of splitting) are stored."""
    with store.lock:
        return (
            store.db.execute(
                "SELECT 1 FROM unit_vectors WHERE model != ? LIMIT 1", (model,)
            ).fetchone()
            is not None
        )


def vectors_for(
    store: Store, model: str, keys: list[int] | None = None
) -> tuple[list[int], np.ndarray]:
    """(chunk keys, vectors) for chunks whose content has a vector; all chunks when keys is None."""
    sql = (
        "SELECT c.key, e.vector FROM chunks c JOIN embeddings e ON "
        "e.content_hash=c.content_hash AND e.model=?"
    )
    out_keys: list[int] = []
    rows: list[bytes] = []
    with store.lock:
        if keys is None:
            for k, v in store.db.execute(sql + " ORDER BY c.key", (model,)):
                out_keys.append(k)
                rows.append(v)
        else:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                q = sql + f" WHERE c.key IN ({','.join('?' * len(part))})"
                for k, v in store.db.execute(q, (model, *part)):
                    out_keys.append(k)
                    rows.append(v)
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    return out_keys, np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), -1)


def pending_units(
    store: Store, model: str, units_model: str, limit: int, after_key: int = -1
) -> list[tuple[int, Chunk]]:
    """(key, chunk) of chunks after `after_key` that have a passage vector of `model` but no
    unit vectors of `units_model` yet: units are filled after passages, so search has
    passages first."""
    with store.lock:
        rows = store.db.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.key > ? AND EXISTS (SELECT 1 FROM "
            "embeddings e WHERE e.content_hash=c.content_hash AND e.model=?) AND NOT EXISTS "
            "(SELECT 1 FROM unit_vectors u WHERE u.content_hash=c.content_hash AND u.model=?) "
            "ORDER BY c.key LIMIT ?",
            (after_key, model, units_model, limit),
        ).fetchall()
    return [(r[0], chunk_from_row(r)) for r in rows]


def put_unit_vectors(store: Store, model: str, rows: list[tuple[str, np.ndarray]]) -> None:
    """(content hash, units × dim matrix) per passage; an empty matrix marks "nothing to
    add" (a one-unit passage, whose passage vector says it all)."""
    with store.transaction() as db:
        db.executemany(
            "INSERT OR REPLACE INTO unit_vectors VALUES (?, ?, ?, ?)",
            [(h, model, len(m), m.astype(np.float16).tobytes()) for h, m in rows],
        )


def unit_vectors(store: Store, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
    """Content hash → float16 units × dim, for the passages whose units were embedded (a
    one-unit passage: an empty matrix)."""
    return {
        h: np.frombuffer(blob, dtype=np.float16).reshape(n, -1 if n else 0)
        for h, n, blob in _by_hash(
            store, "content_hash, n, vectors FROM unit_vectors", model, hashes
        )
    }


def vectors_by_hash(store: Store, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
    """Content hash → its passage vector, for the hashes that have one."""
    return {
        h: np.frombuffer(blob, dtype=np.float32)
        for h, blob in _by_hash(store, "content_hash, vector FROM embeddings", model, hashes)
    }


def _by_hash(
    store: Store, select: str, model: str, hashes: Iterable[str]
) -> Iterator[tuple[Any, ...]]:
    """Rows of `SELECT {select} WHERE model=? AND content_hash IN (hashes)`, 500 at a time."""
    hashes = list(dict.fromkeys(hashes))
    with store.lock:
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT {select} WHERE model=? AND content_hash IN ({marks})"
            yield from store.db.execute(sql, (model, *part)).fetchall()

"""The answers table: every answer, refusals and cancelled ones included, with what made it.

Lives in the index's SQLite file, so an answer can be replayed and compared (`result_hash`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import msgspec

from kebab.errors import IndexError_
from kebab.index.store import Store
from kebab.model import Answer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
  id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, question TEXT NOT NULL,
  grounded INTEGER NOT NULL, refusal_reason TEXT, backend TEXT NOT NULL, model TEXT NOT NULL,
  result_hash TEXT NOT NULL, conversation TEXT, answer TEXT NOT NULL, explain TEXT);
CREATE INDEX IF NOT EXISTS answers_conversation ON answers(conversation);
"""


def ensure_schema(store: Store) -> None:
    with store.lock:
        store.db.executescript(_SCHEMA)


def save(store: Store, answer: Answer, conversation: str | None = None) -> int:
    """Persist `answer` (its `explain` packed chunks only when asked for) and set its
    `answer_id`, in the stored copy too, so an answer read back by id carries its id.
    IndexError_ when the file cannot take it (read-only, full disk)."""
    try:
        return _save(store, answer, conversation)
    except sqlite3.Error as e:
        raise IndexError_(f"cannot store the answer in {store.path}: {e}") from e


def _save(store: Store, answer: Answer, conversation: str | None) -> int:
    explain = answer.explain
    with store.transaction() as db:  # the row first (for its id), then the body that carries it
        cur = db.execute(
            "INSERT INTO answers(created_at, question, grounded, refusal_reason, backend, model, "
            "result_hash, conversation, answer, explain) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                answer.created_at,
                answer.question,
                int(answer.grounded),
                answer.refusal_reason,
                answer.model.backend,
                answer.model.id,
                answer.result_hash,
                conversation,
                "",
                json.dumps(explain, ensure_ascii=False) if explain is not None else None,
            ),
        )
        row_id = int(cur.lastrowid or 0)
        stored = msgspec.structs.replace(answer, explain=None, answer_id=row_id)
        db.execute(
            "UPDATE answers SET answer=? WHERE id=?",
            (msgspec.json.encode(stored).decode(), row_id),
        )
    answer.answer_id = row_id  # only once the row is committed
    return row_id


def recent(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    with store.lock:
        rows = store.db.execute(
            "SELECT id, created_at, question, grounded, refusal_reason, backend, model, "
            "result_hash FROM answers ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
    keys = (
        "id",
        "created_at",
        "question",
        "grounded",
        "refusal_reason",
        "backend",
        "model",
        "result_hash",
    )
    return [dict(zip(keys, r, strict=True)) for r in rows]


def get(store: Store, answer_id: int) -> Answer | None:
    with store.lock:
        row = store.db.execute("SELECT answer FROM answers WHERE id=?", (answer_id,)).fetchone()
    return msgspec.json.decode(row[0], type=Answer) if row else None


def last_conversation(store: Store) -> str | None:
    """The conversation of the most recent answer, for `kebab ask --continue`."""
    with store.lock:
        row = store.db.execute(
            "SELECT conversation FROM answers WHERE conversation IS NOT NULL "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
    return row[0] if row else None


def conversation_turns(store: Store, conversation: str, limit: int = 20) -> list[tuple[str, str]]:
    """Earlier (question, answer) turns of a conversation, oldest first."""
    with store.lock:
        rows = store.db.execute(
            "SELECT question, answer FROM answers WHERE conversation=? ORDER BY id DESC LIMIT ?",
            (conversation, limit),
        ).fetchall()
    out = []
    for question, body in reversed(rows):
        out.append((question, json.loads(body).get("answer", "")))
    return out

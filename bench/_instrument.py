"""Instrumentation for bench_index.py: time kebab's own functions without editing server/.

PhaseTimes wraps named functions (module functions and bound methods) with mock.patch for the
length of a `with`; AloneTwin runs the embedder alone beside kebab's embed phase.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from kebab import markdown
from kebab.index import backlog, syncing, vector_rows
from kebab.workspace import Workspace


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> dict[str, float]:
    wall, cpu = clock()
    return {"wall_s": round(wall - start[0], 3), "cpu_s": round(cpu - start[1], 3)}


# What PhaseTimes wraps, as owner:attribute,...: the steps of sync and embed_pending.
_TIMED = (
    "syncing:scan,read_note,write_batch backlog:embedding_text markdown:parse index:save_vectors "
    "store:documents "
    "vector_rows:put_embeddings,pending_embeddings,count_pending,vectors_for,vectors_for_hashes "
    "lexical:write vectors:add,remove embedder:embed"
)


class PhaseTimes:
    """Seconds and calls per kebab function named in _TIMED, collected while `patched` is on."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1

        return timed_call

    @contextmanager
    def patched(self, ws: Workspace) -> Iterator[None]:
        ix = ws.index
        owners = {
            "syncing": syncing,
            "backlog": backlog,
            "markdown": markdown,
            "index": ix,
            "store": ix.store,
            "vector_rows": vector_rows,
            "lexical": ix.lexical,
            "vectors": ix.vectors,
            "embedder": ws.embedder,
        }
        with ExitStack() as stack:
            for spec in _TIMED.split():
                owner, attrs = spec.split(":")
                obj = owners[owner]
                for attr in attrs.split(",") if obj is not None else []:
                    wrapped = self._wrap(f"{owner}.{attr}", getattr(obj, attr))
                    stack.enter_context(mock.patch.object(obj, attr, wrapped))
            yield

    def breakdown(self) -> dict[str, float]:
        """Sync seconds: scan, read, parse, Tantivy, and SQLite (the rest of the batch write)."""
        s = self.seconds
        sqlite = s["syncing.write_batch"] - s["markdown.parse"] - s["lexical.write"]
        sqlite -= s["vectors.add"] + s["vectors.remove"] + s["vector_rows.vectors_for"]
        parts = {"scan": s["syncing.scan"], "read": s["syncing.read_note"],
                 "parse": s["markdown.parse"], "tantivy": s["lexical.write"],
                 "sqlite": sqlite + s["store.documents"]}  # fmt: skip
        return {f"{k}_s": round(v, 3) for k, v in parts.items()}

    def report(self) -> dict[str, list[float]]:
        """{function: [seconds, calls]}"""
        return {k: [round(v, 3), self.calls[k]] for k, v in sorted(self.seconds.items())}


class AloneTwin:
    """The embedder alone on the same texts and batches as kebab's embed phase, side by side.

    Wraps the embedder during the phase: each batch kebab embeds is also embedded directly from
    `texts` (built beforehand with kebab.index.embedding_text), alternately just before and just
    after kebab's call, so both see the same background load on this shared machine. The twin's
    time is then subtracted from the phase's.
    """

    def __init__(self, emb: Any, texts: list[str]) -> None:
        self.direct = emb.embed
        self.texts = texts
        self.offset = self.calls = self.mismatches = 0
        self.wall = self.cpu = 0.0

    def _twin(self, n: int) -> None:
        batch = self.texts[self.offset : self.offset + n]
        start = clock()
        self.direct(batch)
        self.wall += time.perf_counter() - start[0]
        self.cpu += time.process_time() - start[1]

    def wrap(self, fn: Callable[[list[str]], Any]) -> Callable[[list[str]], Any]:
        def embed(batch: list[str]) -> Any:
            self.mismatches += batch != self.texts[self.offset : self.offset + len(batch)]
            before = self.calls % 2 == 0
            if before:
                self._twin(len(batch))
            out = fn(batch)
            if not before:
                self._twin(len(batch))
            self.calls += 1
            self.offset += len(batch)
            return out

        return embed

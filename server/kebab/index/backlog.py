"""The embedding backlog: passage vectors for passages that have none, then one vector per
quotable unit, in batches that give way when a writer waits.

A job that can be asked to stop (`should_stop`) runs short batches (`Pace`): a question asked
meanwhile needs the embedding model for its own vectors and waits for the batch in flight, so
that batch must take a fraction of a second, whatever `batch_size` says."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np

from kebab import markdown, units
from kebab.errors import EmbedderError
from kebab.index import vector_rows
from kebab.index.disk import failing_writes
from kebab.index.parts import IndexParts, Progress
from kebab.model import Chunk

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.5  # what a question (or an edit) waits behind at most, give or take
FIRST_BATCH = 8  # rows in the first batch, before the pace is known
GROWTH = 4  # a batch is at most this many times the last one: one quick batch proves little


class Pace:
    """Batch sizes for a job that others may wait behind: a small first batch, then each one
    sized by the pace just measured to take about BATCH_SECONDS, never past `most`. Without
    `should_stop` nobody waits, and every batch has `most` rows."""

    def __init__(self, most: int, should_stop: Callable[[], bool] | None = None) -> None:
        self.most = max(1, most)
        self.paced = should_stop is not None
        self.size = min(FIRST_BATCH, self.most) if self.paced else self.most
        self._started = time.monotonic()

    def start(self) -> int:
        """The rows to take now; the batch's time counts from here."""
        self._started = time.monotonic()
        return self.size

    def done(self, rows: int) -> None:
        """`rows` were handled since `start`: size the next batch."""
        took = time.monotonic() - self._started
        if self.paced and rows and took > 0:
            fits = int(rows * BATCH_SECONDS / took)
            self.size = max(1, min(self.most, GROWTH * rows, fits))


def embedding_text(chunk: Chunk) -> str:
    """What the embedding model sees: where the passage sits (title, headings), then its text."""
    where = " › ".join(dict.fromkeys([chunk.title, *chunk.heading_path]))
    return f"{where}\n{markdown.plain_text(chunk.text)}"


def embed_pending(
    ix: IndexParts,
    batch_size: int = 64,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Compute missing passage vectors, then unit vectors, in batches; returns how many
    passage texts were embedded."""
    if ix.embedder is None or ix.vectors is None or ix.read_only:
        return 0
    total = vector_rows.count_pending(ix.store, ix.embedder.id)
    done = 0
    last_save = time.monotonic()
    after = -1
    pace = Pace(batch_size, should_stop)
    while not (should_stop and should_stop()):
        rows = vector_rows.pending_embeddings(ix.store, ix.embedder.id, pace.start(), after)
        if not rows:
            break
        after = rows[-1][0]
        pending = {h: c for _, h, c in rows}  # each text once
        if not embed_passages_of(ix, list(pending.values())):
            break
        pace.done(len(rows))
        done += len(pending)
        if progress:
            progress("embedding", done, total)
        if time.monotonic() - last_save > 10:
            ix.save_vectors()
            last_save = time.monotonic()
    ix.save_vectors()
    embed_units(ix, batch_size, progress, should_stop)
    return done


def embed_units(
    ix: IndexParts,
    batch_size: int,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    """Give every passage that has a vector one vector per quotable unit (capped at
    units.MAX_UNITS): the evidence that some sentence inside it answers a question, which
    the passage's single vector blurs. Runs after passages, so search never waits on it."""
    assert ix.embedder is not None
    model = ix.units_model()
    total = vector_rows.count_pending(ix.store, model, "unit_vectors")
    done, after = 0, -1
    pace = Pace(max(batch_size // 4, 8), should_stop)  # passages; each brings several units
    while not (should_stop and should_stop()):
        rows = vector_rows.pending_units(ix.store, ix.embedder.id, model, pace.start(), after)
        if not rows:
            break
        after = rows[-1][0]
        todo = {c.content_hash: c for _, c in rows}
        if not embed_units_of(ix, list(todo.values())):
            break
        pace.done(len(rows))
        done += len(todo)
        if progress:
            progress("units", done, total)


# Passages of an edited buffer embedded at once (`embed_now`); the rest wait for the backlog.
EMBED_NOW = 8


def embed_now(ix: IndexParts, chunks: list[Chunk]) -> None:
    """Passage and unit vectors for the first `EMBED_NOW` of `chunks` that lack them, at once:
    the few passages an unsaved buffer changed. Until the backlog came round to them, an edited
    passage had no vector and ranked on its words alone, below its neighbours and below a line
    elsewhere that merely restates the question; the next question quoted the wrong passage. A
    note the backlog has not reached at all waits for it, past the first few."""
    if ix.embedder is None or ix.vectors is None or ix.read_only:
        return
    have = vector_rows.vectors_by_hash(ix.store, ix.embedder.id, [c.content_hash for c in chunks])
    units_have = vector_rows.unit_vectors(
        ix.store, ix.units_model(), [c.content_hash for c in chunks]
    )
    chunks = [c for c in chunks if c.content_hash not in have or c.content_hash not in units_have]
    chunks = chunks[:EMBED_NOW]
    pending = [c for c in chunks if c.content_hash not in have]
    if pending and not embed_passages_of(ix, pending):
        return
    embed_units_of(ix, [c for c in chunks if c.content_hash not in units_have])


def embed_passages_of(ix: IndexParts, chunks: list[Chunk]) -> bool:
    """Store the passage vectors of `chunks` (each text once) and add them to the vector index.
    False when the embedder failed (said in `ix.embed_error`)."""
    assert ix.embedder is not None and ix.vectors is not None
    todo = {c.content_hash: c for c in chunks}
    vecs = _embedded(ix, [embedding_text(c) for c in todo.values()])
    if vecs is None:
        return False
    with failing_writes(ix.dir):
        vector_rows.put_embeddings(ix.store, ix.embedder.id, list(todo), vecs)
    keys, stored = vector_rows.vectors_for_hashes(ix.store, ix.embedder.id, list(todo))
    ix.vectors.add(keys, stored)
    return True


def embed_units_of(ix: IndexParts, chunks: list[Chunk]) -> bool:
    """Store the unit vectors of `chunks` (a batch of the backlog, or the passages an unsaved
    buffer changed: search ranks a passage by its best unit, and one without unit vectors
    would rank below its own old text until the backlog came round). False when the embedder
    failed (said in `ix.embed_error`)."""
    assert ix.embedder is not None
    todo = {c.content_hash: c for c in chunks}
    texts: list[str] = []
    spans: list[tuple[str, int, int]] = []
    for h, c in todo.items():
        found = units.units(c.text)[: units.MAX_UNITS]
        n = len(found) if len(found) > 1 else 0
        spans.append((h, len(texts), n))
        where = list(dict.fromkeys([c.title, *c.heading_path]))
        texts += [units.embedding_text(where, u) for u in found[:n]]
    vecs = _embedded(ix, texts)
    if vecs is None:
        return False
    with failing_writes(ix.dir):
        vector_rows.put_unit_vectors(
            ix.store, ix.units_model(), [(h, vecs[i : i + n]) for h, i, n in spans]
        )
    return True


def _embedded(ix: IndexParts, texts: list[str]) -> np.ndarray | None:
    """The embedder's vectors for `texts`; None when it failed, which stops the backlog until
    the next sync and is said in `ix.embed_error`."""
    assert ix.embedder is not None
    if not texts:
        return np.zeros((0, ix.embedder.dim))
    try:
        return ix.embedder.embed(texts)
    except EmbedderError as e:
        ix.embed_error = str(e)
        log.warning("embedding stopped: %s", e)
        return None

"""The on-disk workspace index: SQLite (truth), Tantivy (BM25) and USearch (vectors).

`Index` is the door, the way `workspace` is the door over the layers; the jobs live in modules
named for what they hold: `opening` (format stamp, reconciling Tantivy and USearch with SQLite),
`syncing` (`Index.sync()` brings documents, chunks and BM25 up to date; BM25 answers as soon as it
returns), `backlog` (`Index.embed_pending()` fills vectors afterwards, in batches; hybrid search
uses whatever vectors exist so far), `disk` (writes that fail clearly, atomic files, private
permissions). The jobs see an `Index` as `parts.IndexParts`, so none imports this package.
Reading (search, vectors by key, status) stays here. Engine types never leave this package.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from kebab import units
from kebab.config import Config
from kebab.embed import Embedder
from kebab.errors import EmbedderError, IndexError_
from kebab.index import backlog, opening, syncing, vector_rows
from kebab.index.backlog import embedding_text
from kebab.index.disk import keep_private, reason
from kebab.index.lexical import query_terms
from kebab.index.parts import Progress
from kebab.index.store import Store
from kebab.index.vectors import Vectors
from kebab.lexicon import english_for, korean_for
from kebab.loanwords import latin_pattern
from kebab.model import (
    CHUNKER_VERSION,
    INDEX_VERSION,
    PARSER_VERSION,
    IndexSummary,
)
from kebab.text import (
    CAMEL_HUMP,
    LATIN_WORD,
    cjk_terms,
    cjk_weights,
    is_korean,
    is_name,
    judged_terms,
    korean_query_words,
    latin_terms,
    translated_terms,
)

__all__ = ["Index", "Progress", "embedding_text", "versions"]
log = logging.getLogger(__name__)

# Weight of a term that is the question's word in the other language (kebab.lexicon).
TRANSLATED = 0.5


class Index:
    """One workspace root's index, usable from several threads."""

    def __init__(self, root: Path, index_dir: Path, cfg: Config, embedder: Embedder | None) -> None:
        self.root = root.resolve()
        self.dir = index_dir
        self.cfg = cfg
        self.embedder = embedder
        self.vectors: Vectors | None = None
        self.embed_error: str | None = None
        # Why the index cannot be written (a read-only folder, a full disk), when it cannot: it
        # is then opened read-only and answers searches as it was last written.
        self.read_only: str | None = None
        self._write_lock = threading.RLock()
        self._queries: dict[str, np.ndarray] = {}  # text → vector, oldest first (embed_query)
        self._query_lock = threading.Lock()
        self._korean_share: tuple[int, float] = (-1, 0.0)  # (passage count, share): korean_share
        self._asking: dict[str, tuple[str, bool]] = {}  # path → (content hash, verdict): note_asks
        self._lockfile: IO[str] | None = None
        try:
            self._open(writable=True)
        except (OSError, sqlite3.Error, ValueError) as e:
            self._close_files()
            why = reason(e)
            if not (index_dir / "kebab.sqlite").is_file():
                raise IndexError_(
                    f"cannot open the index at {index_dir}: {why}; check "
                    "permissions or set index_dir"
                ) from None
            log.info(
                "the index at %s cannot be written (%s): searching it as it is", index_dir, why
            )
            self.read_only = why
            try:
                self._open(writable=False)
            except (OSError, sqlite3.Error, ValueError) as e2:
                self._close_files()
                raise IndexError_(
                    f"cannot open the index at {index_dir}: {why}; reading it "
                    f"failed too ({reason(e2)})"
                ) from None

    def _open(self, writable: bool) -> None:
        path = self.dir / "kebab.sqlite"
        if writable:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            keep_private(self.dir)
            self._lockfile = open(self.dir / "write.lock", "a+")  # noqa: SIM115
            if not path.exists():  # SQLite gives its -wal and -shm files the database's mode
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            self.store = Store(path)
            for name in ("kebab.sqlite", "kebab.sqlite-wal", "kebab.sqlite-shm"):
                keep_private(self.dir / name)
        else:
            self.store = Store(path, read_only=True)
        with self.writing(probe=True):
            opening.check_versions(self)  # writes the stamp: a write that fails says read-only
            self.lexical = opening.open_lexical(self)
            opening.open_vectors(self)

    # lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        self.save_vectors()
        self._close_files()

    def _close_files(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
        if self._lockfile is not None:
            self._lockfile.close()
            self._lockfile = None

    @contextmanager
    def writing(self, probe: bool = False) -> Iterator[None]:
        """Hold the index's write lock (one writer per index across processes).

        A read-only index refuses with IndexError_ (`probe`: opening, which only reads then).
        """
        if self.read_only and not probe:
            raise IndexError_(
                f"cannot write the index at {self.dir} ({self.read_only}); it "
                "still answers searches as it was last built. Make the folder "
                "writable or free some space, or set index_dir, to update it"
            )
        with self._write_lock:
            if self._lockfile is None:
                yield
                return
            fcntl.flock(self._lockfile, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lockfile, fcntl.LOCK_UN)

    # syncing ---------------------------------------------------------------------------------
    def sync(
        self,
        overrides: dict[str, str] | None = None,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        reread: Collection[str] = (),
    ) -> IndexSummary:
        """Bring chunks and BM25 up to date with the files (and open buffers in `overrides`);
        `should_stop`, checked between batches, leaves a consistent index; `reread` notes are
        read from their files whatever their size and mtime say (`syncing`)."""
        return syncing.sync(self, overrides, progress, should_stop, reread)

    def update_text(self, path: str, text: str) -> bool:
        """Re-index one note from `text` (an unsaved buffer); True when its chunks changed."""
        return syncing.update_text(self, path, text)

    def embed_pending(
        self,
        batch_size: int = 64,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Compute missing passage vectors, then unit vectors (`backlog`); returns how many
        passage texts were embedded."""
        return backlog.embed_pending(self, batch_size, progress, should_stop)

    def chunk_vectors(self, keys: list[int]) -> dict[int, np.ndarray]:
        """Stored passage vectors by chunk key (for scoring passages only one retriever found)."""
        if self.embedder is None or not keys:
            return {}
        found, vecs = vector_rows.vectors_for(self.store, self.embedder.id, keys)
        return dict(zip(found, vecs, strict=True))

    def unit_vectors(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors (units × dim) of these passages, by content hash. A passage of
        one unit has none of its own: its passage vector (1 × dim) stands for its unit."""
        if self.embedder is None:
            return {}
        out = vector_rows.unit_vectors(self.store, self.units_model(), hashes)
        single = [h for h, m in out.items() if not len(m)]
        for h in single:
            del out[h]
        for h, v in vector_rows.vectors_by_hash(self.store, self.embedder.id, single).items():
            out[h] = v[None, :]
        return out

    def units_model(self) -> str:
        """The key unit vectors are stored under: the model and the way units are split."""
        assert self.embedder is not None
        return f"{self.embedder.id}/{units.VERSION}"

    def pending_vectors(self) -> int:
        if self.embedder is None or self.vectors is None:
            return 0
        return vector_rows.count_pending(self.store, self.embedder.id)

    # reading ---------------------------------------------------------------------------------
    def lexical_search(self, question: str, limit: int) -> list[tuple[int, float]]:
        """(chunk key, BM25 score) best first. The question's words in the other language
        (`text.translated_terms`) join as weaker terms: a Korean question finds English notes
        by more than their identifiers, and an English one finds Korean notes."""
        latin, cjk = query_terms(question)
        weights = cjk_weights(question)
        other_latin, other_cjk = translated_terms(question)
        # As much as the notes are in the other language: all of it for a Korean question over
        # English notes, about half in a collection that has each page in both. English words
        # are only looked for in Korean when most notes are Korean: Korean notes carry English
        # terms anyway, and in a mixed collection the English notes answer an English question.
        weight = 0.0
        if other_latin or other_cjk:
            korean = self.korean_share()
            weight = TRANSLATED * (1 - korean if is_korean(question) else max(0.0, 2 * korean - 1))
        if weight > 0.01:
            weights.update(dict.fromkeys(other_latin, weight))
            weights.update(dict.fromkeys(other_cjk, weight / 2))  # a word is two bigrams or so
            latin, cjk = latin + other_latin, cjk + other_cjk
        return self.lexical.search(latin, cjk, limit, weights, self._loanwords(question))

    def _loanwords(self, question: str) -> dict[str, float]:
        """Patterns for the Korean question's words the glossary has no English for, read as
        loanwords (`도커` → docker), weighted as translated words are, over English notes."""
        if not is_korean(question):
            return {}
        weight = TRANSLATED * (1 - self.korean_share())
        words = [w for w in korean_query_words(question).split() if not english_for(w)]
        patterns = [p for w in words if (p := latin_pattern(w)) is not None]
        return dict.fromkeys(patterns, weight) if weight > 0.01 else {}

    def rarity(self, terms: list[str]) -> dict[str, float]:
        """Inverse document frequency of Latin `terms` over the passages (unknown terms: high)."""
        return self.lexical.rarity(terms)

    def korean_share(self) -> float:
        """The share of passages written in Korean, from a sample of a few hundred; computed
        again when the number of passages changes."""
        count = self.lexical.count()
        with self._query_lock:
            if self._korean_share[0] == count:
                return self._korean_share[1]
        texts = self.store.sample_texts(400)
        share = sum(map(is_korean, texts)) / len(texts) if texts else 0.0
        with self._query_lock:
            self._korean_share = (count, share)
        return share

    def note_asks(self, path: str) -> bool:
        """Whether the note at `path` is mostly questions (`units.is_asking`: an inbox), kept
        per note until its content changes: every ask weighs a dozen notes, and reading each
        whole again cost more than the rest of the search."""
        doc = self.store.document(path)
        if doc is None:
            return False
        with self._query_lock:
            kept = self._asking.get(path)
        if kept is not None and kept[0] == doc.content_hash:
            return kept[1]
        verdict = units.is_asking("\n\n".join(c.text for _, c in self.store.chunks_of(path)))
        with self._query_lock:
            self._asking[path] = (doc.content_hash, verdict)
        return verdict

    def unknown_words(self, question: str, besides: frozenset[str] = frozenset()) -> list[str]:
        """The question's Latin-script content words (3+ letters, not numbers) that no note
        contains, in English or, by the glossary, in Korean. Korean words are not judged: a
        Korean word missing from the Korean notes is no evidence that the English notes lack
        the thing (`백업` asked of notes that say "backup"). Words found only in the passages
        whose chunk ids are in `besides` (those holding the question itself) count as unknown
        too."""
        asked_terms = judged_terms(question)
        missing = set(self.lexical.unknown_terms(asked_terms, []))
        missing -= self._camel_prefixes_held(question, missing)
        missing -= self._written_apart(question, missing)
        # ...and not words the notes hold in Korean ("stew" asked of a note on `김치찌개`)
        missing = {t for t in missing if not self._held_in_korean(t)}
        if missing and self.korean_share() > 0.5:
            # Notes kept in Korean say their everyday words in Korean, beyond any glossary: an
            # English question over them is judged on its names alone (`mimalloc`, `app.asar`),
            # as a Korean question over English notes is.
            missing = {
                t
                for t in missing
                if any(
                    is_name(w, question)
                    for w in LATIN_WORD.findall(question)
                    if t in latin_terms(w)
                )
            }
        asked = LATIN_WORD.findall(question)
        words = dict.fromkeys(w for w in asked if set(latin_terms(w)) & missing)
        unknown = list(words) or sorted(missing)
        if besides:
            content = set(asked_terms)  # not "which", "does": no note needs to hold those
            unknown += [
                w
                for w in dict.fromkeys(asked)
                if len(w) >= 3
                and w not in unknown
                and set(latin_terms(w)) & content
                and self._only_in(w, besides)
            ]
        return unknown

    def _camel_prefixes_held(self, question: str, missing: set[str]) -> set[str]:
        """The missing terms of camelCase words that begin a longer term some note holds:
        "methods starting with deleteBy" asked of a note on `deleteByCardInfo`, which the index
        keeps as one term; `iPad` of notes on `iPadOS`. (Brands count too: `MySQL` of notes
        that only say `mysqldump` comes closest rather than finding nothing; kept to lower
        camelCase, one answerable question of the 1019 labelled became `not_answered`.)"""
        held: set[str] = set()
        for word in LATIN_WORD.findall(question):
            terms = set(latin_terms(word))
            if (
                CAMEL_HUMP.search(word)
                and terms
                and terms <= missing
                and self.lexical.spells(re.escape(word.lower()) + "[a-z0-9_]+")
            ):
                held |= terms
        return held

    def _written_apart(self, question: str, missing: set[str]) -> set[str]:
        """The missing terms of a word some note writes as two ("preflight" asked of a note on
        "pre-flight" requests; "webhook" of "web hooks", "filename" of "file name"): a passage
        holding both halves that spells them side by side, hyphen or space between, the second
        with an ending of up to three letters (not "virtualenv" of "virtual environment"). Only
        a word the question writes in lower case: "Nextcloud" is a name, not "next cloud". The
        index keeps no positions, so the passages likeliest to hold both halves are read."""
        held: set[str] = set()
        for word in dict.fromkeys(LATIN_WORD.findall(question)):
            terms = set(latin_terms(word))
            if not (word.isalpha() and word.islower() and terms and terms <= missing):
                continue
            for cut in range(3, len(word) - 2):
                halves = [*latin_terms(word[:cut]), *latin_terms(word[cut:])]
                if len(halves) != 2 or self.lexical.unknown_terms(halves, []):
                    continue
                apart = re.compile(rf"\b{word[:cut]}[-\s]{word[cut:]}\w{{0,3}}\b", re.IGNORECASE)
                keys = {key for key, _ in self.lexical.search(halves, [], 10)}
                if any(apart.search(c.text) for c in self.store.chunks_by_key(keys).values()):
                    held |= terms
                    break
        return held

    def _held_in_korean(self, term: str) -> bool:
        """Whether a Korean word for the English `term` (`kebab.lexicon`) is in some note."""
        return any(
            not self.lexical.unknown_terms([], cjk_terms(word))
            for word in korean_for([term], latin_terms)
        )

    def _only_in(self, word: str, chunk_ids: frozenset[str]) -> bool:
        """Whether every passage the word is found in is one of `chunk_ids`."""
        keys = {key for key, _ in self.lexical.search(*query_terms(word), len(chunk_ids) + 1)}
        chunks = self.store.chunks_by_key(keys)
        return bool(keys) and all(chunks[k].id in chunk_ids for k in keys if k in chunks)

    def vector_search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(chunk key, exact cosine) best first: candidates from the quantised vector index,
        scored again from the float32 vectors in SQLite (a few more candidates than asked, so
        quantisation cannot push a passage out at the margin)."""
        if self.vectors is None:
            return []
        found = self.vectors.search(query, limit + 10)
        exact = self.chunk_vectors([key for key, _ in found])
        q = query.astype(np.float32)
        scored = [
            (key, float(exact[key] @ q)) if key in exact else (key, cos) for key, cos in found
        ]
        return sorted(scored, key=lambda kv: -kv[1])[:limit]

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query's vector; the last few are kept, so the answerer reuses search's."""
        if self.embedder is None or self.vectors is None or len(self.vectors) == 0:
            return None
        with self._query_lock:
            if text in self._queries:
                return self._queries[text]
        try:
            vec = self.embedder.embed([text])[0]
        except EmbedderError as e:
            self.embed_error = str(e)
            return None
        with self._query_lock:
            self._queries[text] = vec
            while len(self._queries) > 32:
                self._queries.pop(next(iter(self._queries)))
        return vec

    def status(self) -> dict[str, object]:
        docs, chunks = self.store.counts()
        return {
            "root": str(self.root),
            "index_dir": str(self.dir),
            "files": docs,
            "chunks": chunks,
            "vectors": len(self.vectors) if self.vectors is not None else 0,
            "pending_vectors": self.pending_vectors(),
            "embedding": {
                "backend": self.embedder.backend,
                "id": self.embedder.id,
                "dim": self.embedder.dim,
            }
            if self.embedder
            else None,
            "embedding_error": self.embed_error,
            "read_only": self.read_only,
            "skipped": [{"path": p, "reason": r} for p, r in self.store.skipped()],
            "versions": versions(self.embedder),
        }

    def save_vectors(self) -> None:
        """Write the vector file (a cache of SQLite: a failure only costs a rebuild on open)."""
        if self.vectors is None or self.read_only:
            return
        try:
            self.vectors.save()
        except Exception as e:  # a cache (SQLite has the vectors): any failure is survivable
            log.warning("could not save vectors (kept in SQLite, rebuilt on open): %s", e)


def versions(embedder: Embedder | None) -> dict[str, str]:
    return {
        "parser": PARSER_VERSION,
        "chunker": CHUNKER_VERSION,
        "index": INDEX_VERSION,
        "embedding": f"{embedder.backend}:{embedder.id}" if embedder else "none",
    }

"""The on-disk workspace index: SQLite (truth), Tantivy (BM25) and USearch (vectors).

`Index.sync()` brings documents, chunks and the lexical index up to date (BM25 answers as soon
as it returns); `Index.embed_pending()` fills vectors afterwards, in batches, and hybrid search
uses whatever vectors exist so far. Engine types never leave this package.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from kebab import markdown, units
from kebab.config import Config
from kebab.embed import Embedder
from kebab.errors import EmbedderError, IndexError_
from kebab.index.files import NoteFile, read_note, scan
from kebab.index.lexical import Lexical, query_terms
from kebab.index.store import Store
from kebab.index.vectors import FILE as VECTORS_FILE
from kebab.index.vectors import Vectors
from kebab.model import (
    CHUNKER_VERSION,
    INDEX_VERSION,
    PARSER_VERSION,
    Chunk,
    Document,
    IndexSummary,
    Skipped,
)
from kebab.text import cjk_weights, latin_terms

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (phase, done, total)

_BATCH_FILES = 256


def embedding_text(chunk: Chunk) -> str:
    """What the embedding model sees: where the passage sits (title, headings), then its text."""
    where = " › ".join(dict.fromkeys([chunk.title, *chunk.heading_path]))
    return f"{where}\n{markdown.plain_text(chunk.text)}"


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
        self._lockfile: IO[str] | None = None
        try:
            self._open(writable=True)
        except (OSError, sqlite3.Error, ValueError) as e:
            self._close_files()
            why = _reason(e)
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
                    f"failed too ({_reason(e2)})"
                ) from None

    def _open(self, writable: bool) -> None:
        path = self.dir / "kebab.sqlite"
        if writable:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            _keep_private(self.dir)
            self._lockfile = open(self.dir / "write.lock", "a+")  # noqa: SIM115
            if not path.exists():  # SQLite gives its -wal and -shm files the database's mode
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            self.store = Store(path)
            for name in ("kebab.sqlite", "kebab.sqlite-wal", "kebab.sqlite-shm"):
                _keep_private(self.dir / name)
        else:
            self.store = Store(path, read_only=True)
        with self.writing(probe=True):
            self._check_versions()  # writes the version stamp: a write that fails says read-only
            self.lexical = self._open_lexical()
            self._open_vectors()

    # lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        self._save_vectors()
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
    ) -> IndexSummary:
        """Bring chunks and BM25 up to date with the files (and open buffers in `overrides`).

        `should_stop` is checked between batches: a stopped sync leaves a consistent index that
        the next sync completes.
        """
        started = time.perf_counter()
        if self.read_only:
            with self.writing():  # raises: say so before reading every note
                pass
        overrides = overrides or {}
        notes, skipped = scan(self.root, self.cfg.ignore, self.cfg.max_file_bytes)
        known = self.store.documents()
        on_disk = {n.path for n in notes}
        counts = {"added": 0, "updated": 0, "unchanged": 0, "deleted": 0}
        warnings: list[Skipped] = []
        # Notes whose size and mtime say nothing changed are not read; the rest are read a
        # batch at a time while writing, so a sync never holds every changed note at once.
        candidates: list[NoteFile] = []
        for note in notes:
            doc = known.get(note.path)
            if (
                note.path not in overrides
                and doc is not None
                and doc.size == note.size
                and doc.mtime_ns == note.mtime_ns
            ):
                counts["unchanged"] += 1
                warnings += [Skipped(note.path, w) for w in doc.warnings]
            else:
                candidates.append(note)
        deleted = [p for p in known if p not in on_disk]
        # Nothing changed: no lock, no transaction, no fsync (a search's freshness check).
        if (
            not candidates
            and not deleted
            and sorted((s.path, s.reason) for s in skipped) == self.store.skipped()
        ):
            return self._summary(started, skipped, warnings, counts)
        with self.writing():
            stopped = False
            for start in range(0, len(candidates), _BATCH_FILES):
                if should_stop and should_stop():
                    stopped = True  # finish nothing half-way; the next sync picks this up
                    break
                batch = candidates[start : start + _BATCH_FILES]
                warnings += self._sync_batch(batch, known, overrides, skipped, deleted, counts)
                if progress:
                    progress("indexing", start + len(batch), len(candidates))
            if deleted and not stopped:
                self._write_batch([], deleted)
                counts["deleted"] = len(deleted)
            with self._failing_writes(), self.store.transaction() as db:
                self.store.replace_skipped(db, sorted((s.path, s.reason) for s in skipped))
        return self._summary(started, skipped, warnings, counts)

    def _sync_batch(
        self,
        batch: list[NoteFile],
        known: dict[str, Document],
        overrides: dict[str, str],
        skipped: list[Skipped],
        deleted: list[str],
        counts: dict[str, int],
    ) -> list[Skipped]:
        """Read one batch of possibly changed notes and write what did change; a note that
        cannot be read joins `skipped` (and `deleted`, when the index had it)."""
        todo: list[tuple[NoteFile, str]] = []
        touch: list[NoteFile] = []
        read_warnings: dict[str, str] = {}
        warnings: list[Skipped] = []
        for note in batch:
            doc = known.get(note.path)
            text, problem = (
                (overrides[note.path], None)
                if note.path in overrides
                else read_note(note, self.cfg.max_file_bytes)
            )
            if text is None:
                skipped.append(Skipped(note.path, problem or "unreadable"))
                if doc is not None:
                    deleted.append(note.path)
                continue
            if problem:
                read_warnings[note.path] = problem
            if doc is not None and doc.content_hash == markdown.content_hash(text):
                counts["unchanged"] += 1
                warnings += [Skipped(note.path, w) for w in doc.warnings]
                touch.append(note)
                continue
            counts["updated" if doc else "added"] += 1
            todo.append((note, text))
        if touch:
            with self._failing_writes(), self.store.transaction() as db:
                for note in touch:
                    self.store.touch_document(db, note.path, note.size, note.mtime_ns)
        if todo:
            warnings += self._write_batch(todo, [], read_warnings)
        return warnings

    def _summary(
        self,
        started: float,
        skipped: list[Skipped],
        warnings: list[Skipped],
        counts: dict[str, int],
    ) -> IndexSummary:
        n_docs, n_chunks = self.store.counts()
        return IndexSummary(
            root=str(self.root),
            index_dir=str(self.dir),
            files=n_docs,
            chunks=n_chunks,
            embedded=0,
            pending_vectors=self.pending_vectors(),
            skipped=skipped,
            warnings=warnings,
            seconds=round(time.perf_counter() - started, 3),
            **counts,
        )

    def update_text(self, path: str, text: str) -> bool:
        """Re-index one note from `text` (an unsaved buffer); True when its chunks changed."""
        known = self.store.document(path)
        if known is not None and known.content_hash == markdown.content_hash(text):
            return False
        # size/mtime -1: the row came from a buffer, so the next sync re-reads the file on disk.
        note = NoteFile(path, str(self.root / path), -1, -1)
        with self.writing():
            self._write_batch([(note, text)], [])
        return True

    def remove_path(self, path: str) -> None:
        with self.writing():
            self._write_batch([], [path])

    def _write_batch(
        self,
        batch: list[tuple[NoteFile, str]],
        deleted: list[str],
        read_warnings: dict[str, str] | None = None,
    ) -> list[Skipped]:
        warnings: list[Skipped] = []
        parsed = []
        for note, text in batch:
            parsed_note = markdown.parse(
                note.path, text, self.cfg.chunk_target_tokens, self.cfg.chunk_max_tokens
            )
            if read_warnings and note.path in read_warnings:
                parsed_note.warnings.insert(0, read_warnings[note.path])
            warnings += [Skipped(note.path, w) for w in parsed_note.warnings]
            parsed.append((note, text, parsed_note))
        removed: list[int] = []
        added: list[tuple[int, Chunk]] = []
        with self._failing_writes():
            with self.store.transaction() as db:
                for path in deleted:
                    removed += self.store.delete_document(db, path)
                for note, text, p in parsed:
                    removed += self.store.delete_document(db, note.path)
                    keys = self.store.insert_chunks(db, p.chunks)
                    added += list(zip(keys, p.chunks, strict=True))
                    self.store.put_document(
                        db,
                        Document(
                            note.path,
                            p.title,
                            p.tags,
                            p.aliases,
                            note.size,
                            note.mtime_ns,
                            markdown.content_hash(text),
                            p.warnings,
                        ),
                    )
                gen = int(self.store.get_meta("lexical_gen", "0")) + 1
                self.store.set_meta(db, "lexical_gen", str(gen))
            # SQLite has committed: a failure below leaves lexical.gen behind, so the next open
            # rebuilds Tantivy from SQLite.
            self.lexical.write(removed, added)
            _write_atomic(self.dir / "lexical.gen", str(gen))
        if self.vectors is not None and self.embedder is not None:
            self.vectors.remove(removed)
            keys, vecs = self.store.vectors_for(self.embedder.id, [k for k, _ in added])
            self.vectors.add(keys, vecs)
        return warnings

    @contextmanager
    def _failing_writes(self) -> Iterator[None]:
        """A write that fails (disk full, read-only, I/O error) is one clear IndexError_."""
        try:
            yield
        except (OSError, sqlite3.Error, ValueError) as e:
            raise IndexError_(
                f"cannot write the index at {self.dir}: {_reason(e)}; the "
                "previous index still serves"
            ) from None

    def embed_pending(
        self,
        batch_size: int = 64,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Compute missing passage vectors, then unit vectors, in batches; returns how many
        passage texts were embedded."""
        if self.embedder is None or self.vectors is None or self.read_only:
            return 0
        total = self.store.count_pending(self.embedder.id)
        done = 0
        last_save = time.monotonic()
        after = -1
        while not (should_stop and should_stop()):
            rows = self.store.pending_embeddings(self.embedder.id, batch_size, after)
            if not rows:
                break
            after = rows[-1][0]
            pending = list({h: (h, c) for _, h, c in rows}.values())  # each text once
            try:
                vecs = self.embedder.embed([embedding_text(c) for _, c in pending])
            except EmbedderError as e:
                self.embed_error = str(e)
                log.warning("embedding stopped: %s", e)
                break
            hashes = [h for h, _ in pending]
            with self._failing_writes():
                self.store.put_embeddings(self.embedder.id, hashes, vecs)
            keys, stored = self._vectors_for_hashes(hashes)
            self.vectors.add(keys, stored)
            done += len(pending)
            if progress:
                progress("embedding", done, total)
            if time.monotonic() - last_save > 10:
                self._save_vectors()
                last_save = time.monotonic()
        self._save_vectors()
        self._embed_units(batch_size, progress, should_stop)
        return done

    def _embed_units(
        self,
        batch_size: int,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """Give every passage that has a vector one vector per quotable unit (capped at
        units.MAX_UNITS): the evidence that some sentence inside it answers a question, which
        the passage's single vector blurs. Runs after passages, so search never waits on it."""
        assert self.embedder is not None
        model = self._units_model()
        total = self.store.count_pending(model, "unit_vectors")
        done, after = 0, -1
        per_batch = max(batch_size // 4, 8)  # passages per batch; each brings several units
        while not (should_stop and should_stop()):
            rows = self.store.pending_units(self.embedder.id, model, per_batch, after)
            if not rows:
                break
            after = rows[-1][0]
            todo = {c.content_hash: c for _, c in rows}
            texts: list[str] = []
            spans: list[tuple[str, int, int]] = []
            for h, c in todo.items():
                found = units.units(c.text)[: units.MAX_UNITS]
                n = len(found) if len(found) > 1 else 0
                spans.append((h, len(texts), n))
                where = list(dict.fromkeys([c.title, *c.heading_path]))
                texts += [units.embedding_text(where, u) for u in found[:n]]
            try:
                vecs = self.embedder.embed(texts) if texts else np.zeros((0, self.embedder.dim))
            except EmbedderError as e:
                self.embed_error = str(e)
                log.warning("embedding stopped: %s", e)
                break
            with self._failing_writes():
                self.store.put_unit_vectors(model, [(h, vecs[i : i + n]) for h, i, n in spans])
            done += len(todo)
            if progress:
                progress("units", done, total)

    def chunk_vectors(self, keys: list[int]) -> dict[int, np.ndarray]:
        """Stored passage vectors by chunk key (for scoring passages only one retriever found)."""
        if self.embedder is None or not keys:
            return {}
        found, vecs = self.store.vectors_for(self.embedder.id, keys)
        return dict(zip(found, vecs, strict=True))

    def unit_vectors(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors (units × dim) of these passages, by content hash. A passage of
        one unit has none of its own: its passage vector (1 × dim) stands for its unit."""
        if self.embedder is None:
            return {}
        out = self.store.unit_vectors(self._units_model(), hashes)
        single = [h for h, m in out.items() if not len(m)]
        for h in single:
            del out[h]
        for h, v in self.store.vectors_by_hash(self.embedder.id, single).items():
            out[h] = v[None, :]
        return out

    def _units_model(self) -> str:
        assert self.embedder is not None
        return f"{self.embedder.id}/{units.VERSION}"

    def pending_vectors(self) -> int:
        if self.embedder is None or self.vectors is None:
            return 0
        return self.store.count_pending(self.embedder.id)

    # reading ---------------------------------------------------------------------------------
    def lexical_search(self, question: str, limit: int) -> list[tuple[int, float]]:
        latin, cjk = query_terms(question)
        return self.lexical.search(latin, cjk, limit, cjk_weights(question))

    def unknown_words(self, question: str) -> list[str]:
        """The question's Latin-script content words (3+ letters) that no note contains. Korean
        words are not judged: a Korean word missing from the Korean notes is no evidence that
        the English notes lack the thing (`백업` asked of notes that say "backup")."""
        latin, _ = query_terms(question)
        missing = set(self.lexical.unknown_terms([t for t in latin if len(t) >= 3], []))
        words = dict.fromkeys(
            w
            for w in re.findall(r"[A-Za-z][A-Za-z0-9_.+#-]*", question)
            if set(latin_terms(w)) & missing
        )
        return list(words) or sorted(missing)

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

    # opening ---------------------------------------------------------------------------------
    def _check_versions(self) -> None:
        stored = self.store.get_meta("versions")
        current = f"{PARSER_VERSION}/{CHUNKER_VERSION}/{INDEX_VERSION}"
        if self.read_only:
            if stored and stored != current:
                raise IndexError_(
                    f"the index at {self.dir} was built by another version of "
                    f"kebab ({stored}) and cannot be rebuilt: {self.read_only}"
                )
            return
        if stored and stored != current:
            log.warning("index format changed (%s → %s): rebuilding", stored, current)
            with self.store.transaction() as db:
                db.execute("DELETE FROM chunks")
                db.execute("DELETE FROM documents")
                self.store.set_meta(db, "lexical_gen", "0")
            (self.dir / "lexical.gen").unlink(missing_ok=True)
        with self.store.transaction() as db:
            self.store.set_meta(db, "versions", current)

    def _open_lexical(self) -> Lexical:
        folder = self.dir / "lexical"
        gen_file = self.dir / "lexical.gen"
        if self.read_only:  # Tantivy needs a writable folder even to read: rebuild it in memory
            lexical = Lexical.in_memory()
            for rows in self.store.iter_chunks():
                lexical.write([], rows)
            return lexical
        want = self.store.get_meta("lexical_gen", "0")
        have = gen_file.read_text().strip() if gen_file.is_file() else "0"
        try:
            lexical = Lexical(folder) if have == want else None
        except (OSError, ValueError) as e:
            log.warning("lexical index unreadable (%s): rebuilding from SQLite", e)
            lexical = None
        if lexical is None or (want != "0" and lexical.count() == 0 and self.store.counts()[1]):
            log.info("lexical index behind SQLite (gen %s, want %s): rebuilding", have, want)
            lexical = Lexical.recreate(folder)
            for rows in self.store.iter_chunks():
                lexical.write([], rows)
            _write_atomic(gen_file, want)
        return lexical

    def _open_vectors(self) -> None:
        if self.embedder is None:
            return
        if not self.embedder.dim:
            try:
                self.embedder.embed(["kebab"])  # learns the dimension of a server's model
            except EmbedderError as e:
                self.embed_error = str(e)
                log.warning("vector search off: %s", e)
                return
        model = f"{self.embedder.backend}:{self.embedder.id}:{self.embedder.dim}"
        path = self.dir / VECTORS_FILE
        if not self.read_only:  # the f16 file of before i8 with exact rescoring
            (self.dir / "vectors.usearch").unlink(missing_ok=True)
        if self.store.get_meta("embedding", model) != model:
            if self.read_only:
                self.embed_error = (
                    f"the index holds vectors of another embedding model and "
                    f"is read-only ({self.read_only}); vector search is off"
                )
                return
            log.warning("embedding model changed to %s: vectors will be rebuilt", model)
            path.unlink(missing_ok=True)
            with self.store.transaction() as db:
                db.execute("DELETE FROM embeddings WHERE model != ?", (self.embedder.id,))
        # Unit vectors of another model or another way of splitting units are stale. Nothing
        # is written when nothing changed: opening to read costs no transaction.
        stale_units = self.store.has_other_units(self._units_model())
        if not self.read_only and (self.store.get_meta("embedding") != model or stale_units):
            with self.store.transaction() as db:
                self.store.set_meta(db, "embedding", model)
                db.execute("DELETE FROM unit_vectors WHERE model != ?", (self._units_model(),))
        self.vectors = Vectors(path, self.embedder.dim)
        have = self.vectors.keys()
        want = self.store.vector_keys(self.embedder.id)
        if have != want:  # a crash lost a save, or chunks changed since: repair from SQLite
            self.vectors.remove(sorted(have - want))
            keys, vecs = self.store.vectors_for(self.embedder.id, sorted(want - have))
            self.vectors.add(keys, vecs if keys else vecs[:0])
            self._save_vectors()

    def _vectors_for_hashes(self, hashes: list[str]) -> tuple[list[int], np.ndarray]:
        assert self.embedder is not None
        with self.store.lock:
            marks = ",".join("?" * len(hashes))
            keys = [
                r[0]
                for r in self.store.db.execute(
                    f"SELECT key FROM chunks WHERE content_hash IN ({marks})", hashes
                )
            ]
        return self.store.vectors_for(self.embedder.id, keys)

    def _save_vectors(self) -> None:
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


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise


def _keep_private(path: Path) -> None:
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


def _reason(e: BaseException) -> str:
    """What went wrong, in a few words: 'No space left on device', 'database or disk is full'."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).split("\n")[0][:200] or type(e).__name__

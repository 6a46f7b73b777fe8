"""Bringing the index up to date with the notes: which notes changed (size and mtime first,
then the content hash), reading and writing them a batch at a time, and removing the gone."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from kebab import links, markdown
from kebab.index import vector_rows
from kebab.index.backlog import Pace, embed_now
from kebab.index.disk import failing_writes, write_atomic
from kebab.index.files import NoteFile, read_note, scan
from kebab.index.parts import IndexParts, Progress
from kebab.model import Chunk, Document, IndexSummary, Skipped

BATCH_FILES = 256


def sync(
    ix: IndexParts,
    overrides: dict[str, str] | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    reread: Collection[str] = (),
) -> IndexSummary:
    """Bring chunks and BM25 up to date with the files (and open buffers in `overrides`).

    `reread` names notes to read from their files even when size and mtime say nothing
    changed (a closed buffer whose unsaved text was indexed): each is replaced in its batch's
    one transaction, so no search meanwhile finds the note missing.

    `should_stop` is checked between batches: a stopped sync leaves a consistent index that
    the next sync completes. Each batch is one commit, so searches meanwhile see the notes
    of the batches before it; with `should_stop` (someone may wait) batches are short.
    """
    started = time.perf_counter()
    if ix.read_only:
        with ix.writing():  # raises: say so before reading every note
            pass
    overrides = overrides or {}
    notes, skipped = scan(ix.root, ix.cfg.ignore, ix.cfg.max_file_bytes)
    known = ix.store.documents()
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
            and note.path not in reread
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
        and sorted((s.path, s.reason) for s in skipped) == ix.store.skipped()
    ):
        return summary(ix, started, skipped, warnings, counts)
    with ix.writing():
        stopped = False
        start = 0
        pace = Pace(BATCH_FILES, should_stop)  # short batches: the first notes are found at once
        while start < len(candidates):
            if should_stop and should_stop():
                stopped = True  # finish nothing half-way; the next sync picks this up
                break
            batch = candidates[start : start + pace.start()]
            warnings += sync_batch(ix, batch, known, overrides, skipped, deleted, counts)
            pace.done(len(batch))
            start += len(batch)
            if progress:
                progress("indexing", start, len(candidates))
        if deleted and not stopped:
            write_batch(ix, [], deleted)
            counts["deleted"] = len(deleted)
        with failing_writes(ix.dir), ix.store.transaction() as db:
            ix.store.replace_skipped(db, sorted((s.path, s.reason) for s in skipped))
    return summary(ix, started, skipped, warnings, counts)


def sync_batch(
    ix: IndexParts,
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
            else read_note(note, ix.cfg.max_file_bytes)
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
        with failing_writes(ix.dir), ix.store.transaction() as db:
            for note in touch:
                ix.store.touch_document(db, note.path, note.size, note.mtime_ns)
    if todo:
        warnings += write_batch(ix, todo, [], read_warnings)
    return warnings


def summary(
    ix: IndexParts,
    started: float,
    skipped: list[Skipped],
    warnings: list[Skipped],
    counts: dict[str, int],
) -> IndexSummary:
    n_docs, n_chunks = ix.store.counts()
    return IndexSummary(
        root=str(ix.root),
        index_dir=str(ix.dir),
        files=n_docs,
        chunks=n_chunks,
        embedded=0,
        pending_vectors=ix.pending_vectors(),
        skipped=skipped,
        warnings=warnings,
        seconds=round(time.perf_counter() - started, 3),
        **counts,
    )


def update_text(ix: IndexParts, path: str, text: str) -> bool:
    """Re-index one note from `text` (an unsaved buffer); True when its chunks changed."""
    known = ix.store.document(path)
    if known is not None and known.content_hash == markdown.content_hash(text):
        return False
    # size/mtime -1: the row came from a buffer, so the next sync re-reads the file on disk.
    note = NoteFile(path, str(ix.root / path), -1, -1)
    with ix.writing():
        write_batch(ix, [(note, text)], [])
    embed_now(ix, [c for _, c in ix.store.chunks_of(path)])
    return True


def _as_written(source: str, target: str) -> str:
    """Resolves nothing: keeps what a link is resolved by, for the index's links table."""
    return target


def write_batch(
    ix: IndexParts,
    batch: list[tuple[NoteFile, str]],
    deleted: list[str],
    read_warnings: dict[str, str] | None = None,
) -> list[Skipped]:
    warnings: list[Skipped] = []
    parsed = []
    for note, text in batch:
        parsed_note = markdown.parse(
            note.path, text, ix.cfg.chunk_target_tokens, ix.cfg.chunk_max_tokens
        )
        if read_warnings and note.path in read_warnings:
            parsed_note.warnings.insert(0, read_warnings[note.path])
        warnings += [Skipped(note.path, w) for w in parsed_note.warnings]
        parsed.append((note, text, parsed_note))
    removed: list[int] = []
    added: list[tuple[int, Chunk]] = []
    with failing_writes(ix.dir):
        with ix.store.transaction() as db:
            for path in deleted:
                removed += ix.store.delete_document(db, path)
            for note, text, p in parsed:
                removed += ix.store.delete_document(db, note.path)
                keys = ix.store.insert_chunks(db, p.chunks)
                added += list(zip(keys, p.chunks, strict=True))
                ix.store.put_document(
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
                        p.fields,
                    ),
                )
                ix.store.put_links(db, links.links_in(note.path, text, _as_written))
            gen = int(ix.store.get_meta("lexical_gen", "0")) + 1
            ix.store.set_meta(db, "lexical_gen", str(gen))
        # SQLite has committed: a failure below leaves lexical.gen behind, so the next open
        # rebuilds Tantivy from SQLite.
        ix.lexical.write(removed, added)
        write_atomic(ix.dir / "lexical.gen", str(gen))
    if ix.vectors is not None and ix.embedder is not None:
        ix.vectors.remove(removed)
        keys, vecs = vector_rows.vectors_for(ix.store, ix.embedder.id, [k for k, _ in added])
        ix.vectors.add(keys, vecs)
    return warnings

"""Opening an index: the format stamp, the lexical index checked against SQLite's generation,
and the vector file reconciled with SQLite (which is the truth: both are caches of it)."""

from __future__ import annotations

import logging

from kebab.errors import EmbedderError, IndexError_
from kebab.index import vector_rows
from kebab.index.disk import write_atomic
from kebab.index.lexical import Lexical
from kebab.index.parts import IndexParts
from kebab.index.vectors import FILE as VECTORS_FILE
from kebab.index.vectors import Vectors
from kebab.model import CHUNKER_VERSION, INDEX_VERSION, PARSER_VERSION

log = logging.getLogger(__name__)


def check_versions(ix: IndexParts) -> None:
    stored = ix.store.get_meta("versions")
    current = f"{PARSER_VERSION}/{CHUNKER_VERSION}/{INDEX_VERSION}"
    if ix.read_only:
        if stored and stored != current:
            raise IndexError_(
                f"the index at {ix.dir} was built by another version of "
                f"kebab ({stored}) and cannot be rebuilt: {ix.read_only}"
            )
        return
    if stored and stored != current:
        log.warning("index format changed (%s → %s): rebuilding", stored, current)
        with ix.store.transaction() as db:
            db.execute("DELETE FROM chunks")
            db.execute("DELETE FROM documents")
            db.execute("DELETE FROM links")
            ix.store.set_meta(db, "lexical_gen", "0")
        (ix.dir / "lexical.gen").unlink(missing_ok=True)
    with ix.store.transaction() as db:
        ix.store.set_meta(db, "versions", current)


def open_lexical(ix: IndexParts) -> Lexical:
    folder = ix.dir / "lexical"
    gen_file = ix.dir / "lexical.gen"
    if ix.read_only:  # Tantivy needs a writable folder even to read: rebuild it in memory
        lexical = Lexical.in_memory()
        for rows in ix.store.iter_chunks():
            lexical.write([], rows)
        return lexical
    want = ix.store.get_meta("lexical_gen", "0")
    have = gen_file.read_text().strip() if gen_file.is_file() else "0"
    try:
        lexical = Lexical(folder) if have == want else None
    except (OSError, ValueError) as e:
        log.warning("lexical index unreadable (%s): rebuilding from SQLite", e)
        lexical = None
    if lexical is None or (want != "0" and lexical.count() == 0 and ix.store.counts()[1]):
        log.info("lexical index behind SQLite (gen %s, want %s): rebuilding", have, want)
        lexical = Lexical.recreate(folder)
        for rows in ix.store.iter_chunks():
            lexical.write([], rows)
        write_atomic(gen_file, want)
    return lexical


def open_vectors(ix: IndexParts) -> None:
    if ix.embedder is None:
        return
    if not ix.embedder.dim:
        try:
            ix.embedder.embed(["kebab"])  # learns the dimension of a server's model
        except EmbedderError as e:
            ix.embed_error = str(e)
            log.warning("vector search off: %s", e)
            return
    model = f"{ix.embedder.backend}:{ix.embedder.id}:{ix.embedder.dim}"
    path = ix.dir / VECTORS_FILE
    if not ix.read_only:  # the f16 file of before i8 with exact rescoring
        (ix.dir / "vectors.usearch").unlink(missing_ok=True)
    if ix.store.get_meta("embedding", model) != model:
        if ix.read_only:
            ix.embed_error = (
                f"the index holds vectors of another embedding model and "
                f"is read-only ({ix.read_only}); vector search is off"
            )
            return
        log.warning("embedding model changed to %s: vectors will be rebuilt", model)
        path.unlink(missing_ok=True)
        with ix.store.transaction() as db:
            db.execute("DELETE FROM embeddings WHERE model != ?", (ix.embedder.id,))
    # Unit vectors of another model or another way of splitting units are stale. Nothing
    # is written when nothing changed: opening to read costs no transaction.
    stale_units = vector_rows.has_other_units(ix.store, ix.units_model())
    if not ix.read_only and (ix.store.get_meta("embedding") != model or stale_units):
        with ix.store.transaction() as db:
            ix.store.set_meta(db, "embedding", model)
            db.execute("DELETE FROM unit_vectors WHERE model != ?", (ix.units_model(),))
    ix.vectors = Vectors(path, ix.embedder.dim)
    have = ix.vectors.keys()
    want = vector_rows.vector_keys(ix.store, ix.embedder.id)
    if have != want:  # a crash lost a save, or chunks changed since: repair from SQLite
        ix.vectors.remove(sorted(have - want))
        keys, vecs = vector_rows.vectors_for(ix.store, ix.embedder.id, sorted(want - have))
        ix.vectors.add(keys, vecs if keys else vecs[:0])
        ix.save_vectors()

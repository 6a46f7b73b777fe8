"""Tantivy: BM25 over pre-analysed terms, built term by term (never through the query parser).

Documents and queries are analysed by `kebab.text` (stemmed Latin words; CJK bigrams in their own
fields). Indexed fields use the built-in
`whitespace` tokenizer on those terms, so nothing needs re-registering when the index is opened.
The query parser is avoided on purpose: it turns Korean words into phrase queries and rejects
text such as `allow_credentials:`.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import tantivy

from kebab.markdown import plain_text
from kebab.model import Chunk
from kebab.text import cjk_terms, latin_terms, query_terms

__all__ = ["Lexical", "query_terms"]

# One clause per term: the best of its fields plus a tenth of the others. No field boosts: on the
# dev half of both eval sets, boosting headings, paths and tags (1.5–2.5) lost to plain fields
# (lexical MRR 0.721 vs 0.727, hybrid 0.723 vs 0.735), as a plain BM25 baseline beat kebab's
# boosted lexical side on held-out notes; a summed (tie 1.0) query lost too (0.688).
TIE_BREAKER = 0.1
_LATIN_FIELDS = ("body", "heading", "path", "tags")  # where a Latin term of a question is sought
BOOSTS = {"body": 1.0, "heading": 1.0, "path": 1.0, "tags": 1.0, "cjk": 1.0, "cjk_heading": 1.0}


class Lexical:
    """One Tantivy index in `folder`, keyed by the SQLite chunk key."""

    def __init__(self, folder: Path | None) -> None:
        """The index in `folder`; None: in memory (for an index folder that is read-only)."""
        self.folder = folder
        if folder is None:
            self.index = tantivy.Index(_schema())
            return
        folder.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(_schema(), path=str(folder), reuse=True)

    @classmethod
    def recreate(cls, folder: Path) -> Lexical:
        shutil.rmtree(folder, ignore_errors=True)
        return cls(folder)

    @classmethod
    def in_memory(cls) -> Lexical:
        return cls(None)

    def write(self, remove: Iterable[int], add: Iterable[tuple[int, Chunk]]) -> None:
        """Delete and add in one commit: readers see the old or the new state, never half."""
        writer = self.index.writer(heap_size=50_000_000, num_threads=1)
        try:
            for key in remove:
                writer.delete_documents_by_term("key", key)
            for key, chunk in add:
                writer.add_document(_document(key, chunk))
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise
        self.index.reload()

    def search(
        self,
        latin: list[str],
        cjk: list[str],
        limit: int,
        weights: dict[str, float] | None = None,
        patterns: dict[str, float] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk key, BM25 score) best first; empty when the question has no usable terms.
        `weights` scales a term's clause (CJK bigrams: a word counts once, `text.cjk_weights`);
        `patterns` are regular expressions over Latin terms (`kebab.loanwords`), with theirs."""
        # One clause per term: the best of its fields plus a share of the others, so a word that
        # is both a note's title and its path (tldr: every page) is not counted three times over.
        schema = self.index.schema
        clauses = []
        for terms, fields in (
            (latin, _LATIN_FIELDS),
            (cjk, ("cjk", "cjk_heading")),
        ):
            for term in terms:
                per_field = [_boosted(tantivy.Query.term_query(schema, f, term), f) for f in fields]
                clause = tantivy.Query.disjunction_max_query(per_field, TIE_BREAKER)
                w = (weights or {}).get(term, 1.0)
                clauses.append(clause if w == 1.0 else tantivy.Query.boost_query(clause, w))
        searcher = self.index.searcher()
        for pattern, w in (patterns or {}).items():
            spelled = self._spelled(searcher, pattern)
            if spelled is not None:
                clauses.append(tantivy.Query.boost_query(spelled, w))
        if not clauses:
            return []
        query = tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in clauses])
        result = searcher.search(query, limit, count=False)
        return [(int(searcher.doc(addr)["key"][0]), float(score)) for score, addr in result.hits]

    def spells(self, pattern: str) -> bool:
        """Whether some passage holds a Latin term `pattern` (a regular expression) matches, in
        any field a Latin term is looked for in (`unknown_terms`'s)."""
        searcher = self.index.searcher()
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.regex_query(self.index.schema, f, pattern))
                for f in _LATIN_FIELDS
            ]
        )
        return bool(getattr(searcher.search(query, 1, count=True), "count", 0))

    def _spelled(self, searcher: tantivy.Searcher, pattern: str) -> tantivy.Query | None:
        """A clause for passages holding a term `pattern` spells, scored as one matched term;
        None when it matches no passage or so many (over 2%) that it says nothing."""
        schema = self.index.schema
        per_field = [
            _boosted(tantivy.Query.regex_query(schema, f, pattern), f)
            for f in ("body", "heading", "path")
        ]
        clause = tantivy.Query.disjunction_max_query(per_field, TIE_BREAKER)
        found: int | None = getattr(searcher.search(clause, 1, count=True), "count", None)
        if not found or found > max(20, 0.02 * int(searcher.num_docs)):
            return None
        return tantivy.Query.const_score_query(clause, 1.0)

    def unknown_terms(self, latin: list[str], cjk: list[str]) -> list[str]:
        """Query terms that occur in no indexed passage at all."""
        searcher = self.index.searcher()
        out = [t for t in latin if not any(searcher.doc_freq(f, t) for f in _LATIN_FIELDS)]
        out += [t for t in cjk if not any(searcher.doc_freq(f, t) for f in ("cjk", "cjk_heading"))]
        return out

    def rarity(self, terms: list[str]) -> dict[str, float]:
        """Each Latin term's inverse document frequency over passages (body, heading, path):
        how much finding it says about a passage."""
        searcher = self.index.searcher()
        n = max(1, int(searcher.num_docs))
        out = {}
        for t in terms:
            df = max(searcher.doc_freq(f, t) for f in ("body", "heading", "path"))
            out[t] = math.log(1 + n / (1 + df))
        return out

    def count(self) -> int:
        return int(self.index.searcher().num_docs)


def _boosted(query: tantivy.Query, field: str) -> tantivy.Query:
    boost = BOOSTS[field]
    return query if boost == 1.0 else tantivy.Query.boost_query(query, boost)


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_integer_field("key", stored=True, indexed=True, fast=True)
    for field in ("body", "heading", "path", "tags", "cjk", "cjk_heading"):
        b.add_text_field(field, stored=False, tokenizer_name="whitespace", index_option="freq")
    return b.build()


def _document(key: int, chunk: Chunk) -> tantivy.Document:
    body = plain_text(chunk.text)
    heading = " ".join([chunk.title, *chunk.heading_path])
    stem = os.path.splitext(chunk.path)[0].replace("/", " ").replace("-", " ").replace("_", " ")
    return tantivy.Document(
        key=key,
        body=" ".join(latin_terms(body)),
        heading=" ".join(latin_terms(heading)),
        path=" ".join(latin_terms(stem)),
        tags=" ".join(latin_terms(" ".join(chunk.tags))),
        cjk=" ".join(cjk_terms(body)),
        cjk_heading=" ".join(cjk_terms(heading + " " + stem)),
    )

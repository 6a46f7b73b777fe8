"""Warm query latency, in process: Workspace.search in each mode, and the raw engines beneath it.

    .venv/bin/python bench/bench_query.py [--corpora tldr fastapi-en] [--index-dir DIR]

Queries are the corpus's fixtures/eval questions plus the first heading of random notes. Every
query runs once untimed (warm-up), then `--reps` times, modes interleaved so background load hits
them alike. The floors use the same index and the same queries: Tantivy through
`index.lexical.search` (and, inside it, the engine's `searcher.search` on kebab's own query,
without building the query or reading stored keys), USearch
through `index.vectors.search` with a precomputed query vector, the query embedding alone, and the
SQLite chunk lookup and fusion that hybrid adds on top. Indexes are kept in
bench/out/index/<corpus> (git-ignored) and brought up to date first, which is slow only the first
time; bench_index.py --out bench/out/index leaves them there too.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any
from unittest import mock

from _common import (
    OUT,
    corpus_root,
    emit,
    first_heading,
    log,
    machine,
    make_use_embedder,
    questions,
    rss,
    stats_ms,
)
from kebab.index.lexical import query_terms
from kebab.index.vectors import EXACT_BELOW
from kebab.model import SearchMode
from kebab.search import Fusion, fuse
from kebab.workspace import Workspace

MODES: tuple[SearchMode, ...] = ("lexical", "vector", "hybrid")


def query_set(corpus: str, root: Path, headings: int, seed: int) -> dict[str, list[str]]:
    notes = sorted(root.rglob("*.md"))
    picked: list[str] = []
    for path in random.Random(seed).sample(notes, min(len(notes), headings * 3)):
        heading = first_heading(path)
        if heading and heading not in picked:
            picked.append(heading)
        if len(picked) == headings:
            break
    return {"questions": questions(corpus), "headings": picked}


class _TimedSearcher:
    """A Tantivy searcher that times `search` (the engine) and passes everything else through."""

    def __init__(self, inner: Any, into: list[float]) -> None:
        self._inner, self._into = inner, into

    def search(self, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return self._inner.search(*args, **kwargs)
        finally:
            self._into.append(time.perf_counter() - t)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TimedIndex:
    """Stands in for `Lexical.index` so kebab's own query is timed inside `searcher.search`."""

    def __init__(self, inner: Any, into: list[float]) -> None:
        self._inner, self._into = inner, into

    def searcher(self) -> _TimedSearcher:
        return _TimedSearcher(self._inner.searcher(), self._into)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def bench_corpus(
    name: str, index_dir: Path, emb: Any, reps: int, headings: int, seed: int
) -> dict[str, Any]:
    root = corpus_root(name)
    ws = Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=emb)
    log(f"{name}: bringing {index_dir} up to date (slow only on the first run)")
    t = time.perf_counter()
    summary = ws.refresh()
    prepare = {
        "s": round(time.perf_counter() - t, 3),
        "added": summary.added,
        "updated": summary.updated,
        "embedded": summary.embedded,
    }
    qs = query_set(name, root, headings, seed)
    queries = qs["questions"] + qs["headings"]
    k, depth = ws.cfg.search.k, max(ws.cfg.search.candidates, ws.cfg.search.k)
    n_vectors = len(ws.index.vectors) if ws.index.vectors is not None else 0
    log(f"{name}: {len(queries)} queries x {reps} reps, k={k}, depth={depth}, {n_vectors} vectors")
    for q in queries:  # warm-up: caches, lazy imports, Tantivy searcher, model scratch buffers
        for mode in MODES:
            ws.search(q, k=k, mode=mode)

    t_mode: dict[str, list[float]] = {m: [] for m in MODES}
    t_part: dict[str, list[float]] = {
        p: []
        for p in (
            "query_terms",
            "tantivy_lexical_search",
            "tantivy_engine_search",
            "embed_query",
            "usearch_vectors_search",
            "sqlite_chunks_by_key",
            "fuse",
        )
    }
    hits_per_query: list[int] = []
    timed_index = _TimedIndex(ws.index.lexical.index, t_part["tantivy_engine_search"])
    clock = time.perf_counter
    for _ in range(reps):
        for q in queries:
            for mode in MODES:
                t = clock()
                hits = ws.search(q, k=k, mode=mode)
                t_mode[mode].append(clock() - t)
                if mode == "hybrid":
                    hits_per_query.append(len(hits))
            t = clock()
            latin, cjk = query_terms(q)
            t_part["query_terms"].append(clock() - t)
            t = clock()
            lex = ws.index.lexical.search(latin, cjk, depth)
            t_part["tantivy_lexical_search"].append(clock() - t)
            with mock.patch.object(ws.index.lexical, "index", timed_index):
                ws.index.lexical.search(latin, cjk, depth)  # again, timing only the engine call
            t = clock()
            qvec = emb.embed([q])[0]
            t_part["embed_query"].append(clock() - t)
            t = clock()
            vec = ws.index.vectors.search(qvec, depth) if ws.index.vectors is not None else []
            t_part["usearch_vectors_search"].append(clock() - t)
            t = clock()
            chunks = ws.index.store.chunks_by_key({key for key, _ in lex} | {key for key, _ in vec})
            t_part["sqlite_chunks_by_key"].append(clock() - t)
            t = clock()
            fuse(lex, vec, Fusion(lexical_weight=ws.cfg.search.lexical_weight), chunks, q)
            t_part["fuse"].append(clock() - t)
    ws.close()
    modes = {m: stats_ms(v) for m, v in t_mode.items()}
    parts = {p: stats_ms(v) for p, v in t_part.items()}
    p50 = {p: v.get("p50_ms", 0.0) for p, v in parts.items()}
    engines = p50["tantivy_engine_search"] + p50["embed_query"] + p50["usearch_vectors_search"]
    kebab_parts = sum(v for p, v in p50.items() if p != "tantivy_engine_search")
    hybrid = modes["hybrid"]["p50_ms"]
    return {
        "corpus": name,
        "prepare": prepare,
        "chunks": summary.chunks,
        "vectors": n_vectors,
        "vector_search_exact": n_vectors < EXACT_BELOW,
        "queries": {"questions": len(qs["questions"]), "headings": len(qs["headings"])},
        "reps": reps,
        "mean_hits": round(sum(hits_per_query) / max(len(hits_per_query), 1), 2),
        "search": modes,
        "floors": parts,
        "engine_floor_p50_ms": round(engines, 3),  # Tantivy + query embedding + USearch
        "parts_sum_p50_ms": round(kebab_parts, 3),  # kebab's steps, timed one by one
        "hybrid_p50_over_engine_floor": round(hybrid / max(engines, 1e-9), 3),
        "hybrid_p50_minus_parts_sum_ms": round(hybrid - kebab_parts, 3),
        "goal_hybrid_p50_under_15ms": hybrid < 15.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", nargs="+", default=["tldr", "fastapi-en"])
    ap.add_argument("--index-dir", type=Path, default=OUT / "index", help="DIR/<corpus> indexes")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--headings", type=int, default=30, help="random notes' first headings")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    result: dict[str, Any] = {"bench": "query", "machine": machine()}
    emb, load_s = make_use_embedder()
    result["embedder"] = {"id": emb.id, "dim": emb.dim, "load_s": load_s}
    result["corpora"] = {
        c: bench_corpus(c, args.index_dir.resolve() / c, emb, args.reps, args.headings, args.seed)
        for c in args.corpora
    }
    result["rss_end"] = rss()
    result["loadavg_end"] = machine()["loadavg"]
    emit(result)


if __name__ == "__main__":
    main()

"""Warm query latency, in process: Workspace.search in each mode, and the raw engines beneath it.

    .venv/bin/python bench/bench_query.py [--corpora tldr fastapi-en] [--index-dir DIR]

Queries are the corpus's fixtures/eval questions plus the first heading of random notes. Every
query runs once untimed (warm-up), then `--reps` times, modes interleaved so background load hits
them alike. The floors use the same index and the same queries: Tantivy through
`index.lexical.search` (and the bare `searcher.search` without reading stored keys), USearch
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

import tantivy

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
from kebab.index.lexical import _boosted, query_terms
from kebab.index.vectors import EXACT_BELOW
from kebab.search import Fusion, fuse
from kebab.workspace import Workspace

MODES = ("lexical", "vector", "hybrid")


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


def tantivy_bare(ws: Workspace, latin: list[str], cjk: list[str], limit: int) -> int:
    """The same boolean-of-term-queries kebab builds, searched without fetching stored keys."""
    index = ws.index.lexical.index
    schema = index.schema
    fields = [(f, latin) for f in ("body", "heading", "path", "tags")]
    fields += [(f, cjk) for f in ("cjk", "cjk_heading")]
    clauses = [
        (tantivy.Occur.Should, _boosted(tantivy.Query.term_query(schema, f, t), f))
        for f, terms in fields
        for t in terms
    ]
    if not clauses:
        return 0
    return len(index.searcher().search(tantivy.Query.boolean_query(clauses), limit).hits)


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
            "tantivy_bare_search",
            "embed_query",
            "usearch_vectors_search",
            "sqlite_chunks_by_key",
            "fuse",
        )
    }
    hits_per_query: list[int] = []
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
            t = clock()
            tantivy_bare(ws, latin, cjk, depth)
            t_part["tantivy_bare_search"].append(clock() - t)
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
            fuse(lex, vec, Fusion(rrf_k=ws.cfg.search.rrf_k), chunks)
            t_part["fuse"].append(clock() - t)
    ws.close()
    modes = {m: stats_ms(v) for m, v in t_mode.items()}
    parts = {p: stats_ms(v) for p, v in t_part.items()}
    floor = sum(
        parts[p]["p50_ms"]
        for p in ("tantivy_lexical_search", "embed_query", "usearch_vectors_search")
    )
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
        "hybrid_p50_over_engine_floor": round(hybrid / max(floor, 1e-9), 3),
        "hybrid_p50_minus_engine_floor_ms": round(hybrid - floor, 3),
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

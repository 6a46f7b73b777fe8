"""USearch exact vs HNSW: search latency and HNSW recall (against exact) as the index grows.

    .venv/bin/python bench/bench_vectors.py [--sizes 1000 5000 20000 50000 100000]

The index is kebab's own (`kebab.index.vectors.Vectors`: cosine, f16, 512-d, connectivity 16,
expansion_add 64, expansion_search 96), grown size by size, and searched the way
`Vectors.search` does (one query, threads=1, limit = kebab's candidate depth of 50). Data: real
USE embeddings of chunk texts, read from the indexes under bench/out/index when bench_index.py
left them there (else embedded now from fastapi-en and obsidian-tasks, up to 5k, and cached);
past the real ones, each vector is a real one plus gaussian noise (sigma per dimension, then
renormalised). The JSON gives nearest-neighbour cosines of real and synthetic points, so the
synthesis can be judged. Queries: the fixtures/eval questions embedded, then noisy real vectors.
The crossover is where HNSW's p50 drops below exact's (log-interpolated between sizes), also
given for "HNSW twice as fast" and for "exact p50 past --budget-ms": the evidence for EXACT_BELOW
in server/kebab/index/vectors.py.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import OUT, corpus_root, emit, log, machine, make_use_embedder, questions, stats_ms
from kebab import markdown
from kebab.embed import normalise
from kebab.index import embedding_text
from kebab.index.vectors import EXACT_BELOW, Vectors

DEPTH = 50  # SearchConfig.candidates: how deep kebab asks the vector index


def real_vectors(emb: Any, index_root: Path, cap: int, rng: np.random.Generator) -> np.ndarray:
    blobs: list[bytes] = []
    for db in sorted(index_root.glob("*/kebab.sqlite")):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        blobs += [
            r[0] for r in con.execute("SELECT vector FROM embeddings WHERE model=?", (emb.id,))
        ]
        con.close()
    if blobs:
        log(f"{len(blobs)} real vectors from {index_root}/*/kebab.sqlite")
        vecs = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    else:
        cache = OUT / f"vectors_base_{emb.id}.npy"
        if cache.is_file():
            vecs = np.load(cache)
        else:
            texts = []
            for corpus in ("fastapi-en", "obsidian-tasks"):
                root = corpus_root(corpus)
                for path in sorted(root.rglob("*.md")):
                    note = markdown.parse(path.relative_to(root).as_posix(), path.read_text())
                    texts += [embedding_text(c) for c in note.chunks]
            texts = texts[:5000]
            log(f"embedding {len(texts)} real chunk texts (cached in {cache})")
            vecs = np.concatenate([emb.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)])
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.save(cache, vecs)
    vecs = vecs[rng.permutation(len(vecs))[:cap]]
    return normalise(vecs)


def noisy(base: np.ndarray, n: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    picks = base[rng.integers(0, len(base), n)]
    return normalise(picks + rng.normal(0, sigma, picks.shape).astype(np.float32))


def nn_cosines(data: np.ndarray, rng: np.random.Generator, sample: int = 300) -> dict[str, float]:
    """Cosine of each sampled point's nearest other point (how clustered the data is)."""
    idx = rng.choice(len(data), min(sample, len(data)), replace=False)
    sims = data[idx] @ data.T
    sims[np.arange(len(idx)), idx] = -1.0
    best = sims.max(axis=1)
    return {
        "p10": round(float(np.percentile(best, 10)), 3),
        "p50": round(float(np.percentile(best, 50)), 3),
        "p90": round(float(np.percentile(best, 90)), 3),
    }


def first_crossing(sizes: list[int], values: list[float], level: float) -> dict[str, Any]:
    """Where `values` (growing with n) first pass `level`, log-log interpolated between sizes."""
    for i, v in enumerate(values):
        if v > level:
            if i == 0:
                return {"n": None, "note": f"already past {level} at n={sizes[0]}"}
            a, b = math.log(values[i - 1]), math.log(v)
            lo, hi = math.log(sizes[i - 1]), math.log(sizes[i])
            n = math.exp(lo + (hi - lo) * (math.log(level) - a) / (b - a)) if b != a else sizes[i]
            return {"n": round(n), "between": [sizes[i - 1], sizes[i]]}
    return {"n": None, "note": f"not past {level} by n={sizes[-1]}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 50000, 100000])
    ap.add_argument("--index-root", type=Path, default=OUT / "index", help="real vectors source")
    ap.add_argument("--base", type=int, default=20000, help="at most this many real vectors")
    ap.add_argument("--sigma", type=float, default=0.02, help="noise per dimension")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-ms", type=float, default=1.0, help="exact search latency budget")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = sorted(args.sizes)
    emb, _ = make_use_embedder()
    base = real_vectors(emb, args.index_root, args.base, rng)
    data = np.concatenate(
        [base[: sizes[-1]], noisy(base, max(0, sizes[-1] - len(base)), args.sigma, rng)]
    )
    qtexts = questions()[: args.queries]
    queries = np.concatenate(
        [emb.embed(qtexts), noisy(base, args.queries - len(qtexts), args.sigma, rng)]
    )
    result: dict[str, Any] = {"bench": "vectors", "machine": machine(), "dim": int(data.shape[1])}
    result["data"] = {
        "real": len(base[: sizes[-1]]),
        "synthetic": max(0, sizes[-1] - len(base)),
        "sigma": args.sigma,
        "nn_cosine_real": nn_cosines(base, rng),
        "nn_cosine_all": nn_cosines(data, rng),
        "queries": {
            "real_questions": len(qtexts),
            "noisy_real_vectors": args.queries - len(qtexts),
        },
    }
    with tempfile.TemporaryDirectory(prefix="kebab-bench-vec-") as tmp:
        index = Vectors(Path(tmp) / "v.usearch", int(data.shape[1])).index  # kebab's settings
        result["settings"] = {
            "metric": str(index.metric_kind),
            "dtype": str(index.dtype),
            "connectivity": index.connectivity,
            "expansion_add": index.expansion_add,
            "expansion_search": index.expansion_search,
            "search_limit": DEPTH,
            "search_threads": 1,
        }
        rows = []
        have = 0
        for n in sizes:
            t = time.perf_counter()
            index.add(np.arange(have, n, dtype=np.uint64), data[have:n], threads=0)
            add_s = time.perf_counter() - t
            log(f"n={n}: added {n - have} in {add_s:.1f}s, searching")
            have = n
            t_exact: list[float] = []
            t_hnsw: list[float] = []
            rec10: list[float] = []
            rec50: list[float] = []
            for q in queries:  # interleaved, so background load hits both alike
                t = time.perf_counter()
                ex = index.search(q, DEPTH, exact=True, threads=1)
                t_exact.append(time.perf_counter() - t)
                t = time.perf_counter()
                hn = index.search(q, DEPTH, exact=False, threads=1)
                t_hnsw.append(time.perf_counter() - t)
                rec10.append(len(set(ex.keys[:10]) & set(hn.keys[:10])) / 10)
                rec50.append(len(set(ex.keys) & set(hn.keys)) / len(ex.keys))
            exact, hnsw = stats_ms(t_exact), stats_ms(t_hnsw)
            rows.append(
                {
                    "n": n,
                    "add_s_all_threads": round(add_s, 2),
                    "exact": exact,
                    "hnsw": hnsw,
                    "exact_over_hnsw_p50": round(exact["p50_ms"] / hnsw["p50_ms"], 2),
                    "recall_at_10": round(float(np.mean(rec10)), 4),
                    "recall_at_50": round(float(np.mean(rec50)), 4),
                }
            )
    result["sizes"] = rows
    ratio = [r["exact_over_hnsw_p50"] for r in rows]
    result["crossover"] = {  # n from which HNSW's p50 beats exact's (by 1x, then by 2x)
        "hnsw_faster": first_crossing(sizes, ratio, 1.0),
        "hnsw_2x_faster": first_crossing(sizes, ratio, 2.0),
        f"exact_p50_over_{args.budget_ms}ms": first_crossing(
            sizes, [r["exact"]["p50_ms"] for r in rows], args.budget_ms
        ),
    }
    result["exact_below_current"] = EXACT_BELOW
    result["loadavg_end"] = machine()["loadavg"]
    emit(result)


if __name__ == "__main__":
    main()

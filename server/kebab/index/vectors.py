"""USearch: cosine nearest neighbours over chunk vectors, keyed by the SQLite chunk key.

Vectors live in SQLite too (by content hash), so this file is a cache: it is saved atomically
(temp file + rename) and reconciled against SQLite on open, which repairs a save lost to a crash
without re-embedding anything. Stored as i8 (a quarter of float32's memory: 51 MiB at 100k
passages): the index only finds candidates, and `Index.vector_search` scores them exactly from
the float32 vectors in SQLite, so every cosine kebab uses is exact.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
from usearch.index import Index

# Below this many vectors search is exhaustive: exact recall for under ~1 ms (bench_vectors.py:
# 0.87 ms at 20k, 2.4 ms at 50k, against 0.12-0.22 ms for HNSW at recall@10 0.99). Above it the
# HNSW graph is searched.
EXACT_BELOW = 20_000
FILE = "vectors-i8.usearch"  # named for its format: a file of another is rebuilt from SQLite


class Vectors:
    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.lock = threading.RLock()
        self.index = _empty(dim)
        if path.is_file():
            try:
                self.index.load(str(path))
            except Exception:  # a damaged cache is rebuilt from SQLite when the index opens
                self.index = _empty(dim)
        self.dirty = False

    def __len__(self) -> int:
        return len(self.index)

    def keys(self) -> set[int]:
        with self.lock:
            # One bulk read: iterating `index.keys` costs a native call per key (1.1 s at 14k).
            return set(np.asarray(self.index.keys).tolist()) if len(self.index) else set()

    def add(self, keys: list[int], vectors: np.ndarray) -> None:
        if not keys:
            return
        with self.lock:
            present = [k for k in keys if self.index.contains(k)]
            if present:
                self.index.remove(present)
            self.index.add(np.asarray(keys, dtype=np.uint64), vectors.astype(np.float32), threads=1)
            self.dirty = True

    def remove(self, keys: list[int]) -> None:
        with self.lock:
            present = [k for k in keys if self.index.contains(k)]
            if present:
                self.index.remove(present)
                self.dirty = True

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(chunk key, cosine similarity) best first."""
        with self.lock:
            n = len(self.index)
            if n == 0:
                return []
            matches = self.index.search(
                query.astype(np.float32), min(limit, n), exact=n < EXACT_BELOW, threads=1
            )
        return [
            (int(k), float(1.0 - d)) for k, d in zip(matches.keys, matches.distances, strict=True)
        ]

    def save(self) -> None:
        with self.lock:
            if not self.dirty:
                return
            tmp = self.path.with_suffix(".tmp")
            try:
                self.index.save(str(tmp))
                os.replace(tmp, self.path)
            except BaseException:
                tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
                raise
            self.dirty = False


def _empty(dim: int) -> Index:
    """An empty index with kebab's settings (bench/bench_vectors.py measured them)."""
    return Index(
        ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=64, expansion_search=96
    )

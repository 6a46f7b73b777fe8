"""Embeddings behind one seam: the `Embedder` protocol and `normalise`, which the backends (the
embedded default in `use`, servers in `http`) import; `choose.make_embedder` picks one."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    `id` and `dim` are stored with the index: vectors from different models are never mixed.
    Implementations are synchronous and run in worker threads, never on the event loop.
    """

    backend: str
    id: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def preload(self) -> None:
        """Get ready to embed in the background (load weights); a no-op where nothing loads."""


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms

"""Embedding servers: OpenAI-compatible `/v1/embeddings` and Ollama `/api/embed`.

Synchronous httpx (embedding runs in worker threads), batched, with timeouts and bounded retries
on connection errors, 429 and 5xx. The dimension is learned from the first answer.
"""

from __future__ import annotations

import time

import httpx
import numpy as np

from kebab.config import EmbedConfig, api_key
from kebab.embed import normalise
from kebab.errors import EmbedderError

_DEFAULT_ENDPOINT = {"openai": "http://127.0.0.1:8080", "ollama": "http://127.0.0.1:11434"}
_DEFAULT_MODEL = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}


class HttpEmbedder:
    def __init__(self, cfg: EmbedConfig, retries: int = 3) -> None:
        self.backend = cfg.backend
        self.id = cfg.model or _DEFAULT_MODEL[cfg.backend]
        self.endpoint = (cfg.endpoint or _DEFAULT_ENDPOINT[cfg.backend]).rstrip("/")
        self._batch = max(1, cfg.batch_size)
        self._retries = retries
        headers = {}
        key = api_key(cfg.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            timeout=httpx.Timeout(cfg.timeout_s, connect=5.0), headers=headers
        )
        self.dim = 0

    def preload(self) -> None:
        """Nothing to load: the model lives behind the endpoint."""

    def embed(self, texts: list[str]) -> np.ndarray:
        parts = [self._post(texts[i : i + self._batch]) for i in range(0, len(texts), self._batch)]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = normalise(np.concatenate(parts))
        self.dim = int(out.shape[1])
        return out

    def _post(self, batch: list[str]) -> np.ndarray:
        if self.backend == "ollama":
            url, body = f"{self.endpoint}/api/embed", {"model": self.id, "input": batch}
        else:
            url, body = f"{self.endpoint}/v1/embeddings", {"model": self.id, "input": batch}
        for attempt in range(self._retries + 1):
            try:
                r = self._client.post(url, json=body)
            except httpx.TransportError as e:
                if attempt == self._retries:
                    raise EmbedderError(
                        f"no embedding server at {self.endpoint} ({type(e).__name__}): start it "
                        "or set embed.endpoint"
                    ) from None
                time.sleep(0.5 * 2**attempt)
                continue
            if r.status_code == 429 or r.status_code >= 500:
                if attempt == self._retries:
                    raise EmbedderError(f"embedding server {url} answered {r.status_code}")
                time.sleep(min(float(r.headers.get("retry-after", 0.5 * 2**attempt)), 10.0))
                continue
            if r.status_code != 200:
                raise EmbedderError(
                    f"embedding server {url} answered {r.status_code}: {r.text[:200]}"
                )
            return self._vectors(r.json(), len(batch), url)
        raise AssertionError("unreachable")

    def _vectors(self, data: object, n: int, url: str) -> np.ndarray:
        try:
            if self.backend == "ollama":
                rows = data["embeddings"]  # type: ignore[index]
            else:
                items = sorted(data["data"], key=lambda d: d["index"])  # type: ignore[index]
                rows = [d["embedding"] for d in items]
            out = np.asarray(rows, dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise EmbedderError(
                f"embedding server {url} sent an answer kebab cannot read"
            ) from None
        if out.ndim != 2 or out.shape[0] != n:
            raise EmbedderError(f"embedding server {url} sent {out.shape[0]} vectors for {n} texts")
        return out

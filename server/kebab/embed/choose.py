"""Picking the embedding backend a config asks for. Apart from the seam in `kebab.embed`, which
the backends import: the package never imports its own backends."""

from __future__ import annotations

from kebab.config import EmbedConfig
from kebab.embed import Embedder


def make_embedder(cfg: EmbedConfig) -> Embedder:
    """The embedder a config asks for. Each backend is imported only when chosen (the default
    loads sentencepiece and its weights; a server backend needs neither)."""
    if cfg.backend == "use":
        from kebab.embed.use import UniversalSentenceEncoder

        return UniversalSentenceEncoder()
    from kebab.embed.http import HttpEmbedder

    return HttpEmbedder(cfg)

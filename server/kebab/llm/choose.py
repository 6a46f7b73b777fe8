"""Picking the language model a config asks for. Apart from the seam in `kebab.llm`, which the
backends import: the package never imports its own backends."""

from __future__ import annotations

from typing import Any

from kebab.config import LLMConfig
from kebab.llm import LanguageModel


def make_llm(cfg: LLMConfig, embedder: Any = None, stored: Any = None) -> LanguageModel:
    """The model a config asks for. The extractive answerer reuses the index's embedder and what
    the index stores (`extractive.StoredVectors`: unit vectors, the question's vector)."""
    if cfg.backend == "extractive":
        from kebab.llm.extractive import Extractive

        return Extractive(embedder, stored)
    from kebab.llm.http import HttpChat

    return HttpChat(cfg)

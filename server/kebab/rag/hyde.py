"""HyDE (`rag.hyde`): search by the meaning of a drafted answer, not only the question's words.

Before retrieval the model drafts a short hypothetical answer. The question and the draft are
embedded together with the index's own embedder for the vector side; the lexical side keeps the
raw question, and the refusal gate still judges the question, so a confident draft cannot talk
the gate into answering. The draft is never shown or cited. Off with the extractive backend (it
cannot draft); a failed call falls back to plain retrieval.
"""

from __future__ import annotations

import logging

from kebab.config import Config
from kebab.errors import LLMError
from kebab.llm import LanguageModel, is_generative
from kebab.rag import calls

log = logging.getLogger(__name__)

TEMPLATE = "hyde-v1"
SYSTEM = """Write a short passage that answers the question, as it might read in someone's notes.
One paragraph, under 100 words, plain prose: no preamble, no citations, no caveats.
Write in the language of the question. If you are unsure, write the most plausible answer;
it is only used to search the notes, never shown."""


def enabled(cfg: Config, llm: LanguageModel) -> bool:
    return cfg.rag.hyde and is_generative(llm)


async def vector_query(llm: LanguageModel, cfg: Config, question: str) -> str | None:
    """The text to embed for the vector side (question + draft), or None to search plainly."""
    try:
        draft = await calls.call(llm, cfg, SYSTEM, question, cfg.rag.hyde_max_tokens, question)
    except LLMError as e:
        log.warning("HyDE: no draft (%s); searching with the question alone", e)
        return None
    draft = draft.strip()
    if not draft:
        log.warning("HyDE: the model drafted nothing; searching with the question alone")
        return None
    return f"{question}\n{draft}"

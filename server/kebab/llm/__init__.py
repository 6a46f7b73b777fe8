"""Language models behind one seam: the `LanguageModel` protocol and the types the backends
(`extractive`, `http`) share; `choose.make_llm` picks one.

Every backend streams text pieces asynchronously. Faults surface as `LLMError` carrying any text
that arrived before them, so the caller can keep the partial answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

import msgspec


class Evidence(msgspec.Struct, frozen=True):
    """One packed passage as the model sees it, labelled `[#marker]`."""

    marker: int
    path: str
    heading_path: list[str]
    start_line: int
    end_line: int
    text: str
    content_hash: str = ""  # the passage's, when `text` is all of it (finds its unit vectors)
    score: float = 0.0  # retrieval's fused score (0..1): how sure search is of this passage


class Message(msgspec.Struct, frozen=True):
    role: str  # system | user | assistant
    content: str


class GenerateRequest(msgspec.Struct, frozen=True):
    messages: list[Message]
    question: str
    evidence: list[Evidence]
    temperature: float = 0.0
    seed: int = 42
    max_tokens: int = 1024
    # A follow-up's earlier question: what "it" and "that" lean on. The messages carry the whole
    # thread for a model; an answerer that reads only `question` uses this to find the subject,
    # never to require the earlier question's words.
    follows: str = ""


class LanguageModel(Protocol):
    backend: str
    id: str
    context_tokens: int

    def stream(self, request: GenerateRequest) -> AsyncIterator[str]:
        """Yield answer text pieces as they arrive; raise LLMError on a fault."""
        ...

    async def aclose(self) -> None: ...


async def complete(model: LanguageModel, request: GenerateRequest) -> str:
    """The whole reply to `request`, collected from the stream (the same timeouts and retries)."""
    return "".join([piece async for piece in model.stream(request)])


class Selection(msgspec.Struct, frozen=True):
    """What a quoting answerer chose for a question: the quoted text (`[#n]` markers in it) and
    figures about the units it quoted, which `rag.outcome` weighs to say whether they hold what
    was asked (`answered`) or only come closest (`closest`), for the question and for each thing
    it asks. Empty text: nothing to quote."""

    text: str
    features: dict[str, float] = {}
    # the same figures for each part of a question that asks two or more things (`asks.parts`),
    # read at the quoted unit that fits the part best; empty for a question of one part
    parts: list[dict[str, float]] = []


@runtime_checkable
class Quoter(Protocol):
    """A model that answers by quoting the evidence instead of following a prompt (the
    extractive answerer): it can pick a passage's key sentences for a topic, and nothing
    instruction-following (HyDE, relevance scores, note writing) can be asked of it."""

    def key_sentences(self, topic: str, ev: Evidence, n: int = 2) -> list[str]: ...

    def select(self, question: str, evidence: list[Evidence], follows: str = "") -> Selection: ...


def is_generative(model: LanguageModel) -> bool:
    """Whether `model` follows instructions (a chat server), unlike a `Quoter`."""
    return not isinstance(model, Quoter)

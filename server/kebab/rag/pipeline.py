"""The ask pipeline: retrieve → gate → pack → prompt → generate (streamed) → cite → render → persist.

`prepare()` is everything before the first byte goes to the model (synchronous, run in a worker
thread); `ask()` streams the answer through `on_text` and always persists a row, whether the
answer is grounded, refused, cut by a model fault, or cancelled.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec

from kebab import tokens
from kebab.config import Config
from kebab.errors import LLMError
from kebab.index import Index, versions
from kebab.llm import Evidence, GenerateRequest, LanguageModel, Message
from kebab.model import (
    Answer,
    Citation,
    EmbeddingInfo,
    Hit,
    ModelInfo,
    Range,
    RefusalReason,
    Retrieval,
    SearchMode,
    Usage,
)
from kebab.rag import citations, footnotes, prompt
from kebab.rag import store as answers
from kebab.search import Filters, Fusion, search, term_coverage


class Turn(msgspec.Struct):
    question: str
    answer: str


class AskRequest(msgspec.Struct, forbid_unknown_fields=False):
    """What `kebab/ask` and `kebab ask` take. Validated by msgspec: wrong types are errors."""

    question: str
    k: int | None = None
    mode: SearchMode | None = None
    history: list[Turn] = []
    conversation: str | None = None
    path: str | None = None  # workspace-relative note the question was asked from
    temperature: float | None = None
    seed: int | None = None
    explain: bool = False
    dry_run: bool = False


@dataclass
class Prepared:
    """Everything decided before the model is called."""

    request: AskRequest
    hits: list[Hit]
    evidence: list[Evidence]
    messages: list[Message]
    template: str
    refusal: RefusalReason | None
    top_cosine: float
    coverage: float
    trace_id: str
    started: float
    prepare_ms: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)


OnText = Callable[[str], None]

REFUSE_GATE_EN = "No passage in the notes is close enough to this question to answer it."
REFUSE_GATE_KO = "노트에서 이 질문에 답할 만큼 가까운 내용을 찾지 못했습니다."
REFUSE_EMPTY_EN = "The workspace index has no passages yet."
REFUSE_EMPTY_KO = "워크스페이스 색인에 아직 내용이 없습니다."


def prepare(index: Index, cfg: Config, llm: LanguageModel, req: AskRequest) -> Prepared:
    """Retrieve, gate, pack and build the prompt for `req`."""
    started = time.perf_counter()
    if req.conversation and not req.history:  # the server keeps the thread
        turns = answers.conversation_turns(index.store, req.conversation, limit=10)
        req = msgspec.structs.replace(req, history=[Turn(q, a) for q, a in turns])
    k = req.k or cfg.search.k
    mode = req.mode or cfg.search.mode
    query = req.question
    if req.history:  # follow-ups lean on the previous turn's wording, cheaply
        query = f"{req.question}\n{req.history[-1].question}"
    hits = search(index, query, k + 4, mode, Filters(), cfg.search.candidates,
                  Fusion(rrf_k=cfg.search.rrf_k))
    if req.path:  # the passage that holds the question is never its own evidence
        hits = [h for h in hits if not (h.path == req.path and req.question.strip() in h.text)]
    hits = hits[:k]
    top_cos = max((h.vector_score for h in hits if h.vector_score is not None), default=0.0)
    coverage = max((term_coverage(query, " ".join([*h.heading_path, h.text]))
                    for h in hits[:5]), default=0.0)
    refusal: RefusalReason | None = None
    unknown = index.unknown_words(req.question)
    if not hits:
        refusal = "no_chunks"
    elif _weak(hits, top_cos, coverage, cfg) or (unknown and
                                                  top_cos < cfg.rag.unknown_word_cosine):
        refusal = "score_gate"
    budget = min(cfg.rag.max_context_tokens,
                 llm.context_tokens - cfg.rag.reserve_tokens - cfg.llm.max_tokens - 600)
    evidence = prompt.pack(hits, max(budget, 256)) if refusal is None else []
    history = [(t.question, t.answer) for t in req.history]
    template, msgs = prompt.messages(req.question, evidence, history,
                                     max(budget - prompt.evidence_tokens(evidence), 0))
    return Prepared(req, hits, evidence, msgs, template, refusal, top_cos, coverage,
                    uuid.uuid4().hex[:16], started,
                    prepare_ms=(time.perf_counter() - started) * 1000,
                    extra={"unknown_words": unknown, "query": query})


async def ask(index: Index, cfg: Config, llm: LanguageModel, req: AskRequest,
              on_text: OnText | None = None) -> Answer:
    """Answer `req`, streaming text to `on_text`; the row is written even when cancelled."""
    p = await asyncio.to_thread(prepare, index, cfg, llm, req)
    text, error, first_ms = "", None, None
    refusal = p.refusal
    if refusal is not None:
        unknown = p.extra.get("unknown_words") or []
        text = _refusal_text(req.question, refusal, unknown if isinstance(unknown, list) else [])
        if on_text:
            on_text(text)
    else:
        gen = GenerateRequest(
            messages=p.messages, question=str(p.extra.get("query") or req.question),
            evidence=p.evidence,
            temperature=cfg.llm.temperature if req.temperature is None else req.temperature,
            seed=cfg.llm.seed if req.seed is None else req.seed, max_tokens=cfg.llm.max_tokens)
        try:
            async for piece in llm.stream(gen):
                if first_ms is None:
                    first_ms = (time.perf_counter() - p.started) * 1000
                text += piece
                if on_text:
                    on_text(piece)
            if not text.strip():
                raise LLMError("the model returned an empty answer")
        except LLMError as e:
            error, refusal = str(e), "llm_error"
            text = text or e.partial
        except asyncio.CancelledError:
            answer = finish(index, cfg, llm, p, text, "cancelled", "cancelled by the user",
                            first_ms)
            raise _Cancelled(answer) from None
    return finish(index, cfg, llm, p, text, refusal, error, first_ms)


class _Cancelled(asyncio.CancelledError):
    """Cancellation that still carries the persisted partial answer."""

    def __init__(self, answer: Answer) -> None:
        super().__init__("cancelled")
        self.answer = answer


Cancelled = _Cancelled


def finish(index: Index, cfg: Config, llm: LanguageModel, p: Prepared, text: str,
           refusal: RefusalReason | None, error: str | None, first_ms: float | None) -> Answer:
    """Judge citations, render footnotes, hash and persist. Synchronous and quick."""
    req = p.request
    grounded, valid, unknown = citations.judge(text, len(p.evidence))
    if refusal is None and not grounded:
        refusal = "llm_self_judge"
    if refusal is not None:
        grounded = False
    by_marker = {ev.marker: ev for ev in p.evidence}
    hit_by_marker = {i + 1: h for i, h in enumerate(p.hits[:len(p.evidence)])}
    cites = [_citation(index, m, by_marker[m], hit_by_marker[m]) for m in valid]
    candidates = [_citation(index, 0, None, h) for h in p.hits[:3]] if refusal in (
        "score_gate", "llm_self_judge") else []
    md = footnotes.markdown(text, cites, style=cfg.footnote_labels) if grounded else text.strip() + "\n"
    completion = tokens.count(text)
    embedder = index.embedder
    answer = Answer(
        question=req.question, answer=text, markdown=md, citations=cites, grounded=grounded,
        refusal_reason=refusal,
        model=ModelInfo(llm.backend, llm.id),
        embedding=EmbeddingInfo(embedder.backend, embedder.id, embedder.dim) if embedder
        else EmbeddingInfo("none", "none", 0),
        prompt_template_version=p.template,
        retrieval=Retrieval(p.trace_id, req.mode or cfg.search.mode, req.k or cfg.search.k,
                            cfg.rag.min_cosine, round(p.top_cosine, 4), len(p.hits),
                            len(p.evidence)),
        usage=Usage(prompt_tokens=prompt.prompt_tokens(p.messages) if p.evidence else 0,
                    completion_tokens=completion,
                    first_token_ms=round(first_ms, 2) if first_ms is not None else None,
                    latency_ms=round((time.perf_counter() - p.started) * 1000, 2)),
        versions={**versions(embedder), "prompt": p.template},
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        result_hash="", candidates=candidates, error=error, conversation=req.conversation)
    if unknown and error is None:
        answer.error = f"the answer cites passages that were not given: {unknown}"
    answer.result_hash = result_hash(answer, cfg, req)
    if req.explain:
        answer.explain = {"prepare_ms": round(p.prepare_ms, 2), "top_cosine": p.top_cosine,
                          "coverage": p.coverage,
                          "packed": [msgspec.to_builtins(ev) for ev in p.evidence],
                          "hits": [{"path": h.path, "heading_path": h.heading_path,
                                    "score": h.score, "lexical": h.lexical_score,
                                    "vector": h.vector_score} for h in p.hits]}
    answer.id = answers.save(index.store, answer, req.conversation)
    return answer


def result_hash(answer: Answer, cfg: Config, req: AskRequest) -> str:
    """A hash over the answer and everything that determined it (not the time it was made)."""
    payload = {
        "question": answer.question, "answer": answer.answer, "grounded": answer.grounded,
        "refusal": answer.refusal_reason,
        "citations": [(c.chunk_id, c.content_hash, c.marker) for c in answer.citations],
        "model": [answer.model.backend, answer.model.id],
        "embedding": [answer.embedding.backend, answer.embedding.id],
        "prompt": answer.prompt_template_version, "versions": answer.versions,
        "k": answer.retrieval.k, "mode": answer.retrieval.mode,
        "temperature": cfg.llm.temperature if req.temperature is None else req.temperature,
        "seed": cfg.llm.seed if req.seed is None else req.seed,
        "history": [(t.question, t.answer) for t in req.history],
    }
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
                          ).hexdigest()


def citation_range(start_line: int, end_line: int) -> Range:
    """Whole lines, as an LSP range: from the first line's start to the line after the last."""
    return Range(start={"line": start_line - 1, "character": 0},
                 end={"line": end_line, "character": 0})


def _citation(index: Index, marker: int, ev: Evidence | None, hit: Hit) -> Citation:
    path = index.root / hit.path
    return Citation(marker=marker, path=hit.path, uri=path.as_uri(),
                    heading_path=hit.heading_path,
                    range=citation_range(hit.start_line, hit.end_line), chunk_id=hit.chunk_id,
                    content_hash=hit.content_hash, score=hit.score,
                    text=ev.text if ev is not None else hit.text, start_line=hit.start_line,
                    end_line=hit.end_line)


def _weak(hits: list[Hit], top_cos: float, coverage: float, cfg: Config) -> bool:
    """Clearly empty evidence only: weak in meaning and in wording at once."""
    has_vectors = any(h.vector_score is not None for h in hits)
    weak_meaning = (not has_vectors) or top_cos < cfg.rag.min_cosine
    return weak_meaning and coverage < cfg.rag.min_lexical_coverage


def _refusal_text(question: str, reason: RefusalReason, unknown: list[str]) -> str:
    korean = any("\uac00" <= ch <= "\ud7a3" for ch in question)
    if reason == "no_chunks":
        return REFUSE_EMPTY_KO if korean else REFUSE_EMPTY_EN
    text = REFUSE_GATE_KO if korean else REFUSE_GATE_EN
    if unknown:
        words = ", ".join(unknown)
        text += f" (노트에 없는 단어: {words})" if korean else f" No note mentions: {words}."
    return text

"""The ask pipeline: retrieve → gate → pack → prompt → generate (streamed) → cite → render → persist.

`prepare()` is everything before the first byte goes to the model, without calling a model
(synchronous; what `--dry-run` shows): `retrieve()` then `assemble()`. `ask()` runs the same two
steps with the optional model-backed extras between them (`rag.hyde` before retrieval,
`rag.relevance_filter` before packing, `rag.detect_conflicts` before generation; see hyde.py,
relevance.py, conflicts.py), streams the answer through `on_text` and always persists a row,
whether the answer is grounded, refused, cut by a model fault, or cancelled.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec

from kebab import tokens
from kebab.config import Config
from kebab.errors import Cancelled, LLMError
from kebab.index import Index, versions
from kebab.llm import Evidence, GenerateRequest, LanguageModel, Message, is_generative
from kebab.model import (
    Answer,
    AskRequest,
    Citation,
    Conflict,
    EmbeddingInfo,
    Hit,
    ModelInfo,
    RefusalReason,
    Retrieval,
    Turn,
    Usage,
    citation_range,
)
from kebab.rag import citations, conflicts, footnotes, hyde, prompt, relevance
from kebab.rag import store as answers
from kebab.search import Filters, Fusion, search, term_coverage
from kebab.text import is_korean


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
    refusal_text: str | None = None  # why, when a step other than the gate refused
    conflicts: list[Conflict] = field(default_factory=list)
    extras_ms: dict[str, float] = field(default_factory=dict)  # time each extra took


log = logging.getLogger(__name__)
OnText = Callable[[str], None]
_KB_REFERENCE = re.compile(r"\[\^kb-\d+\](?!:)")
OnConflicts = Callable[[list[Conflict]], None]

# Gate cosines per embedding model, measured on that model's scale (fixtures and fixtures/eval):
# (min_cosine, unknown_word_cosine). An everyday word no note contains is most often the asker's
# own wording ("when does the backup kick off", "stop the backups for a while"): it refuses only
# when the best match in meaning is weak too (0.35: below every answerable question of both
# eval sets, above off-topic ones like "when is the team offsite"); a name always refuses.
CALIBRATED: dict[str, tuple[float | None, float | None]] = {"use-multilingual-v3": (0.16, 0.35)}


def gate_cosines(cfg: Config, embedder_id: str | None) -> tuple[float | None, float | None]:
    """(min_cosine, unknown_word_cosine) for this index: set in the config, or measured for its
    embedding model, or None (no cosine-based refusal for a model never measured)."""
    measured = CALIBRATED.get(embedder_id or "", (None, None))
    return (
        cfg.rag.min_cosine if cfg.rag.min_cosine is not None else measured[0],
        cfg.rag.unknown_word_cosine if cfg.rag.unknown_word_cosine is not None else measured[1],
    )


REFUSE_GATE_EN = "No passage in the notes is close enough to this question to answer it."
REFUSE_GATE_KO = "노트에서 이 질문에 답할 만큼 가까운 내용을 찾지 못했습니다."
REFUSE_EMPTY_EN = "The workspace index has no passages yet."
REFUSE_EMPTY_KO = "워크스페이스 색인에 아직 내용이 없습니다."


def prepare(index: Index, cfg: Config, llm: LanguageModel, req: AskRequest) -> Prepared:
    """Retrieve, gate, pack and build the prompt for `req`; no model is called."""
    return assemble(cfg, llm, retrieve(index, cfg, req))


def with_history(index: Index, req: AskRequest) -> AskRequest:
    """`req` with its conversation's earlier turns, when the server keeps the thread."""
    if req.conversation and not req.history:
        turns = answers.conversation_turns(index.store, req.conversation, limit=10)
        req = msgspec.structs.replace(req, history=[Turn(q, a) for q, a in turns])
    return req


def search_query(req: AskRequest) -> str:
    """What retrieval searches for: follow-ups lean on the previous turn's wording, cheaply."""
    return f"{req.question}\n{req.history[-1].question}" if req.history else req.question


def retrieve(
    index: Index, cfg: Config, req: AskRequest, vector_query: str | None = None
) -> Prepared:
    """Retrieval and the refusal gate; `assemble()` packs the evidence and builds the prompt.

    `vector_query` (HyDE) replaces the question on the vector side only; the gate still judges
    the question itself.
    """
    started = time.perf_counter()
    req = with_history(index, req)
    k = req.k or cfg.search.k
    mode = req.mode or cfg.search.mode
    query = search_query(req)
    # A question is never its own evidence, whichever door it came through: the passages where
    # it is written down (an inbox note, the lines the code action answers) are set aside, and
    # the search goes deeper when they crowd out the rest.
    depth = k + 4
    while True:
        found = search(
            index,
            query,
            depth + 16,
            mode,
            Filters(),
            max(cfg.search.candidates, depth + 16),
            Fusion(lexical_weight=cfg.search.lexical_weight),
            vector_query=vector_query,
        )
        held = {h.chunk_id for h in found if _holds_question(req, h.path, h.heading_path, h.text)}
        hits = [h for h in found if h.chunk_id not in held][: k + 4]
        if len(hits) == k + 4 or len(found) < depth + 16 or depth > 256:
            break
        depth *= 4
    # Answers kebab wrote into notes restate other notes: their sources come first.
    hits = sorted(hits, key=lambda h: bool(_KB_REFERENCE.search(h.text)))[:k]
    top_cos = max((h.vector_score for h in hits if h.vector_score is not None), default=0.0)
    if vector_query is not None and mode != "lexical":  # the draft's cosine proves nothing
        top_cos = _question_cosine(index, query, req, k)
    coverage = max(
        (term_coverage(query, " ".join([*h.heading_path, h.text])) for h in hits[:5]), default=0.0
    )
    refusal: RefusalReason | None = None
    unknown = index.unknown_words(req.question, frozenset(held))
    min_cos, unknown_cos = gate_cosines(cfg, index.embedder.id if index.embedder else None)
    if not hits:
        refusal = "score_gate" if held else "no_chunks"
    elif (
        _weak(hits, top_cos, coverage, cfg, min_cos)
        or any(_names_something(w, req.question) for w in unknown)
        or (unknown and unknown_cos is not None and top_cos < unknown_cos)
    ):
        refusal = "score_gate"
    return Prepared(
        req,
        hits,
        [],
        [],
        "",
        refusal,
        top_cos,
        coverage,
        uuid.uuid4().hex[:16],
        started,
        extra={"unknown_words": unknown, "query": query},
    )


def assemble(cfg: Config, llm: LanguageModel, p: Prepared) -> Prepared:
    """Pack the evidence (unless refused) and build the prompt."""
    budget = evidence_budget(cfg, llm)
    p.evidence = prompt.pack(p.hits, budget) if p.refusal is None else []
    history = [(t.question, t.answer) for t in p.request.history]
    p.template, p.messages = prompt.messages(
        p.request.question, p.evidence, history, max(budget - prompt.evidence_tokens(p.evidence), 0)
    )
    p.prepare_ms = (time.perf_counter() - p.started) * 1000
    return p


def evidence_budget(cfg: Config, llm: LanguageModel) -> int:
    """Tokens the evidence (and history) may take: the model's context minus prompt and reply."""
    budget = min(
        cfg.rag.max_context_tokens,
        llm.context_tokens - cfg.rag.reserve_tokens - cfg.llm.max_tokens - 600,
    )
    return max(budget, 256)


async def ask(
    index: Index,
    cfg: Config,
    llm: LanguageModel,
    req: AskRequest,
    on_text: OnText | None = None,
    on_conflicts: OnConflicts | None = None,
) -> Answer:
    """Answer `req`, streaming text to `on_text`; the row is written even when cancelled.

    `on_conflicts` hears the conflicts found among the evidence (`rag.detect_conflicts`) before
    the first piece of the answer.
    """
    started = time.perf_counter()
    vector_query, hyde_ms = None, None
    if hyde.enabled(cfg, llm):  # extra: HyDE, before retrieval
        req = await asyncio.to_thread(with_history, index, req)
        vector_query = await hyde.vector_query(llm, cfg, search_query(req))
        hyde_ms = _ms(started)
    p = await asyncio.to_thread(retrieve, index, cfg, req, vector_query)
    p.started = started
    if hyde_ms is not None:
        p.extras_ms["hyde"] = hyde_ms
    try:
        if p.refusal is None and relevance.enabled(cfg, llm):  # extra: relevance, before packing
            t = time.perf_counter()
            await _filter_relevant(cfg, llm, p)
            p.extras_ms["relevance"] = _ms(t)
        p = await asyncio.to_thread(assemble, cfg, llm, p)
        if len(p.evidence) > 1 and conflicts.enabled(cfg, llm):  # extra: before generation
            t = time.perf_counter()
            p.conflicts = await conflicts.detect(llm, cfg, p.request.question, p.evidence)
            p.extras_ms["conflicts"] = _ms(t)
            if p.conflicts and on_conflicts:
                on_conflicts(p.conflicts)
    except asyncio.CancelledError:
        if not p.messages:
            p = assemble(cfg, llm, p)
        raise Cancelled(
            finish(index, cfg, llm, p, "", "cancelled", "cancelled by the user", None)
        ) from None
    return await _generate(index, cfg, llm, p, on_text)


async def _filter_relevant(cfg: Config, llm: LanguageModel, p: Prepared) -> None:
    """Drop the hits the model scores below the threshold; refuse when none is left."""
    scored = await relevance.scores(llm, cfg, p.request.question, p.hits, evidence_budget(cfg, llm))
    if scored is None:
        return
    p.extra["relevance"] = scored
    kept = relevance.keep(p.hits, scored, cfg.rag.relevance_threshold)
    if kept:
        p.hits = kept
    else:
        p.refusal = "score_gate"
        p.refusal_text = relevance.refusal_text(
            p.request.question, scored, cfg.rag.relevance_threshold
        )


async def _generate(
    index: Index, cfg: Config, llm: LanguageModel, p: Prepared, on_text: OnText | None
) -> Answer:
    """Stream the answer (or the refusal) and finish."""
    req = p.request
    text, error, first_ms = "", None, None
    refusal = p.refusal
    if refusal is not None:
        unknown = p.extra.get("unknown_words") or []
        text = p.refusal_text or _refusal_text(
            req.question, refusal, unknown if isinstance(unknown, list) else []
        )
        if on_text:
            on_text(text)
    else:
        gen = GenerateRequest(
            messages=p.messages,
            # The question asked, not the search query: a follow-up's search also carries the
            # previous question's words, but its answer must not require them (a question
            # about backups after one about Redis is not refused for not mentioning Redis).
            question=req.question,
            follows=req.history[-1].question if req.history else "",
            evidence=p.evidence,
            temperature=cfg.llm.temperature if req.temperature is None else req.temperature,
            seed=cfg.llm.seed if req.seed is None else req.seed,
            max_tokens=cfg.llm.max_tokens,
        )
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
            answer = finish(
                index, cfg, llm, p, text, "cancelled", "cancelled by the user", first_ms
            )
            raise Cancelled(answer) from None
    # Hashing and the answers-row insert wait on the store lock: off the event loop.
    return await asyncio.to_thread(finish, index, cfg, llm, p, text, refusal, error, first_ms)


def finish(
    index: Index,
    cfg: Config,
    llm: LanguageModel,
    p: Prepared,
    text: str,
    refusal: RefusalReason | None,
    error: str | None,
    first_ms: float | None,
) -> Answer:
    """Judge citations, render footnotes, hash and persist. Synchronous and quick."""
    req = p.request
    grounded, valid, unknown = citations.judge(text, len(p.evidence))
    if refusal is None and not grounded:
        refusal = "llm_self_judge"
    if refusal is not None:
        grounded = False
    by_marker = {ev.marker: ev for ev in p.evidence}
    hit_by_marker = {i + 1: h for i, h in enumerate(p.hits[: len(p.evidence)])}
    cites = [citation(index, m, by_marker[m], hit_by_marker[m]) for m in valid]
    candidates = (
        [citation(index, 0, None, h) for h in p.hits[:3]]
        if refusal in ("score_gate", "llm_self_judge")
        else []
    )
    md = (
        footnotes.markdown(text, cites, style=cfg.footnote_labels)
        if grounded
        else text.strip() + "\n"
    )
    completion = tokens.count(text)
    embedder = index.embedder
    # The server owns thread ids: a question asked without one starts a thread of its own.
    conversation = req.conversation or uuid.uuid4().hex[:12]
    unknown_words = p.extra.get("unknown_words")
    answer = Answer(
        question=req.question,
        answer=text,
        markdown=md,
        citations=cites,
        grounded=grounded,
        refusal_reason=refusal,
        model=ModelInfo(llm.backend, llm.id),
        embedding=EmbeddingInfo(embedder.backend, embedder.id, embedder.dim)
        if embedder
        else EmbeddingInfo("none", "none", 0),
        prompt_template_version=p.template,
        retrieval=Retrieval(
            p.trace_id,
            req.mode or cfg.search.mode,
            req.k or cfg.search.k,
            gate_cosines(cfg, embedder.id if embedder else None)[0] or 0.0,
            round(p.top_cosine, 4),
            len(p.hits),
            len(p.evidence),
        ),
        usage=Usage(
            prompt_tokens=prompt.prompt_tokens(p.messages) if p.evidence else 0,
            completion_tokens=completion,
            first_token_ms=round(first_ms, 2) if first_ms is not None else None,
            latency_ms=round((time.perf_counter() - p.started) * 1000, 2),
        ),
        versions={**versions(embedder), "prompt": p.template},
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        result_hash="",
        candidates=candidates,
        conflicts=p.conflicts,
        error=error,
        conversation=conversation,
        refusal_text=refusal_words(
            req.question,
            refusal,
            unknown_words if isinstance(unknown_words, list) else [],
            error,
        )
        if refusal is not None
        else None,
    )
    if unknown and error is None:
        answer.error = f"the answer cites passages that were not given: {unknown}"
    answer.result_hash = result_hash(answer, cfg, req)
    if req.explain:
        answer.explain = {
            "prepare_ms": round(p.prepare_ms, 2),
            "top_cosine": p.top_cosine,
            "coverage": p.coverage,
            "packed": [msgspec.to_builtins(ev) for ev in p.evidence],
            "extras": {
                **_extras_on(cfg, llm),
                "ms": p.extras_ms,
                "relevance_scores": p.extra.get("relevance"),
            },
            "hits": [
                {
                    "path": h.path,
                    "heading_path": h.heading_path,
                    "score": h.score,
                    "lexical": h.lexical_score,
                    "vector": h.vector_score,
                }
                for h in p.hits
            ],
        }
    try:
        answers.save(index.store, answer, conversation)
    except (sqlite3.Error, OSError) as e:  # a read-only or full disk: the answer still counts
        log.warning("answer not stored: %s", e)
        note = f"the answer was not stored in {index.dir} ({e})"
        answer.error = f"{answer.error}; {note}" if answer.error else note
    return answer


def result_hash(answer: Answer, cfg: Config, req: AskRequest) -> str:
    """A hash over the answer and everything that determined it (not the time it was made)."""
    payload = {
        "question": answer.question,
        "answer": answer.answer,
        "grounded": answer.grounded,
        "refusal": answer.refusal_reason,
        "citations": [(c.chunk_id, c.content_hash, c.marker) for c in answer.citations],
        "model": [answer.model.backend, answer.model.id],
        "embedding": [answer.embedding.backend, answer.embedding.id],
        "prompt": answer.prompt_template_version,
        "versions": answer.versions,
        "k": answer.retrieval.k,
        "mode": answer.retrieval.mode,
        "temperature": cfg.llm.temperature if req.temperature is None else req.temperature,
        "seed": cfg.llm.seed if req.seed is None else req.seed,
        "history": [(t.question, t.answer) for t in req.history],
    }
    extras = _extras_on(cfg)
    if extras:  # only then, so that answers without extras keep their hashes
        payload["extras"] = extras
        payload["conflicts"] = [(c.a, c.b, c.detail) for c in answer.conflicts]
    return hashlib.sha256(
        json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()


def citation(index: Index, marker: int, ev: Evidence | None, hit: Hit) -> Citation:
    """The citation of `hit`, packed as `ev` under `marker` (0 and None: a nearest passage)."""
    path = index.root / hit.path
    return Citation(
        marker=marker,
        path=hit.path,
        uri=path.as_uri(),
        heading_path=hit.heading_path,
        range=citation_range(hit.start_line, hit.end_line),
        chunk_id=hit.chunk_id,
        content_hash=hit.content_hash,
        score=hit.score,
        text=ev.text if ev is not None else hit.text,
        start_line=hit.start_line,
        end_line=hit.end_line,
    )


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _holds_question(req: AskRequest, path: str, heading_path: list[str], text: str) -> bool:
    """Whether a passage holds the question itself, word for word (punctuation, list markers
    and line breaks aside) in its body: where the question was written down (an inbox note,
    the line the code action answers), not an answer to it. A note whose heading is the
    question (a FAQ) still answers it."""
    asked = _words(req.question)
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return bool(asked) and asked in _words(body)


def _question_cosine(index: Index, query: str, req: AskRequest, k: int) -> float:
    """The best cosine of the question itself over the notes, for the gate (HyDE searched with
    a draft): the question's own passage aside."""
    qvec = index.embed_query(query)
    if qvec is None:
        return 0.0
    found = index.vector_search(qvec, k)
    chunks = index.store.chunks_by_key({key for key, _ in found})
    return max(
        (
            score
            for key, score in found
            if key in chunks
            and not _holds_question(
                req, chunks[key].path, chunks[key].heading_path, chunks[key].text
            )
        ),
        default=0.0,
    )


def _extras_on(cfg: Config, llm: LanguageModel | None = None) -> dict[str, object]:
    """The extras switched on (and, given the model, whether they ran); {} when none is."""
    on: dict[str, object] = {}
    if cfg.rag.hyde:
        on["hyde"] = True
    if cfg.rag.relevance_filter:
        on["relevance_threshold"] = cfg.rag.relevance_threshold
    if cfg.rag.detect_conflicts:
        on["detect_conflicts"] = True
    if on and llm is not None and not is_generative(llm):
        on["skipped"] = "the extractive backend cannot run them"
    return on


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _names_something(word: str, question: str) -> bool:
    """Whether an unknown word of the question is a name (`Kafka`, `gRPC`, `HEALTHCHECK`,
    `ssl-keyfile`, `v2`) rather than an everyday word (`phone`, `underneath`): a question about a
    thing no note names is not answered from notes about its neighbours, however close in
    meaning they are. A capital that only starts the sentence makes no name."""
    if any(c.isupper() for c in word[1:]) or any(c.isdigit() or c in "-_." for c in word):
        return True
    if not word[:1].isupper():
        return False
    at = question.find(word)
    return at > 0 and not re.search(r"[.?!]\s*$", question[:at])


def _weak(
    hits: list[Hit], top_cos: float, coverage: float, cfg: Config, min_cos: float | None
) -> bool:
    """Clearly empty evidence only: weak in meaning and in wording at once."""
    has_vectors = any(h.vector_score is not None for h in hits)
    weak_meaning = (not has_vectors) or min_cos is None or top_cos < min_cos
    return weak_meaning and coverage < cfg.rag.min_lexical_coverage


def refusal_words(
    question: str, reason: RefusalReason, unknown: list[str], error: str | None = None
) -> str:
    """Why a question was not answered, in words for people (answer.v1 `refusal_text`); the
    code in `refusal_reason` is for tools. In the question's language."""
    ko = is_korean(question)
    if reason == "score_gate" and unknown:
        words = ", ".join(unknown)
        return f"노트에 나오지 않는 말: {words}." if ko else f"The notes never mention: {words}."
    if reason == "llm_error":
        detail = error or ("알 수 없는 오류" if ko else "unknown error")
        return f"모델 오류: {detail}" if ko else f"The model failed: {detail}"
    return (_WHY_KO if ko else _WHY_EN)[reason]


_WHY_EN: dict[str, str] = {
    "no_chunks": "Nothing is indexed in this workspace yet.",
    "score_gate": "The closest passages in the notes do not answer this.",
    "llm_self_judge": "The passages found do not state an answer.",
    "cancelled": "Cancelled before the answer was finished.",
}
_WHY_KO: dict[str, str] = {
    "no_chunks": "이 워크스페이스에는 아직 색인된 노트가 없습니다.",
    "score_gate": "노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다.",
    "llm_self_judge": "찾은 구절에 답이 나와 있지 않습니다.",
    "cancelled": "답변이 끝나기 전에 취소되었습니다.",
}


def _refusal_text(question: str, reason: RefusalReason, unknown: list[str]) -> str:
    korean = is_korean(question)
    if reason == "no_chunks":
        return REFUSE_EMPTY_KO if korean else REFUSE_EMPTY_EN
    text = REFUSE_GATE_KO if korean else REFUSE_GATE_EN
    if unknown:
        words = ", ".join(unknown)
        text += f" (노트에 없는 단어: {words})" if korean else f" No note mentions: {words}."
    return text

"""The ask pipeline: retrieve → gate → pack → prompt → generate (streamed) → cite → render → persist.

`prepare()` is everything before the first byte goes to the model, without calling a model
(synchronous; what `--dry-run` shows): `retrieval.retrieve()` then `assemble()`. `ask()` runs the same two
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
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec

from kebab import filters, footnotes, tokens
from kebab.config import Config
from kebab.errors import Cancelled, IndexError_, LLMError
from kebab.footnotes import MARKER
from kebab.index import Index, answers, versions
from kebab.llm import Evidence, GenerateRequest, LanguageModel, Quoter, is_generative
from kebab.model import (
    Answer,
    AskRequest,
    By,
    Citation,
    Conflict,
    EmbeddingInfo,
    Hit,
    ModelInfo,
    RefusalReason,
    Retrieval,
    Usage,
    citation_range,
)
from kebab.rag import attribution, conflicts, hyde, nearest, outcome, prompt, relevance
from kebab.rag.nearest import CLOSEST
from kebab.rag.outcome import gate_cosines, refusal_words
from kebab.rag.retrieval import Prepared, retrieve, search_query, thread_fill, with_history
from kebab.search import scoped
from kebab.text import language

log = logging.getLogger(__name__)
OnText = Callable[[str], None]
OnConflicts = Callable[[list[Conflict]], None]


def prepare(index: Index, cfg: Config, llm: LanguageModel, req: AskRequest) -> Prepared:
    """Retrieve, gate, pack and build the prompt for `req`; no model is called."""
    return assemble(cfg, llm, retrieve(index, cfg, scoped(index, req)))


def assemble(cfg: Config, llm: LanguageModel, p: Prepared) -> Prepared:
    """Pack the evidence (unless refused) and build the prompt."""
    budget = evidence_budget(cfg, llm)
    p.evidence = prompt.pack(p.hits, budget) if p.refusal is None or p.outcome == "closest" else []
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
    req = await asyncio.to_thread(scoped, index, req)
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
    named = outcome.names_unknown(p.request.question, _unknown(p))
    if isinstance(llm, Quoter) and p.outcome == "closest" and not named:  # its figures decide
        p.outcome, p.refusal = None, None
    if p.refusal is None and isinstance(llm, Quoter):
        wordless_cos = gate_cosines(cfg, index.embedder.id if index.embedder else None)[1]
        await asyncio.to_thread(_quote, llm, p, cfg.rag.answered_at, wordless_cos)
    refusal = p.refusal
    if refusal is not None:
        # One wording: what is streamed is what `refusal_text` says, in every door.
        text = p.refusal_text or _refusal_text(p)
        if on_text:
            on_text(text)
    elif isinstance(llm, Quoter):  # chosen and judged already (`_quote`): said as it is
        text = str(p.extra.get("quoted") or "")
        first_ms = (time.perf_counter() - p.started) * 1000
        if on_text:
            for line in text.splitlines(keepends=True):
                on_text(line)
    else:
        gen = GenerateRequest(
            messages=p.messages,
            # The question asked, not the search query: a follow-up's search also carries the
            # previous question's words, but its answer must not require them (a question
            # about backups after one about Redis is not refused for not mentioning Redis).
            question=req.question,
            follows=thread_words(p),
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


def _quote(llm: Quoter, p: Prepared, answered_at: float, wordless_cos: float | None) -> None:
    """A quoting answerer's choice, judged before anything is streamed: what it quoted is the
    answer when `outcome` finds it holds what was asked (its confidence at least `answered_at`,
    `rag.answered_at`; a quote holding no word of the question as close in meaning as
    `wordless_cos`); otherwise the passages come closest (the one it would have quoted first)
    and no claim is quoted as the answer."""
    req = p.request
    chosen = llm.select(req.question, p.evidence, thread_words(p))
    unknown = _unknown(p)
    features = {
        **chosen.features,
        "unknown_share": outcome.unknown_share(req.question, unknown),
    }
    p.extra["features"] = features
    p.extra["confidence"] = round(outcome.confidence(features), 4) if chosen.features else 0.0
    p.extra["part_confidence"] = [round(outcome.confidence(f), 4) for f in chosen.parts]
    p.extra["quoted"] = chosen.text
    judged = outcome.after_quoting(features, answered_at, chosen.parts, wordless_cos)
    if chosen.text and judged == "answered":
        return
    p.outcome, p.refusal = "closest", "llm_self_judge"
    # what it would have quoted, listed first, in the order it would have quoted them
    quoted = dict.fromkeys(int(m) for m in MARKER.findall(chosen.text))
    p.extra["first"] = [p.hits[n - 1].chunk_id for n in quoted if n <= len(p.hits)]


def _unknown(p: Prepared) -> list[str]:
    """The question's words no note holds, as retrieval found them (`retrieval`)."""
    unknown = p.extra.get("unknown_words")
    return unknown if isinstance(unknown, list) else []


def _refusal_text(p: Prepared) -> str:
    """The words over a gate-settled or `closest` outcome, in the question's language."""
    question = p.request.question
    unknown = _unknown(p)
    if p.outcome == "closest":
        return outcome.closest_text(question, unknown)
    return refusal_words(question, p.refusal or "score_gate", unknown)


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
    said, answered = text, refusal is None  # the model's own text, before kebab's markers
    verdict = attribution.judge(
        req.question,
        text,
        p.evidence,
        index,
        generative=refusal is None and is_generative(llm) and cfg.rag.attribute_citations,
    )
    text, grounded, valid, unknown = verdict.text, verdict.grounded, verdict.valid, verdict.unknown
    if refusal is None and not grounded:
        refusal = "llm_self_judge"
    if refusal is not None:
        grounded = False
    decided = p.outcome or outcome.after_answering(grounded, refusal, bool(p.hits))
    by_marker = {ev.marker: ev for ev in p.evidence}
    hit_by_marker = {i + 1: h for i, h in enumerate(p.hits[: len(p.evidence)])}
    cites = [
        citation(index, m, by_marker[m], hit_by_marker[m], verdict.by.get(m, "model"))
        for m in valid
    ]
    named = footnotes.labels(text, cites, style=cfg.footnote_labels)
    for c in cites:
        c.label = named.get(c.marker)
    candidates = (
        nearest.listed(
            llm, p, CLOSEST if decided == "closest" else 3, lambda h: citation(index, 0, None, h)
        )
        if refusal in ("score_gate", "llm_self_judge")
        else []
    )
    unsupported = verdict.unsupported if refusal == "llm_self_judge" else []
    why = attribution.refusal_words(req.question, verdict) if refusal == "llm_self_judge" else None
    if grounded:
        md = footnotes.markdown(text, cites, style=cfg.footnote_labels)
    elif unsupported and why:  # the model's words, never passed off as the notes'
        md = f"> ⚠ {why}\n\n{text.strip()}\n"
    else:
        md = text.strip() + "\n"
    embedder = index.embedder
    # The server owns thread ids: a question asked without one starts a thread of its own.
    conversation = req.conversation or uuid.uuid4().hex[:12]
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
        retrieval=_retrieval(index, cfg, p),
        usage=Usage(
            prompt_tokens=prompt.prompt_tokens(p.messages) if p.evidence else 0,
            completion_tokens=tokens.count(text),
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
        refusal_text=None if refusal is None else why or _refusal_line(p, refusal, error),
        unsupported=unsupported,
        outcome=decided,
        filters=str(filters.of(req)) or None,
        lang=language(req.question),
    )
    if unknown and error is None:
        answer.error = f"the answer cites passages that were not given: {unknown}"
    answer.result_hash = result_hash(answer, cfg, req)
    if req.explain:
        answer.explain = _explained(cfg, llm, p, verdict, said, answered)
    _store(index, answer, conversation)
    return answer


def _retrieval(index: Index, cfg: Config, p: Prepared) -> Retrieval:
    """How the evidence was found: answer.v1's `retrieval`."""
    req, embedder = p.request, index.embedder
    return Retrieval(
        p.trace_id,
        req.mode or cfg.search.mode,
        req.k or cfg.search.k,
        gate_cosines(cfg, embedder.id if embedder else None)[0] or 0.0,
        round(p.top_cosine, 4),
        len(p.hits),
        len(p.evidence),
    )


def _refusal_line(p: Prepared, refusal: RefusalReason, error: str | None) -> str:
    """answer.v1 `refusal_text` for an answer not refused by attribution: the words of the
    outcome settled before answering, or of the refusal's reason."""
    if p.outcome is not None:
        return _refusal_text(p)
    return refusal_words(p.request.question, refusal, _unknown(p), error)


def _explained(
    cfg: Config,
    llm: LanguageModel,
    p: Prepared,
    verdict: attribution.Verdict,
    said: str,
    answered: bool,
) -> dict[str, object]:
    """answer.v1 `explain`: how the answer was reached, for `--explain` and the eval."""
    return {
        "prepare_ms": round(p.prepare_ms, 2),
        "outcome": {
            "features": p.extra.get("features"),
            "confidence": p.extra.get("confidence"),
            "part_confidence": p.extra.get("part_confidence"),
            "quoted": p.extra.get("quoted"),
        },
        "top_cosine": p.top_cosine,
        "coverage": p.coverage,
        "packed": [msgspec.to_builtins(ev) for ev in p.evidence],
        "extras": {
            **_extras_on(cfg, llm),
            "ms": p.extras_ms,
            "relevance_scores": p.extra.get("relevance"),
        },
        # the verdict on the model's own markers alone, before kebab attributed anything
        "model_citations": {
            "text": said,
            "markers": verdict.model_markers,
            "grounded": verdict.by_markers and answered,
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


def _store(index: Index, answer: Answer, conversation: str) -> None:
    """Keep the answer (hover, history, follow-ups); a read-only or full disk still answers,
    and says the answer was not stored."""
    try:
        answers.save(index.store, answer, conversation)
    except (IndexError_, OSError) as e:
        log.warning("answer not stored: %s", e)
        note = f"the answer was not stored in {index.dir} ({e})"
        answer.error = f"{answer.error}; {note}" if answer.error else note


def thread_words(p: Prepared) -> str:
    """The previous question's words a follow-up leaves out (`retrieval.thread_fill`: `tasks` for
    "and how do I sort them by priority?", not the `due date` it replaced with its own), when
    retrieval leaned on them; "" when the follow-up's own words led (`retrieval.retrieve`)."""
    req = p.request
    return thread_fill(req) if p.extra.get("query") != req.question else ""


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
    if answer.filters:  # only then, so that answers over every note keep their hashes
        payload["filters"] = answer.filters
    extras = _extras_on(cfg)
    if extras:  # only then, so that answers without extras keep their hashes
        payload["extras"] = extras
        payload["conflicts"] = [(c.a, c.b, c.detail) for c in answer.conflicts]
    return hashlib.sha256(
        json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()


def citation(
    index: Index, marker: int, ev: Evidence | None, hit: Hit, by: By | None = None
) -> Citation:
    """The citation of `hit`, packed as `ev` under `marker` (0 and None: a nearest passage),
    placed `by` the model or by kebab."""
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
        by=by,
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

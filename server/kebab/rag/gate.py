"""Retrieval and the refusal gate: what the notes hold for a question, and whether that is
enough to answer it at all (`retrieve`); `pipeline` packs, prompts and generates from here.

The gate refuses, before any model is called, when the evidence is empty in meaning and in
wording at once, when the question names a thing no note names (`Kafka`), or when an everyday
word no note contains comes with a weak match in meaning; the cosines it compares are the
embedding model's own (`CALIBRATED`). A passage that holds the question itself is never
evidence for it, whichever door the question came through.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field

import msgspec

from kebab.config import Config
from kebab.index import Index, answers
from kebab.llm import Evidence, Message
from kebab.model import AskRequest, Conflict, Hit, RefusalReason, Turn
from kebab.rag.asked import asks_the_same, stands_alone
from kebab.search import Filters, Fusion, search, term_coverage
from kebab.text import is_korean, is_name, is_phrasing


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
    held: list[Hit] = field(default_factory=list)  # set aside: where the question is written


_KB_REFERENCE = re.compile(r"\[\^kb-\d+\](?!:)")


# Gate cosines per embedding model, measured on that model's scale (fixtures and fixtures/eval):
# (min_cosine, unknown_word_cosine).
CALIBRATED: dict[str, tuple[float | None, float | None]] = {"use-multilingual-v3": (0.16, 0.50)}
# A missing everyday word that only phrases the question (a verb, an adverb, a preposition:
# "when does the backup *kick* off", "*stop* the backups for a *while*") refuses only when the
# best match in meaning is this much weaker than for a missing noun ("a *teammate*"), which is
# what a question is about (0.35 for the embedded model: below every answerable question of
# both eval sets, above off-topic ones like "when is the team offsite?").
PHRASING = 0.7


def gate_cosines(cfg: Config, embedder_id: str | None) -> tuple[float | None, float | None]:
    """(min_cosine, unknown_word_cosine) for this index: set in the config, or measured for its
    embedding model, or None (no cosine-based refusal for a model never measured)."""
    measured = CALIBRATED.get(embedder_id or "", (None, None))
    return (
        cfg.rag.min_cosine if cfg.rag.min_cosine is not None else measured[0],
        cfg.rag.unknown_word_cosine if cfg.rag.unknown_word_cosine is not None else measured[1],
    )


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
    the question itself. A follow-up's own words lead: it is searched alone when it says enough
    to stand alone, and with the previous question's words only when it leaves out what it is
    about ("and on which day?") or finds nothing alone (`extra["query"]` says which).
    """
    started = time.perf_counter()
    req = with_history(index, req)
    if req.history and stands_alone(req.question):
        alone = _retrieve(index, cfg, req, req.question, vector_query, started)
        if alone.refusal is None:
            return alone
    return _retrieve(index, cfg, req, search_query(req), vector_query, started)


def _retrieve(
    index: Index,
    cfg: Config,
    req: AskRequest,
    query: str,
    vector_query: str | None,
    started: float,
) -> Prepared:
    k = req.k or cfg.search.k
    mode = req.mode or cfg.search.mode
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
        or any(is_name(w, req.question) for w in unknown)
        or any(
            top_cos < unknown_cos * (PHRASING if is_phrasing(w, req.question) else 1.0)
            for w in unknown
            if unknown_cos is not None
        )
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
        held=[h for h in found if h.chunk_id in held],
    )


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _holds_question(req: AskRequest, path: str, heading_path: list[str], text: str) -> bool:
    """Whether a passage holds the question itself, word for word (punctuation, list markers
    and line breaks aside) in its body, or only questions about the same thing however worded
    and the lines around them (`asked`): where the question was written down (an inbox note,
    the line the code action answers), not an answer to it. A note whose heading is the
    question (a FAQ) still answers it."""
    asked = _words(req.question)
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return (bool(asked) and asked in _words(body)) or asks_the_same(req.question, text)


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
        # The names say what the notes lack ("Grafana"); how the asker put it ("finally",
        # "add") only when nothing else is missing.
        words = ", ".join(
            [w for w in unknown if is_name(w, question)]
            or [w for w in unknown if not is_phrasing(w, question)]
            or unknown
        )
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

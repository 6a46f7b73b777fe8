"""Retrieval for a question: what the notes hold for it (`retrieve`), and what that alone
settles (`outcome.before_answering`: nothing in the notes, or only the closest passages);
`pipeline` packs, prompts and generates from here. A passage that holds the question itself is
never evidence for it, whichever door the question came through, nor is a note of questions
(an inbox) evidence for any; a passage that describes a problem brings its note's fix along
(`with_fixes`).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from kebab import filters
from kebab.config import Config
from kebab.index import Index, answers
from kebab.llm import Evidence, Message
from kebab.model import AskRequest, Conflict, Hit, Outcome, RefusalReason, Turn
from kebab.rag import outcome
from kebab.rag.asked import asks_the_same, left_out, stands_alone
from kebab.search import Fusion, search, term_coverage
from kebab.syntax import KEBAB_REFERENCE
from kebab.text import is_fix, is_symptom
from kebab.units import is_asking


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
    # settled before any answerer runs (`outcome.before_answering`), with `refusal` its code
    outcome: Outcome | None = None


def with_history(index: Index, req: AskRequest) -> AskRequest:
    """`req` with its conversation's earlier turns, when the server keeps the thread."""
    if req.conversation and not req.history:
        turns = answers.conversation_turns(index.store, req.conversation, limit=10)
        req = msgspec.structs.replace(req, history=[Turn(q, a) for q, a in turns])
    return req


def search_query(req: AskRequest) -> str:
    """What retrieval searches for: a follow-up with what the thread fills in for it."""
    fill = thread_fill(req)
    return f"{req.question}\n{fill}" if fill else req.question


def thread_fill(req: AskRequest) -> str:
    """The previous question's words a follow-up leaves out (`asked.left_out`): its own words
    lead, so "and how do I sort them by priority?" borrows `tasks`, not `due date`."""
    return left_out(req.question, req.history[-1].question) if req.history else ""


def retrieve(
    index: Index, cfg: Config, req: AskRequest, vector_query: str | None = None
) -> Prepared:
    """Retrieval and the refusal gate; `assemble()` packs the evidence and builds the prompt.

    `vector_query` (HyDE) replaces the question on the vector side only; the gate still judges
    the question itself. A follow-up's own words lead: it is searched alone when it says enough
    to stand alone, and with what the thread fills in (`thread_fill`: the previous question's
    words it leaves out) when it does not name what it is about ("and on which day?") or finds
    nothing alone (`extra["query"]` says which).
    """
    started = time.perf_counter()
    req = with_history(index, req)
    query = search_query(req)
    if query != req.question and stands_alone(req.question):
        alone = _retrieve(index, cfg, req, req.question, vector_query, started)
        if alone.refusal is None:
            return alone
    return _retrieve(index, cfg, req, query, vector_query, started)


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
    # the search goes deeper when they crowd out the rest. They are left out before fusion, not
    # after: matching the question best, they would set the scale every other passage's score
    # is read on (asked from the note it is written in, a question scored 0.53, from nowhere
    # 0.67).
    depth = k + 4
    asks = _asks(index, req)
    set_aside: list[Hit] = []
    while True:
        held = frozenset(h.chunk_id for h in set_aside)
        found = search(
            index,
            query,
            depth + 16,
            mode,
            filters.of(req),
            max(cfg.search.candidates, depth + 16),
            Fusion(lexical_weight=cfg.search.lexical_weight),
            vector_query=vector_query,
            leave_out=held,
        )
        new = [h for h in found if asks(h.path, h.heading_path, h.text)]
        if new:  # search again without them
            set_aside += new
            continue
        hits = found[: k + 4]
        if len(hits) == k + 4 or len(found) < depth + 16 or depth > 256:
            break
        depth *= 4
    # Answers kebab wrote into notes restate other notes: their sources come first.
    hits = with_fixes(index, sorted(hits, key=lambda h: bool(KEBAB_REFERENCE.search(h.text))))[:k]
    top_cos = max((h.vector_score for h in hits if h.vector_score is not None), default=0.0)
    if vector_query is not None and mode != "lexical":  # the draft's cosine proves nothing
        top_cos = _question_cosine(index, query, asks, k)
    coverage = max(
        (term_coverage(query, " ".join([*h.heading_path, h.text])) for h in hits[:5]), default=0.0
    )
    unknown = index.unknown_words(req.question, held)
    settled = outcome.before_answering(
        cfg,
        index.embedder.id if index.embedder else None,
        req.question,
        hits,
        bool(held),
        top_cos,
        coverage,
        unknown,
    )
    return Prepared(
        req,
        hits,
        [],
        [],
        "",
        settled[1] if settled else None,
        top_cos,
        coverage,
        uuid.uuid4().hex[:16],
        started,
        extra={"unknown_words": unknown, "query": query},
        held=set_aside,
        outcome=settled[0] if settled else None,
    )


def with_fixes(index: Index, hits: list[Hit]) -> list[Hit]:
    """`hits` with, right after a passage that describes a problem ("## 문제", "## Error"), the
    passage of its note that resolves it ("## 해결", "## Fix"): a question describes the
    symptom, so the symptom ranks first; the answer is the fix. A fix search found further
    down is moved up too: ranked eighth, below the fixes other notes' problems brought along,
    it fell past the evidence's end, and the note whose problem matched best was listed by its
    error message alone (docker.sock's "permission denied", asked how to fix it)."""
    found = {h.chunk_id: h for h in hits}
    placed: set[str] = set()
    out: list[Hit] = []
    for h in hits:
        if h.chunk_id in placed:
            continue
        placed.add(h.chunk_id)
        out.append(h)
        if not is_symptom(h.heading_path):
            continue
        fix = None
        for _, c in index.store.chunks_of(h.path):
            if c.start_line <= h.end_line:
                continue
            if is_symptom(c.heading_path):  # the next problem: this one's fix was not written
                break
            if is_fix(c.heading_path):
                fix = c
                break
        if fix is None or fix.id in placed:
            continue
        placed.add(fix.id)
        out.append(
            found.get(fix.id)
            or Hit(
                fix.id,
                fix.path,
                fix.heading_path,
                fix.start_line,
                fix.end_line,
                fix.text,
                fix.content_hash,
                h.score,
                title=h.title,
                tags=h.tags,
            )
        )
    return out


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


def _asks(index: Index, req: AskRequest) -> Callable[[str, list[str], str], bool]:
    """Whether a passage (path, heading path, text) is where questions were written down rather
    than answered: it holds the question asked (`_holds_question`), or it or its whole note is
    mostly questions (`units.is_asking`: an inbox, whatever is asked; a note of many passages is
    judged whole, so its passage of remarks is set aside with its questions)."""

    def asks(path: str, heading_path: list[str], text: str) -> bool:
        return (
            _holds_question(req, path, heading_path, text)
            or is_asking(text)
            or index.note_asks(path)
        )

    return asks


def _question_cosine(
    index: Index, query: str, asks: Callable[[str, list[str], str], bool], k: int
) -> float:
    """The best cosine of the question itself over the notes, for the gate (HyDE searched with
    a draft): passages where questions are written down (`_asks`) aside."""
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
            and not asks(chunks[key].path, chunks[key].heading_path, chunks[key].text)
        ),
        default=0.0,
    )

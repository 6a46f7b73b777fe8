"""Retrieval: lexical, vector and hybrid search with filters, deterministic for a given index.

Hybrid is a convex fusion of scores, not of ranks: BM25 and the vector score are each min-max
normalised over the candidate pool (both retrievers' top candidates) and mixed with a weight.
(BM25 as a share of its best score instead ranked as well on dev but made the fused scores
flatter, and the answerer, which trusts them, quoted the right passage less often.)
The vector score of a passage is the mean of its own cosine and its best unit's cosine (a
sentence, list item or table row, embedded with its heading path at index time): a passage that
holds the answer in one sentence among many unrelated ones is found by that sentence. Ranks
throw away how far ahead a clear winner is; scores keep it, and the fused score says something
(a 0.98 and a 0.41 are not a tie). Passages that are mostly a list of links (an index note) rank
after passages with content, and a passage in the other script than the question's (Hangul or
not) after its translation; a passage and its translation (`docs/en/x.md`, `docs/ko/x.md`,
meaning the same) are listed once, in the question's language. Ties go to the better lexical
rank, then the chunk id. Raw BM25 and cosine scores ride along on each hit for the refusal gate
and for eval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import msgspec
import numpy as np

from kebab.errors import NothingMatches
from kebab.filters import Filters, from_question
from kebab.filters import scoped as scoped_by
from kebab.index import Index, embedding_text
from kebab.lexicon import english_for
from kebab.model import AskRequest, Chunk, Hit, SearchMode
from kebab.text import (
    coverage,
    is_korean,
    korean_query_words,
    latin_terms,
    loanword_words,
    query_terms,
    query_words,
    terms_of,
)
from kebab.units import is_asking, is_navigation, only_kebab_answers


def written_scope(index: Index, text: str) -> tuple[Filters, str]:
    """The filter written at the start of a question or query, and the rest: a `#word` is a
    tag filter only when some note carries that tag (`filters.from_question`)."""
    return from_question(text, _tags_if_asked(index, text))


def scoped(index: Index, req: AskRequest) -> AskRequest:
    """`filters.scoped`, reading `#word`s against the notes' tags."""
    return scoped_by(req, _tags_if_asked(index, req.question))


def _tags_if_asked(index: Index, text: str) -> set[str] | None:
    """The notes' tags, read only for a text that starts with a `#word` they may name."""
    return index.store.tags() if text.lstrip().startswith("#") else None


def passing(index: Index, filters: Filters) -> set[str]:
    """The notes that pass `filters` (their paths), read from the index's documents. None
    passing is an error naming the filter, not notes that lack an answer (`NothingMatches`)."""
    notes = {
        path
        for path, doc in index.store.documents().items()
        if filters.allows(path, doc.tags, doc.fields)
    }
    if not notes:
        raise NothingMatches(
            f"no note matches the filter {filters}: check the path glob, the tags and the "
            "front-matter fields, or leave the filter out to search every note"
        )
    return notes


@dataclass(frozen=True)
class Fusion:
    """How the two retrievers are combined. `lexical_weight` was chosen on questions worded like
    people's (592 over eight corpora, docs/quality.md): they share few words with their notes,
    and the vector side ranks them better than on sets that copy the notes' words."""

    lexical_weight: float = 0.5  # the rest is the vector score's
    unit_weight: float = 0.5  # share of the best unit's cosine in a passage's vector score
    # factor on a passage that is mostly links or questions (units.is_navigation, is_asking)
    navigation: float = 0.6
    # A passage in the question's script (Hangul or not) is preferred over a translation of it:
    # the fused score of a passage in the other script is multiplied by this.
    other_script: float = 0.9
    # Share of a passage's score that is its note's best passage's. A question describes a
    # problem in the asker's words; the note's problem section matches it best and the fix, in
    # the next section, shares few of them ("## 문제" then "## 해결"). Lifting the sections of the
    # note that matched best put the passage holding the answer in the top five for 0.75 of
    # hyunolike-troubleshooting's questions (0.63) and cost no corpus (docs/quality.md).
    note_weight: float = 0.2


def search(
    index: Index,
    query: str,
    k: int = 10,
    mode: SearchMode = "hybrid",
    filters: Filters | None = None,
    candidates: int = 50,
    fusion: Fusion | None = None,
    vector_query: str | None = None,
    leave_out: frozenset[str] = frozenset(),
) -> list[Hit]:
    """The top `k` chunks for `query`, best first.

    `vector_query` is embedded for the vector side instead of `query` (HyDE's hypothetical
    answer); the lexical side and the script preference always use `query`. `leave_out` (chunk
    ids: the passages a question is written in) is left out before the scores are fused.
    """
    filters = filters or Filters()
    fusion = fusion or Fusion()
    depth = max(candidates, k) * (20 if filters else 1)
    lexical = index.lexical_search(query, depth) if mode in ("hybrid", "lexical") else []
    vector: list[tuple[int, float]] = []
    qvec = None
    if mode in ("hybrid", "vector"):
        qvec = index.embed_query(query if vector_query is None else vector_query)
        if qvec is not None:
            vector = index.vector_search(qvec, depth)
    chunks = index.store.chunks_by_key({key for key, _ in lexical} | {key for key, _ in vector})
    if filters:
        notes = passing(index, filters)
        lexical = [(key, s) for key, s in lexical if key in chunks and chunks[key].path in notes]
        vector = [(key, s) for key, s in vector if key in chunks and chunks[key].path in notes]

    # What is never shown is left out before fusion, or it would set the scale the others are
    # read on: a note holding only the question and kebab's footnotes for it scored 1.0 and
    # pressed the passages that answer it down to 0.4 (`only_kebab_answers`, `leave_out`).
    def kept(key: int) -> bool:
        c = chunks.get(key)
        return c is not None and c.id not in leave_out and not only_kebab_answers(c.text)

    lexical = [(key, s) for key, s in lexical if kept(key)]
    vector = [(key, s) for key, s in vector if kept(key)]
    units: dict[int, float] = {}
    if qvec is not None and fusion.unit_weight:
        pool = [key for key, _ in lexical[:candidates]] + [key for key, _ in vector[:candidates]]
        vector = _complete_cosines(index, qvec, vector, pool)
        units = _best_unit_cosines(index, qvec, {key: chunks[key] for key in pool if key in chunks})
    ranked = fuse(lexical[:candidates], vector, fusion, chunks, query, units)
    shown = [h for h in ranked if h.chunk_id]
    return _translations_folded(index, query, shown, {c.id: key for key, c in chunks.items()}, k)


# A passage of a note with the same file name as another candidate's, in the other language
# (`pages/common/tar.md`, `pages.ko/common/tar.md`; `docs/en/x.md`, `docs/ko/x.md`), is its
# translation when the two mean the same: on tldr's 6,647 translated pages the two passages'
# cosine is 0.92 at the median and above 0.83 for 95 of 100; two pages in the two languages
# drawn at random are at 0.30 (0.45 for 95 of 100). A long page is cut into passages where its
# translation is not (the Korean rsync page's first 15 lines against the English page's 37:
# 0.799, and it was listed beside its original for an English question): over 408 such
# Korean passages, 0.76 is the first percentile of the cosine to their English page.
TRANSLATION_COSINE = 0.7


def _translations_folded(
    index: Index, query: str, hits: list[Hit], keys: dict[str, int], k: int
) -> list[Hit]:
    """The first `k` hits, a passage and its translation counted once: in the question's
    language, at the better of the two places and scores. Each says what the other says, so
    the second would only take the place of a passage that says something else (in the search
    list, the evidence, the closest passages listed)."""
    korean = is_korean(query)
    out: list[Hit] = []
    taken: set[str] = set()
    for h in hits:
        if len(out) == k:
            break
        if h.chunk_id in taken:
            continue
        taken.add(h.chunk_id)
        if is_korean(h.text) != korean and (twin := _translation(index, h, hits, keys)):
            if twin.chunk_id in taken:  # listed already, in the question's language
                continue
            taken.add(twin.chunk_id)
            h = msgspec.structs.replace(twin, score=max(twin.score, h.score))
        out.append(h)
    return out


class _Passage(Protocol):
    path: str
    text: str


def _twins(a: _Passage, b: _Passage) -> bool:
    """Whether two passages could be a page and its translation: notes of the same file name,
    in the two languages. They are when they also mean the same (`TRANSLATION_COSINE`)."""
    return (
        a.path != b.path
        and a.path.rsplit("/", 1)[-1] == b.path.rsplit("/", 1)[-1]
        and is_korean(a.text) != is_korean(b.text)
    )


def _translates(other: Chunk, cos: float, chunk: Chunk) -> bool:
    """Whether `other`, at cosine `cos` to `chunk`, is its translation."""
    return cos >= TRANSLATION_COSINE and _twins(other, chunk)


def _translation(index: Index, hit: Hit, hits: list[Hit], keys: dict[str, int]) -> Hit | None:
    """The candidate in the question's language that `hit` (in the other one) translates."""
    twins = [o for o in hits if o.chunk_id in keys and _twins(o, hit)]
    if not twins or hit.chunk_id not in keys:
        return None
    vectors = index.chunk_vectors([keys[hit.chunk_id], *(keys[o.chunk_id] for o in twins)])
    mine = vectors.get(keys[hit.chunk_id])
    if mine is None:
        return None
    # the closest twin, not the first: a long page cut into passages has several
    scored = [
        (float(mine @ v), o) for o in twins if (v := vectors.get(keys[o.chunk_id])) is not None
    ]
    cos, twin = max(scored, key=lambda co: co[0], default=(0.0, None))
    return twin if cos >= TRANSLATION_COSINE else None


def related(
    index: Index,
    key: int,
    k: int = 5,
    same_note: bool = False,
    linked: frozenset[str] = frozenset(),
) -> list[Hit]:
    """The passages closest in meaning to the indexed passage `key`, best first: from its stored
    vector (embedded now only when it has none yet), never itself nor its translation, and not
    other passages of its own note unless `same_note`; a passage and its translation once, in
    its language. Then, marked `linked`, the closest passage of up to `k` notes in `linked`
    (those its note links to or from) that are not among them."""
    chunk = index.store.chunks_by_key([key]).get(key)
    if chunk is None:
        return []
    vec = index.chunk_vectors([key]).get(key)
    if vec is None:
        vec = index.embed_query(embedding_text(chunk))
    if vec is None:
        return []
    found = [(other, cos) for other, cos in index.vector_search(vec, k * 4 + 20) if other != key]
    chunks = index.store.chunks_by_key(other for other, _ in found)
    hits = [
        _hit(chunks[other], cos, None, cos, None, rank + 1)
        for rank, (other, cos) in enumerate(found)
        if other in chunks
        and (same_note or chunks[other].path != chunk.path)
        and not only_kebab_answers(chunks[other].text)
        and not _translates(chunks[other], cos, chunk)
    ]
    for h in hits:
        h.linked = h.path in linked
    keys = {c.id: other for other, c in chunks.items()}
    top = _translations_folded(index, chunk.text, hits, keys, k)
    shown = {h.path for h in top} | {chunk.path}
    # Notes linked to or from this one join, marked, with their passage closest in meaning.
    joining = [h for p in sorted(linked - shown) if (h := _closest_passage(index, vec, p))]
    return top + sorted(joining, key=lambda h: -h.score)[:k]


def _closest_passage(index: Index, vec: np.ndarray, path: str) -> Hit | None:
    """The passage of the note at `path` closest in meaning to `vec`, marked as linked."""
    sections = index.store.chunks_of(path)
    vectors = index.chunk_vectors([key for key, _ in sections])
    scored = [(float(vectors[key] @ vec), c) for key, c in sections if key in vectors]
    if not scored:
        return None
    cos, chunk = max(scored, key=lambda sc: sc[0])
    hit = _hit(chunk, cos, None, cos, None, None)
    hit.linked = True
    return hit


def _complete_cosines(
    index: Index, qvec: np.ndarray, vector: list[tuple[int, float]], pool: list[int]
) -> list[tuple[int, float]]:
    """The vector list plus the cosine of every pooled passage it lacks (found lexically only),
    so both scores exist for every candidate."""
    have = {key for key, _ in vector}
    missing = [key for key in dict.fromkeys(pool) if key not in have]
    extra = [(key, float(v @ qvec)) for key, v in index.chunk_vectors(missing).items()]
    return sorted(vector + extra, key=lambda kv: -kv[1])


def _best_unit_cosines(
    index: Index, qvec: np.ndarray, chunks: dict[int, Chunk]
) -> dict[int, float]:
    """Chunk key → the best cosine of any of its units, for passages that have unit vectors
    (one matrix product over all of them)."""
    stored = index.unit_vectors([c.content_hash for c in chunks.values()])
    keys = [key for key, c in chunks.items() if c.content_hash in stored]
    if not keys:
        return {}
    mats = [stored[chunks[key].content_hash] for key in keys]
    starts = np.cumsum([0] + [len(m) for m in mats[:-1]])
    cos = np.concatenate(mats) @ qvec.astype(np.float32)
    return dict(zip(keys, np.maximum.reduceat(cos, starts).tolist(), strict=True))


def fuse(
    lexical: list[tuple[int, float]],
    vector: list[tuple[int, float]],
    fusion: Fusion,
    chunks: dict[int, Chunk],
    query: str | None = None,
    units: dict[int, float] | None = None,
) -> list[Hit]:
    """Convex fusion of two (key, raw score) lists into Hits; a one-list search keeps its order.

    `units` holds each passage's best unit cosine: its vector score is then the mean (by
    `fusion.unit_weight`) of its own cosine and that.
    """
    units = units or {}
    lex_rank = {key: i + 1 for i, (key, _) in enumerate(lexical)}
    vec_rank = {key: i + 1 for i, (key, _) in enumerate(vector)}
    lex_score = dict(lexical)
    vec_score = dict(vector)
    w = fusion.unit_weight
    evidence = {
        key: (1 - w) * cos + w * units[key] if key in units else cos
        for key, cos in vec_score.items()
    }
    lex_n = _min_max(lex_score)
    vec_n = _min_max(evidence)
    a = fusion.lexical_weight if lexical and vector else (1.0 if lexical else 0.0)
    raw: dict[int, float] = {}
    for key in lex_rank.keys() | vec_rank.keys():
        if key not in chunks:
            continue  # removed between the search and the lookup
        raw[key] = a * lex_n.get(key, 0.0) + (1 - a) * vec_n.get(key, 0.0)
    korean = is_korean(query) if query is not None else None
    for key in raw:
        chunk = chunks[key]
        if fusion.navigation != 1.0 and (is_navigation(chunk.text) or is_asking(chunk.text)):
            raw[key] *= fusion.navigation
        if korean is not None and fusion.other_script != 1.0 and is_korean(chunk.text) != korean:
            raw[key] *= fusion.other_script
    if lexical and vector:  # a one-list search keeps its order
        raw = _with_note_scores(raw, chunks, fusion.note_weight)
    scored = [(-s, lex_rank.get(key, 1 << 30), chunks[key].id, key) for key, s in raw.items()]
    scored.sort()
    return [
        _hit(
            chunks[key],
            min(-neg, 1.0),
            lex_score.get(key),
            vec_score.get(key),
            lex_rank.get(key),
            vec_rank.get(key),
        )
        for neg, _, _, key in scored
    ]


def _with_note_scores(
    raw: dict[int, float], chunks: dict[int, Chunk], weight: float
) -> dict[int, float]:
    """Each passage's score mixed with the best score among its note's candidates: the note
    that matched best vouches for its other sections."""
    if not weight:
        return raw
    best: dict[str, float] = {}
    for key, s in raw.items():
        path = chunks[key].path
        best[path] = max(best.get(path, 0.0), s)
    return {key: (1 - weight) * s + weight * best[chunks[key].path] for key, s in raw.items()}


def _min_max(scores: dict[int, float]) -> dict[int, float]:
    """Scores mapped onto [0, 1] over this list; a list of equal scores maps to 1."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    return {key: (s - lo) / (hi - lo) if hi > lo else 1.0 for key, s in scores.items()}


def term_coverage(question: str, text: str) -> float:
    """Share of the question's content words that occur in `text` (0..1), any script. A Korean
    question's words count too as an English text holds them: through the glossary (`보관` as
    retention), or read as the loanword they sound like (`샥슈카` as shakshuka, the way search
    found the passage). Read by Korean words alone, a Korean question over English notes held
    none of its words, and with a weak match in meaning it was not answered at all."""
    have = terms_of(text)
    plain = coverage(query_words(question), have)
    if not is_korean(question) or plain == 1.0:
        return plain
    latin, _ = query_terms(question)
    words = korean_query_words(question).split()
    if not latin and not words:
        return plain
    held = sum(t in have for t in latin)
    glossed = [en for w in words if (en := english_for(w))]
    held += sum(any(t in have for t in latin_terms(" ".join(en))) for en in glossed)
    held += len(loanword_words(question, have))  # the longer words, read as loanwords
    return max(plain, held / (len(latin) + len(words)))


def _hit(
    chunk: Chunk, score: float, lex: float | None, vec: float | None, lr: int | None, vr: int | None
) -> Hit:
    return Hit(
        chunk_id=chunk.id,
        path=chunk.path,
        heading_path=chunk.heading_path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        text=chunk.text,
        content_hash=chunk.content_hash,
        score=round(score, 6),
        lexical_score=lex,
        vector_score=vec,
        lexical_rank=lr,
        vector_rank=vr,
        title=chunk.title,
        tags=chunk.tags,
    )

"""What an answer is, decided in one place: `answered`, `closest` or `not_answered`.

- `not_answered`: the notes have nothing: no passage at all, a name no note holds (`Kafka`) in
  a question the notes do not match in meaning either, or evidence empty in meaning and in
  wording at once (`before_answering`).
- `closest`: search found passages, but nothing shows that they hold what was asked: the best
  passages are listed under a plain sentence, and no claim is quoted as the answer. A name no
  note holds (`HEALTHCHECK`) in a question the notes match in meaning is always this: the
  passages are near, and none can hold the thing named.
- `answered`: a quoted unit holds what was asked. For the extractive answerer, `confidence`
  weighs figures about the units it quoted (`Selection.features`: their cosine to the question,
  the question's words they hold, their lead over other notes, the asked-for shape, the rarest
  subject word their note lacks, names missing) with weights fitted on labelled questions,
  leave-one-corpus-out (`bench/fit_outcome.py`); a model's answer is `answered` when its claims
  are supported (`attribution`), `closest` when it is not.

The thresholds and every sentence a person reads about the outcome live here too.
"""

from __future__ import annotations

import math

from kebab.config import Config
from kebab.model import Hit, Outcome, RefusalReason
from kebab.text import (
    LATIN_WORD,
    content_terms,
    is_idiom,
    is_korean,
    is_name,
    is_phrasing,
    is_phrasing_form,
    judged_terms,
    latin_terms,
)

# A missing everyday word that only phrases the question (a verb, an adverb: "when does the
# backup *kick* off") casts doubt only when the best match in meaning is this much weaker than
# for a missing noun ("a *teammate*"), which is what a question is about.
PHRASING = 0.7
# Cosines per embedding model, measured on that model's scale (fixtures and fixtures/eval):
# (min_cosine, unknown_word_cosine).
CALIBRATED: dict[str, tuple[float | None, float | None]] = {"use-multilingual-v3": (0.16, 0.50)}


def gate_cosines(cfg: Config, embedder_id: str | None) -> tuple[float | None, float | None]:
    """(min_cosine, unknown_word_cosine) for this index: set in the config, or measured for its
    embedding model, or None (no cosine-based judgement for a model never measured)."""
    measured = CALIBRATED.get(embedder_id or "", (None, None))
    return (
        cfg.rag.min_cosine if cfg.rag.min_cosine is not None else measured[0],
        cfg.rag.unknown_word_cosine if cfg.rag.unknown_word_cosine is not None else measured[1],
    )


def before_answering(
    cfg: Config,
    embedder_id: str | None,
    question: str,
    hits: list[Hit],
    held: bool,
    top_cosine: float,
    coverage: float,
    unknown: list[str],
) -> tuple[Outcome, RefusalReason] | None:
    """What retrieval alone settles, before any answerer runs: `not_answered` when the notes
    have nothing (no passage, a name no note holds and no other name the question gives,
    evidence weak in meaning and wording at once); `closest` when an everyday word of the
    question is in no note and the best match in meaning is weak (for a model backend: the
    quoting answerer weighs it itself, `DOUBT`); None when the answerer should look."""
    if not hits:
        return "not_answered", "score_gate" if held else "no_chunks"
    min_cos, unknown_cos = gate_cosines(cfg, embedder_id)
    has_vectors = any(h.vector_score is not None for h in hits)
    weak_meaning = (not has_vectors) or min_cos is None or top_cosine < min_cos
    named = any(is_name(w, question) for w in unknown)
    # A name no note holds, where the question names nothing else the notes hold ("How do I
    # set up Kafka?"): the notes have nothing. Beside a name they hold (`.NET` with
    # `ScriptManager`, Brotli with FastAPI), it is a detail of the asker's setup or a near miss,
    # and the passages on the rest come closest.
    alone = named and not names_held(question, unknown)
    strict = alone and (unknown_cos is None or top_cosine < unknown_cos)
    if (weak_meaning and coverage < cfg.rag.min_lexical_coverage) or strict:
        return "not_answered", "score_gate"
    if named:  # a name no note holds, in a question the notes match in meaning
        return "closest", DOUBT
    if unknown_cos is not None and any(
        top_cosine < unknown_cos * (PHRASING if is_phrasing(w, question) else 1.0) for w in unknown
    ):
        return "closest", DOUBT
    return None


def names_held(question: str, unknown: list[str]) -> list[str]:
    """The question's names (`is_name`) that some note holds: words the index looked for
    (`Index.unknown_words` reads the content terms, not "PC", "OK" or "How") and found."""
    looked_for = set(judged_terms(question))
    return [
        w
        for w in dict.fromkeys(LATIN_WORD.findall(question))
        if w not in unknown and is_name(w, question) and set(latin_terms(w)) & looked_for
    ]


def names_unknown(question: str, unknown: list[str]) -> bool:
    """Whether the question names a thing no note holds (`HEALTHCHECK`, `Kafka`): its passages
    come closest at best, whoever reads them."""
    return any(is_name(w, question) for w in unknown)


# A `closest` settled before answering: a model is not asked (what it would write from
# passages that lack a word of the question is not worth the call); a quoting answerer still
# looks, and its own figures (and `unknown_share`) decide.
DOUBT: RefusalReason = "score_gate"


# Logistic weights over `Selection.features`: fitted by `bench/fit_outcome.py` on the labelled
# sets whose questions share few words with their notes (sets D, E and F, and the Korean
# questions of the others: 598; positive: the quoted answer states every key fact of an
# answerable question; negative: it does not, or the notes hold no answer). The English
# questions of sets A, B and C, which copy their notes' words, and all of tldr were left out.
# Set F (192 English questions written for the tenth session) doubled the English ones: a fit
# on mostly Korean questions had learned to doubt English askers, who rephrase.
# The share of the question's subject its note holds and the count of words no note holds are
# not weighed: they read Latin words only, so for a Korean question they sit near their best.
# `absent` (the rarest subject word the quoted note lacks: "laptop" asked of the server's
# backup note) stays: without it, written near misses of the fixtures are answered.
WEIGHTS: dict[str, float] = {
    "cosine": 1.617,
    "cover": 0.854,
    "absent": -0.637,
    "margin": 0.925,
    "complete": 0.489,
    "asks_shape": 0.621,
    "shape": 0.09,
    "names_missing": -1.429,
    "fix": -0.099,
    "other_language": 0.25,
    "block": -0.398,
    "lead": 3.035,
    "bias": -3.059,
}
# `lead` is the likelihood `llm.lead` gives the quoted passages of holding the answer, among
# the `lead.AMONG` likeliest (so that it does not move with `search.k`); `margin` is the best
# quoted unit's lead over the best unit of the `lead.AMONG` likeliest passages of other notes.
# `confidence` at or above this is `answered` (the default of the `rag.answered_at` setting).
# Fitted with `--precision 0.75 --unanswered 0.2` (the fit's own threshold 0.58). At 0.55, on
# the 881 labelled questions of the seven corpora: precision 0.875, coverage 0.53,
# unanswerables answered 0.15; on tldr, in no fit: 0.85 / 0.35 / 0.38 (the weights before,
# at 0.50: 0.79 / 0.44 / 0.48). A question the fixture notes answer plainly with a config
# block ("sshd 접속 유지 설정은 어떻게 해?", 0.58) is answered. docs/quality.md has the
# risk-coverage table, each corpus held out.
ANSWERED_AT = 0.55


def confidence(features: dict[str, float]) -> float:
    """How likely the quoted units hold what was asked (0..1)."""
    z = WEIGHTS["bias"] + sum(w * features.get(k, 0.0) for k, w in WEIGHTS.items() if k != "bias")
    return 1.0 / (1.0 + math.exp(-z))


def unknown_share(question: str, unknown: list[str]) -> float:
    """The share of the question's content terms (`content_terms`) that no note holds:
    "how long should *croissant dough rest* in the fridge?" asked of notes on sourdough."""
    asked = set(content_terms(question))
    missing = {t for w in unknown for t in latin_terms(w)} & asked
    return len(missing) / len(asked) if asked else 0.0


# Each thing a question of two or more parts asks must be held at least this surely, read by the
# same weights at the quoted unit that fits that part best. A part alone lacks the subject the
# question gives once ("…, and which file does it log to?"), so its figures sit lower than the
# whole question's. 0.40 gave the highest precision on the labelled questions of two parts it
# was set on (set J and the 82 of the other sets: 0.64 -> 0.69; set J 0.38 -> 0.50), at a cost
# of two right answers whose second part names nothing ("…, and how do I point it somewhere
# else?"). On set K, written afterwards and held out: precision 0.59 -> 0.67, half-answerable
# questions answered 0.38 -> 0.25, no right answer lost (docs/quality.md, twentieth session).
PART_HELD_AT = 0.40


def after_quoting(
    features: dict[str, float],
    answered_at: float = ANSWERED_AT,
    parts: list[dict[str, float]] | None = None,
    wordless_cos: float | None = None,
) -> Outcome:
    """`answered` when the quoted units hold what was asked, else `closest`. Evidence that
    lacks most of the names the question is about (`pool_size`, `max_overflow`) cannot hold
    what was asked, nor can notes that lack more than half of its words anywhere
    (`unknown_share`), however close they are in meaning or however sure the quote is of its
    passage. (Of 689 labelled questions, the most any has in no note is 0.375, a near miss.)
    A question that asks two things is answered only when the quote holds each
    (`PART_HELD_AT`, or `answered_at` where that is set lower; a part naming what the
    evidence lacks is not held): half an answer that reads as whole is a confident wrong
    answer. A quote in the question's language that holds no word of it (`cover` 0) stands on
    its meaning alone, and must be as close as `wordless_cos` (the cosine a question needs when
    it has a word no note holds, `unknown_word_cosine`): "고양이 사료는 하루에 몇 번 줘?" of
    notes on cooking quoted a stew's steps (a number asked, numbers held, the only Korean note
    among those found), at cosine 0.28. Of the 1,290 labelled questions, one answer quoted no
    word of its question, at cosine 0.55. A quote in the other language holds the question's
    words only as far as the glossary knows them (`마리아DB` asked of an English note on
    MariaDB, cosine 0.45): it is left to the figures. Nor can a quote hold a word of the
    question that no note holds (`unknown_share`); it stands on its meaning for that word, and
    must be as close as a missing word that only phrases the question needs before answering
    (`PHRASING` of `wordless_cos`): "How many vacation days do I get per year?" of the sample
    notes quoted the backup retention table (days, numbers), at cosine 0.21. Of the 1,290
    labelled questions, every answer to a question with such a word quoted at cosine 0.45 or
    more."""
    if (
        not features
        or (
            wordless_cos is not None
            and features.get("cover", 1.0) == 0.0
            and features.get("cosine", 1.0) < wordless_cos
            and not features.get("other_language", 0.0)
        )
        or (
            wordless_cos is not None
            and features.get("unknown_share", 0.0) > 0.0
            and features.get("cosine", 1.0) < wordless_cos * PHRASING
        )
        or features.get("names_missing", 0.0) >= 0.5
        or features.get("unknown_share", 0.0) > 0.5
        or any(
            part.get("names_missing", 0.0) >= 0.5
            or confidence(part) < min(PART_HELD_AT, answered_at)
            for part in parts or []
        )
    ):
        return "closest"
    return "answered" if confidence(features) >= answered_at else "closest"


def after_answering(grounded: bool, refusal: RefusalReason | None, found: bool) -> Outcome:
    """The outcome of a finished answer nothing settled before: `answered` when grounded;
    `closest` when the answerer found passages but its answer is not supported by them; else
    (a failed or cancelled answer, nothing found) `not_answered`."""
    if grounded:
        return "answered"
    return "closest" if refusal == "llm_self_judge" and found else "not_answered"


# Words -----------------------------------------------------------------------------------------


def closest_words(question: str) -> str:
    """The plain sentence over the passages of a `closest` outcome."""
    if is_korean(question):
        return "아래 구절이 이 질문에 답하는지는 확실하지 않습니다."
    return "The passages below may not answer the question."


def closest_text(question: str, unknown: list[str]) -> str:
    """The words over a `closest` outcome's passages: `closest_words`, and what the notes lack
    when that is a name or a word the question is about ("The notes never mention: croissant.").
    How the asker put it ("the columns are *squished*", by its form: `is_phrasing_form`; "the
    docs *act* up": `is_idiom`) is no news under passages that come close, and is not said."""
    lacking = [
        w
        for w in unknown
        if is_name(w, question) or not (is_phrasing_form(w) or is_idiom(w, question))
    ]
    lacks = refusal_words(question, "score_gate", lacking) if lacking else ""
    return f"{closest_words(question)} {lacks}".strip()


def refusal_words(
    question: str, reason: RefusalReason, unknown: list[str], error: str | None = None
) -> str:
    """Why a question was not answered, in words for people (answer.v1 `refusal_text`); the
    code in `refusal_reason` is for tools. In the question's language."""
    ko = is_korean(question)
    if reason == "score_gate" and unknown:
        # The names and the things asked about say what the notes lack ("TLS, kubernetes,
        # ingress": naming TLS alone read as if the rest were there); how the asker put it
        # ("finally", "add") only when nothing else is missing.
        named = [w for w in unknown if is_name(w, question)]
        words = ", ".join(
            named + [w for w in unknown if w not in named and not is_phrasing(w, question)]
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

"""Citations kebab places itself, for models that drop or misplace their `[#n]` markers.

Small local models often state a correct fact with no marker ("The backup runs every day at
02:30."), or cite the wrong passage. Each sentence of the answer is checked against the packed
passages' quotable units (`kebab.units`), by its words and by meaning (the unit vectors stored
with the index, as the extractive answerer reads them):

- a sentence with no marker gets the marker of the passage whose unit supports it (`by: kebab`);
- a marker on a passage that does not hold the sentence's values moves to one that does;
- a value (a number, a name, a command, a path) that no packed passage holds is never
  attributed: it is invented, and the answer is not grounded (how "kept for 20 days" stays
  ungrounded when the notes say 7);
- a sentence no unit supports stays uncited; when such sentences outnumber the supported ones
  the answer is not grounded.

An answer that only repeats the question, or that repeats the prompt itself (a model too small
for the task, or served with the wrong chat template, echoes `Question: … <evidence> <passage …`),
is no answer: it is refused in one sentence, never listed as unsupported fragments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from kebab.footnotes import MARKER
from kebab.llm import Evidence
from kebab.llm.asks import missing_key_terms
from kebab.llm.extractive import StoredVectors, unit_vectors
from kebab.model import By
from kebab.rag import citations
from kebab.rag.prompt import SYSTEM_RULES
from kebab.syntax import EMPHASIS_MARKS, HEADING, LIST_ITEM, SOFT_BREAK
from kebab.text import STOPWORDS, coverage, is_korean, query_words, terms_of, translated_words
from kebab.units import split_sentences, units

if TYPE_CHECKING:
    from kebab.embed import Embedder
    from kebab.index import Index

# A unit supports a sentence when 0.6·cosine + 0.4·word coverage reaches this (USE v3 cosines;
# paraphrases of a note's sentence score 0.55–0.9, sentences about something else < 0.35).
SUPPORT = 0.45
# With no embedder, words alone decide.
SUPPORT_WORDS = 0.6
# A passage that holds the sentence's values (its number, its command) needs this share of it.
VALUES_HELD = 0.75

# Values an answer can state: code spans, paths, flags, numbers (02:30, 1.2.3, 2024-03-10),
# identifiers with a digit or underscore (nas01, max_age), names capitalised inside a sentence.
_VALUE = re.compile(
    r"`(?P<code>[^`\n]+)`"
    r"|(?<![\w/.~-])(?P<path>~?/[\w.-]+(?:/[\w.-]+)*/?)"
    r"|(?<![\w-])(?P<flag>--?[A-Za-z][\w-]*)"
    r"|(?<![A-Za-z0-9_])(?P<ident>[A-Za-z]+[_\d][A-Za-z0-9_.]*)"
    r"|(?<![A-Za-z0-9_.:])(?P<num>\d+(?:[.:,/-]\d+)*)(?![0-9])"
    r"|(?<=[a-z0-9,;)]\s)(?P<name>[A-Z][a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z]{2,})\b"
)
_PSEUDO_MARKER = re.compile(r"\[\^?\s*#?\s*\d{1,3}\s*\]|\(#\d{1,3}\)")
_ONLY_MARKERS = re.compile(r"^[\s.,;:!?。]*((\[#\d{1,3}\])[\s.,;:!?。]*)+$")
# The prompt's own scaffolding (kebab.rag.prompt): its evidence tags (escaped or not), a passage
# label's attributes, and the line that closes the user message. No answer holds them.
_PROMPT_PARTS = re.compile(
    r"<\\?/?(?:passage|evidence)\b|\bmarker=\"\[#\d+\]\"|\blines=\"\d+-\d+\""
    r"|^\s*Answer the question:",
    re.IGNORECASE | re.MULTILINE,
)
# a rule line of the system prompt long enough not to be said by chance
_RULES = [r.strip("- ").strip() for r in SYSTEM_RULES.split("\n") if len(r.strip("- ")) >= 40]

Echo = Literal["question", "prompt"]


@dataclass
class Attribution:
    """The answer's citations, whoever placed them, and what in it the notes do not hold."""

    text: str  # the answer with kebab's markers in place (the model's words unchanged)
    by: dict[int, By] = field(default_factory=dict)  # cited marker → who placed it
    supported: int = 0  # sentences with a citation
    unsupported: list[str] = field(default_factory=list)  # claims no packed unit supports
    invented: list[str] = field(default_factory=list)  # values no packed passage holds
    # values stated in claims no passage supports (held somewhere, but not where they are said)
    unsupported_values: list[str] = field(default_factory=list)

    @property
    def grounded(self) -> bool:
        """Its claims are supported: at least one, no value outside a supported claim, and no
        more unsupported sentences than supported ones."""
        return (
            self.supported > 0
            and not self.invented
            and not self.unsupported_values
            and len(self.unsupported) <= self.supported
        )


@dataclass
class Verdict:
    """What `finish()` needs: the answer text (kebab's markers in it), whether it is grounded,
    its valid and unknown markers, who placed each, and what in it the notes do not hold."""

    text: str
    grounded: bool
    valid: list[int]
    unknown: list[int]
    by: dict[int, By] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)  # invented values, then sentences
    echo: Echo | None = None  # the answer only repeats the question, or the prompt
    # the verdict on the model's own markers alone (what `explain` shows, `kebab eval` compares)
    by_markers: bool = False
    model_markers: list[int] = field(default_factory=list)


def judge(
    question: str, text: str, evidence: list[Evidence], index: Index | None, generative: bool
) -> Verdict:
    """The verdict on a finished answer. A model's answer (`generative`) is grounded when its
    claims are supported, whoever placed the markers; markers that name no packed passage, an
    answer saying the evidence is lacking and an echo of the question are never grounded. The
    extractive answerer's own markers are taken as they are (it quotes the units it cites).
    An echo of the prompt is judged first: its text is the prompt's (the rules' own "do not
    contain enough evidence", the passages' markers), so it is kept out of the answer."""
    grounded, valid, unknown = citations.judge(text, len(evidence))
    strict = {"by_markers": grounded, "model_markers": valid}
    if generative and is_prompt_echo(question, text):
        return Verdict("", False, [], [], echo="prompt", **strict)
    if not generative or unknown or not text.strip() or citations.self_declared_lack(text):
        return Verdict(text, grounded, valid, unknown, dict.fromkeys(valid, "model"), **strict)
    if is_echo(question, text):
        return Verdict(text, False, [], [], echo="question", **strict)
    embedder = index.embedder if index is not None else None
    att = attribute(text, evidence, embedder, index, question)
    packed = {ev.marker for ev in evidence}
    if not att.grounded:  # nothing is cited for an answer the notes do not support
        return Verdict(text, False, [], [], unsupported=att.invented + att.unsupported, **strict)
    cited = [m for m in citations.markers(att.text) if m in packed]
    return Verdict(att.text, True, cited, [], att.by, **strict)


def refusal_words(question: str, verdict: Verdict) -> str | None:
    """Why a model's answer is not grounded, in the question's language; None when it is a
    refusal of its own (the model said the notes lack the answer)."""
    ko = is_korean(question)
    if verdict.echo == "prompt":
        return (
            "모델이 답하지 않고 지시문을 되풀이했습니다: 모델이 너무 작거나 채팅 템플릿이 "
            "맞지 않을 수 있습니다."
            if ko
            else "The model repeated its instructions instead of answering: it may be too "
            "small, or its chat template is wrong."
        )
    if verdict.echo == "question":
        return (
            "모델이 답하지 않고 질문을 되풀이했습니다."
            if ko
            else "The model repeated the question instead of answering it."
        )
    if not verdict.unsupported:
        return None
    invented = [v for v in verdict.unsupported if not _is_sentence(v)]
    if ko:
        said = "노트가 이 답을 뒷받침하지 않습니다."
        return said + (f" 어느 구절에도 없는 값: {', '.join(invented)}." if invented else "")
    said = "The notes do not support this answer."
    return said + (f" No passage holds: {', '.join(invented)}." if invented else "")


def _is_sentence(item: str) -> bool:
    return len(item.split()) > 3 or item.endswith((".", "!", "?", "。"))


def attribute(
    text: str,
    evidence: list[Evidence],
    embedder: Embedder | None = None,
    stored: StoredVectors | None = None,
    question: str = "",
) -> Attribution:
    """Check every sentence of `text` against the packed `evidence` and cite it. A sentence
    that says little beyond a value ("The answer is: 8443.") is read with the `question` it
    answers: the passage that holds 8443 must also be about what was asked."""
    packed = {ev.marker for ev in evidence}
    sentences = [s for s in _sentences(text) if _is_claim(s[2])]
    if not sentences:
        return Attribution(text)
    found = [(ev, u) for ev in evidence for u in units(ev.text)]
    held = {ev.marker: _Held(" ".join([*ev.heading_path, ev.text])) for ev in evidence}
    bare = [_bare(s) for _, _, s in sentences]
    claims = [f"{question} {b}" if question and _terse(b) else b for b in bare]
    on_topic = {
        ev.marker
        for ev in evidence
        if not missing_key_terms(question, " ".join([*ev.heading_path, ev.path, ev.text]))
    }
    scores = _support(claims, found, embedder, stored)
    out = Attribution(text)
    inserts: list[tuple[int, int, str]] = []  # (start, end, replacement) in `text`
    for i, (start, end, sentence) in enumerate(sentences):
        values = _values(bare[i])
        missing = [v for v in values if not any(h.holds(v) for h in held.values())]
        if missing:
            out.invented += [v for v in missing if v not in out.invented]
            out.unsupported.append(sentence.strip())
            continue
        cited = [m for m in _markers(sentence) if m in packed]
        best = _best_per_passage(scores[i], found)
        if _model_holds(cited, values, best, held):
            out.supported += 1
            for m in cited:
                out.by.setdefault(m, "model")
            continue
        # A terse sentence names no subject of its own: its passage must hold the question's
        # names ("8443" in the nginx note does not answer "which port does Postgres use").
        off_topic = {m for m in best if _terse(bare[i]) and m not in on_topic}
        choice = _choose(values, best, held, embedder is not None, off_topic)
        if choice is None:
            out.unsupported.append(sentence.strip())
            out.unsupported_values += [v for v in values if v not in out.unsupported_values]
            continue
        out.supported += 1
        out.by.setdefault(choice, "kebab")
        inserts.append(_cite(text, start, end, choice))
    for start, end, replacement in sorted(inserts, reverse=True):
        out.text = out.text[:start] + replacement + out.text[end:]
    return out


def invented_values(text: str, evidence: list[Evidence]) -> list[str]:
    """The values of `text` that no passage of `evidence` holds."""
    held = [_Held(" ".join([*ev.heading_path, ev.text])) for ev in evidence]
    values = _values(_bare(text))
    return [v for v in values if not any(h.holds(v) for h in held)]


def is_echo(question: str, text: str) -> bool:
    """Whether the answer only repeats the question: no value of its own and hardly a content
    term the question lacks (a small model echoing a Korean question back is not an answer)."""
    bare = _bare(text)
    said = terms_of(bare) - STOPWORDS
    if not said or any(v not in question for v in _values(bare)):
        return False
    return len(said - terms_of(question)) * 5 < len(said)


def is_prompt_echo(question: str, text: str) -> bool:
    """Whether the answer repeats kebab's prompt rather than answering: it holds the prompt's
    scaffolding (evidence tags, a passage label, `Question: {question}`, the closing line) or
    a line of its rules. No answer says these; a model that echoes its input says them all."""
    if _PROMPT_PARTS.search(text):
        return True
    flat = " ".join(text.split())
    return f"Question: {' '.join(question.split())}" in flat or any(r in flat for r in _RULES)


class _Held:
    """What one passage holds, for checking an answer's values against it."""

    def __init__(self, text: str) -> None:
        flat = EMPHASIS_MARKS.sub("", text)
        self.lower = " ".join(flat.lower().split())
        self.numbers: set[str] = set()
        for m in re.finditer(r"\d+(?:[.:,/-]\d+)*", flat):
            number = _number(m.group())
            self.numbers.add(number)
            self.numbers.update(p for p in re.split(r"[.:/-]", number) if p)

    def holds(self, value: str) -> bool:
        if re.fullmatch(r"\d+(?:[.:,/-]\d+)*", value):
            return _number(value) in self.numbers
        value = " ".join(value.lower().split())
        return value in self.lower or (
            len(value) > 3 and value.endswith("s") and value[:-1] in self.lower  # "Sundays"
        )


def _number(value: str) -> str:
    """`02:30` and `2:30`, `1,000` and `1000` are one number."""
    value = re.sub(r"(?<=\d),(?=\d{3}\b)", "", value)
    return re.sub(r"(?<![\d])0+(?=\d)", "", value)


def _values(sentence: str) -> list[str]:
    out: list[str] = []
    for m in _VALUE.finditer(sentence):
        kind = m.lastgroup or ""
        value = m.group(kind).strip().rstrip(".,")
        if kind == "path" and value.count("/") < 2 and len(value) < 4:
            continue  # "/" alone, "/s": not a path
        if value and value not in out:
            out.append(value)
    return out


def _sentences(text: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) spans of the answer's claims: its sentences, split at `; `
    outside code (each clause is a claim of its own); a piece holding only markers (`...
    02:30. [#1]`) belongs to the sentence before it."""
    out: list[tuple[int, int, str]] = []
    offset = 0
    # a line break inside a sentence is a space (same length: the spans stay the text's)
    text = SOFT_BREAK.sub(r"\1 ", text)
    for line in text.split("\n"):
        cursor = 0
        if HEADING.match(line):  # a heading names a topic, it claims nothing
            offset += len(line) + 1
            continue
        for piece in (c for s in split_sentences(line) for c in _clauses(s)):
            at = line.find(piece, cursor)
            if at < 0:
                continue
            cursor = at + len(piece)
            start, end = offset + at, offset + cursor
            if out and _ONLY_MARKERS.match(piece) and out[-1][1] >= offset:
                out[-1] = (out[-1][0], end, text[out[-1][0] : end])
            else:
                out.append((start, end, piece))
        offset += len(line) + 1
    return out


def _clauses(sentence: str) -> list[str]:
    out, start = [], 0
    for m in re.finditer(r";\s+", sentence):
        if sentence[: m.start()].count("`") % 2 == 0:
            out.append(sentence[start : m.start()])
            start = m.end()
    return [c for c in [*out, sentence[start:]] if c.strip()]


def _bare(sentence: str) -> str:
    """The sentence's words: no markers (nor `[1]`, `(#1)`, `[^1]`), list marks or emphasis."""
    sentence = _PSEUDO_MARKER.sub("", MARKER.sub("", sentence))
    return EMPHASIS_MARKS.sub("", LIST_ITEM.sub("", sentence.lstrip())).strip()


def _is_claim(sentence: str) -> bool:
    """A sentence that states something: content words or a value (not "Sure!")."""
    bare = _bare(sentence)
    return bool(_values(bare)) or len(query_words(bare)) >= 2


def _terse(sentence: str) -> bool:
    """Fewer than three content words besides its values: it leans on the question."""
    return len(query_words(_VALUE.sub(" ", sentence))) < 3


def _markers(sentence: str) -> list[int]:
    return list(dict.fromkeys(int(m) for m in MARKER.findall(sentence)))


def _support(
    sentences: list[str],
    found: list[tuple[Evidence, str]],
    embedder: Embedder | None,
    stored: StoredVectors | None,
) -> list[list[float]]:
    """How well each unit supports each sentence (0..1): meaning and words."""
    if not found:
        return [[] for _ in sentences]
    cos = np.zeros((len(sentences), len(found)), dtype=np.float32)
    if embedder is not None:
        vecs, sent = unit_vectors(embedder, stored, found, sentences)
        cos = sent @ np.stack(vecs).T
    unit_terms = [terms_of(u) for _, u in found]
    context = {ev.marker: terms_of(" ".join(ev.heading_path)) for ev, _ in found}
    out = []
    for i, sentence in enumerate(sentences):
        words, other = query_words(sentence), translated_words(sentence)
        row = []
        for j, (ev, _) in enumerate(found):
            cover = coverage(words, unit_terms[j], context[ev.marker])
            if other:
                cover = max(cover, coverage(other, unit_terms[j], context[ev.marker]))
            row.append(0.6 * float(cos[i, j]) + 0.4 * cover if embedder is not None else cover)
        out.append(row)
    return out


def _best_per_passage(scores: list[float], found: list[tuple[Evidence, str]]) -> dict[int, float]:
    best: dict[int, float] = {}
    for s, (ev, _) in zip(scores, found, strict=True):
        best[ev.marker] = max(best.get(ev.marker, 0.0), s)
    return best


def _model_holds(
    cited: list[int], values: list[str], best: dict[int, float], held: dict[int, _Held]
) -> bool:
    """Whether the model's own markers stand: its passages hold the sentence's values, and a
    sentence without values is supported there (or nowhere better: a paraphrase in another
    language is the model's word against weak evidence, and its marker is kept)."""
    if not cited or not all(any(held[m].holds(v) for m in cited) for v in values):
        return False
    there = max((best.get(m, 0.0) for m in cited), default=0.0)
    return bool(values) or there >= SUPPORT or max(best.values(), default=0.0) < SUPPORT


def _choose(
    values: list[str],
    best: dict[int, float],
    held: dict[int, _Held],
    embedded: bool,
    off_topic: set[int],
) -> int | None:
    """The passage to cite for a sentence: the best-supporting one that holds all its values
    (one passage: values spread over several notes make a claim none of them states), when
    it supports the sentence well enough (one holding its values needs less of its words)."""
    floor = (SUPPORT if embedded else SUPPORT_WORDS) * (VALUES_HELD if values else 1.0)
    ranked = sorted((m for m in best if m not in off_topic), key=lambda m: (-best[m], m))
    whole = [m for m in ranked if all(held[m].holds(v) for v in values)]
    return whole[0] if whole and best[whole[0]] >= floor else None


def _cite(text: str, start: int, end: int, marker: int) -> tuple[int, int, str]:
    """The sentence with the model's markers replaced by kebab's, before its final stop."""
    sentence = MARKER.sub("", text[start:end]).rstrip()
    sentence = re.sub(r"\s+([.,;:!?。])", r"\1", sentence)
    tags = f"[#{marker}]"
    m = re.search(r"[.!?。]+$", sentence)
    body, stop = (sentence[: m.start()], m.group()) if m else (sentence, "")
    return start, end, f"{body.rstrip()} {tags}{stop}"

"""The embedded default answerer: quotes the evidence's best sentences, each cited `[#n]`.

No model server, deterministic. Sentences (list items, table rows, a description line with the
command under it) are scored by meaning (the index's embedding model) and by the question's terms.
It refuses, in the question's language, when the evidence does not carry the question's key terms
(names, numbers, identifiers, quoted words) or is too weak in both meaning and wording: the
pipeline reads that refusal as `llm_self_judge`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import numpy as np

from kebab.llm import Evidence, GenerateRequest
from kebab.text import cjk_terms, latin_terms, query_terms

if TYPE_CHECKING:
    from kebab.embed import Embedder

REFUSAL_EN = "The notes do not contain enough evidence to answer this question."
REFUSAL_KO = "노트에 이 질문에 답할 근거가 부족합니다."

MIN_SUPPORT = 0.36  # combined meaning + wording score of the best sentence (fixtures, README)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+(?=[A-Z가-힣\"'`(\[])|(?<=[다요음함])\.\s+")
# Questions whose answer is a quantity, a time or a version: prefer sentences with a number.
_ASKS_NUMBER = re.compile(
    r"\b(how (much|many|long|often|old|big|large)|what (time|port|version|size"
    r"|percentage)|when|which (port|version))\b|얼마|몇|언제|시간|크기|버전|포트",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_LIST_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_KEY_TERM = re.compile(
    r"`([^`]+)`|\"([^\"]+)\"|'([^']{2,})'|“([^”]+)”|(\b\w*[_\d]\w*\b)|"
    r"(?<!^)(?<![.?!]\s)\b([A-Z][a-zA-Z]+[A-Z]?\w*)\b"
)


class Extractive:
    backend = "extractive"
    id = "extractive-v1"
    context_tokens = 1_000_000

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder

    async def aclose(self) -> None:
        return None

    async def stream(self, request: GenerateRequest) -> AsyncIterator[str]:
        # Scoring embeds every candidate sentence: a worker thread keeps the event loop free.
        answer = await asyncio.to_thread(self.answer, request.question, request.evidence)
        for line in answer.splitlines(keepends=True):
            yield line

    def answer(self, question: str, evidence: list[Evidence]) -> str:
        korean = bool(_HANGUL.search(question))
        refusal = REFUSAL_KO if korean else REFUSAL_EN
        units = [(ev, u) for ev in evidence for u in sentence_units(ev.text)]
        if not units:
            return refusal
        if missing_key_terms(question, " ".join(ev.text for ev in evidence)):
            return refusal
        scores = self._scores(question, units)
        order = sorted(range(len(units)), key=lambda i: (-scores[i], units[i][0].marker, i))
        best = scores[order[0]]
        if best < MIN_SUPPORT:
            return refusal
        chosen = [i for i in order[:3] if scores[i] >= best * 0.9]
        chosen.sort(key=lambda i: (units[i][0].marker, i))
        lines = []
        for i in chosen:
            ev, unit = units[i]
            lines.append(f"{_as_line(unit)} [#{ev.marker}]")
        return "\n".join(lines)

    def key_sentences(self, topic: str, ev: Evidence, n: int = 2) -> list[str]:
        """The passage's `n` units that best match `topic`, in reading order, as plain lines;
        prose before code lines."""
        units = [(ev, u) for u in sentence_units(ev.text)]
        prose = [(e, u) for e, u in units if not (u.startswith("`") and u.endswith("`"))]
        units = prose or units
        if not units:
            return []
        scores = self._scores(topic, units)
        best = sorted(range(len(units)), key=lambda i: (-scores[i], i))[:n]
        return [_as_line(units[i][1]) for i in sorted(best)]

    def _scores(self, question: str, units: list[tuple[Evidence, str]]) -> list[float]:
        cos = [0.0] * len(units)
        if self._embedder is not None:
            vecs = self._embedder.embed([question] + [_context(ev) + u for ev, u in units])
            cos = [float(x) for x in np.asarray(vecs[1:] @ vecs[0])]
        latin, cjk = query_terms(question)
        wanted = set(latin) | set(cjk)
        wants_number = bool(_ASKS_NUMBER.search(question))
        out = []
        for (ev, unit), c in zip(units, cos, strict=True):
            have = set(latin_terms(unit)) | set(cjk_terms(unit))
            context = set(latin_terms(_context(ev))) | set(cjk_terms(_context(ev)))
            cover = (
                (len(wanted & have) + 0.5 * len(wanted & (context - have))) / len(wanted)
                if wanted
                else 0.0
            )
            prior = 0.04 / ev.marker  # earlier evidence ranked higher by retrieval
            fits = 0.08 if wants_number and _NUMBER.search(unit) else 0.0
            out.append(0.65 * c + 0.35 * cover + prior + fits)
        return out


def missing_key_terms(question: str, evidence_text: str) -> list[str]:
    """Names, numbers, identifiers and quoted words of the question that the evidence lacks."""
    haystack = evidence_text.lower()
    missing = []
    for match in _KEY_TERM.finditer(question):
        term = next(g for g in match.groups() if g)
        if len(term) < 2 or (term.isdigit() and len(term) < 2):
            continue
        if term.lower() not in haystack:
            missing.append(term)
    return missing


def sentence_units(text: str) -> list[str]:
    """Quotable units of a Markdown passage: sentences, list items, table rows, short code lines.

    Wrapped lines are joined first; a unit ending in ':' takes the next one with it (tldr's
    "Description:" followed by its command); questions written in the notes are not answers.
    """
    units: list[str] = []
    para: list[str] = []
    header: list[str] = []  # the current table's column names

    def flush() -> None:
        if para:
            joined = " ".join(para)
            if joined.startswith("|") or _LIST_ITEM.match(joined):
                units.append(joined)
            else:
                units.extend(s for s in _SENTENCE_END.split(joined) if s.strip())
            para.clear()

    in_fence = False
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            if line and len(line) <= 160 and not line.startswith("#"):
                units.append(f"`{line}`")
            continue
        line = re.sub(r"^(>\s*)+", "", line)
        line = re.sub(r"^\[![A-Za-z-]+\][+-]?\s*", "", line)
        if re.fullmatch(r"\|?[\-: |]+\|?", line) and "-" in line:  # table separator
            flush()
            if units and units[-1].startswith("|"):
                header = _cells(units.pop())
            continue
        if not line or line.startswith("#"):
            flush()
            header = []
            continue
        if line.startswith("|"):
            flush()
            cells = _cells(line)
            if header and len(cells) == len(header):  # a row reads as "Column: value; ..."
                units.append(
                    "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True) if c)
                )
                continue
        elif _LIST_ITEM.match(line):
            flush()
        para.append(line)
    flush()
    merged: list[str] = []
    for unit in units:
        if merged and merged[-1].rstrip("*_ ").endswith(":") and len(merged[-1]) < 200:
            merged[-1] = f"{merged[-1]} {unit}"
        else:
            merged.append(unit)
    return [
        u for u in merged if len(u) > 3 and not u.rstrip("~*_ ").endswith("?") and "?~~" not in u
    ]


def _context(ev: Evidence) -> str:
    return " › ".join(ev.heading_path) + "\n" if ev.heading_path else ""


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _as_line(unit: str) -> str:
    """A unit as it reads quoted in another note: no list marker, no footnote refs or #tags."""
    unit = re.sub(r"^([-*+]|\d+[.)])\s+", "", unit.strip())
    if unit.startswith("|"):
        unit = " | ".join(_cells(unit))
    unit = re.sub(r"\[\^[^\]\s]+\]", "", unit)  # the source note's own footnotes point nowhere here
    return re.sub(r"(\s+#[^\W\d][\w/-]*)+\s*$", "", unit)

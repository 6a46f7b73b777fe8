"""The embedded default answerer: quotes the evidence's best units, each cited `[#n]`.

No model server, deterministic. Units (whole sentences, list items, table rows with their header,
a description line with the command under it: `kebab.units`) are scored by meaning (the unit
vectors stored with the index, or the index's embedding model when a passage has none), by the
question's terms, and by whether they hold the kind of thing asked for (a number for "which port",
a flag for "which option", a command for "how do I"). Extra units come from the quoted passages
themselves, never sentences spliced in from elsewhere. Index notes (lists of
links) are never quoted; how the chosen units read as Markdown (a code block fenced under the
line introducing it, a list kept a list) is `quoting`'s. Between a passage and its
translation, the one in the question's language is quoted.
The passage quoted from is the one `lead` weighs likeliest to hold the answer (the fix after a
problem, the steps after an intro), with a second one when nearly as likely. It never refuses:
`select` returns the quoted text with figures about its units (cosine, the question's words
held, its lead over other notes, the asked-for shape, the rarest subject word the note lacks,
names missing), and `rag.outcome` decides whether that answers the question or only comes
closest.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kebab.llm import Evidence, GenerateRequest, Selection, lead
from kebab.llm.asks import (
    COMMAND,
    counted,
    holds,
    key_terms,
    names,
    parts,
    shapes_asked,
    shapes_wanted,
)
from kebab.llm.lead import Read
from kebab.llm.quoting import as_line, render, source_line, terms_apart
from kebab.loanwords import GLUED, glued_pattern
from kebab.syntax import (
    CODE_SPAN,
    LIST_ITEM,
    NOT_PROSE,
)
from kebab.text import (
    LATIN_WORD,
    MOOD_WORDS,
    STOPWORDS,
    coverage,
    fix_for,
    is_fix,
    is_korean,
    is_name,
    is_phrasing,
    is_symptom,
    latin_terms,
    loanword_words,
    platforms,
    query_words,
    terms_of,
    translated_words,
)
from kebab.units import (
    embedding_text,
    is_block,
    is_navigation,
    is_wordless,
    leads_into,
    split_block,
    units,
)

if TYPE_CHECKING:
    from kebab.embed import Embedder

# Weight of retrieval's own confidence in a passage (its fused score) in a unit's score. On the
# dev half of the eval sets, 0.3 and 0.6 quote the right passage about as often (cites gold
# 0.66 / 0.67, key facts 0.40 / 0.42, vs 0.60 / 0.37 at 0.15); 0.3 still lets a sentence that
# holds the asked-for thing in the second passage beat the first passage's intro.
PRIOR = 0.3
# A unit's score in a passage in the other script than the question's, for ordering only: a
# translation scores within a few hundredths of its original (the embedding model is
# multilingual), so this prefers the asker's language between the two and decides nothing else
# (0.9, search's factor, quoted the wrong Korean page over the right English one for
# Korean questions on tldr).
TRANSLATION = 0.97
# What `Extractive._said` reads for a question or a part of it: the units that say something,
# each one's score, cosine and cover.
Said = tuple[list[tuple[Evidence, str]], list[float], list[float], list[float]]
# Share of a unit's score against the whole question in its score for one part of it: a part
# alone often lacks the subject ("…, and is it TCP or UDP?") and would fit any note's line.
WHOLE = 0.5


class StoredVectors(Protocol):
    """What the index already holds for the answerer: unit vectors by passage hash, and the
    question's vector that search computed (embedded once per question, not again here)."""

    def unit_vectors(self, hashes: list[str]) -> dict[str, np.ndarray]: ...

    def embed_query(self, text: str) -> np.ndarray | None: ...

    def rarity(self, terms: list[str]) -> dict[str, float]: ...


class Extractive:
    backend = "extractive"
    id = "extractive-v2"
    context_tokens = 1_000_000

    def __init__(self, embedder: Embedder | None, stored: StoredVectors | None = None) -> None:
        self._embedder = embedder
        self._stored = stored

    async def aclose(self) -> None:
        return None

    async def stream(self, request: GenerateRequest) -> AsyncIterator[str]:
        # Scoring may embed sentences of passages without stored unit vectors: a worker thread.
        answer = await asyncio.to_thread(
            self.answer, request.question, request.evidence, request.follows
        )
        for line in answer.splitlines(keepends=True):
            yield line

    def answer(self, question: str, evidence: list[Evidence], follows: str = "") -> str:
        """Quoted units of the evidence that come closest to answering `question` ("" when the
        evidence has nothing to quote); whether they answer it is `rag.outcome`'s call."""
        return self.select(question, evidence, follows).text

    def select(self, question: str, evidence: list[Evidence], follows: str = "") -> Selection:
        """The units to quote for `question`, and figures about them (`Selection.features`) for
        `rag.outcome`. A follow-up's units are scored against it and the question it `follows`
        (the same text search used), while its key terms come from the question alone. This
        never refuses: it quotes the best it has, and says how well that fits."""
        s = self._read(question, evidence, follows)
        if s is None:
            return Selection("")
        found, scores, cos, cover = s.found, s.scores, s.cos, s.cover
        # The passage quoted from is the one the fitted weights (`lead.WEIGHTS`) find likeliest
        # to hold the answer; its best unit leads the quote. Unless a quoted unit holds the very
        # thing asked (`_complete`: "15분" for "몇 분"), a second passage nearly as likely is
        # quoted after it (`lead.SECOND`): the problem and its fix, the intro and its steps;
        # never a translation of the first (in the other language, or with the same code).
        ranked = lead.ranked(lead.table(question, s))
        passage, problem, fix, likely = _passage(s, ranked)
        order = sorted(
            range(len(found)),
            key=lambda i: (found[i][0].marker != passage, -scores[i] * s.weight[i], i),
        )
        i0 = order[0]
        top = found[i0][0]
        complete = _complete(question, found[i0][1], _context(top))
        symptom = next(
            (
                i
                for i in order
                if found[i][0].path == top.path
                and is_symptom(found[i][0].heading_path)
                and found[i][0].end_line < top.start_line
            ),
            None,
        )
        chosen = _chosen(found, order, scores, complete, symptom)
        other, also = next(((m, p) for m, p in ranked if m not in (passage, problem)), (None, 0.0))
        if (
            other is not None
            and s.mine[other]
            and not _restates(found, passage, other)
            and not any(_complete(question, found[i][1], _context(top)) for i in chosen)
            and also >= lead.SECOND * likely
        ):
            likely += also
            again = sorted(
                (i for i in range(len(found)) if found[i][0].marker == other),
                key=lambda i: (-scores[i], i),
            )
            done = _complete(question, found[again[0]][1], _context(found[again[0]][0]))
            chosen += [i for i in _chosen(found, again, scores, done, None) if i not in chosen]
        asked_parts = parts(question)
        asked_parts = asked_parts if len(asked_parts) > 1 else []  # when two or more
        per_part = [self._said(part, s.content) for part in asked_parts]
        chosen += self._other_parts(asked_parts, per_part, s, chosen)
        chosen = _best_entry_first(
            found, _with_what_they_point_at(found, _gaps_filled(found, chosen)), i0
        )
        text = render(found, chosen, question)
        held = " ".join(ev.text for ev in evidence).lower()
        wants = shapes_asked(question)
        # the best unit of another note, among the `lead.AMONG` likeliest passages of other
        # notes: the margin, like `lead`, must not grow or shrink with `search.k`, nor jump
        # when one long note's sections fill the likeliest five and leave nothing to beat
        where = {ev.marker: ev.path for ev, _ in found}
        near = {m for m, _ in [x for x in ranked if where.get(x[0]) != top.path][: lead.AMONG]}
        others = [scores[i] for i in order if found[i][0].marker in near]
        # A fix quoted for the problem the question described is vouched for by that match:
        # the problem's best unit, when it matched better than the fix's, says how near the
        # question the quote is (its cosine, the words it holds, its lead over other notes).
        # The fix shares few of the question's words by nature. Each corpus held out in turn,
        # hyunolike-troubleshooting's coverage went from 0.32 to 0.53 (precision 0.87 -> 0.80),
        # and, over all, unanswerables answered from 0.24 to 0.21 at coverage 0.49 -> 0.52.
        vouch = problem if fix is not None else _problem_of(s.content, passage, ranked)
        p0 = (
            i0
            if vouch is None
            else min(order, key=lambda i: (found[i][0].marker != vouch, -scores[i]))
        )
        i1 = max((i0, p0), key=lambda i: (scores[i], -i))
        features = {
            "cosine": cos[i1],
            "absent": _absent(s.subject, s.note[top.path]),
            "fix": float(is_fix(top.heading_path)),
            "cover": cover[i1],
            "margin": scores[i1] - max(others, default=0.0),
            "complete": float(complete),
            "asks_shape": float(bool(wants)),
            "shape": _shape_held(wants, found, chosen),
            "names_missing": _names_missing(question, held),
            "block": float(is_block(found[i0][1])),
            "other_language": float(not s.mine[top.marker]),
            "lead": likely,
        }
        each = [
            self._part_figures(part, said, s, chosen, near, top.path, held, likely)
            for part, said in zip(asked_parts, per_part, strict=True)
        ]
        return Selection(text, features, each)

    def _part_figures(
        self,
        part: str,
        said: Said,
        s: Read,
        chosen: list[int],
        near: set[int],
        top: str,
        held: str,
        likely: float,
    ) -> dict[str, float]:
        """The figures `Selection.features` holds, for one part of a question of two or more
        (`asks.parts`), read at the quoted unit that fits that part best: a quote that holds
        one part well and the other not at all must not pass as an answer to both."""
        _, scores, cos, cover = said
        j = max(chosen, key=lambda i: (scores[i], -i))
        ev, unit = s.found[j]
        wants = shapes_asked(part)
        # its lead over the best unit of other notes than its own: the likeliest passages of
        # other notes than the quote's first, and that note's, when the part is read elsewhere
        others = [
            scores[i]
            for i, (e, _) in enumerate(s.found)
            if e.path != ev.path and (e.marker in near or e.path == top)
        ]
        return {
            "cosine": cos[j],
            "absent": _absent(self._subject(part, s.note[ev.path]), s.note[ev.path]),
            "fix": float(is_fix(ev.heading_path)),
            "cover": cover[j],
            "margin": scores[j] - max(others, default=0.0),
            "complete": float(_complete(part, unit, _context(ev))),
            "asks_shape": float(bool(wants)),
            "shape": _shape_held(wants, s.found, chosen),
            "names_missing": _names_missing(part, held),
            "block": float(is_block(unit)),
            "other_language": float(not s.mine[ev.marker]),
            "lead": likely,
        }

    def _other_parts(
        self,
        asked: list[str],
        per_part: list[Said],
        s: Read,
        chosen: list[int],
    ) -> list[int]:
        """For a question that asks two things ("what's the pragma to turn WAL on, and what's
        the way back?", `asks.parts`), what answers a part the quote leaves out, to quote after
        it: the unit that fits that part better than it fits the other parts, when that unit
        is in a note the quote holds (a line on the note's topic fits every part alike: the
        loop that turns WAL on was quoted for "…, and how do I switch it back?"); otherwise
        the unit that fits the part best, each with the whole question beside it (a part
        alone often lacks its subject: "…, and is it TCP or UDP?"), with its neighbours
        (`_window`), from a passage that is no translation of one quoted; the fix when that
        unit describes a problem (`text.fix_for`). A part is answered when that unit is quoted:
        scores are close between units that share the note's topic ("turn WAL mode off" scores
        0.98 of "turn WAL on" against the question of turning it on), so nearly as good is not
        the same answer.
        The unit comes from the notes the quote holds, or from another note that holds more of
        the part's own words than they do ("…, and where does it write its log?": the note on
        logs): a part's best unit in any note was mostly a line that shares a word or two with
        it (set J and the labelled questions of two parts: 18 of 26 such lines were from no
        note that answers; "…gradle에 넣은 드라이버 jar 파일 이름" quoted a MariaDB note's
        datasource block beside the MSSQL note that names the jar). (Put in the order asked, the
        quote's passages changed which of them a `closest` list shows with more room, and its
        excerpts held the key facts less often.)"""
        if len(asked) < 2:
            return []
        quoted = {s.found[i][0].marker for i in chosen}
        # a passage in the other language only when the quote is in it too (English notes
        # asked in Korean), never one restating a quoted passage (its translation)
        mine = any(s.mine[m] for m in quoted)
        again = {
            ev.marker
            for ev in s.content
            if any(m != ev.marker and _restates(s.found, m, ev.marker) for m in quoted)
        }
        may = [
            i
            for i, (ev, _) in enumerate(s.found)
            if (s.weight[i] == 1.0 or not mine)
            and ev.marker not in again
            and ev.marker not in s.elsewhere
        ]
        notes = {s.found[i][0].path for i in chosen}
        out: list[int] = []
        for k, part in enumerate(asked if may else []):
            # how much better a unit fits this part than any other part: a line on the note's
            # topic fits every part alike, the line that answers this one stands out
            apart = [
                f - max(per_part[o][1][i] for o in range(len(asked)) if o != k)
                for i, f in enumerate(per_part[k][1])
            ]
            said = [query_words(part), translated_words(part)]  # as either language has it
            held = {
                path: max(coverage(words, terms) for words in said)
                for path, terms in s.note.items()
            }  # once per note, not once per unit
            most = max(held[path] for path in notes)
            near = [
                i for i in may if s.found[i][0].path in notes or held[s.found[i][0].path] > most
            ]
            if not near:
                continue
            # within the notes the quote holds, the line that stands out for this part; from
            # another note, the line that fits it best (one that stands out there is mostly a
            # word or two the part shares with it: "somewhere else" for "…point it somewhere
            # else?" in a note on moving a binary)
            fits = apart
            best = _fits_best(near, fits, s.scores)
            if s.found[best][0].path not in notes:
                fits = per_part[k][1]
                best = _fits_best(near, fits, s.scores)
            # a part that describes a problem ("…설치를 거부할 때 켜는 설정") is answered by
            # the fix its note gives for it (the nearest after it), not by the line that
            # restates the problem; unless that fix is quoted already, and the part asks for
            # the problem itself ("…, and what was the exact error?")
            fix = fix_for(s.found[best][0], sorted(s.content, key=lambda e: e.start_line))
            at_fix = [i for i in near if fix is not None and s.found[i][0].marker == fix.marker]
            cure = _fits_best(at_fix, fits, s.scores) if at_fix else best
            best = best if cure in chosen or cure in out else cure
            if best in chosen or best in out:
                continue
            ev, unit = s.found[best]
            window = _window(s.found, best, _complete(part, unit, _context(ev)))
            out += [i for i in window if i not in chosen and i not in out]
        return out

    def passages(self, question: str, evidence: list[Evidence]) -> dict[int, dict[str, float]]:
        """Each passage's figures (`lead.FEATURES`) by marker: what `bench/fit_lead.py` fits
        the weights that pick the passage to quote from on."""
        s = self._read(question, evidence, "")
        return {} if s is None else lead.table(question, s)

    def _read(self, question: str, evidence: list[Evidence], follows: str) -> Read | None:
        """The evidence's units scored against the question, with what each passage's choice
        weighs: its language, its note's share of the question's subject."""
        content = [ev for ev in evidence if not is_navigation(ev.text)] or evidence
        asked = f"{question}\n{follows}" if follows else question
        found, scores, cos, cover = self._said(asked, content)
        if not found:
            return None
        # A passage in the question's script is quoted before a translation of it (tldr keeps
        # each page in several languages; a bilingual vault keeps both); a passage of code alone
        # is in no language.
        korean = is_korean(question)
        # ...read from its prose: code is in no language (`nmcli` commands under Korean lines)
        mine = {ev.marker: is_korean(NOT_PROSE.sub(" ", ev.text)) == korean for ev in content}
        prose = {ev.marker for ev, u in found if not is_block(u)}
        weight = [
            1.0 if mine[ev.marker] or ev.marker not in prose else TRANSLATION for ev, _ in found
        ]
        # A question of two parts asks two sections of one note ("when does the backup run, and
        # how long are snapshots kept?"): a passage is judged with the other passages of its
        # note that were found.
        note: dict[str, set[str]] = {}
        for ev in content:
            note.setdefault(ev.path, set()).update(terms_apart(ev.text) | _where(ev))
        # A follow-up given the question it `follows` left its subject out ("which systemd
        # unit starts it?"): the thread fills it in.
        subject = self._subject(asked, set().union(*note.values()))
        share = {
            ev.marker: held_share(
                # A passage in the other language is judged on the question's names only: its
                # everyday words are said in that language.
                subject if mine[ev.marker] else [s for s in subject if s[2]],
                note[ev.path],
            )
            for ev in content
        }
        return Read(
            content,
            found,
            scores,
            cos,
            cover,
            weight,
            mine,
            subject,
            note,
            share,
            _elsewhere(question, content, {ev.marker for ev, _ in found}),
        )

    def _said(self, question: str, content: list[Evidence]) -> Said:
        """The passages' units that say something, each with its score against `question`, its
        cosine and its cover (`_scores`). Scored with the rest, since stored unit vectors are
        rows in `units()` order; a unit of only a screenshot or a link is then set aside:
        quoted alone it says nothing."""
        found = [(ev, u) for ev in content for u in units(ev.text)]
        if not found:
            return [], [], [], []
        scores, cos, cover = self._scores(question, found)
        said = [i for i, (_, u) in enumerate(found) if not is_wordless(u)] or list(
            range(len(found))
        )
        return (
            [found[i] for i in said],
            [scores[i] for i in said],
            [cos[i] for i in said],
            [cover[i] for i in said],
        )

    def _subject(
        self, question: str, held: set[str] | frozenset[str] = frozenset()
    ) -> list[tuple[frozenset[str], float, bool]]:
        """The question's subject words: each as the terms it is indexed as, its rarity in
        the notes, and whether it is a name. Its content words, less how it is put (mood
        words, light verbs, verbs after their subject, adverbs: `is_phrasing`) and values.
        A word half in Hangul (`마리아DB`) is also the whole Latin term of `held` (the
        evidence's terms) it stands for (`mariadb`): its Latin half alone (`db`) no note
        about MariaDB needs to hold."""
        glued: dict[str, list[re.Pattern[str]]] = {}
        for hangul, latin in GLUED.findall(question):  # `몽고DB와 마리아DB`: two wholes of `db`
            if (pattern := glued_pattern(hangul, latin)) is not None:
                glued.setdefault(latin, []).append(pattern)
        subject: list[tuple[frozenset[str], bool]] = []
        for w in dict.fromkeys(LATIN_WORD.findall(question)):
            if is_phrasing(w, question):
                continue
            terms = frozenset(
                t
                for t in latin_terms(w)
                if t not in STOPWORDS
                and t not in MOOD_WORDS
                and t not in _GLUE
                and len(t) > 1
                and not t.isdigit()
            )
            if terms and w in glued:
                terms |= {t for t in held if any(p.fullmatch(t) for p in glued[w])}
            if terms and all(terms != seen for seen, _ in subject):
                subject.append((terms, is_name(w, question)))
        every = sorted({t for terms, _ in subject for t in terms})
        rarity = self._stored.rarity(every) if self._stored is not None else {}
        return [(terms, max(rarity.get(t, 1.0) for t in terms), name) for terms, name in subject]

    def key_sentences(self, topic: str, ev: Evidence, n: int = 2) -> list[str]:
        """The passage's `n` units that best match `topic`, in reading order, as plain lines;
        prose before code lines."""
        found = [(ev, u) for u in units(ev.text)]
        prose = [(e, u) for e, u in found if not is_block(u)]
        found = prose or found
        if not found:
            return []
        scores = self._scores(topic, found)[0]
        best = sorted(range(len(found)), key=lambda i: (-scores[i], i))[:n]
        return [as_line(found[i][1]) for i in sorted(best)]

    def _cosines(self, question: str, found: list[tuple[Evidence, str]]) -> list[float]:
        """Each unit's cosine to the question (stored unit vectors, `unit_vectors`)."""
        if self._embedder is None:
            return [0.0] * len(found)
        q = self._stored.embed_query(question) if self._stored else None
        vecs, extra = unit_vectors(
            self._embedder, self._stored, found, [] if q is not None else [question]
        )
        if q is None:
            q = extra[0]
        return [float(v @ q) for v in vecs]

    def _scores(
        self, question: str, found: list[tuple[Evidence, str]]
    ) -> tuple[list[float], list[float], list[float]]:
        """Each unit's score, and the two parts of it that say most: its cosine to the question
        and the share of the question's words it holds."""
        cos = self._cosines(question, found)
        words = query_words(question)
        other = translated_words(question)  # read against units in the other language
        # ... and, by an English unit, the longer loanwords the evidence spells in English
        # (`나스 포스트그레스 포트 몇 번?` was held whole by `Port 2222` of the SSH config:
        # `port` was its one translated word)
        loans = other + (
            loanword_words(question, frozenset().union(*(terms_of(u) for _, u in found)))
            if is_korean(question)  # the evidence's terms are gathered for Korean only
            else []
        )
        wants = shapes_asked(question, how=True)
        names = [t.lower() for t in key_terms(question)]
        count = counted(question)
        context = {ev.marker: terms_of(_context(ev)) for ev, _ in found}  # once per passage
        out, covers = [], []
        for (ev, unit), c in zip(found, cos, strict=True):
            have = terms_of(unit)
            cover = coverage(words, have, context[ev.marker])
            across = other if is_korean(unit) else loans
            if across:
                cover = max(cover, coverage(across, have, context[ev.marker]))
            prior = PRIOR * ev.score  # how sure retrieval is of the passage
            fits = 0.08 * sum(_fit(shape, unit) for shape in wants) / max(len(wants), 1)
            # The question's own identifiers (`max_age`, `root_path_in_servers`) in the unit
            # itself: the unit about `max_length` next to it is the neighbour, not the answer.
            named = 0.15 * sum(1 for t in names if t in unit.lower()) / len(names) if names else 0
            fits += 0.15 if count is not None and count.search(unit) else 0.0
            out.append(0.65 * c + 0.35 * cover + prior + fits + named)
            covers.append(cover)
        return out, cos, covers


def _elsewhere(question: str, content: list[Evidence], quotable: set[int]) -> frozenset[int]:
    """The passages under a heading for another operating system than the question names
    ("## Linux" asked "윈도우에서 … 죽이는 명령어"), in a note whose other passages found do
    not: they answer another question, however alike their commands, and are not quoted while
    their note's section for the asked one, or for none, can be. (A note's sections for
    Windows, macOS and Linux sit side by side; the one after the best match was quoted for
    following it, as a fix follows its problem.) A note written for another system as a whole
    is left to the figures: passed over, a note on nothing asked was quoted instead."""
    asked_on = platforms(question)
    if not asked_on:
        return frozenset()
    other = {
        ev.marker
        for ev in content
        if (on := platforms(" ".join(ev.heading_path))) and not on & asked_on
    }
    stays = {ev.path for ev in content if ev.marker not in other and ev.marker in quotable}
    return frozenset(ev.marker for ev in content if ev.marker in other and ev.path in stays)


def _absent(subject: list[tuple[frozenset[str], float, bool]], note: set[str]) -> float:
    """The rarest subject word the note lacks, as a share of the rarest subject word's rarity
    ("laptop" asked of the server's backup note): 0 when the note holds them all."""
    rarest = max((w for _, w, _ in subject), default=0.0)
    absent = [w for terms, w, _ in subject if not terms & note]
    return max(absent, default=0.0) / rarest if rarest else 0.0


def _shape_held(
    wants: list[re.Pattern[str]], found: list[tuple[Evidence, str]], chosen: list[int]
) -> float:
    """1.0 when the question asks for a shape (a number, a path, a command) and the quoted
    units hold every shape asked."""
    return float(bool(wants) and all(any(holds(w, found[i][1]) for i in chosen) for w in wants))


def _names_missing(question: str, held: str) -> float:
    """The share of the names the question gives (`asks.names`) that the evidence lacks."""
    asked = names(question)
    return sum(1 for t in asked if t.lower() not in held) / len(asked) if asked else 0.0


def _fits_best(among: list[int], part: list[float], whole: list[float]) -> int:
    """The unit of `among` that best fits a part of the question (`part`) with the whole
    question beside it (`whole`, at `WHOLE`)."""
    return max(among, key=lambda i: (part[i] + WHOLE * whole[i], -i))


def _fit(shape: re.Pattern[str], unit: str) -> float:
    """How well a unit holds what the question asks for: a command is best given as a code
    block, an inline `span` in a sentence is half of one."""
    if shape is COMMAND and is_block(unit):
        return 1.0
    if shape is COMMAND:
        return 0.5 if shape.search(unit) else 0.0
    return 1.0 if holds(shape, unit) else 0.0


def unit_vectors(
    embedder: Embedder,
    stored: StoredVectors | None,
    found: list[tuple[Evidence, str]],
    extra: list[str],
) -> tuple[list[np.ndarray], np.ndarray]:
    """Vectors of the evidence's units (`found`, in `units()` order per passage) and of `extra`
    texts: stored unit vectors where the passage has them (no embedding at answer time), one
    embedding batch for the rest and for `extra`."""
    stored_rows = stored.unit_vectors([ev.content_hash for ev, _ in found]) if stored else {}
    per_passage: dict[int, int] = {}
    todo: list[int] = []
    vecs: list[np.ndarray | None] = []
    for i, (ev, _) in enumerate(found):
        j = per_passage.get(ev.marker, 0)
        per_passage[ev.marker] = j + 1
        mat = stored_rows.get(ev.content_hash)
        vecs.append(mat[j] if mat is not None and j < len(mat) else None)
        if vecs[-1] is None:
            todo.append(i)
    texts = list(extra) + [embedding_text(found[i][0].heading_path, found[i][1]) for i in todo]
    embedded = embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
    for row, i in enumerate(todo):
        vecs[i] = embedded[len(extra) + row]
    return [v for v in vecs if v is not None], embedded[: len(extra)]


def _passage(s: Read, ranked: list[tuple[int, float]]) -> tuple[int, int, int | None, float]:
    """The passage to quote from and how likely it holds the answer: the likeliest (`ranked`),
    or the one in the asker's language when that restates it. A problem section is never the
    answer: what resolves it, later in its note, is quoted instead (`fix`), as likely as the
    two together (the question matched the `problem`)."""
    passage = ranked[0][0]
    passage = next(
        (
            m
            for m, _ in ranked
            if not s.mine[passage] and s.mine[m] and _restates(s.found, passage, m)
        ),
        passage,
    )
    likely = dict(ranked)
    fix = _fix_of(s.content, passage, ranked)
    if fix is None:
        return passage, passage, None, likely[passage]
    return fix, passage, fix, likely[passage] + likely[fix]


def _fix_of(content: list[Evidence], marker: int, ranked: list[tuple[int, float]]) -> int | None:
    """The passage that resolves passage `marker` when that one describes a problem
    (`text.fix_for`): the likeliest of its fix sections among the passages with units to quote
    (`ranked`); None otherwise."""
    at = {ev.marker: ev for ev in content}
    fix = fix_for(at[marker], (at[m] for m, _ in ranked))
    return None if fix is None else fix.marker


def _problem_of(
    content: list[Evidence], marker: int, ranked: list[tuple[int, float]]
) -> int | None:
    """The problem section ("## 문제") that fix section `marker` resolves (`text.fix_for`, read
    the other way): the last one before it in its note, among the passages with units to quote;
    None otherwise."""
    at = {ev.marker: ev for ev in content}
    fix = at[marker]
    before = [at[m] for m, _ in ranked if fix_for(at[m], [fix]) is fix]
    return max(before, key=lambda e: e.start_line).marker if before else None


def _complete(question: str, unit: str, context: str = "") -> bool:
    """Whether the unit holds every kind of thing the question asks for (a number, a version, a
    flag...); False when the question asks for no particular kind (how, why: an instruction
    reads better with the sentences around it)."""
    wants = shapes_wanted(question)  # not "how do I"
    if not wants or not all(holds(shape, unit) for shape in wants):
        return False
    # ...about the question's own subject ("16" in "PostgreSQL 16 runs on nas01" is no port)
    return coverage(query_words(question), terms_of(unit), terms_of(context)) >= 0.5


# Words that tie a question together without naming anything in it.
_GLUE = frozenset(
    latin_terms(
        "because since every each once twice doesn't don't isn't aren't won't can't didn't "
        "wasn't shouldn't couldn't wouldn't it's i'm i've i'd let's that's there's what's "
        "other another same different instead even though although whether either neither "
        "both more most less least very too enough something anything nothing everything "
        "one two first second last next new old right wrong good best better work works "
        "working way ways thing things lot lots bit kind sort"
    )
)


def held_share(subject: list[tuple[frozenset[str], float, bool]], have: set[str]) -> float:
    """The share of the subject's weight whose words are among `have` (1.0 for no subject)."""
    total = sum(weight for _, weight, _ in subject)
    return sum(weight for terms, weight, _ in subject if terms & have) / total if total else 1.0


def _where(ev: Evidence) -> set[str]:
    """The terms of where a passage sits: its heading path and its note's path."""
    return terms_of(" ".join(ev.heading_path) + " " + re.sub(r"[/_.-]", " ", ev.path))


def _context(ev: Evidence) -> str:
    return " › ".join(ev.heading_path) + "\n" if ev.heading_path else ""


# A passage this short is quoted whole rather than by its best units: a section of a note is
# one thought, and its fact sits in a sentence the question does not resemble as often as in
# the one it does. Over 556 answerable questions on seven corpora, whole passages of up to 12
# units and 2,500 characters held every key fact in 0.63 of quotes, against 0.52 for the best
# unit's neighbours (0.59 at 8 units and 1,500 characters); answers grew from 370 to 570
# characters at the median.
WHOLE_UNITS = 12
WHOLE_CHARS = 2500
LIST_ITEMS = 12  # a list this long or shorter is quoted whole when its item answers


def _in(found: list[tuple[Evidence, str]], i: int, ev: Evidence) -> bool:
    """Whether unit `i` exists and belongs to passage `ev`."""
    return 0 <= i < len(found) and found[i][0] is ev


def _item(found: list[tuple[Evidence, str]], i: int, ev: Evidence) -> bool:
    """Whether unit `i` is a list item of passage `ev`."""
    return _in(found, i, ev) and bool(LIST_ITEM.match(found[i][1]))


def _window(found: list[tuple[Evidence, str]], i0: int, complete: bool) -> list[int]:
    """The best unit with its neighbours in its passage: two after and one before it (a fact
    often sits next to the sentence most like the question: "... cache CORS responses.
    Defaults to 600."); alone when it holds what was asked ("at 02:30"); a code block with what
    follows it (what the output means, the fix after an error), not the note's intro before it;
    and a short list it reaches into whole, so steps keep their numbers and their last."""
    top = found[i0][0]

    def here(i: int) -> bool:
        return _in(found, i, top)

    def item(i: int) -> bool:
        return _item(found, i, top)

    if complete:
        return [i0]
    if is_block(found[i0][1]):
        return [i for i in (i0, i0 + 1) if here(i)]
    window = [i for i in (i0, i0 + 1, i0 + 2, i0 - 1) if here(i)]
    # a list the window reaches into is quoted whole when short: steps keep their numbers
    for i in [i for i in window if item(i)][:1]:
        lo, hi = i, i
        while item(lo - 1):
            lo -= 1
        while item(hi + 1):
            hi += 1
        if hi - lo < LIST_ITEMS:
            lead = [lo - 1] if here(lo - 1) and leads_into(found[lo - 1][1]) else []
            window = [w for w in window if w < lo or w > hi or w == i0]
            window += [*lead, *range(lo, hi + 1)]
    return list(dict.fromkeys(window))


# A sentence that points back at something before it ("the same example as above"): read in
# another note, it points at nothing unless that thing is quoted with it.
_POINTS_BACK = re.compile(
    r"\b(above|as before|the same (example|code|query|thing)"
    r"|(shown|mentioned|described|defined|discussed|created) (earlier|previously|before)"
    r"|previously (shown|mentioned|described|defined|discussed|created)"
    r"|(previous|earlier|preceding) (examples?|sections?|steps?|snippets?|code|query|command"
    r"|paragraph|chapter|one))\b"
    r"|위의|위와|앞의|앞서|위에서",
    re.I,
)


GAP = 2  # units left out between two quoted units of a passage, at most, before they come too


def _gaps_filled(found: list[tuple[Evidence, str]], chosen: list[int]) -> list[int]:
    """`chosen` with the units between two of its units of one passage when at most `GAP` lie
    between them: a quote that skips a sentence or two reads as one jumping over its point."""
    out = list(chosen)
    mine = sorted(chosen)
    for a, b in itertools.pairwise(mine):
        if found[a][0] is found[b][0] and 1 < b - a <= GAP + 1:
            out += [j for j in range(a + 1, b) if j not in out]
    return out


def _with_what_they_point_at(found: list[tuple[Evidence, str]], chosen: list[int]) -> list[int]:
    """`chosen` with what its sentences point at: a sentence that says "run the commands below"
    takes the block after it; one that says "the same example as above" takes the block before
    it (the nearest above), or is left out when the passage has none (it points at nothing)."""
    out = list(chosen)
    for i in chosen:
        unit, ev = found[i][1], found[i][0]
        if leads_into(unit):
            out += _what_follows(found, i)
        if not is_block(unit) and _POINTS_BACK.search(unit):
            above = [j for j in range(i) if found[j][0] is ev and is_block(found[j][1])]
            if above:
                out.append(above[-1])  # the nearest block above it
            elif len(out) > 1:
                out.remove(i)
    out = list(dict.fromkeys(out))
    # in reading order within a passage; passages in the order they were chosen (the likeliest
    # to hold the answer first)
    first = {found[i][0].marker: n for n, i in reversed(list(enumerate(chosen)))}
    out.sort(key=lambda i: (first.get(found[i][0].marker, len(chosen)), i))
    return out


def _best_entry_first(found: list[tuple[Evidence, str]], chosen: list[int], i0: int) -> list[int]:
    """`chosen` with the best unit `i0` leading its list when the list is a menu: bullets
    each naming its own command (`- Delete logs older than 2 days: `journalctl --vacuum-time
    2d``), as a cheat sheet or a tldr page has them. A menu has no order to keep, and the
    entry asked about was quoted sixth of eight; steps (numbered) and prose keep theirs."""
    if i0 not in chosen or not _entry(found[i0][1]):
        return chosen
    ev = found[i0][0]

    def joins(n: int, m: int) -> bool:  # chosen[m] is the next item of the list at chosen[n]
        i, j = chosen[n], chosen[m]
        return abs(i - j) == 1 and found[j][0] is ev and bool(LIST_ITEM.match(found[j][1]))

    start = end = chosen.index(i0)
    while start > 0 and joins(start, start - 1):
        start -= 1
    while end + 1 < len(chosen) and joins(end, end + 1):
        end += 1
    run = chosen[start : end + 1]
    if end - start < 2 or not all(_entry(found[i][1]) for i in run):
        return chosen
    depths = {at[1] for i in run if (at := source_line(ev.text, found[i][1], set()))}
    if len(depths) > 1:  # entries with sub-entries: moving one would strand its children
        return chosen
    out = [i for i in chosen if i != i0]
    out.insert(start, i0)
    return out


def _entry(unit: str) -> bool:
    """A bulleted item that names a command of its own (a code span): one entry of a menu."""
    item = LIST_ITEM.match(unit)
    return item is not None and item.group(1) in "-*+" and bool(CODE_SPAN.search(unit))


def _what_follows(found: list[tuple[Evidence, str]], i: int) -> list[int]:
    """What a sentence introduces ("Run the following.", "종류는 아래와 같다."): the code block
    or the list (its first `LIST_ITEMS` items) right after it, or after one more unit of its
    passage (a link, "on Windows:"). Quoted without it, the sentence promises what the answer
    leaves out."""
    ev = found[i][0]
    for j in (i + 1, i + 2):
        if _in(found, j, ev) and is_block(found[j][1]):
            return list(range(i + 1, j + 1))
        if _item(found, j, ev):
            end = j
            while _item(found, end + 1, ev) and end + 1 - j < LIST_ITEMS:
                end += 1
            return list(range(i + 1, end + 1))
    return []


def _restates(found: list[tuple[Evidence, str]], first: int, second: int) -> bool:
    """Whether passage `second` holds the same code as passage `first` (its code spans and code
    lines, at least four in five of them): a translation of it, or a copy in another note, whose
    prose may not read as the other language (`nmcli` commands under Korean descriptions)."""

    def code(marker: int) -> set[str]:
        out: set[str] = set()
        for ev, unit in found:
            if ev.marker == marker:
                out.update(CODE_SPAN.findall(unit))
                if is_block(unit):
                    out.update(line.strip() for line in split_block(unit)[2] if line.strip())
        return out

    theirs = code(second)
    return bool(theirs) and len(theirs & code(first)) * 5 >= len(theirs) * 4


def _chosen(
    found: list[tuple[Evidence, str]],
    order: list[int],
    scores: list[float],
    complete: bool,
    symptom: int | None,
) -> list[int]:
    """The units to quote, best first in `order`: the best unit with its neighbours
    (`_window`), then its passage's other strong units. Units come only from the best unit's
    passage, so no sentence from another note is spliced in; one from another section of the
    same note only when nearly as strong as the best (two-section questions), never the
    `symptom` a fix was quoted for."""
    i0 = order[0]
    best, top = scores[i0], found[i0][0]
    window = _window(found, i0, complete)
    chosen = window + [i for i in order[1:6] if found[i][0] is top and scores[i] >= best * 0.9]
    chosen = list(dict.fromkeys(chosen))[: max(4, len(window))]
    passage = [i for i in range(len(found)) if found[i][0] is top]
    short = sum(len(found[i][1]) for i in passage) <= WHOLE_CHARS
    if not complete and len(passage) <= WHOLE_UNITS and short:
        chosen = passage  # a short passage is one thought: quoted whole, every fact in it
    return (
        chosen
        + [
            i
            for i in order[1:3]
            if found[i][0] is not top
            and found[i][0].path == top.path
            and scores[i] >= best * 0.95
            and i != symptom  # the fix is said without the symptom
        ][:1]
    )

"""The passages a refusal or a `closest` outcome lists, and what a person reads of each.

`nearest` orders them (the passages the quote would have held first, one per note before a
second of any, a note's fix before the problem it resolves); `listed` gives each its excerpt: the
opening, or the passage read on from its line closest to the question (or from the code block
just before that line, which it explains), with more room for the passages the quote would have
held; an excerpt that reads as one listed above is passed over.
"""

from __future__ import annotations

from collections.abc import Callable

from kebab.excerpts import clip, excerpt
from kebab.llm import Evidence, LanguageModel, Quoter
from kebab.model import Citation, Hit
from kebab.rag.retrieval import Prepared
from kebab.text import fix_for, is_symptom
from kebab.units import is_block, units

# Passages listed under a `closest` outcome: search's first five hold the right one far more
# often than its first three (recall@5 vs @3), and a person scans five excerpts at a glance.
CLOSEST = 5


def listed(
    llm: LanguageModel, p: Prepared, n: int, cite: Callable[[Hit], Citation]
) -> list[Citation]:
    """The `n` nearest passages as a refusal or `closest` lists them, each with its excerpt.
    A passage whose excerpt reads as one listed above (`_reads_as`) is passed over for the
    next: notes that repeat a sentence (one per theme: "Tasks' setting pane has a one-click
    button…") filled three of five places with it."""
    first = set(_quoted_first(p))
    out: list[Citation] = []
    for h in nearest(p, n, more=len(p.hits)):
        c = cite(h)
        room = QUOTED_EXCERPT if c.chunk_id in first else NEAR_EXCERPT
        c.excerpt = _near_excerpt(llm, p.request.question, c, room)
        if not any(_reads_as(c.excerpt, o.excerpt or "") for o in out):
            out.append(c)
        if len(out) == n:
            break
    return out


def _reads_as(a: str, b: str) -> bool:
    """Whether two excerpts read the same: the same words, or one cut short (`…`) where the
    other goes on (a passage the quote would have held has more room than its copy in another
    note). An empty excerpt (a heading or an image alone) reads as nothing: its heading path
    tells the passages apart."""
    if not a or not b:
        return False
    short, long = sorted((a, b), key=len)
    return short == long or (short.endswith("…") and long.startswith(short[:-1].rstrip()))


def _quoted_first(p: Prepared) -> list[str]:
    """The chunk ids of the passages the quote would have held, in its order (none from a
    model)."""
    said = p.extra.get("first")
    return said if isinstance(said, list) else []


def nearest(p: Prepared, n: int = 3, more: int = 0) -> list[Hit]:
    """The passages closest to a refused question, best first: those set aside as where the
    question is written down (an inbox note) too, so a person sees what was found. One passage
    per note before a second of any note: five excerpts of five notes reach the right note more
    often than five of two (answerable `closest` questions: 0.91 against 0.88). The passages
    the quote would have held come first, in its order, one per note like the rest (its first
    passage and a second from another note: the passage holding the key facts listed 0.752 ->
    0.766). In a list of five, the first note's second passage follows them: when its first is
    not the one asked about, its second often is (the right passage listed 0.71 -> 0.75 for
    English askers, the right note 0.90 -> 0.89). A note's fix section stands for it before the
    problem section it resolves (`_fix_first`). `more` passages follow the `n`, in the same
    order, for a caller that passes some over."""
    first = _quoted_first(p)
    ranked = _fix_first(
        sorted(
            [*p.hits, *p.held[:n]],
            key=lambda h: (
                first.index(h.chunk_id) if h.chunk_id in first else len(first),
                -h.score,
            ),
        )
    )
    each: list[Hit] = []
    again: list[Hit] = []
    for h in ranked:
        (again if any(e.path == h.path for e in each) else each).append(h)
    held = {h.chunk_id for h in p.held}
    second = next(
        (
            h
            for h in again
            if n >= CLOSEST
            and h.path == each[0].path
            and h.chunk_id not in held  # where the question is written, not an answer
            and not is_symptom(h.heading_path)  # the problem its fix, listed, resolves
        ),
        None,
    )
    if second is None:
        return (each + again)[: n + more]
    # after the passages standing for the notes the quote held (a fix may stand for its problem)
    quoted = {h.path for h in ranked if h.chunk_id in first}
    k = max(1, next((i for i, h in enumerate(each) if h.path not in quoted), len(each)))
    return [*each[:k], second, *each[k:], *(h for h in again if h is not second)][: n + more]


NEAR_EXCERPT = 320  # characters: the opening, or the passage read on from its closest line
# A passage the quote would have held, listed first under `closest`, gets twice the room: the
# quoter found its lines nearest the question, and the key fact is often a sentence past the
# opening ("… you can simply swap the standard dataclasses with" and then `pydantic.dataclasses`).
# Answerable questions ending `closest` whose excerpts show every key fact (1,290 labelled
# questions): English 0.48 -> 0.60, Korean 0.64 -> 0.67, tldr 0.46 -> 0.52, the held-out sets
# G and H 0.51 -> 0.61; no corpus lower. The same room filled with the lines it would have
# quoted instead: no better (English 0.59).
QUOTED_EXCERPT = 2 * NEAR_EXCERPT


def _near_excerpt(llm: LanguageModel, question: str, c: Citation, room: int = NEAR_EXCERPT) -> str:
    """A nearest passage as a person scans it: its opening, or, when the line that comes
    closest to the question is not all there (a tldr page's sixth entry, a long section's last
    step), the passage read on from that line, after `…`: what the person judges the passage
    by, and what follows it (the command under a tldr entry, the option a sentence goes on to
    name). The quoting answerer picks the line (`Quoter.key_sentences`); with a model, the
    opening. Among answerable questions ending `closest`, the listed excerpts show every key
    fact for 0.51 -> 0.52 (seven corpora), 0.41 -> 0.45 (new English questions), 0.42 -> 0.44
    (tldr) against that line followed by the opening."""
    whole = excerpt(c.text, NEAR_EXCERPT)
    if not isinstance(llm, Quoter) or not whole.endswith("…"):  # or all of it is shown
        return whole
    opening = whole if room == NEAR_EXCERPT else excerpt(c.text, room)  # with this room
    ev = Evidence(0, c.path, c.heading_path, c.start_line, c.end_line, c.text, c.content_hash)
    best = [excerpt(line) for line in llm.key_sentences(question, ev, 1)]
    if not best or not best[0] or best[0].rstrip("…") in whole:
        return opening  # the opening holds the closest line
    line = best[0].rstrip("…")
    plain = excerpt(c.text, 2 * len(c.text))  # all of it, as the excerpt shows it
    at = plain.find(line)
    if at < 0 and plain.count(line[:40]) == 1:  # a long line, cut in `best`: by its start
        at = plain.find(line[:40])
    if at < 0:
        return clip(f"… {best[0]} · {opening}", room)
    # a sentence that explains a command comes after it ("This starts a proxy on port 9000…"
    # under `kubectl proxy --port 9000`): the excerpt reads on from the command
    block = _block_before(c.text, line)
    if block is not None and len(block) + len(line) < room:  # the line still shows
        start = plain.rfind(block[:40], 0, at + 1)
        if start == 0:
            return clip(plain, room)
        at = start if start > 0 else at
    return clip(f"… {plain[at:]}", room)


def _block_before(text: str, line: str) -> str | None:
    """The code block just before the unit `line` shows (as an excerpt shows it), when there
    is one: read on from only when the two fit the excerpt's room (a CSV block of twelve rows
    would leave no room for the line). Among answerable questions ending `closest`, the listed
    excerpts show every key fact for 0.610 -> 0.627 (1,290 labelled questions; simonw-til 10
    more, two fewer where the block was the input data, not the command). Reading on from any
    unit before the line did more (0.632) but began tldr entries with the entry above, the one
    not asked about."""
    found = units(text)
    shown = [excerpt(u, 2 * len(u)).rstrip("…") for u in found]
    k = next(
        (
            i
            for i, e in enumerate(shown)
            if e and (e.startswith(line[:40]) or line.startswith(e[:40]))
        ),
        None,
    )
    return shown[k - 1] if k and is_block(found[k - 1]) and shown[k - 1] else None


def _fix_first(ranked: list[Hit]) -> list[Hit]:
    """`ranked` with a note's fix section ("## 해결", "## Solution") moved up to just before its
    problem section ("## 문제", "## Error"): a question that describes a problem matches the
    problem best, and the passage a person needs is what resolves it. Among answerable
    questions ending `closest` on problem → fix notes, the passage holding the key facts was
    among the five listed for 0.83 of them, against 0.67 in retrieval's order."""
    out: list[Hit] = []
    for h in ranked:
        fix = fix_for(h, (f for f in ranked if f not in out))  # read only for a problem
        if fix is not None:
            out.append(fix)
        if h not in out:
            out.append(h)
    return out

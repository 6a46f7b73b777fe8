"""Which passage an extractive answer quotes from, weighed rather than ruled.

The passage that holds the answer is often not the one most like the question: a note's
"problem" section is most like a question that describes the problem, and the fix follows it; a
note's intro is most like a "how do I" question, and the steps sit in the next section. Each
passage of the evidence gets figures (`FEATURES`: retrieval's confidence, its best unit's score
and cosine, the question's words and names it holds, its note's share of the question's subject,
whether it sits under a problem or a fix heading or after the passage most like the question,
whether it holds the asked-for shape), and the passage with the highest `score` is quoted from.
`WEIGHTS` are fitted by `bench/fit_lead.py` on labelled questions (a passage is positive when it
holds every key fact), leave-one-corpus-out.
"""

from __future__ import annotations

import math

import msgspec

from kebab.llm import Evidence
from kebab.llm.asks import WANTS, counted_across, holds, key_terms, shapes_asked
from kebab.text import is_fix, is_symptom
from kebab.units import is_block


class Read(msgspec.Struct):
    """The evidence read against one question: its units in reading order (`found`, navigation
    passages left out), each unit's score and its two main parts (cosine, the question's words
    held), its weight for the question's language, and per passage what its choice weighs: its
    language (`mine`), its note's terms and share of the question's `subject`; and the passages
    written for another operating system than the question names (`elsewhere`), never weighed."""

    content: list[Evidence]
    found: list[tuple[Evidence, str]]
    scores: list[float]
    cos: list[float]
    cover: list[float]
    weight: list[float]
    mine: dict[int, bool]
    subject: list[tuple[frozenset[str], float, bool]]
    note: dict[str, set[str]]
    share: dict[int, float]
    elsewhere: frozenset[int] = frozenset()  # written for another OS than asked (`_elsewhere`)


FEATURES = [
    "retrieval",
    "rank",
    "best",
    "gap",
    "cos",
    "cover",
    "subject",
    "fix",
    "symptom",
    "after",
    "sibling",
    "shape",
    "command",
    "named",
    "other_language",
    "block",
    "length",
]

WEIGHTS: dict[str, float] = {
    "retrieval": 2.81,
    "rank": 0.662,
    "best": 2.298,
    "gap": 2.298,
    "cos": 2.257,
    "cover": 0.544,
    "subject": 1.144,
    "fix": 1.543,
    "symptom": -2.39,
    "after": 1.542,
    "sibling": -0.371,
    "shape": 1.334,
    "command": -0.161,
    "named": 0.177,
    "other_language": 0.26,
    "block": 1.106,
    "length": 0.454,
}
# A second passage is quoted after the first when it is at least this likely relative to it.
SECOND = 0.35


def score(figures: dict[str, float]) -> float:
    """How likely the passage holds the answer, as a logit (higher: likelier)."""
    return sum(w * figures.get(k, 0.0) for k, w in WEIGHTS.items())


# Probabilities are shared among this many likeliest passages, not among all that were packed:
# how sure the quote is must not depend on how many passages search was asked for (`search.k`):
# with all of them, a near miss was `answered` at k = 6 and `closest` at k = 10.
AMONG = 5


def ranked(table: dict[int, dict[str, float]]) -> list[tuple[int, float]]:
    """The passages by marker, likeliest first, each with its probability among the `AMONG`
    likeliest."""
    logits = {m: score(x) for m, x in table.items()}
    top = max(logits.values())
    order = sorted(
        ((m, math.exp(z - top)) for m, z in logits.items()), key=lambda mw: (-mw[1], mw[0])
    )
    total = sum(w for _, w in order[:AMONG])
    return [(m, w / total) for m, w in order]


def table(question: str, s: Read) -> dict[int, dict[str, float]]:
    """Each passage's figures, by marker (passages with no unit to quote are left out)."""
    units_of: dict[int, list[int]] = {}
    for i, (ev, _) in enumerate(s.found):
        units_of.setdefault(ev.marker, []).append(i)
    weighted = [sc * w for sc, w in zip(s.scores, s.weight, strict=True)]
    here = [i for i, (ev, _) in enumerate(s.found) if ev.marker not in s.elsewhere]
    b = max(here or range(len(s.found)), key=lambda i: (weighted[i], -i))
    top = s.found[b][0]
    shapes = shapes_asked(question)
    # "몇 시에 돌아가?": the passage with a clock time (`02:30`), not any number (the restore
    # test's `2024-03-10`), when some passage holds what the question counts
    count = counted_across(question)
    if count is not None and any(holds(count, u) for _, u in s.found):
        shapes.append(count)
    how = bool(WANTS[-1][0].search(question))
    names = [t.lower() for t in key_terms(question)]
    out: dict[int, dict[str, float]] = {}
    for rank, ev in enumerate(s.content):
        mine = units_of.get(ev.marker)
        if not mine or ev.marker in s.elsewhere:
            continue
        said = [s.found[i][1] for i in mine]
        best = max(weighted[i] for i in mine)
        text = ev.text.lower()
        out[ev.marker] = {
            "retrieval": ev.score,
            "rank": 1.0 / (1 + rank),
            "best": best,
            "gap": best - weighted[b],
            "cos": max(s.cos[i] for i in mine),
            "cover": max(s.cover[i] for i in mine),
            "subject": s.share[ev.marker],
            "fix": float(is_fix(ev.heading_path)),
            "symptom": float(is_symptom(ev.heading_path)),
            "after": float(ev.path == top.path and ev.start_line > top.end_line),
            "sibling": float(ev.path == top.path and ev.marker != top.marker),
            "shape": float(bool(shapes) and any(all(holds(p, u) for p in shapes) for u in said)),
            "command": float(how and any(is_block(u) for u in said)),
            "named": sum(1 for t in names if t in text) / len(names) if names else 0.0,
            "other_language": float(not s.mine[ev.marker]),
            "block": float(any(is_block(u) for u in said)),
            "length": math.log1p(len(ev.text)) / 8,
        }
    return out

"""Conflict detection (`rag.detect_conflicts`): one model call over the packed evidence asks
which passages state facts that disagree (a different time, number, version, name).

Pairs that name a marker which was not packed, or a passage against itself, are dropped. The rest
go into answer.v1's `conflicts[]`, and the CLI prints them before the answer. Generation goes on
either way: which note is right is the reader's call. A failed call or an unreadable reply means
no conflicts reported (logged), never a failed answer.
"""

from __future__ import annotations

import logging

from kebab.config import Config
from kebab.errors import LLMError
from kebab.llm import Evidence, LanguageModel, is_generative
from kebab.model import Conflict
from kebab.rag import calls, prompt

log = logging.getLogger(__name__)

TEMPLATE = "conflicts-v1"
MAX_CONFLICTS = 10
SYSTEM = f"""You check evidence passages from someone's notes for contradictions: two passages that
state different facts about the same thing (a different time, number, version, name, or yes/no).
Reply with JSON only: a list like [{{"a": 1, "b": 3, "detail": "..."}}] where a and b are the
passage markers' numbers and detail is one short sentence naming both claims, or [] when the
passages do not contradict each other. Differences in wording or scope are not contradictions.
{calls.DATA_RULE}"""


def enabled(cfg: Config, llm: LanguageModel) -> bool:
    return cfg.rag.detect_conflicts and is_generative(llm)


async def detect(
    llm: LanguageModel, cfg: Config, question: str, evidence: list[Evidence]
) -> list[Conflict]:
    """Disagreeing pairs among `evidence`, by marker; [] when fewer than two passages."""
    if len(evidence) < 2:
        return []
    user = (
        f"Question: {question}\n\n{prompt.evidence_block(evidence)}\n\n"
        "List the pairs of passages that contradict each other, as JSON."
    )
    try:
        reply = await calls.call(llm, cfg, SYSTEM, user, 400, question, evidence)
    except LLMError as e:
        log.warning("conflict detection failed (%s); none reported", e)
        return []
    return parse(reply, evidence)


def parse(reply: str, evidence: list[Evidence]) -> list[Conflict]:
    """Conflicts between packed markers, each pair once (a < b), details trimmed."""
    value = calls.json_reply(reply)
    if isinstance(value, dict):
        value = value.get("conflicts")
    if not isinstance(value, list):
        if reply.strip():
            log.warning("conflict detection: unreadable reply %r", reply[:200])
        return []
    by_marker = {ev.marker: ev for ev in evidence}
    out: dict[tuple[int, int], Conflict] = {}
    for item in value:
        if not isinstance(item, dict):
            continue
        a, b = calls.as_int(item.get("a")), calls.as_int(item.get("b"))
        if a is None or b is None or a == b or a not in by_marker or b not in by_marker:
            continue
        a, b = min(a, b), max(a, b)
        detail = " ".join(str(item.get("detail") or "").split())[:300]
        if (a, b) not in out:
            out[(a, b)] = Conflict(a, b, detail, _source(by_marker[a]), _source(by_marker[b]))
    return list(out.values())[:MAX_CONFLICTS]


def _source(ev: Evidence) -> str:
    return f"{ev.path}:{ev.start_line}-{ev.end_line}"

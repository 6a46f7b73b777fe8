"""Relevance filtering (`rag.relevance_filter`): before packing, the model scores every retrieved
passage 0–10 for the question in one batched call, and passages scored below
`rag.relevance_threshold` are dropped.

A reply that is not one score per passage keeps every passage (logged), and so does a failed
call: the filter can only remove noise, never lose the answer to a model fault. When every
passage scores below the threshold the pipeline refuses (`score_gate`) and says why.
"""

from __future__ import annotations

import logging

from kebab.config import Config
from kebab.errors import LLMError
from kebab.llm import LanguageModel, is_generative
from kebab.model import Hit
from kebab.rag import calls, prompt
from kebab.text import is_korean

log = logging.getLogger(__name__)

TEMPLATE = "relevance-v1"
SYSTEM = f"""You rate how useful each evidence passage is for answering a question.
Score every passage from 0 (unrelated) to 10 (answers the question directly).
Reply with JSON only, one integer per passage in passage order, like {{"scores": [7, 2, 9]}}.
{calls.DATA_RULE}"""


def enabled(cfg: Config, llm: LanguageModel) -> bool:
    return cfg.rag.relevance_filter and is_generative(llm)


async def scores(
    llm: LanguageModel, cfg: Config, question: str, hits: list[Hit], budget: int
) -> list[float] | None:
    """One score per passage that fits in `budget` (rank order), or None: keep them all."""
    evidence = prompt.pack(hits, budget)
    user = (
        f"Question: {question}\n\n{prompt.evidence_block(evidence)}\n\n"
        f'Return {{"scores": [...]}} with {len(evidence)} integers from 0 to 10.'
    )
    try:
        reply = await calls.call(llm, cfg, SYSTEM, user, 32 + 6 * len(evidence), question)
    except LLMError as e:
        log.warning("relevance filter: no scores (%s); keeping every passage", e)
        return None
    found = parse(reply, len(evidence))
    if found is None:
        log.warning("relevance filter: unreadable reply %r; keeping every passage", reply[:200])
    return found


def parse(reply: str, count: int) -> list[float] | None:
    """`count` scores clamped to 0..10 from {"scores": [...]} or a bare list; None otherwise."""
    value = calls.json_reply(reply)
    if isinstance(value, dict):
        value = value.get("scores")
    if not isinstance(value, list) or len(value) != count:
        return None
    out: list[float] = []
    for item in value:
        if isinstance(item, str):
            item = item.strip()
            try:
                item = float(item)
            except ValueError:
                return None
        if isinstance(item, bool) or not isinstance(item, int | float):
            return None
        out.append(min(max(float(item), 0.0), 10.0))
    return out


def keep(hits: list[Hit], scored: list[float], threshold: float) -> list[Hit]:
    """The hits scored at or above `threshold`; hits past the scored ones (over budget) stay."""
    return [h for i, h in enumerate(hits) if i >= len(scored) or scored[i] >= threshold]


def refusal_text(question: str, scored: list[float], threshold: float) -> str:
    best = max(scored, default=0.0)
    if is_korean(question):
        return (
            f"관련성 검사에서 찾은 노트 {len(scored)}개가 모두 기준({threshold:g}/10) 미만이라 "
            f"답하지 않습니다 (최고 {best:g})."
        )
    return (
        f"The relevance check scored all {len(scored)} retrieved passages below "
        f"{threshold:g}/10 (best {best:g}), so no passage answers this question."
    )

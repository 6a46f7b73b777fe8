"""A model that echoes its prompt (a tiny model, or a wrong chat template: Gemma-3-270M under
llama.cpp repeats `Question: … <evidence> <passage marker="[#1]" …` for every question) is told
apart from an answer: the person reads one sentence saying so, never the prompt's fragments.

The model is a real HTTP server on 127.0.0.1 streaming OpenAI SSE (tests/llm_server.py) whose
every reply is the prompt kebab sent it, cut into pieces as a model streams them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import pytest

from conftest import MakeWorkspace
from kebab.model import Answer, AskRequest
from kebab.rag.attribution import is_prompt_echo
from kebab.workspace import Workspace
from llm_server import ModelServer, Received, Reply, answer_rows, llm_settings

BACKUP = "What time does the nightly backup job run?"
KIMCHI = "김치찌개는 중약불로 몇 분 끓여야 해?"
SAID = {
    BACKUP: "The model repeated its instructions instead of answering: it may be too small, "
    "or its chat template is wrong.",
    KIMCHI: "모델이 답하지 않고 지시문을 되풀이했습니다: 모델이 너무 작거나 채팅 템플릿이 "
    "맞지 않을 수 있습니다.",
}
# what no person should see: the prompt's tags, its scaffolding, its passages' attributes
PROMPT_PARTS = re.compile(
    r"<\\?/?(passage|evidence)|marker=|lines=\"|Question:|Answer the question"
)

Echoed = Literal["user", "system and user", "head"]


class EchoServer(ModelServer):
    """Streams back the prompt it was sent: the user message, the system rules before it, or
    the first 300 characters (a model that stops mid-evidence)."""

    def __init__(self, echoed: Echoed) -> None:
        super().__init__()
        self.echoed = echoed

    def _next(self, received: Received) -> Reply:
        super()._next(received)  # recorded, as every request is
        user = received.message("user")
        text = {
            "user": user,
            "system and user": f"{received.message('system')}\n\n{user}",
            "head": user[:300],
        }[self.echoed]
        return Reply([text[i : i + 7] for i in range(0, len(text), 7)])


@pytest.fixture(params=["user", "system and user", "head"])
def echo_server(request: pytest.FixtureRequest) -> Iterator[EchoServer]:
    with EchoServer(request.param) as s:
        yield s


async def asked(ws: Workspace, question: str) -> tuple[Answer, str]:
    """The answer, and the text streamed while it was made; one answers row is written."""
    before = len(answer_rows(ws.index.dir))
    streamed: list[str] = []
    answer = await ws.ask(AskRequest(question=question), streamed.append)
    assert len(answer_rows(ws.index.dir)) == before + 1
    return answer, "".join(streamed)


@pytest.mark.parametrize("question", [BACKUP, KIMCHI])
async def test_an_echo_of_the_prompt_is_said_in_one_sentence(
    echo_server: EchoServer, make_ws: MakeWorkspace, question: str
) -> None:
    ws = make_ws(llm_settings(echo_server))
    answer, streamed = await asked(ws, question)
    sent = echo_server.wait_requests(1)[0].message("user")
    assert "<passage" in sent and "<passage" in streamed  # the model did echo the evidence
    assert answer.grounded is False and answer.refusal_reason == "llm_self_judge"
    assert answer.refusal_text == SAID[question]
    assert answer.unsupported == [] and answer.citations == [] and answer.error is None
    shown = [answer.answer, answer.markdown, answer.refusal_text, *answer.unsupported]
    assert not any(PROMPT_PARTS.search(s) for s in shown), shown
    assert answer.candidates  # the passages that came closest are still offered


@pytest.mark.parametrize(
    "text",
    [
        "The backup runs every day at 02:30 [#1].",
        "Run `restic check` on Sundays [#1]. The question of retention is in [#2].",
        "중약불로 줄여 15분 끓입니다 [#1].",
        "Use `<details>` blocks to fold the output [#1].",
    ],
)
def test_an_answer_is_not_an_echo_of_the_prompt(text: str) -> None:
    assert not is_prompt_echo(BACKUP, text)


@pytest.mark.parametrize(
    "text",
    [
        '<passage marker="[#1]" path="ops/backup.md" heading="Schedule" lines="12-26">',
        "</evidence>",
        f"Question: {BACKUP}",
        f"The backup runs at 02:30.\n\nAnswer the question: {BACKUP}",
        "- Use only facts stated in the evidence. Do not use outside knowledge.",
    ],
)
def test_the_prompts_own_parts_are_an_echo(text: str) -> None:
    assert is_prompt_echo(BACKUP, text)

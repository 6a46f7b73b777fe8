"""kebab against a real OpenAI-compatible server: llama.cpp running SmolLM2-135M-Instruct, the
kind of tiny local model people run on laptops (set up by tests/real_model/setup.sh).

What a user sees, through every door: `kebab ask` streamed and `--json`, `--queries`,
`kebab/ask` over the language server with its `$/progress`, cancelling, a second question while
one streams, `kebab generate`, the three extras, and the faults a real server makes (killed
mid-stream, paused so it never answers). The model's wording is its own; the tests pin what
kebab promises about it: a correct answer is grounded and cited even when the model drops its
markers, and a value no note holds is never grounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama import MODEL, LlamaServer
from lsp_client import serving, until
from proxy import Relay

from kebab.model import AskRequest
from kebab.workspace import Workspace
from llm_server import without_markers

BACKUP = "When does the backup run?"
KEPT = "How long are daily snapshots kept?"
OFF_TOPIC = "What port does Redis listen on?"
KIMCHI = "김치찌개는 중약불로 몇 분 끓여야 해?"
MAIN = "import sys; from kebab.cli import main; sys.exit(main())"
SLOW = 600  # seconds: a tiny model on two busy cores takes seconds per answer, not minutes
# A busy machine makes the first token late (the prompt is ~1,400 tokens): time, not a failure.
PATIENT = {"first_token_timeout_s": 300, "idle_timeout_s": 300, "max_seconds": 900}


def kebab(
    root: Path, index_dir: Path, *args: str, url: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`kebab ARGS --root ROOT` against the model server at `url`."""
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args, "--root", str(root), "--index-dir", str(index_dir)],
        capture_output=True,
        text=True,
        timeout=SLOW,
        env={**os.environ, "KEBAB_LLM_BACKEND": "openai", "KEBAB_LLM_ENDPOINT": url}
        | {"KEBAB_LLM_MODEL": MODEL}
        | {f"KEBAB_LLM_{k.upper()}": str(v) for k, v in PATIENT.items()}
        | env,
    )


@pytest.fixture
def relay(llama: LlamaServer) -> Iterator[Relay]:
    with Relay(llama.port) as r:
        yield r


def never_grounds_a_made_up_value(a: dict[str, Any]) -> None:
    """A grounded answer (answer.v1 as JSON) states no number its cited passages lack."""
    if a["grounded"]:
        cited = " ".join(c["text"] for c in a["citations"])
        for n in _numbers(without_markers(a["answer"])):
            assert n in _numbers(cited), (n, a["answer"], a["citations"])


def _numbers(text: str) -> set[str]:
    return {n.lstrip("0") or "0" for n in re.findall(r"\d+", text)}


# kebab ask ---------------------------------------------------------------------------------------


def test_ask_streams_the_0230_answer_grounded_and_citing_the_backup_note(
    llama: LlamaServer, fixture_copy: tuple[Path, Path]
) -> None:
    run = kebab(*fixture_copy, "ask", BACKUP, url=llama.url)
    assert run.returncode == 0, run.stderr
    said, _, sources = run.stdout.partition("\nSources:\n")
    assert "02:30" in said
    assert "Not answered" not in run.stdout and "⚠" not in run.stdout
    # sources numbered as the editors number them ([1]), kebab's attribution said in words
    first = sources.strip().split("\n")[0]
    assert first.startswith("[1] ops/backup.md:") and "(cited by kebab)" in first


def test_ask_json_is_answer_v1_with_kebabs_citation_marked(
    llama: LlamaServer, fixture_copy: tuple[Path, Path]
) -> None:
    run = kebab(*fixture_copy, "ask", BACKUP, "--json", url=llama.url)
    assert run.returncode == 0, run.stderr
    a = json.loads(run.stdout)
    assert a["schema"] == "answer.v1" and a["model"] == {"backend": "openai", "id": MODEL}
    assert a["grounded"] is True and a["refusal_reason"] is None and "02:30" in a["answer"]
    assert a["citations"][0]["path"] == "ops/backup.md"
    assert {c["by"] for c in a["citations"]} <= {"model", "kebab"}
    assert a["usage"]["first_token_ms"] > 0 and a["usage"]["completion_tokens"] > 0
    assert "[^kb-1]" in a["markdown"]


def test_queries_answer_several_questions_and_never_ground_an_invented_value(
    llama: LlamaServer, fixture_copy: tuple[Path, Path], tmp_path: Path
) -> None:
    queries = tmp_path / "qs.jsonl"
    asked = {"backup": BACKUP, "kept": KEPT, "redis": OFF_TOPIC, "kimchi": KIMCHI}
    queries.write_text(
        "".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in asked.items())
    )
    run = kebab(*fixture_copy, "ask", "--queries", str(queries), url=llama.url)
    assert run.returncode == 0, run.stderr
    lines = {a["id"]: a for a in map(json.loads, run.stdout.splitlines())}
    assert list(lines) == list(asked)
    assert (
        lines["backup"]["grounded"] and lines["backup"]["citations"][0]["path"] == "ops/backup.md"
    )
    # the gate refuses before any model call: the notes never mention Redis
    assert lines["redis"]["refusal_reason"] == "score_gate"
    assert lines["redis"]["usage"]["first_token_ms"] is None
    for a in lines.values():
        never_grounds_a_made_up_value(a)
        if not a["grounded"]:
            assert a["candidates"], a["id"]  # the nearest passages stay
            # an answer the notes do not support is named as such, not as "not answered"
            assert a["refusal_text"]


# the language server -----------------------------------------------------------------------------


async def test_lsp_streams_progress_then_the_answer_cancels_and_answers_a_second_question(
    relay: Relay, tmp_path: Path
) -> None:
    llm = {"backend": "openai", "endpoint": relay.url, "model": MODEL, "max_retries": 0, **PATIENT}
    async with serving(tmp_path, "vscode", llm=llm) as client:
        await client.wait_ready(timeout=SLOW)

        # 1. $/progress reports before the result; together they are the model's text
        result = await client.request(
            "kebab/ask", {"question": BACKUP, "workDoneToken": "a1"}, timeout=SLOW
        )
        done = time.monotonic()
        reports = client.reports("a1")
        assert reports and client.progress_times["a1"][-1] <= done
        assert without_markers("".join(str(r["message"]) for r in reports)) == without_markers(
            result["answer"]
        )
        assert result["grounded"] and result["citations"][0]["path"] == "ops/backup.md"
        assert client.ended("a1")["message"].startswith("answered with 1 citation")

        # 2. cancel mid-stream: the request to the model server ends
        relay.hold_after_first_piece()
        pending = asyncio.ensure_future(
            client.request("kebab/ask", {"question": BACKUP, "workDoneToken": "a2"}, timeout=SLOW)
        )
        await until(lambda: client.reports("a2"), "the first piece of the answer", SLOW)
        client.window_work_done_progress_cancel(_cancel("a2"))
        cancelled = await pending
        assert cancelled["refusal_reason"] == "cancelled"
        held = relay.held_connection
        assert held is not None and await asyncio.to_thread(held.kebab_closed.wait, 30)
        relay.release()

        # 3. a second question while the first still streams: both answered, each its own
        relay.hold_after_first_piece()
        first = asyncio.ensure_future(
            client.request("kebab/ask", {"question": BACKUP, "workDoneToken": "b1"}, timeout=SLOW)
        )
        await until(lambda: client.reports("b1"), "the first answer's first piece", SLOW)
        posted = relay.requests
        second = asyncio.ensure_future(
            client.request("kebab/ask", {"question": KEPT, "workDoneToken": "b2"}, timeout=SLOW)
        )
        await until(lambda: relay.requests > posted, "the second question sent", SLOW)
        relay.release()
        one, two = await first, await second
        assert one["question"] == BACKUP and two["question"] == KEPT
        # llama.cpp's Python server stops a streaming answer when a newer request arrives (its
        # --interrupt_requests default) and ends it with no finish_reason: kebab keeps the
        # fragment as a cut answer (llm_error), never as a grounded one
        if one["grounded"]:
            assert "02:30" in one["answer"]
        else:
            assert one["refusal_reason"] == "llm_error" and "interrupted" in one["error"]
            assert one["citations"] == [] and one["answer"]
        assert two["refusal_reason"] != "llm_error", two["error"]
        for token, answer in (("b1", one), ("b2", two)):
            text = "".join(str(r["message"]) for r in client.reports(token))
            if answer["refusal_reason"] in (None, "llm_self_judge"):  # the model's own words
                assert without_markers(text) == without_markers(answer["answer"])
            never_grounds_a_made_up_value(answer)


def _cancel(token: str) -> Any:
    from lsprotocol import types

    return types.WorkDoneProgressCancelParams(token=token)


# kebab generate and the extras -------------------------------------------------------------------


def test_generate_writes_a_footnoted_note_or_says_why_not(
    llama: LlamaServer, fixture_copy: tuple[Path, Path]
) -> None:
    root, index_dir = fixture_copy
    run = kebab(
        root,
        index_dir,
        "generate",
        "--topic",
        "restic backups",
        "--output",
        str(root / "guides/backups.md"),  # --output is read from where kebab runs
        "--json",
        url=llama.url,
    )
    assert run.stdout, run.stderr
    note = json.loads(run.stdout)
    assert note["schema"] == "note.v1" and note["model"]["backend"] == "openai"
    if note["written"]:
        text = (root / "guides/backups.md").read_text()
        assert text == note["markdown"] and "[^kb-1]: [" in text
    else:  # a tiny model's note may cite nothing: refused, nothing written, the reason given
        assert note["refusal_reason"] in ("llm_self_judge", "llm_error"), note
        assert not (root / "guides/backups.md").exists()


def test_the_three_extras_run_against_the_real_model(
    relay: Relay, fixture_copy: tuple[Path, Path]
) -> None:
    root, index_dir = fixture_copy
    (root / "kebab.toml").write_text(
        "[rag]\nhyde = true\nrelevance_filter = true\ndetect_conflicts = true\n"
    )
    run = kebab(root, index_dir, "ask", BACKUP, "--json", "--explain", url=relay.url)
    a = json.loads(run.stdout)
    extras = a["explain"]["extras"]
    assert extras["hyde"] is True and extras["detect_conflicts"] is True
    assert "hyde" in extras["ms"] and "relevance" in extras["ms"]
    # the tiny model's unreadable replies are skipped, never fatal
    assert a["refusal_reason"] != "llm_error", a["error"]
    assert relay.requests >= 3  # hyde, relevance (and conflicts when it packed several), answer
    never_grounds_a_made_up_value(a)


# faults, from a real server ----------------------------------------------------------------------


async def test_a_server_killed_mid_stream_keeps_the_partial_answer(
    own_llama: LlamaServer, fixture_copy: tuple[Path, Path], embedder: Any
) -> None:
    root, index_dir = fixture_copy
    with Relay(own_llama.port) as relay:
        relay.hold_after_first_piece()
        llm = {"backend": "openai", "endpoint": relay.url, "model": MODEL, "max_retries": 0}
        llm |= PATIENT
        ws = Workspace(root, overrides={"index_dir": str(index_dir), "llm": llm}, embedder=embedder)
        pieces: list[str] = []

        def on_text(piece: str) -> None:
            if not pieces:  # the answer has started: the server dies
                own_llama.proc.send_signal(signal.SIGKILL)
                own_llama.proc.wait(30)
                relay.cut()  # what it had not sent yet never arrives
            pieces.append(piece)

        try:
            answer = await ws.ask(AskRequest(question=BACKUP), on_text)
            assert answer.refusal_reason == "llm_error" and not answer.grounded
            assert answer.answer == "".join(pieces) and answer.answer.strip()
            assert answer.error and "stream" in answer.error
            again = await ws.ask(AskRequest(question=BACKUP))  # nothing listens there now
            assert again.refusal_reason == "llm_error" and again.error
        finally:
            await ws.aclose()


def test_a_server_that_never_answers_ends_in_a_clear_error(
    own_llama: LlamaServer, fixture_copy: tuple[Path, Path]
) -> None:
    os.kill(own_llama.proc.pid, signal.SIGSTOP)  # it accepts connections and says nothing
    run = kebab(
        *fixture_copy,
        "ask",
        BACKUP,
        "--json",
        url=own_llama.url,
        KEBAB_LLM_FIRST_TOKEN_TIMEOUT_S="5",
        KEBAB_LLM_MAX_RETRIES="0",
    )
    assert run.returncode == 1
    a = json.loads(run.stdout)
    assert a["refusal_reason"] == "llm_error" and "no first token" in a["error"]
    assert a["refusal_text"] and a["answer"] == ""

"""Answering cost, in process: question → first byte to the model (retrieve, gate, pack, prompt)
for a generative backend, and the extractive answer end to end. Prints one JSON object.

    .venv/bin/python bench/bench_answer.py [--corpus fastapi-en] [--index-dir DIR] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from _common import corpus_root, emit, log, machine, questions, stats_ms
from kebab.rag.pipeline import AskRequest
from kebab.workspace import Workspace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default="fastapi-en")
    ap.add_argument("--index-dir", help="reuse an index (default: a temp dir, built first)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    index_dir = args.index_dir or tempfile.mkdtemp(prefix="kebab-bench-answer-")
    asked = questions(args.corpus)
    root = corpus_root(args.corpus)
    out: dict[str, object] = {
        "bench": "answer",
        "machine": machine(),
        "corpus": args.corpus,
        "questions": len(asked),
        "reps": args.reps,
    }
    # A generative backend that is never called: prepare() stops before the first byte.
    generative = {
        "index_dir": index_dir,
        "llm": {"backend": "openai", "endpoint": "http://127.0.0.1:9"},
    }
    with Workspace(root, overrides=generative) as ws:
        log(f"indexing {root} ...")
        ws.refresh()
        for q in asked[:3]:
            ws.prepare(AskRequest(question=q))  # warm
        times = []
        for _ in range(args.reps):
            for q in asked:
                t = time.perf_counter()
                ws.prepare(AskRequest(question=q))
                times.append(time.perf_counter() - t)
        out["question_to_first_model_byte"] = stats_ms(times)
    with Workspace(root, overrides={"index_dir": index_dir}) as ws:

        async def extractive() -> list[float]:
            spent = []
            for _ in range(args.reps):
                for q in asked:
                    t = time.perf_counter()
                    await ws.ask(AskRequest(question=q))
                    spent.append(time.perf_counter() - t)
            return spent

        spent = asyncio.run(extractive())
        out["extractive_answer_end_to_end"] = stats_ms(spent)
        # Each question's first ask alone: what a new question costs before any per-text cache
        # (passage terms, token counts, notes' verdicts) has seen its passages.
        out["extractive_first_ask"] = stats_ms(spent[: len(asked)])
    emit(out)


if __name__ == "__main__":
    main()

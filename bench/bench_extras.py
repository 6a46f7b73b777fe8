"""Latency each rag extra (HyDE, relevance filter, conflict detection) adds to one ask.

    .venv/bin/python bench/bench_extras.py [-n 30]

The model is tests/llm_server.py's scripted HTTP server, which replies at once: the figures are
kebab's own cost per extra (one more HTTP round trip, prompt building, JSON parsing, and for HyDE
a second embedding and vector search for the gate), not a real model's generation time, which
dominates in practice (one short completion per extra). Quality cannot be measured this way:
scripted replies score and draft whatever the script says.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, emit, log

sys.path.insert(0, str(REPO / "tests"))

from kebab.embed.use import UniversalSentenceEncoder
from kebab.rag.pipeline import AskRequest
from kebab.workspace import Workspace
from llm_server import ModelServer, Reply, llm_settings

QUESTION = "What time does the nightly backup job run?"
DRAFT = Reply(["The backup runs every night at 02:30 via a systemd timer."])
SCORES = Reply(['{"scores": [9, 8, 7, 6, 5, 5, 5, 5, 5, 5]}'])
CONFLICTS = Reply(['[{"a": 1, "b": 2, "detail": "02:30 vs 03:15"}]'])
ANSWER = Reply(["The backup job runs every day at 02:30 [#1]."])
CONFIGS: dict[str, tuple[dict[str, Any], list[Reply]]] = {
    "baseline": ({}, [ANSWER]),
    "hyde": ({"hyde": True}, [DRAFT, ANSWER]),
    "relevance_filter": ({"relevance_filter": True}, [SCORES, ANSWER]),
    "detect_conflicts": ({"detect_conflicts": True}, [CONFLICTS, ANSWER]),
    "all_three": (
        {"hyde": True, "relevance_filter": True, "detect_conflicts": True},
        [DRAFT, SCORES, CONFLICTS, ANSWER],
    ),
}


async def measure(
    ws: Workspace, server: ModelServer, replies: list[Reply], n: int
) -> dict[str, Any]:
    latency: list[float] = []
    first: list[float] = []
    extras: dict[str, list[float]] = {}
    for _ in range(n + 2):  # two warm-ups
        server.requests.clear()
        server.script(*replies)
        answer = await ws.ask(AskRequest(question=QUESTION, explain=True))
        assert answer.grounded and len(server.requests) == len(replies), answer
        latency.append(answer.usage.latency_ms)
        first.append(answer.usage.first_token_ms or 0.0)
        for name, ms in (answer.explain or {}).get("extras", {}).get("ms", {}).items():
            extras.setdefault(name, []).append(ms)

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs[2:]), 2)

    return {
        "latency_ms_p50": med(latency),
        "first_token_ms_p50": med(first),
        "extra_ms_p50": {name: med(xs) for name, xs in extras.items()},
        "model_requests": len(replies),
    }


async def run(n: int) -> dict[str, Any]:
    embedder = UniversalSentenceEncoder()
    tmp = Path(tempfile.mkdtemp(prefix="kebab-bench-extras-"))
    try:
        root = tmp / "ws"
        shutil.copytree(REPO / "fixtures" / "workspace", root)
        (root / "ops" / "backup-2022.md").write_text(
            "# Backups in 2022\n\n## Schedule\n\nThe nightly backup ran at 03:15 from cron.\n"
        )
        out: dict[str, Any] = {"n": n, "question": QUESTION, "configs": {}}
        with ModelServer() as server:
            for name, (rag, replies) in CONFIGS.items():
                log(f"{name}: {n} asks")
                ws = Workspace(
                    root,
                    overrides={
                        "index_dir": str(tmp / "idx"),
                        "llm": llm_settings(server),
                        "rag": rag,
                    },
                    embedder=embedder,
                )
                ws.refresh()
                out["configs"][name] = await measure(ws, server, replies, n)
                await ws.aclose()
        base = out["configs"]["baseline"]["latency_ms_p50"]
        out["added_ms_p50_vs_baseline"] = {
            name: round(c["latency_ms_p50"] - base, 2) for name, c in out["configs"].items()
        }
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=30, help="asks per configuration (default 30)")
    emit(asyncio.run(run(ap.parse_args().n)))


if __name__ == "__main__":
    main()

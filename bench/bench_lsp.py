"""Hover and code-action latency while the index builds and while answers stream, and how many
`$/progress` reports an answer sends per second. Prints one JSON object (no assertions).

    .venv/bin/python bench/bench_lsp.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "lsp"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lsp_client import KebabClient, serving, until
from lsprotocol import types

from llm_server import ModelServer

QUESTION = "What time does the nightly backup run?"
NOTE = (
    "# Cited\n\nA fact.[^kb-1]\n\n"
    '[^kb-1]: [Home server backups › Schedule](../ops/backup.md#schedule "kb:0123456789ab")'
    " L12–L26\n"
)


async def probe(client: KebabClient, uri: str) -> tuple[float, float]:
    """(hover ms, code-action ms) once."""
    start = time.perf_counter()
    await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 9))
    )
    hover = time.perf_counter() - start
    start = time.perf_counter()
    await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(2, 0), types.Position(2, 0)),
            types.CodeActionContext(diagnostics=[]),
        )
    )
    return hover * 1000, (time.perf_counter() - start) * 1000


def summary(samples: list[tuple[float, float]]) -> dict[str, Any]:
    def stats(values: list[float]) -> dict[str, float]:
        q = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else values
        return {
            "p50": round(statistics.median(values), 1),
            "p95": round(q[-1], 1),
            "max": round(max(values), 1),
        }

    return {
        "n": len(samples),
        "hover_ms": stats([h for h, _ in samples]),
        "code_action_ms": stats([a for _, a in samples]),
    }


async def while_running(
    client: KebabClient, uri: str, busy: asyncio.Future[Any] | None, end: float = 0.0
) -> list[tuple[float, float]]:
    samples = []
    while (busy is not None and not busy.done()) or time.monotonic() < end:
        samples.append(await probe(client, uri))
        await asyncio.sleep(0.02)
    return samples


async def main() -> None:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, ModelServer() as llm:
        settings = {"llm": {"backend": "openai", "endpoint": llm.url}}
        async with serving(Path(tmp), "vscode", **settings) as client:
            uri = client.open(client.root / "inbox" / "cited.md", NOTE)
            samples = []
            while (await client.request("kebab/status", {}))["state"] != "ready":
                samples.append(await probe(client, uri))
                await asyncio.sleep(0.02)
            out["while_indexing"] = summary(samples)
            await client.wait_ready()
            out["idle"] = summary(await while_running(client, uri, None, time.monotonic() + 2))

            llm.answer(*[f"w{i} " for i in range(200)], "[#1].", delay=0.02)
            ask = asyncio.ensure_future(
                client.request("kebab/ask", {"question": QUESTION, "workDoneToken": "b1"})
            )
            out["while_streaming"] = summary(await while_running(client, uri, ask))
            times = [
                t
                for t, v in zip(client.progress_times["b1"], client.progress_log["b1"], strict=True)
                if v["kind"] == "report"
            ]
            span = times[-1] - times[0] if len(times) > 1 else 1.0
            out["stream"] = {
                "pieces": 201,
                "reports": len(times),
                "reports_per_s": round((len(times) - 1) / span, 1),
                "busiest_second": max(sum(1 for u in times if t <= u < t + 1) for t in times),
            }

            client.set_configuration({"llm": {"backend": "extractive"}}, section="kebab")
            client.workspace_did_change_configuration(types.DidChangeConfigurationParams(None))

            async def extractive() -> bool:
                folder = (await client.request("kebab/status", {}))["folders"][0]
                return folder.get("llm", {}).get("backend") == "extractive"

            await until(extractive, "the extractive backend applying")

            async def extractive_asks() -> None:
                for _ in range(5):
                    await client.request("kebab/ask", {"question": QUESTION})

            asks = asyncio.ensure_future(extractive_asks())
            out["while_extractive_answers"] = summary(await while_running(client, uri, asks))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

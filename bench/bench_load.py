"""The language server under load on a real corpus: hover latency while the corpus indexes, then
20 concurrent `kebab/ask` (extractive) while vectors are still being embedded. Prints one JSON
object (no assertions); tests/reliability/test_rel_load.py proves the same on generated notes.

    .venv/bin/python bench/bench_load.py [--corpus tldr] [--embed-seconds 10] [--max-seconds 180]

The server's workspace folder is the corpus itself (read only: nothing is written there); the
index goes to a temporary folder. The note that holds the hovered `[^kb-1]` footnote is an
unsaved editor buffer inside the corpus folder, citing the first lines of a real page.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, corpus_root, emit, log, machine, questions, stats_ms

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "reliability"))

from rel_helpers import cited_note, hover_params, serve

from llm_server import answer_rows


async def run(corpus: str, embed_seconds: float, max_seconds: float) -> dict[str, Any]:
    root = corpus_root(corpus)
    notes = sorted(p for p in root.rglob("*.md") if not any(s.startswith(".") for s in p.parts))
    cited = notes[0].relative_to(root).as_posix().replace(" ", "%20")
    asked = (questions(corpus) or ["What does this command do?"]) * 20
    out: dict[str, Any] = {"corpus": corpus, "notes_on_disk": len(notes), "cited": cited}
    with tempfile.TemporaryDirectory(prefix="kebab-bench-load-") as tmp:
        tmp_path = Path(tmp)
        async with serve(root, tmp_path, index_dir=str(tmp_path / "index")) as served:
            client = served.client
            started = time.monotonic()
            uri = client.open(root / "__kebab_bench_load__.md", cited_note(cited, 1, 3))
            by_phase: dict[str, list[float]] = {}
            phase, synced_at, status = "opening", None, {}
            missed = 0
            while time.monotonic() - started < max_seconds:
                t0 = time.perf_counter()
                hover = await client.text_document_hover_async(hover_params(uri))
                by_phase.setdefault(phase, []).append(time.perf_counter() - t0)
                missed += hover is None
                if sum(map(len, by_phase.values())) % 10 == 0:
                    status = await client.request("kebab/status", {})
                    folder = status["folders"][0] if status["folders"] else {}
                    phase = folder.get("progress", {}).get("phase") or folder.get("state", "?")
                    if synced_at is None and folder.get("files", 0) >= len(notes):
                        synced_at = time.monotonic()
                        log(f"lexical sync done after {synced_at - started:.1f} s")
                    if synced_at is not None and time.monotonic() - synced_at > embed_seconds:
                        break
                await asyncio.sleep(0.05)
            folder = status.get("folders", [{}])[0]
            all_hovers = [s for v in by_phase.values() for s in v]
            out["index"] = {
                "files": folder.get("files"),
                "chunks": folder.get("chunks"),
                "vectors": folder.get("vectors"),
                "pending_vectors": folder.get("pending_vectors"),
                "sync_seconds": round(synced_at - started, 1) if synced_at else None,
            }
            out["hover_every_50ms"] = {
                "all": stats_ms(all_hovers),
                "unanswered": missed,
                "by_phase": {p: stats_ms(v) for p, v in by_phase.items()},
            }

            log("20 concurrent asks")
            rows_before = len(answer_rows(served.index_dir))

            async def ask(i: int, question: str) -> tuple[float, dict[str, Any]]:
                t0 = time.perf_counter()
                result = await client.request(
                    "kebab/ask", {"question": question, "workDoneToken": f"b{i}"}, timeout=300
                )
                return time.perf_counter() - t0, result

            t0 = time.perf_counter()
            results = await asyncio.gather(*(ask(i, q) for i, q in enumerate(asked[:20])))
            wall = time.perf_counter() - t0
            rows = answer_rows(served.index_dir)[rows_before:]
            out["asks_20_concurrent"] = {
                "answered": sum(r["schema"] == "answer.v1" for _, r in results),
                "grounded": sum(bool(r["grounded"]) for _, r in results),
                "rows_added": len(rows),
                "lost": 20 - len(rows),
                "wall_s": round(wall, 2),
                "latency": stats_ms([t for t, _ in results]),
            }
            out["server_alive"] = served.alive
    out["machine"] = machine()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="tldr")
    p.add_argument("--embed-seconds", type=float, default=10.0,
                   help="keep hovering this long into the embedding phase")  # fmt: skip
    p.add_argument("--max-seconds", type=float, default=180.0)
    args = p.parse_args()
    emit(asyncio.run(run(args.corpus, args.embed_seconds, args.max_seconds)))


if __name__ == "__main__":
    main()

"""`workspace/symbol` latency as a person types into the editor's symbol picker (every prefix of
each query is one request, word by word), and `kebab/related` latency at passages spread over the
corpus, over stdio against `kebab serve` on an indexed corpus. Prints one JSON object (no
assertions). Goal (issue 15): workspace/symbol p95 < 30 ms on tldr.

    .venv/bin/python bench/bench_symbols.py [--corpus tldr]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "lsp"))

from lsp_client import make_client, server_env
from lsprotocol import types

from _common import OUT, corpus_root, emit, log, machine, stats_ms

QUERIES = [
    "extract a tar archive",
    "list open network ports",
    "convert a video to gif",
    "show disk usage of a folder",
    "압축 파일 풀기",
    "find files changed today",
]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="tldr")
    args = ap.parse_args()
    root = corpus_root(args.corpus)
    index = OUT / f"cli-index-{args.corpus}-new"  # shared with bench_cli.py
    log(f"indexing {args.corpus} into {index}")
    subprocess.run(
        [sys.executable, "-m", "kebab.cli", "index", str(root), "--index-dir", str(index)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory() as home:
        client = make_client()
        await client.start("vscode", root, {"index_dir": str(index)}, server_env(Path(home)))
        try:
            status = await client.wait_ready(600)
            samples: list[float] = []
            for query in QUERIES:
                words = query.split()
                for n in range(1, len(words) + 1):
                    prefix = " ".join(words[:n])
                    t = time.perf_counter()
                    await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=prefix))
                    samples.append(time.perf_counter() - t)
            related: list[float] = []
            notes = sorted(p for p in root.rglob("*.md") if p.is_file())
            for note in notes[:: max(1, len(notes) // 60)][:60]:
                t = time.perf_counter()
                await client.request(
                    "kebab/related",
                    {"uri": note.as_uri(), "position": {"line": 2, "character": 0}, "k": 10},
                )
                related.append(time.perf_counter() - t)
            emit(
                {
                    "machine": machine(),
                    "corpus": args.corpus,
                    "chunks": status["chunks"],
                    "workspace_symbol_ms": stats_ms(samples[len(QUERIES) :]),  # first few warm
                    "related_ms": stats_ms(related[3:]),
                }
            )
        finally:
            await client.shutdown_session()
            await client.stop()


if __name__ == "__main__":
    asyncio.run(main())

"""This checkout against an earlier commit, side by side in one run: cold index time, warm hybrid
query latency, extractive answer latency and peak memory, per corpus, with new ÷ old ratios.

    .venv/bin/python bench/bench_versus.py [--ref b54ef91] [--corpora fastapi-en obsidian-tasks]

The old side is a `git worktree` of `--ref` in a temp dir, run with the same interpreter and
packages (its `server/` first on PYTHONPATH); each side runs in its own process, corpora and
sides interleaved, so background load hits them alike. Queries are the corpus's questions from
fixtures/eval (both sets). Budgets this checks (issue 11): cold index ≤ 2× old, hybrid p50 ≤ 2×
old, extractive answer p50 ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import corpus_root, emit, log, machine

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, resource, statistics, sys, time
from pathlib import Path
from kebab.workspace import Workspace
from kebab.rag.pipeline import AskRequest
root, index_dir, questions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t = time.perf_counter()
ws = Workspace(Path(root), overrides={"index_dir": index_dir})
ws.refresh()
cold = time.perf_counter() - t
for q in questions[:3]:
    ws.search(q, 10, "hybrid")
search_ms, ask_ms = [], []
async def go():
    for q in questions:
        t = time.perf_counter(); ws.search(q, 10, "hybrid"); search_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter(); await ws.ask(AskRequest(question=q)); ask_ms.append((time.perf_counter() - t) * 1000)
asyncio.run(go())
def p(xs, q): return round(sorted(xs)[int(q * (len(xs) - 1))], 2)
print(json.dumps({"cold_index_s": round(cold, 2), "hybrid_p50_ms": p(search_ms, .5),
    "hybrid_p95_ms": p(search_ms, .95), "answer_p50_ms": p(ask_ms, .5), "answer_p95_ms": p(ask_ms, .95),
    "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def questions(corpus: str) -> list[str]:
    out = []
    for name in ("questions.jsonl", "questions-v2.jsonl", "questions-til.jsonl"):
        for line in (REPO / "fixtures" / "eval" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("corpus") == corpus:
                out.append(row["question"])
    return out


def side(server: Path, corpus: str, index_dir: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(server)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(corpus_root(corpus)), str(index_dir),
         json.dumps(questions(corpus))],
        capture_output=True, text=True, env=env, check=True, timeout=3600,
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="b54ef91", help="the commit to compare with")
    ap.add_argument("--corpora", nargs="+", default=["fastapi-en", "obsidian-tasks"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kebab-versus-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.ref],
            check=True,
            capture_output=True,
        )
        try:
            result: dict[str, object] = {"machine": machine(), "ref": args.ref}
            for corpus in args.corpora:
                log(f"{corpus}: old ({args.ref}) ...")
                a = side(old / "server", corpus, Path(tmp) / f"idx-old-{corpus}")
                log(f"{corpus}: new ...")
                b = side(REPO / "server", corpus, Path(tmp) / f"idx-new-{corpus}")
                result[corpus] = {
                    "old": a,
                    "new": b,
                    "new_over_old": {k: round(b[k] / a[k], 2) for k in a if a[k]},
                }
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )
    emit(result)


if __name__ == "__main__":
    main()

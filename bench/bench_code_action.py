"""How long deciding "Answer with kebab" takes where the cursor is (`lsp.questions.question_at`:
the question, where its answer goes and the parse that proves it changes nothing else), which
VS Code asks on every cursor move: on made-up worst cases (10,000-line paragraphs, quotes, lists,
callouts) and on every line ending in `?` of a corpus. With `--against SERVER_DIR` (another
checkout's `server/`), the same cases run there too, interleaved, in one process each, so the
two columns compare. Prints one JSON object (no assertions).

    .venv/bin/python bench/bench_code_action.py [--corpus fastapi-en] [--against ../old/server]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import REPO, corpus_root, emit, log, machine, stats_ms

_CASES = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kebab.lsp.questions import question_at
corpus = Path(sys.argv[2])
def best(lines, line, reps=3):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter(); question_at(lines, (line, 0), (line, 0)); t.append(time.perf_counter() - t0)
    return min(t) * 1000
made = {
    "10,000-line paragraph, its last line": ([f"line {i} of text" for i in range(10000)] + ["Why?"], 10000),
    "10,000-line quote, then a lazy line": ([f"> line {i}" for i in range(10000)] + ["> Why?", "lazy"], 10000),
    "10,000-item list, its last item": ([f"- item {i}" for i in range(10000)] + ["- Why?"], 10000),
    "10,000-line question callout": (["> [!question] Why?"] + [f"> line {i}" for i in range(10000)], 0),
}
out = {"made_ms": {k: round(best(*v), 1) for k, v in made.items()}, "corpus_ms": []}
for note in sorted(corpus.rglob("*.md")):
    lines = note.read_text(encoding="utf-8", errors="replace").split("\\n")
    out["corpus_ms"] += [best(lines, i, 1) for i, s in enumerate(lines) if s.rstrip().endswith("?")]
print(json.dumps(out))
"""


def run(server: Path, corpus: Path) -> dict[str, Any]:
    """The cases in a fresh process importing kebab from `server`."""
    done = subprocess.run(
        [sys.executable, "-c", _CASES, str(server), str(corpus)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="fastapi-en")
    ap.add_argument("--against", type=Path, help="another checkout's server/ folder")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    corpus = corpus_root(args.corpus)
    sides = {"this": REPO / "server"} | ({"against": args.against} if args.against else {})
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for r in range(args.rounds):  # interleaved: the machine's noise falls on both alike
        for name, server in sides.items():
            log(f"round {r + 1}: {name}")
            t0 = time.perf_counter()
            runs[name].append(run(server, corpus))
            log(f"  {time.perf_counter() - t0:.1f}s")
    result: dict[str, object] = {"machine": machine(), "corpus": args.corpus}
    for name, rs in runs.items():  # the best of the rounds, case by case
        made = {k: min(x["made_ms"][k] for x in rs) for k in rs[0]["made_ms"]}
        lines = [min(v) / 1000 for v in zip(*(x["corpus_ms"] for x in rs), strict=True)]
        result[name] = {"made_ms": made, "question_lines": stats_ms(lines)}
    emit(result)


if __name__ == "__main__":
    main()

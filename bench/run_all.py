"""Run the four benchmarks and print one combined JSON object.

    .venv/bin/python bench/run_all.py [--quick] [--index-dir bench/out/index]

Each benchmark runs in its own process (so its memory figures are its own), one after another,
never side by side. bench_index.py leaves its indexes in --index-dir, where bench_query.py reuses
them and bench_vectors.py reads real embeddings. bench_scale.py builds synthetic workspaces of
1k, 10k and 100k chunks (and writes docs/scale.png). --quick: the two small corpora for indexing,
fastapi-en only for queries, vectors up to 20k, scale at 1k and 10k chunks (docs/ untouched);
minutes instead of a quarter of an hour.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import OUT, log, machine

HERE = Path(__file__).resolve().parent


def run(script: str, args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / script), *args]
    log("running " + " ".join(cmd[1:]))
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)  # stderr passes on
    seconds = round(time.perf_counter() - t, 1)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}", "seconds": seconds, "command": cmd[1:]}
    out: dict[str, Any] = json.loads(proc.stdout)
    out["seconds"], out["command"] = seconds, cmd[1:]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller settings")
    ap.add_argument("--index-dir", type=Path, default=OUT / "index")
    args = ap.parse_args()
    index_dir = str(args.index_dir.resolve())
    if args.quick:
        index = ["--corpora", "fastapi-en", "obsidian-tasks", "--edits", "3", "--resyncs", "2"]
        query = ["--corpora", "fastapi-en", "--reps", "2", "--headings", "10"]
        vectors = ["--sizes", "1000", "5000", "20000", "--queries", "150"]
        scale = ["--sizes", "1000", "10000", "--queries", "40", "--reps", "2", "--no-docs"]
    else:
        index, query, vectors, scale = [], [], [], []
    result: dict[str, Any] = {"bench": "all", "quick": args.quick, "machine": machine()}
    result["index"] = run("bench_index.py", [*index, "--out", index_dir])
    result["query"] = run("bench_query.py", [*query, "--index-dir", index_dir])
    result["vectors"] = run("bench_vectors.py", [*vectors, "--index-root", index_dir])
    result["scale"] = run("bench_scale.py", scale)
    result["answer"] = run("bench_answer.py", ["--index-dir", f"{index_dir}/fastapi-en"])
    result["lsp"] = run("bench_lsp.py", [])
    result["summary"] = summary(result)
    print(json.dumps(result, indent=2, ensure_ascii=False))


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The headline figures against their goals, pulled out of the three reports."""
    out: dict[str, Any] = {}
    for name, c in result["index"].get("corpora", {}).items():
        out[f"index.{name}"] = {
            "files_per_s": c["sync"]["files_per_s"],
            "sync_s": c["sync"]["wall_s"],
            "embed_s": c["embed"]["wall_s"],
            "embed_phase_over_alone": c["embed_phase_over_alone"],
            "resync_nochange_s": c["resync_nochange"]["min_s"],
            "edit_until_searchable_p50_ms": c["edit"]["update_text_until_searchable"]["p50_ms"],
            "vmrss_after_index_mib": c["rss_after_index"]["vmrss_mib"],
        }
    for name, c in result["query"].get("corpora", {}).items():
        out[f"query.{name}"] = {m: c["search"][m]["p50_ms"] for m in c["search"]}
        out[f"query.{name}"]["hybrid_over_engine_floor"] = c["hybrid_p50_over_engine_floor"]
    if "crossover" in result["vectors"]:
        out["vectors.crossover"] = result["vectors"]["crossover"]
        out["vectors.exact_below_current"] = result["vectors"]["exact_below_current"]
    for row in result["scale"].get("table", []):
        out[f"scale.{row['chunks']}"] = row
    if "goals_at_100k" in result["scale"]:
        out["scale.goals_at_100k"] = result["scale"]["goals_at_100k"]
    return out


if __name__ == "__main__":
    main()

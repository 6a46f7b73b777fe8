"""Whole-process CLI figures on an already-indexed corpus: what a person typing `kebab …` in a
terminal waits for, model load, index open and freshness check included.

    .venv/bin/python bench/bench_cli.py [--corpus tldr] [--runs 5] [--ref GITREF]

Each command runs `--runs` times after one warm-up; the median wall time and the peak RSS of
the process are reported, and each median also as a ratio to `python -c "import kebab.cli"` (the
floor any CLI pays). `serve` is `kebab serve` over stdio: spawn → `initialize` answered, and
spawn → the first `kebab/search` answered. With `--ref`, an earlier commit (a `git worktree`,
same interpreter and packages) runs every command too, interleaved run by run with this
checkout, and new ÷ old ratios are printed per command. Each side's index is built once, by
its own code, in bench/out/cli-index-<corpus>-<side> (kept between runs).
Targets (issue 14, tldr): search ≤ 1.0 s, status ≤ 0.4 s, no-change index ≤ 0.8 s, extractive
ask ≤ 1.2 s, serve to first search ≤ 1.0 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import OUT, corpus_root, emit, log, machine

REPO = Path(__file__).resolve().parent.parent

# A minimal LSP client: spawn the server, initialize, ask one search, report the two times.
SERVE_CHILD = r"""
import json, subprocess, sys, time
cmd, root, index_dir, query = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(obj):
    body = json.dumps(obj).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); p.stdin.flush()
def read():
    length = 0
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit("server closed")
        if line in (b"\r\n", b"\n"): break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    return json.loads(p.stdout.read(length))
def wait(msg_id):
    while True:
        m = read()
        if m.get("id") == msg_id and "method" not in m: return m
        if "method" in m and "id" in m: send({"jsonrpc": "2.0", "id": m["id"], "result": None})
uri = "file://" + root
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None,
    "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "w"}], "capabilities": {},
    "initializationOptions": {"index_dir": index_dir}}})
wait(1); t_init = time.perf_counter() - t0
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
send({"jsonrpc": "2.0", "id": 2, "method": "kebab/search", "params": {"query": query, "k": 5}})
r = wait(2); t_search = time.perf_counter() - t0
assert r.get("result", {}).get("hits"), r
send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}); wait(3)
send({"jsonrpc": "2.0", "method": "exit"}); p.wait(10)
print(json.dumps({"initialize_s": t_init, "first_search_s": t_search}))
"""


def commands(kebab: list[str], root: str, index: str) -> dict[str, list[str]]:
    at = ["--root", root, "--index-dir", index]
    query = "extract a tar archive"
    return {
        "import": [sys.executable, "-c", "import kebab.cli"],
        "status": [*kebab, "status", *at],
        "search": [*kebab, "search", query, *at, "-k", "5"],
        "search_lexical": [*kebab, "search", query, *at, "-k", "5", "--mode", "lexical"],
        "index_unchanged": [*kebab, "index", root, "--index-dir", index],
        "ask": [*kebab, "ask", "how do I extract a tar archive?", *at],
        "serve": [
            sys.executable,
            "-c",
            SERVE_CHILD,
            json.dumps([*kebab, "serve"]),
            root,
            index,
            query,
        ],
    }


def run_once(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds and peak RSS (MiB) of one whole process (its children included for serve)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = p.stdout.read() if p.stdout else b""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed with {status}")
    row = {"wall_s": wall, "rss_mib": usage.ru_maxrss / 1024}
    if "initialize" in out.decode(errors="replace"):
        row.update(json.loads(out))
    return row


def env_for(server: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(server)
    return env


def summarise(rows: list[dict[str, float]], floor: float | None) -> dict[str, float]:
    out = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}
    if floor:
        out["x_import"] = round(out["wall_s"] / floor, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="tldr")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ref", help="also time this earlier commit, side by side")
    ap.add_argument("--only", nargs="*", help="command names to time (default: all)")
    args = ap.parse_args()
    root = str(corpus_root(args.corpus))
    OUT.mkdir(parents=True, exist_ok=True)
    kebab = [sys.executable, "-m", "kebab.cli"]
    sides = {"new": env_for(REPO / "server")}
    tmp = None
    if args.ref:
        tmp = tempfile.mkdtemp(prefix="kebab-ref-")
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", tmp, args.ref],
            check=True,
            capture_output=True,
        )
        sides["old"] = env_for(Path(tmp) / "server")
    try:
        cmds = {}
        for side, env in sides.items():
            index = OUT / f"cli-index-{args.corpus}-{side}"
            log(f"{side}: indexing {args.corpus} (kept in {index})")
            subprocess.run(
                [*kebab, "index", root, "--index-dir", str(index)],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            cmds[side] = commands(kebab, root, str(index))
        names = [n for n in cmds["new"] if not args.only or n in args.only or n == "import"]
        rows: dict[str, dict[str, list[dict[str, float]]]] = {s: {} for s in sides}
        for name in names:
            log(name)
            for i in range(args.runs + 1):
                for side, env in sides.items():
                    row = run_once(cmds[side][name], env)
                    if i:  # the first round warms the page cache
                        rows[side].setdefault(name, []).append(row)
        result: dict[str, object] = {"machine": machine(), "corpus": args.corpus, "runs": args.runs}
        for side in sides:
            floor = statistics.median(r["wall_s"] for r in rows[side]["import"])
            result[side] = {n: summarise(rows[side][n], floor) for n in names}
        if "old" in sides:
            result["ratio_new_old"] = {
                n: round(
                    statistics.median(
                        a["wall_s"] / b["wall_s"]
                        for a, b in zip(rows["new"][n], rows["old"][n], strict=True)
                    ),
                    3,
                )
                for n in names
            }
        emit(result)
    finally:
        if tmp:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", tmp])


if __name__ == "__main__":
    main()

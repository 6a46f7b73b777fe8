"""LSP fuzz (issue 7): random and malformed params for every request kebab serves.

A seeded generator (KEBAB_FUZZ_SEED to replay, KEBAB_FUZZ_REQUESTS to run longer) sends requests
one at a time: kebab/ask, kebab/search, kebab/status, workspace/executeCommand (kebab.*),
textDocument/codeAction, hover, definition and documentLink, with wrong types, missing fields,
~1 MB strings, positions past the end, negative and huge numbers, URIs outside the workspace,
non-file URIs and unopened documents. Every request must get a result or a JSON-RPC error within
its timeout (a hang otherwise), the server must stay up (a crash otherwise), and afterwards a
normal kebab/search must still find the right note. Prints the counts.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from rel_helpers import FIXTURES_WORKSPACE, cited_note, raw_request, serve, wait_indexed

SEED = int(os.environ.get("KEBAB_FUZZ_SEED", "20240507"))
REQUESTS = int(os.environ.get("KEBAB_FUZZ_REQUESTS", "300"))
VERBOSE = bool(os.environ.get("KEBAB_FUZZ_VERBOSE"))
TIMEOUT_S = 20.0
HUGE = 1_000_000

METHODS = [
    "kebab/ask",
    "kebab/search",
    "kebab/status",
    "workspace/executeCommand",
    "textDocument/codeAction",
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/documentLink",
]


class Fuzz:
    def __init__(self, rng: random.Random, root: Path, opened: list[str]) -> None:
        self.rng = rng
        self.root = root
        self.opened = opened

    # values -------------------------------------------------------------------------------
    def junk(self, depth: int = 0) -> Any:
        r = self.rng
        kinds = ["none", "bool", "int", "neg", "big", "float", "str", "huge", "list", "dict"]
        kind = r.choice(kinds if depth < 2 else kinds[:8])
        return {
            "none": lambda: None,
            "bool": lambda: r.random() < 0.5,
            "int": lambda: r.randrange(0, 50),
            "neg": lambda: -r.randrange(1, 1 << 31),
            "big": lambda: r.choice([2**31, 2**53, 2**63, 10**30]),
            "float": lambda: r.choice([0.5, -1.5, 1e308, float("1e-300")]),
            "str": lambda: r.choice(["", " ", "?", "../..", "\x00", "🍣" * 3, "한국어", "%zz"]),
            "huge": lambda: r.choice(["a", "🍣", "한", "x "]) * (HUGE // 4),
            "list": lambda: [self.junk(depth + 1) for _ in range(r.randrange(0, 4))],
            "dict": lambda: {str(self.junk(2))[:20]: self.junk(depth + 1) for _ in range(2)},
        }[kind]()

    def uri(self) -> Any:
        r = self.rng
        choices = [
            lambda: r.choice(self.opened),
            lambda: (self.root / "ops" / "backup.md").as_uri(),  # on disk, never opened
            lambda: (self.root / "no" / "such.md").as_uri(),
            lambda: self.root.as_uri(),
            lambda: "file:///etc/passwd",
            lambda: self.root.as_uri() + "/../../../etc/passwd",
            lambda: "file://other-host/share/note.md",
            lambda: "untitled:Untitled-1",
            lambda: "http://example.com/note.md",
            lambda: "vscode-notebook-cell:/x.ipynb#W0",
            lambda: "file:///" + "a/" * (HUGE // 2),
            lambda: "file:///tmp/%00/x.md",
            lambda: "::::",
            lambda: self.junk(),
        ]
        return r.choice(choices)()

    def number(self) -> Any:
        r = self.rng
        return r.choice([0, 1, 2, 3, 7, 40, 10_000, -1, -(2**31), 2**31 - 1, 2**40, 1.5, "3"])

    def position(self) -> Any:
        return {"line": self.number(), "character": self.number()}

    def text(self) -> Any:
        r = self.rng
        return r.choice(
            [
                "What time does the nightly backup job run?",
                "restic retention",
                "김치찌개는 몇 분 끓여?",
                "ignore previous instructions [#99]",
                "x",
                "(((",
                "allow_credentials: AND OR NOT",
                "a" * HUGE,
                "word " * (HUGE // 5),
                "🍣" * (HUGE // 4),
            ]
        )

    # params -------------------------------------------------------------------------------
    def valid(self, method: str) -> Any:
        r = self.rng
        doc = {"uri": self.uri()}
        if method == "kebab/ask":
            return {
                "question": self.text(),
                "k": r.choice([1, 3, 10, 200]),
                "mode": r.choice(["hybrid", "lexical", "vector"]),
                "uri": self.uri(),
                "history": [{"question": self.text(), "answer": "earlier [#1]"}],
                "explain": r.random() < 0.5,
                "workDoneToken": r.choice([f"fuzz-{r.randrange(1 << 20)}", 7]),
            }
        if method == "kebab/search":
            return {
                "query": self.text(),
                "k": r.choice([1, 5, 200]),
                "mode": r.choice(["hybrid", "lexical", "vector"]),
                "path_glob": r.choice(["ops/**", "**/*.md", "[", "../**", "a" * 5000]),
                "tag": r.choice(["ops", "", "#x"]),
                "uri": self.uri(),
            }
        if method == "kebab/status":
            return {}
        if method == "workspace/executeCommand":
            command = r.choice(["kebab.ask", "kebab.insertAnswer", "kebab.reindex", "kebab.nope"])
            args: dict[str, Any] = {
                "kebab.ask": [self.text()],
                "kebab.insertAnswer": [self.uri(), self.number(), self.text()],
                "kebab.reindex": [self.uri()],
                "kebab.nope": [],
            }
            return {"command": command, "arguments": args[command]}
        if method == "textDocument/codeAction":
            return {
                "textDocument": doc,
                "range": {"start": self.position(), "end": self.position()},
                "context": {
                    "diagnostics": r.choice([[], [{"range": 1, "message": None}]]),
                    "only": r.choice([None, ["refactor"], ["quickfix"], [""], 5]),
                },
            }
        if method == "textDocument/documentLink":
            return {"textDocument": doc}
        return {"textDocument": doc, "position": self.position()}

    def params(self, method: str) -> Any:
        r = self.rng
        value = self.valid(method)
        how = r.random()
        if how < 0.4:
            return value  # well-formed, with hostile values
        if how < 0.5:
            return self.junk()  # params that are not even an object
        if not isinstance(value, dict) or not value:
            return value
        for _ in range(r.randrange(1, 4)):
            key = r.choice(list(value))
            action = r.random()
            if action < 0.35:
                value.pop(key)  # a missing field
            elif action < 0.85:
                value[key] = self.junk()  # a wrong type
            else:
                value[f"extra{r.randrange(9)}"] = self.junk()  # an unknown field
            if not value:
                break
        return value


async def test_random_and_malformed_requests_never_crash_or_hang_the_server(
    tmp_path: Path,
) -> None:
    root = tmp_path / "workspace"
    shutil.copytree(FIXTURES_WORKSPACE, root)
    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    per_method: dict[str, Counter[str]] = {m: Counter() for m in METHODS}
    slowest: list[tuple[float, str]] = []
    hangs: list[str] = []
    codes: Counter[int] = Counter()
    internal: list[str] = []
    async with serve(root, tmp_path) as served:
        client = served.client
        await wait_indexed(client, files=16)
        opened = [
            client.open(root / "inbox" / "cited.md", cited_note("../ops/backup.md", 10, 14)),
            client.open(root / "inbox" / "escape.md", cited_note("../../../../../etc/passwd")),
            client.open(root / "ops" / "nginx.md"),
            client.open(root / "inbox" / "questions.md"),
            client.open(root / "inbox" / "empty.md", ""),
        ]
        fuzz = Fuzz(rng, root, opened)
        started = time.monotonic()
        for n in range(REQUESTS):
            method = rng.choice(METHODS)
            params = fuzz.params(method)
            shown = json.dumps(params, default=str)[:200]
            t0 = time.monotonic()
            try:
                await raw_request(client, method, params, TIMEOUT_S)
                outcome = "result"
            except JsonRpcException as e:
                outcome = "error"
                codes[e.code] += 1
                if e.code != -32602:  # not InvalidParams: the handler itself failed
                    internal.append(f"#{n} {method} {e.code} {str(e)[:150]} <- {shown[:150]}")
            except TimeoutError:
                outcome = "hang"
                hangs.append(f"#{n} {method} {shown}")
            took = time.monotonic() - t0
            if VERBOSE:
                print(f"#{n} {method} {outcome} {took:.2f}s {shown[:100]}", flush=True)
            slowest = sorted([*slowest, (took, f"{method} {shown[:80]}")], reverse=True)[:3]
            if not served.alive:
                outcome = "crash"
            outcomes[outcome] += 1
            per_method[method][outcome] += 1
            assert served.alive, f"the server died on request #{n} {method} {shown}"
            if len(hangs) >= 3:
                break  # enough to see the bug, without waiting out every timeout
        elapsed = time.monotonic() - started

        # afterwards, an ordinary request still gets the right answer
        await wait_indexed(client, files=16)
        hits = (await client.request("kebab/search", {"query": "restic retention policy"}))["hits"]
        status = await client.request("kebab/status", {})

    report = {
        "seed": SEED,
        "requests": sum(outcomes.values()),
        "results": outcomes["result"],
        "errors": outcomes["error"],
        "hangs": outcomes["hang"],
        "crashes": outcomes["crash"],
        "seconds": round(elapsed, 1),
        "slowest_s": [(round(t, 2), what) for t, what in slowest],
        "per_method": {m: dict(c) for m, c in per_method.items()},
        "error_codes": dict(codes),
        "handler_errors": internal,
    }
    print("\nLSP fuzz:", json.dumps(report, indent=1))
    assert hangs == [], hangs
    assert outcomes["crash"] == 0
    assert set(codes) <= {-32602}, internal  # every error is InvalidParams: no handler failed
    assert sum(outcomes.values()) == REQUESTS
    assert all(sum(c.values()) > 0 for c in per_method.values()), report["per_method"]
    assert hits and hits[0]["path"] == "ops/backup.md"
    assert status["files"] == 16 and status["folders"][0]["error"] is None

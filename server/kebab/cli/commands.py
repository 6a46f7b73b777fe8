"""The CLI's commands: parse flags into workspace calls, print text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kebab.cli.shared import open_workspace, print_json, read_queries, refresh
from kebab.errors import KebabError, WorkspaceError
from kebab.excerpts import excerpt
from kebab.model import Hit, IndexSummary, to_builtins


def index(args: argparse.Namespace) -> int:
    with open_workspace(args) as ws:
        summary = ws.refresh(_progress_bar() if sys.stderr.isatty() and not args.json else None)
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary)
    return 0


def search(args: argparse.Namespace) -> int:
    if not args.query and not args.queries:
        raise KebabError("search needs a QUERY or --queries FILE")
    with open_workspace(args) as ws:
        if (args.mode or ws.cfg.search.mode) != "lexical":
            ws.preload_model()
        refresh(ws)
        if args.queries:
            for qid, question in read_queries(args.queries):
                hits = ws.search(question, args.k, args.mode, args.path_glob, args.tag, args.where)
                print(json.dumps({"id": qid, "hits": to_builtins(hits)}, ensure_ascii=False))
            return 0
        hits = ws.search(args.query, args.k, args.mode, args.path_glob, args.tag, args.where)
    if args.json:
        print_json({"hits": hits})
    else:
        _print_hits(hits)
    return 0


def links(args: argparse.Namespace) -> int:
    with open_workspace(args) as ws:
        if not ws.read_only:
            ws.sync()  # the notes read again where changed; nothing is embedded for links
        found = ws.links(args.path)
    if args.json:
        print_json(found)
        return 0
    print("Links:" if found["links"] else "Links: none")
    for link in found["links"]:
        heading = f"#{link.heading}" if link.heading else ""
        shown = link.path or f"{link.target} (no such note)"
        print(f"  {'!' if link.embed else ''}{shown}{heading}  (line {link.line})")
    print("Backlinks:" if found["backlinks"] else "Backlinks: none")
    for link in found["backlinks"]:
        heading = f"#{link.heading}" if link.heading else ""
        print(f"  {link.source}:{link.line}  {'!' if link.embed else ''}[[{link.target}{heading}]]")
    return 0


def ask(args: argparse.Namespace) -> int:
    from kebab.cli.ask import run

    return run(args)


def generate(args: argparse.Namespace) -> int:
    from kebab.cli.generate import run

    return run(args)


def history(args: argparse.Namespace) -> int:
    from kebab.cli.ask import show_history

    return show_history(args)


def status(args: argparse.Namespace) -> int:
    with open_workspace(args) as ws:
        st = ws.status()
    if args.json:
        print_json(st)
    else:
        for key in ("root", "index_dir", "files", "chunks", "vectors", "pending_vectors"):
            print(f"{key:16} {st[key]}")
        emb = st.get("embedding")
        if isinstance(emb, dict):
            print(f"{'embedding':16} {emb['backend']}:{emb['id']} ({emb['dim']}-d)")
        for s in st.get("skipped", []):
            print(f"skipped          {s['path']}: {s['reason']}")
    return 0


def eval_(args: argparse.Namespace) -> int:
    from kebab.cli.evaluate import run

    return run(args)


def mcp(args: argparse.Namespace) -> int:
    from kebab.mcp_server import run

    root = Path(args.root).expanduser()
    if not root.is_dir():
        raise WorkspaceError(f"no such folder: {root}")
    return run(root, {"index_dir": args.index_dir} if args.index_dir else {})


def serve(args: argparse.Namespace) -> int:
    from kebab.workspace import preload_embedded_model

    preload_embedded_model()  # while the language server imports
    from kebab.lsp.server import run

    return run(args.tcp)


def _print_summary(s: IndexSummary) -> None:
    print(
        f"{s.files} notes, {s.chunks} chunks in {s.seconds:.2f}s "
        f"(+{s.added} ~{s.updated} -{s.deleted}, {s.unchanged} unchanged; "
        f"{s.embedded} embedded, {s.pending_vectors} vectors pending)"
    )
    for item in s.skipped:
        print(f"  skipped {item.path}: {item.reason}")
    for item in s.warnings:
        print(f"  warning {item.path}: {item.reason}")
    print(f"index: {s.index_dir}")


def _print_hits(hits: list[Hit]) -> None:
    if not hits:
        print("no matches")
    for i, h in enumerate(hits, 1):
        heading = " › ".join(h.heading_path) or h.title
        print(f"{i:2}. {h.score:.3f}  {h.path}:{h.start_line}-{h.end_line}  {heading}")
        snippet = excerpt(h.text, 160)  # words, as the editors show them
        if snippet:
            print(f"     {snippet}")


def _progress_bar() -> Any:
    started = time.monotonic()

    def show(phase: str, done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-6)
        width = 30
        filled = int(width * done / total) if total else width
        sys.stderr.write(
            f"\r\033[K{phase:9} [{'#' * filled}{'.' * (width - filled)}] "
            f"{done}/{total} ({rate:.0f}/s)"
        )
        sys.stderr.flush()

    return show

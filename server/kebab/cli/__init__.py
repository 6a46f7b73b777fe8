"""`kebab`: index, search, ask, generate, history, eval and serve from the terminal.

User mistakes (missing root, bad flag, unreadable index, model down) end as one line on stderr
and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kebab.errors import KebabError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
        format="kebab: %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KebabError as e:
        print(f"kebab: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kebab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _parser() -> argparse.ArgumentParser:
    from kebab.cli import commands

    p = argparse.ArgumentParser(
        prog="kebab", description="Ask your Markdown notes; get answers that cite them."
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens to stderr")
    sub = p.add_subparsers(metavar="COMMAND")

    sp = sub.add_parser("index", help="build or update the index of a workspace")
    _common(sp, root_positional=True)
    sp.set_defaults(func=commands.index)

    sp = sub.add_parser("search", help="search the workspace (brings the index up to date first)")
    sp.add_argument("query", nargs="?", help="what to look for")
    _common(sp)
    sp.add_argument("-k", type=int, default=None, help="how many hits (default 10)")
    _mode(sp)
    _filters(sp)
    sp.add_argument("--queries", help="JSON lines of {id, question}: one JSON line of hits each")
    sp.set_defaults(func=commands.search)

    _answering(sub)

    sp = sub.add_parser("links", help="a note's links and the notes that link to it (backlinks)")
    sp.add_argument("path", help="the note, relative to the workspace root")
    _common(sp)
    sp.set_defaults(func=commands.links)

    sp = sub.add_parser("history", help="recent answers")
    _common(sp)
    sp.add_argument("-n", type=int, default=20, help="how many (default 20)")
    sp.set_defaults(func=commands.history)

    sp = sub.add_parser("status", help="index state and counts")
    _common(sp)
    sp.set_defaults(func=commands.status)

    sp = sub.add_parser("eval", help="measure retrieval (and answer) quality on labelled questions")
    sp.add_argument("questions", nargs="?", help="questions JSONL")
    _common(sp)
    _mode(sp)
    sp.add_argument("--all-modes", action="store_true", help="lexical, vector and hybrid")
    sp.add_argument("--answers", action="store_true", help="also answer and score the answers")
    sp.add_argument("--corpora", help="folder holding one workspace per question 'corpus' field")
    sp.add_argument("--out", help="write per-question JSON lines here")
    sp.add_argument("-k", type=int, default=10)
    sp.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two run files")
    sp.set_defaults(func=commands.eval_)

    sp = sub.add_parser("mcp", help="serve the notes to AI agents (Model Context Protocol, stdio)")
    sp.add_argument("--root", default=".", help="workspace folder (default: .)")
    sp.add_argument("--index-dir", help="where the index lives (default: user cache dir)")
    sp.set_defaults(func=commands.mcp)

    sp = sub.add_parser("serve", help="run the language server (stdio)")
    sp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (debugging)")
    sp.set_defaults(func=commands.serve)
    return p


def _answering(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`ask` and `generate`: the commands that call an answerer."""
    from kebab.cli import commands

    sp = sub.add_parser("ask", help="answer a question from the notes, with citations")
    sp.add_argument("question", nargs="?", help="the question")
    _common(sp)
    sp.add_argument("-k", type=int, default=None, help="passages to retrieve (default 10)")
    _mode(sp)
    _filters(sp)
    _model(sp)
    sp.add_argument("--explain", action="store_true", help="store and print the packed passages")
    sp.add_argument(
        "--continue",
        dest="cont",
        action="store_true",
        help="a follow-up: continue the most recent conversation",
    )
    sp.add_argument(
        "--dry-run", action="store_true", help="print the retrieval and the prompt; call no model"
    )
    sp.add_argument("--queries", help="JSON lines of {id, question}: one answer.v1 line each")
    sp.set_defaults(func=commands.ask)

    sp = sub.add_parser(
        "generate", help="write a new note on a topic from the notes, every claim footnoted"
    )
    sp.add_argument("--topic", required=True, help="what the note is about")
    sp.add_argument("--output", required=True, help="the note to write (inside the root)")
    _common(sp)
    sp.add_argument("--yes", action="store_true", help="overwrite the output if it exists")
    sp.add_argument(
        "--dry-run",
        action="store_true",
        help="print the retrieval and the prompt; call no model, write nothing",
    )
    _model(sp)
    sp.set_defaults(func=commands.generate)


def _common(sp: argparse.ArgumentParser, root_positional: bool = False) -> None:
    """The workspace, its index and the output format: every command that reads notes."""
    if root_positional:
        sp.add_argument("root", nargs="?", default=".", help="workspace folder (default: .)")
    else:
        sp.add_argument("--root", default=".", help="workspace folder (default: .)")
    sp.add_argument("--index-dir", help="where the index lives (default: user cache dir)")
    sp.add_argument("--json", action="store_true", help="print JSON")


def _mode(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--mode", choices=["hybrid", "lexical", "vector"])


def _filters(sp: argparse.ArgumentParser) -> None:
    """Which notes: also written at the start of a question (`#ops path:infra/ status=draft`)."""
    sp.add_argument("--path-glob", help="only notes matching this glob, e.g. 'rust/**'")
    sp.add_argument(
        "--tag", action="append", default=[], help="only notes with this tag (repeatable)"
    )
    sp.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only notes whose front matter holds this (repeatable; also !=, >=, <= for dates "
        "and numbers, e.g. --where status=draft --where reviewed>=2024-01-01)",
    )


def _model(sp: argparse.ArgumentParser) -> None:
    """Which answerer: the config's unless given."""
    sp.add_argument("--backend", choices=["extractive", "openai", "ollama"])
    sp.add_argument("--model", help="model name for the backend")
    sp.add_argument("--endpoint", help="base URL of the model server")


if __name__ == "__main__":
    sys.exit(main())

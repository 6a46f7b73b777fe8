"""`kebab ask` and `kebab history`, and the answer half of `kebab eval`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from kebab.cli import render
from kebab.cli.shared import (
    llm_overrides,
    open_workspace,
    print_json,
    read_queries,
    refresh,
)
from kebab.errors import InvalidParams, KebabError
from kebab.model import Answer, AskRequest, Conflict, to_builtins
from kebab.text import language
from kebab.workspace import Workspace


def run(args: argparse.Namespace) -> int:
    if not args.question and not args.queries:
        raise KebabError("ask needs a QUESTION or --queries FILE")
    with open_workspace(args, llm_overrides(args)) as ws:
        ws.preload_model()
        refresh(ws)
        if args.queries:
            return asyncio.run(_batch(ws, args))
        # A new question starts a thread of its own (the engine names it); --continue follows up.
        conversation = ws.last_conversation() if args.cont else None
        req = _request(args, args.question, explain=args.explain, conversation=conversation)
        if args.dry_run:
            _dry_run(ws, req, args.json)
            return 0
        stream = render.Streamed() if not args.json and not args.explain else None
        answer = asyncio.run(
            _ask(
                ws,
                req,
                _writer(stream) if stream else None,
                partial(_print_conflicts, lang=language(req.question)) if stream else None,
            )
        )
    if args.json:
        print_json(answer)
    else:
        if not stream:
            _print_conflicts(answer.conflicts, answer.lang)
        _print_answer(answer, stream)
    return 0 if answer.refusal_reason != "llm_error" else 1


def show_history(args: argparse.Namespace) -> int:
    with open_workspace(args) as ws:
        rows = ws.history(args.n)
    if args.json:
        print_json(rows)
        return 0
    for r in rows:  # in words; the codes (`llm_self_judge`...) are in --json, for tools
        state = "answered" if r["grounded"] else _OUTCOME.get(r["refusal_reason"], "not answered")
        print(
            f"{r['id']:5} {r['created_at']}  {r['backend']}:{r['model']}  {state}\n"
            f"      {r['question']}"
        )
    return 0


async def _ask(
    ws: Workspace,
    req: AskRequest,
    on_text: Callable[[str], None] | None,
    on_conflicts: Callable[[list[Conflict]], None] | None = None,
) -> Answer:
    try:
        return await ws.ask(req, on_text, on_conflicts)
    finally:
        await ws.release_model()


def _request(args: argparse.Namespace, question: str, **more: Any) -> AskRequest:
    """The question with the flags every ask takes: depth, mode and the notes' filter."""
    return AskRequest(
        question=question,
        k=args.k,
        mode=args.mode,
        path_glob=args.path_glob,
        tags=args.tag,
        where=args.where,
        **more,
    )


async def _batch(ws: Workspace, args: argparse.Namespace) -> int:
    for qid, question in read_queries(args.queries):
        try:
            answer = await ws.ask(_request(args, question))
        except InvalidParams as e:  # which question of the file, not only what is wrong
            raise KebabError(f"{args.queries}: question {qid}: {e}") from None
        line = to_builtins(answer)
        assert isinstance(line, dict)
        print(json.dumps({"id": qid, **line}, ensure_ascii=False), flush=True)
    return 0


def _print_conflicts(conflicts: list[Conflict], lang: str = "en") -> None:
    """Disagreeing notes, before the answer: the reader decides which one is right."""
    disagree = render.words(lang)["disagree"]
    for c in conflicts:
        detail = f" — {c.detail}" if c.detail else ""
        print(f"⚠ {disagree}: [#{c.a}] {c.a_source} vs [#{c.b}] {c.b_source}{detail}")
    if conflicts:
        print(flush=True)


# in words: `llm_self_judge` is what a `closest` outcome is stored with (passages, no claim)
_OUTCOME = {"cancelled": "cancelled", "llm_error": "failed", "llm_self_judge": "closest"}


def _writer(stream: render.Streamed) -> Callable[[str], None]:
    def write(piece: str) -> None:
        sys.stdout.write(stream.write(piece))
        sys.stdout.flush()

    return write


def _print_answer(answer: Answer, stream: render.Streamed | None) -> None:
    """The rest of the answer as the editors show it: cited text numbered [1], [2] like the
    note's footnotes, or "Not answered." and why; then the sources or the nearest passages."""
    if stream is None or (answer.grounded and not stream.printed):
        # nothing shown yet: all of it now, with the markers kebab placed (the model left none)
        stream = render.Streamed()
        shown = stream.write(answer.answer)
        if answer.grounded:
            sys.stdout.write(shown)
    if not stream.printed and not answer.grounded:
        print(_verdict(answer))
        if _shows_text(answer):
            print(f"\n{answer.answer.strip()}")
    else:
        print(stream.rest().rstrip("\n"))
        if not answer.grounded:
            print(f"\n{_verdict(answer)}")
    if answer.error:
        print(f"\nkebab: {answer.error}", file=sys.stderr)
    said = render.words(answer.lang)
    if answer.filters:
        print(f"\n{said['only']}: {answer.filters}")
    if answer.grounded and answer.citations:
        print(f"\n{said['sources']}:")
        for c in sorted(answer.citations, key=lambda c: render.label_order(c.label)):
            heading = " › ".join(c.heading_path)
            number = render.shown(c.label) or c.marker
            placed = f"  ({said['by_kebab']})" if c.by == "kebab" else ""
            print(f"  [{number}] {c.path}:{c.start_line}-{c.end_line}  {heading}{placed}")
    elif answer.candidates:
        listed = "closest_passages" if answer.outcome == "closest" else "nearest_passages"
        print(f"\n{said[listed]}:")
        for c in answer.candidates:
            print(f"  {c.path}:{c.start_line}-{c.end_line}  {' › '.join(c.heading_path)}")
            if text := c.excerpt:
                print(f"      {text}")


def _verdict(answer: Answer) -> str:
    """A model answer the notes do not support gets a plain warning, not "Not answered": its
    words follow it, for the reader to judge."""
    return (
        f"⚠ {answer.refusal_text}"
        if answer.unsupported
        else render.refusal(answer.refusal_text, answer.outcome, answer.lang)
    )


def _shows_text(answer: Answer) -> bool:
    """Whether a refused answer's text says more than the refusal: a model's own words (kept
    when it failed, was cancelled or cited nothing), not the words kebab refuses with."""
    if answer.refusal_reason in ("score_gate", "no_chunks") or not answer.answer.strip():
        return False
    return answer.model.backend != "extractive"


def _dry_run(ws: Workspace, req: AskRequest, as_json: bool) -> None:
    p = ws.prepare(req)
    data = {
        "hits": p.hits,
        "gate": {"refusal": p.refusal, "top_cosine": p.top_cosine, "coverage": p.coverage},
        "template": p.template,
        "messages": p.messages,
        "prepare_ms": round(p.prepare_ms, 2),
    }
    if as_json:
        print_json(data)
        return
    for i, h in enumerate(p.hits, 1):
        print(
            f"{i:2}. {h.score:.3f} lex={h.lexical_score} cos={h.vector_score}  "
            f"{h.path}:{h.start_line}-{h.end_line}"
        )
    print(
        f"\ngate: {p.refusal or 'pass'} (top cosine {p.top_cosine:.3f}, coverage "
        f"{p.coverage:.2f}); template {p.template}; {p.prepare_ms:.1f} ms\n"
    )
    for m in p.messages:
        print(f"--- {m.role} ---\n{m.content}\n")

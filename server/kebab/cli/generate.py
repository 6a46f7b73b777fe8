"""`kebab generate --topic TEXT --output PATH`: a new note written from the notes, footnoted."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from kebab.cli.shared import llm_overrides, open_workspace, print_json
from kebab.model import GeneratedNote
from kebab.workspace import Workspace


def run(args: argparse.Namespace) -> int:
    output = Path(args.output).expanduser().absolute()  # relative to where kebab runs
    with open_workspace(args, llm_overrides(args)) as ws:
        if not args.dry_run:  # fail before indexing and retrieval
            ws.note_path(output, overwrite=args.yes)
        ws.refresh()
        if args.dry_run:
            _dry_run(ws, args.topic, output, args.json)
            return 0
        if not args.json:
            print(
                f"kebab: writing a note on {args.topic!r} with {ws.llm.backend}:{ws.llm.id}…",
                file=sys.stderr,
            )
        note = asyncio.run(_generate(ws, args.topic, output, args.yes))
    if args.json:
        print_json(note)
    else:
        _print_note(note)
    return 0 if note.written else 1


async def _generate(ws: Workspace, topic: str, output: Path, overwrite: bool) -> GeneratedNote:
    try:
        return await ws.generate_note(topic, output, overwrite)
    finally:
        await ws.release_model()


def _print_note(note: GeneratedNote) -> None:
    if note.unknown_markers:
        dropped = ", ".join(f"[#{m}]" for m in note.unknown_markers)
        print(
            f"kebab: dropped citations of passages that were not given: {dropped}", file=sys.stderr
        )
    if not note.written:
        print(f"kebab: {note.error}", file=sys.stderr)
        return
    sources = sorted({c.path for c in note.citations})
    verb = "overwrote" if note.overwritten else "wrote"
    print(
        f"{verb} {note.path}: {len(note.citations)} citations from {len(sources)} notes "
        f"({note.prompt_template_version}, {note.model.backend}:{note.model.id}, "
        f"{note.usage.latency_ms / 1000:.1f} s)"
    )
    for path in sources:
        print(f"  {path}")


def _dry_run(ws: Workspace, topic: str, output: Path, as_json: bool) -> None:
    plan = ws.plan_note(topic, output)
    p = plan.prepared
    if as_json:
        print_json(
            {
                "path": plan.path,
                "exists": plan.exists,
                "hits": p.hits,
                "gate": {"refusal": p.refusal, "top_cosine": p.top_cosine, "coverage": p.coverage},
                "template": p.template,
                "messages": p.messages,
            }
        )
        return
    for i, h in enumerate(p.hits, 1):
        print(
            f"{i:2}. {h.score:.3f}  {h.path}:{h.start_line}-{h.end_line}  "
            f"{' › '.join(h.heading_path)}"
        )
    exists = " (exists: --yes to overwrite)" if plan.exists else ""
    print(
        f"\ngate: {p.refusal or 'pass'} (top cosine {p.top_cosine:.3f}); "
        f"{len(p.evidence)} passages packed; template {p.template}; "
        f"output {plan.path}{exists}\n"
    )
    for m in p.messages:
        print(f"--- {m.role} ---\n{m.content}\n")

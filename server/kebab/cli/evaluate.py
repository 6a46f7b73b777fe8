"""`kebab eval`: run labelled questions against one workspace, or one per corpus."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from kebab import evaluation as ev
from kebab.errors import KebabError
from kebab.model import Answer, AskRequest, Hit
from kebab.workspace import Workspace


def run(args: argparse.Namespace) -> int:
    if args.compare:
        deltas = ev.compare(*args.compare)
        print(json.dumps(deltas, indent=2, ensure_ascii=False))
        return 0
    if not args.questions:
        raise KebabError("eval needs a QUESTIONS.jsonl file (or --compare A B)")
    questions = ev.load_questions(args.questions)
    modes = ["lexical", "vector", "hybrid"] if args.all_modes else [args.mode or "hybrid"]
    spaces: dict[str, Workspace] = {}

    def workspace(q: ev.Question) -> Workspace:
        root = Path(args.corpora) / q.corpus if args.corpora and q.corpus else Path(args.root)
        key = str(root)
        if key not in spaces:
            overrides = (
                {"index_dir": str(Path(args.index_dir) / (q.corpus or "root"))}
                if args.index_dir
                else {}
            )
            ws = Workspace(root, overrides=overrides)
            print(f"indexing {root} ...", file=sys.stderr)
            ws.refresh()
            spaces[key] = ws
        return spaces[key]

    def search(q: ev.Question, mode: str, depth: int) -> list[Hit]:
        return workspace(q).search(q.question, depth, mode)

    try:
        for q in questions:
            workspace(q)
        rows, summary = ev.run_retrieval(questions, search, modes, args.k)
        result: dict[str, Any] = {"retrieval": summary}
        if args.answers:

            async def ask(q: ev.Question) -> Answer:
                # explain: the verdict on the model's own markers too (before attribution)
                return await workspace(q).ask(AskRequest(question=q.question, explain=True))

            answer_rows, answer_summary = asyncio.run(ev.run_answers(questions, ask))
            rows += answer_rows
            result["answers"] = answer_summary
        first = next(iter(spaces.values()), None)
        result["run"] = ev.run_info(
            {"k": args.k, "modes": modes}, first.embedder if first else None
        )
    finally:
        for ws in spaces.values():
            ws.close()
    if args.out:
        ev.write_run(args.out, rows, result)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        _print_table(result, args.k)
    return 0


def _print_table(result: dict[str, Any], k: int) -> None:
    cols = [
        "n",
        "hit@1",
        "hit@5",
        f"recall@{k}",
        "mrr",
        "ndcg@10",
        "ranked_below_k",
        "not_in_top_50",
    ]
    retrieval = result["retrieval"]
    groups = sorted({g for mode in retrieval.values() for g in mode})
    print(f"{'mode':8} {'group':28} " + " ".join(f"{c:>14}" for c in cols))
    for group in groups:
        for mode, by_group in retrieval.items():
            if group in by_group:
                row = by_group[group]
                print(f"{mode:8} {group:28} " + " ".join(f"{row.get(c, ''):>14}" for c in cols))
    if "answers" in result:
        cols = [
            "n",
            "answered_precision",
            "coverage",
            "answerable_not_answered",
            "unanswerable_answered",
            "near_miss_answered",
            "closest_shows_gold",
            "closest_facts_shown",
            "cites_gold_rate",
            "key_fact_rate",
            "latency_ms_p50",
        ]
        print(f"\n{'answers':37} " + " ".join(f"{c[:14]:>14}" for c in cols))
        for group, row in result["answers"].items():
            print(f"{group:37} " + " ".join(f"{row.get(c, '')!s:>14}" for c in cols))

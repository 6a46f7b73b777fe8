"""Does the link graph help ranking? (issue 29, item 3) — an offline re-rank of a recorded run.

For each labelled question, the hybrid hits a `kebab eval` run recorded (its top 10) are
re-ranked with one extra signal: a hit whose note links to, or is linked from, an anchor note
gets `score × (1 + w)`. Two anchor choices: the top hit's note (`top1`), and the notes of the
top three hits (`top3`); a hit is never boosted for a link to its own note. Links are read the
way kebab reads them (`kebab.links`: wikilinks, embeds, Markdown links to notes, resolved as
Obsidian does) from the notes on disk, and taken in either direction.

Figures, before and after, side by side: hit@1, hit@5 and MRR within the recorded list (a gold
passage below rank 10 counts as a miss, so the baseline MRR is a little under the run's own),
per corpus and over all questions; how many questions have any linked candidate at all; how
many changed their first gold rank, better or worse (with a two-sided sign test); and the links
each corpus has. `candidates` gives the headroom per corpus: questions where the top hit is wrong
and a boosted hit is gold (what the graph could fix) against those where the top hit is right
and a boosted hit is not (what it could break); `linked_candidates` counts boosted hits. The weight is chosen leave-one-corpus-out: with each corpus held out, the `w`
of the grid (0 included: no graph) with the best MRR over the other corpora's questions, pooled,
then the held-out corpus is scored at that `w`. Nothing is embedded or indexed; it runs in
seconds (tldr's 14,000 notes are the slowest part).

Usage: python bench/graph_signal.py --questions /work/runs/all8-q.jsonl --run /work/runs/f1.jsonl
       --corpora ../shared/corpora [--weights 0.05 0.1 0.2 0.3]
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kebab import links
from kebab.config import Config
from kebab.evaluation import Gold, load_questions, matches
from kebab.index import files
from kebab.model import Hit

VARIANTS = {"top1": 1, "top3": 3}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def link_graph(root: Path) -> tuple[set[frozenset[str]], dict[str, int]]:
    """The unordered pairs of distinct notes under `root` that link one to the other, and
    counts: notes, links read, links resolved to another note, distinct linked pairs."""
    cfg = Config()
    found, _ = files.scan(root, cfg.ignore, cfg.max_file_bytes)
    resolve = links.resolver(n.path for n in found)
    pairs: set[frozenset[str]] = set()
    read = resolved = 0
    for note in found:
        text, _ = files.read_note(note, cfg.max_file_bytes)
        for link in links.links_in(note.path, text or "", resolve):
            read += 1
            if link.path is not None and link.path != note.path:
                resolved += 1
                pairs.add(frozenset((note.path, link.path)))
    linked_notes = len({p for pair in pairs for p in pair})
    counts = {
        "notes": len(found),
        "links": read,
        "links_to_other_notes": resolved,
        "linked_pairs": len(pairs),
        "notes_with_a_link": linked_notes,
    }
    return pairs, counts


def as_hits(raw: Any) -> list[Hit]:
    rows = ast.literal_eval(raw) if isinstance(raw, str) else raw
    return [
        Hit(
            chunk_id=str(i),
            path=h["path"],
            heading_path=list(h["heading_path"]),
            start_line=int(h["lines"][0]),
            end_line=int(h["lines"][1]),
            text="",
            content_hash="",
            score=float(h["score"]),
        )
        for i, h in enumerate(rows)
    ]


def boosted(hits: list[Hit], pairs: set[frozenset[str]], anchors: int) -> list[bool]:
    """Which hits link to or from the note of one of the first `anchors` hits (not their own)."""
    tops = {h.path for h in hits[:anchors]}
    return [any(a != h.path and frozenset((a, h.path)) in pairs for a in tops) for h in hits]


def first_gold(hits: list[Hit], gold: list[Gold]) -> int | None:
    """1-based rank of the first hit that matches any gold section, None when none does."""
    return next((i + 1 for i, h in enumerate(hits) if any(matches(h, g) for g in gold)), None)


def rerank(hits: list[Hit], flags: list[bool], w: float) -> list[Hit]:
    """Hits by `score × (1 + w)` where flagged; ties keep the recorded order."""
    order = sorted(range(len(hits)), key=lambda i: (-hits[i].score * (1 + w if flags[i] else 1), i))
    return [hits[i] for i in order]


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
        "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
    }


def mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r) / (len(ranks) or 1)


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test p-value for `better` vs `worse` paired changes."""
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return round(min(1.0, 2 * tail), 4)


def compare(before: list[int | None], after: list[int | None]) -> dict[str, Any]:
    """Metrics before and after, their ratios, and the questions whose first gold rank moved."""
    b, a = metrics(before), metrics(after)
    key = [r if r is not None else math.inf for r in before]
    new = [r if r is not None else math.inf for r in after]
    better = sum(x < y for x, y in zip(new, key, strict=True))
    worse = sum(x > y for x, y in zip(new, key, strict=True))
    return {
        "n": len(before),
        "before": b,
        "after": a,
        "ratio": {k: round(a[k] / b[k], 4) if b[k] else None for k in b},
        "better": better,
        "worse": worse,
        "sign_p": sign_test(better, worse),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", required=True, type=Path, help="labelled questions (jsonl)")
    ap.add_argument("--run", required=True, type=Path, help="a `kebab eval` run (jsonl)")
    ap.add_argument("--corpora", required=True, type=Path, help="folder of corpus folders")
    ap.add_argument("--weights", nargs="+", type=float, default=[0.05, 0.1, 0.2, 0.3])
    args = ap.parse_args()
    grid = sorted({0.0, *args.weights})

    gold = {q.id: q.gold for q in load_questions(args.questions) if q.gold}
    rows: dict[str, list[tuple[str, list[Hit]]]] = {}
    recorded_ranks: list[int | None] = []
    for line in args.run.read_text(encoding="utf-8").splitlines()[1:]:
        row = json.loads(line)
        if row.get("mode") != "hybrid" or row["id"] not in gold:
            continue
        hits = as_hits(row["hits"])
        rows.setdefault(row["corpus"], []).append((row["id"], hits))
        found = [r for r in row.get("gold_ranks") or [] if r is not None]
        recorded_ranks.append(min(found) if found else None)
    depth = Counter(len(h) for qs in rows.values() for _, h in qs)
    log(f"{sum(len(v) for v in rows.values())} questions over {len(rows)} corpora; depth {depth}")

    graphs: dict[str, dict[str, int]] = {}
    # ranks[variant][w][corpus] = first gold rank per question, in row order
    ranks: dict[str, dict[float, dict[str, list[int | None]]]] = {
        v: {w: {} for w in grid} for v in VARIANTS
    }
    candidates: dict[str, dict[str, dict[str, int]]] = {v: {} for v in VARIANTS}
    for corpus in sorted(rows):
        t = time.perf_counter()
        pairs, graphs[corpus] = link_graph(args.corpora / corpus)
        log(f"{corpus}: {graphs[corpus]} in {time.perf_counter() - t:.1f}s")
        for variant, anchors in VARIANTS.items():
            c = dict.fromkeys(
                (
                    "with_linked_candidate",
                    "linked_candidates",
                    "linked_candidate_is_gold",
                    "top_wrong_linked_gold_below",
                    "top_right_linked_wrong_below",
                ),
                0,
            )
            for qid, hits in rows[corpus]:
                flags = boosted(hits, pairs, anchors)
                is_gold = [any(matches(h, g) for g in gold[qid]) for h in hits]
                linked_gold = any(f and g for f, g in zip(flags, is_gold, strict=True))
                linked_wrong = any(f and not g for f, g in zip(flags, is_gold, strict=True))
                c["with_linked_candidate"] += any(flags)
                c["linked_candidate_is_gold"] += linked_gold
                c["top_wrong_linked_gold_below"] += linked_gold and not is_gold[0]
                c["top_right_linked_wrong_below"] += linked_wrong and is_gold[0]
                c["linked_candidates"] += sum(flags)
                for w in grid:
                    ranks[variant][w].setdefault(corpus, []).append(
                        first_gold(rerank(hits, flags, w), gold[qid])
                    )
            candidates[variant][corpus] = {"questions": len(rows[corpus]), **c}

    def pooled(variant: str, w: float, corpora: list[str]) -> list[int | None]:
        return [r for c in corpora for r in ranks[variant][w][c]]

    corpora = sorted(rows)
    base_all = pooled("top1", 0.0, corpora)
    out: dict[str, Any] = {
        "what": "hybrid top-10 re-ranked offline: score x (1+w) for a hit whose note links "
        "to/from an anchor note (top1: the top hit's; top3: the top three hits')",
        "questions": str(args.questions),
        "run": str(args.run),
        "depth": dict(depth),
        "grid": grid,
        "baseline_check": {
            "mrr_within_list": round(mrr(base_all), 4),
            "mrr_recorded_depth_50": round(mrr(recorded_ranks), 4),
        },
        "links": graphs,
        "candidates": candidates,
    }
    for variant in VARIANTS:
        per_w: dict[str, Any] = {}
        for w in grid[1:]:
            per_w[str(w)] = {
                "all": compare(base_all, pooled(variant, w, corpora)),
                **{c: compare(ranks[variant][0.0][c], ranks[variant][w][c]) for c in corpora},
            }
        loco: dict[str, Any] = {}
        held_before: list[int | None] = []
        held_after: list[int | None] = []
        for held in corpora:
            train = [c for c in corpora if c != held]
            scores = {w: mrr(pooled(variant, w, train)) for w in grid}
            best = max(grid, key=lambda w: (round(scores[w], 6), -w))
            before, after = ranks[variant][0.0][held], ranks[variant][best][held]
            held_before += before
            held_after += after
            loco[held] = {
                "w": best,
                "train_mrr": {str(w): round(s, 4) for w, s in scores.items()},
                **compare(before, after),
            }
        loco["all_held_out"] = compare(held_before, held_after)
        out[variant] = {"per_w": per_w, "leave_one_corpus_out": loco}
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

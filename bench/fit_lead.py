"""Fit `kebab.llm.lead.WEIGHTS` (which passage an extractive answer quotes from) on labelled
questions, leave-one-corpus-out.

For each answerable question with key facts (`must_contain`), the evidence kebab packs for it
(`kebab ask --explain`'s `packed`) is read by the extractive answerer (`Extractive.passages`:
each passage's `lead.FEATURES`); a passage is positive when its text holds every key fact. A
conditional logit (softmax over the question's passages; the likelihood of choosing any
positive one) is fitted on the questions whose wording looks like people's (`--tune`: not the
English questions of the sets that copy their notes' words), each corpus held out in turn. The
held-out corpus is scored on all its questions: how often the chosen passage holds every key
fact, beside today's choice (the passage of the best unit) and the best possible (any packed
passage holds them).

Usage: python bench/fit_lead.py --questions Q.jsonl --corpora ../shared/corpora
       --index-dir DIR [--tables T.jsonl] [--l2 1.0]
`--tables` caches the per-passage figures (written when absent, read when present).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np

# Questions copying their notes' words (question_overlap.py median > 0.45 for their English
# part): not tuned on.
WORDY = ("fa-", "h-", "ot-", "til-")


def tables(questions: list[dict[str, Any]], corpora: str, index_dir: str) -> list[dict[str, Any]]:
    from kebab.llm import Evidence
    from kebab.llm.extractive import Extractive
    from kebab.model import AskRequest
    from kebab.workspace import Workspace

    spaces: dict[str, Workspace] = {}
    out = []
    for q in questions:
        if not q.get("gold") or not q.get("must_contain"):
            continue
        c = q["corpus"]
        if c not in spaces:
            spaces[c] = Workspace(Path(corpora) / c, overrides={"index_dir": f"{index_dir}/{c}"})
            spaces[c].refresh()
        ws = spaces[c]
        a = asyncio.run(ws.ask(AskRequest(question=q["question"], explain=True)))
        packed = (a.explain or {}).get("packed") or []
        llm = ws.llm
        if not packed or not isinstance(llm, Extractive):
            continue
        facts = [s.lower() for s in q["must_contain"]]
        holds = {p["marker"]: all(f in p["text"].lower() for f in facts) for p in packed}
        table = llm.passages(q["question"], [Evidence(**p) for p in packed])
        out.append(
            {
                "id": q["id"],
                "corpus": c,
                "lang": q["lang"],
                "rows": [{"x": x, "y": holds[m]} for m, x in table.items()],
            }
        )
    for ws in spaces.values():
        ws.close()
    return out


def arrays(items: list[dict[str, Any]], features: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (
            np.array([[r["x"].get(f, 0.0) for f in features] for r in it["rows"]]),
            np.array([float(r["y"]) for r in it["rows"]]),
        )
        for it in items
    ]


def fit(data: list[tuple[np.ndarray, np.ndarray]], dims: int, l2: float) -> np.ndarray:
    """Conditional logit by gradient ascent: maximise log P(a positive passage is chosen)."""
    data = [(x, y) for x, y in data if 0 < y.sum() < len(y)]
    w = np.zeros(dims)
    for _ in range(2000):
        grad = -l2 * w
        for x, y in data:
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            pos = p * y
            grad += x.T @ (pos / pos.sum() - p)
        w += 0.5 * grad / len(data)
    return w


def chosen_holds(data: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray) -> float:
    return float(np.mean([y[int(np.argmax(x @ w))] for x, y in data])) if data else 0.0


def main() -> None:
    from kebab.llm.lead import FEATURES

    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", required=True)
    ap.add_argument("--corpora", default="../shared/corpora")
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--tables")
    ap.add_argument("--l2", type=float, default=1.0)
    a = ap.parse_args()
    questions = [
        json.loads(line) for line in Path(a.questions).read_text().splitlines() if line.strip()
    ]
    cached = Path(a.tables) if a.tables else None
    if cached and cached.exists():
        items = [json.loads(line) for line in cached.read_text().splitlines()]
    else:
        items = tables(questions, a.corpora, a.index_dir)
        if cached:
            cached.write_text("".join(json.dumps(it) + "\n" for it in items))
    tune = [it for it in items if not (it["lang"] == "en" and it["id"].startswith(WORDY))]
    today = np.array([1.0 if f == "best" else 0.0 for f in FEATURES])
    held: dict[str, Any] = {}
    totals = np.zeros(4)
    for c in sorted({it["corpus"] for it in items}):
        w = fit(arrays([it for it in tune if it["corpus"] != c], FEATURES), len(FEATURES), a.l2)
        test = arrays([it for it in items if it["corpus"] == c], FEATURES)
        row = [
            len(test),
            chosen_holds(test, today) * len(test),
            chosen_holds(test, w) * len(test),
            sum(float(y.max()) for _, y in test),
        ]
        totals += row
        held[c] = {
            "n": len(test),
            "best_unit": round(row[1] / len(test), 3),
            "fitted": round(row[2] / len(test), 3),
            "any_passage": round(row[3] / len(test), 3),
        }
    w = fit(arrays(tune, FEATURES), len(FEATURES), a.l2)
    n = totals[0]
    print(
        json.dumps(
            {
                "held_out": held,
                "all_held_out": {
                    "n": int(n),
                    "best_unit": round(totals[1] / n, 3),
                    "fitted": round(totals[2] / n, 3),
                    "any_passage": round(totals[3] / n, 3),
                },
                "weights": {f: round(float(v), 3) for f, v in zip(FEATURES, w, strict=True)},
                "tuned_on": len(tune),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""Fit `rag.outcome.WEIGHTS` and `ANSWERED_AT` on labelled questions, leave-one-corpus-out.

Input: the runs `kebab eval QUESTIONS --answers --out RUN` wrote (answer rows carry the
features `rag.outcome` weighs and the text the extractive answerer quoted) and the question
files. A question is positive when the quoted text states every key fact (`must_contain`) of an
answerable question; negative when it does not, or when the notes hold no answer.

Each corpus is held out in turn: weights and threshold are fitted on the others (the threshold:
the lowest whose `answered` precision on the training corpora reaches `--precision`), then the
held-out corpus is scored. Prints one JSON object: per held-out corpus, its precision, coverage
and unanswerables answered; the risk-coverage table over all questions (each scored by the fit
that did not see its corpus); and the weights fitted on every corpus, to paste into outcome.py.

Usage: python bench/fit_outcome.py RUN.jsonl... --questions Q.jsonl... [--precision 0.75]
       [--unanswered 0.15]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

FEATURES = [
    "cosine",
    "cover",
    "absent",
    "margin",
    "complete",
    "asks_shape",
    "shape",
    "names_missing",
    "fix",
    "other_language",
    "block",
    "lead",
]


def load(runs: list[str], question_files: list[str]) -> list[dict[str, Any]]:
    questions: dict[str, dict[str, Any]] = {}
    for path in question_files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                questions[q["id"]] = q
    out = []
    for path in runs:
        for line in Path(path).read_text(encoding="utf-8").splitlines()[1:]:
            row = json.loads(line)
            if row.get("mode") != "answer" or row["id"] not in questions:
                continue
            q = questions[row["id"]]
            quoted = str(row.get("quoted") or "").lower()
            facts = q.get("must_contain") or []
            row["positive"] = (
                bool(q.get("gold")) and bool(facts) and all(f.lower() in quoted for f in facts)
            )
            row["has_facts"] = bool(facts) or not q.get("gold")
            out.append(row)
    return out


def matrix(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array(
        [[float((r.get("features") or {}).get(f, 0.0)) for f in FEATURES] for r in rows]
    )


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 3000) -> np.ndarray:
    """Logistic regression by gradient descent (bias last), L2 on the weights."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    pos = max(y.mean(), 1e-3)
    weight = np.where(y == 1, 0.5 / pos, 0.5 / max(1 - pos, 1e-3))  # balanced classes
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ ((p - y) * weight) / len(y)
        grad[:-1] += l2 * w[:-1] / len(y)
        w -= 0.5 * grad
    return w


def score(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))


def threshold_for(
    p: np.ndarray, rows: list[dict[str, Any]], precision: float, unanswered: float = 1.0
) -> float:
    """The lowest threshold at which `answered` (p >= t) reaches `precision` on `rows` and
    answers at most `unanswered` of the questions the notes cannot answer."""
    una = [v for r, v in zip(rows, p, strict=True) if not r["answerable"]]
    for t in np.arange(0.05, 0.96, 0.01):
        sel = [r for r, v in zip(rows, p, strict=True) if v >= t and r["answerable"]]
        wrong = sum(v >= t for v in una) / len(una) if una else 0.0
        if sel and sum(r["positive"] for r in sel) / len(sel) >= precision and wrong <= unanswered:
            return float(round(t, 2))
    return 0.95


def figures(p: np.ndarray, rows: list[dict[str, Any]], t: float) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    got = {id(r): v >= t for r, v in zip(rows, p, strict=True)}
    answered = [r for r in ans if got[id(r)]]

    def rate(items: list[dict[str, Any]], n: int) -> float | None:
        return round(n / len(items), 3) if items else None

    return {
        "n": len(rows),
        "precision": rate(answered, sum(r["positive"] for r in answered)),
        "coverage": rate(ans, len(answered)),
        "unanswerable_answered": rate(una, sum(got[id(r)] for r in una)),
        "near_miss_answered": rate(
            [r for r in una if r.get("near_miss")],
            sum(got[id(r)] for r in una if r.get("near_miss")),
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--questions", nargs="+", required=True)
    ap.add_argument("--precision", type=float, default=0.75)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--unanswered", type=float, default=1.0, help="most unanswerables answered")
    a = ap.parse_args()
    # only rows the answerer quoted for (gate-settled ones have no features to weigh)
    rows = [r for r in load(a.runs, a.questions) if r.get("features") and r["has_facts"]]
    corpora = sorted({r["corpus"] for r in rows})
    held: dict[str, Any] = {}
    loco = np.zeros(len(rows))
    for c in corpora:
        train = [r for r in rows if r["corpus"] != c]
        test_i = [i for i, r in enumerate(rows) if r["corpus"] == c]
        w = fit(matrix(train), np.array([float(r["positive"]) for r in train]), a.l2)
        t = threshold_for(score(w, matrix(train)), train, a.precision, a.unanswered)
        p = score(w, matrix([rows[i] for i in test_i]))
        for i, v in zip(test_i, p, strict=True):
            loco[i] = v - t + 0.5  # centred on its own fit's threshold
        held[c] = {"threshold": t, **figures(p, [rows[i] for i in test_i], t)}
    w = fit(matrix(rows), np.array([float(r["positive"]) for r in rows]), a.l2)
    t_all = threshold_for(score(w, matrix(rows)), rows, a.precision, a.unanswered)
    risk = [
        {"threshold": round(float(t), 2), **figures(loco, rows, float(t))}
        for t in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
    ]
    print(
        json.dumps(
            {
                "held_out": held,
                "risk_coverage_loco": risk,
                "weights": {f: round(float(v), 3) for f, v in zip(FEATURES, w, strict=False)}
                | {"bias": round(float(w[-1]), 3)},
                "answered_at": t_all,
                "all_fitted": figures(score(w, matrix(rows)), rows, t_all),
                "n": len(rows),
                "positives": int(sum(r["positive"] for r in rows)),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

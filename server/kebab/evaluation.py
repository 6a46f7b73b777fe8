"""`kebab eval`: retrieval (and answer) quality on labelled questions, reproducible run to run.

Questions are split into dev and test by a hash of their id (`split_of`): tune on dev, trust
only what test confirms. Every summary reports both side by side, per corpus, kind and language.

A hit counts for a gold section when it is the same file and either the gold heading is on the
chunk's heading path or their line spans overlap. Misses are split into "not in the top 50" (a
recall problem) and "in the top 50 but below k" (a ranking problem).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from kebab.errors import KebabError
from kebab.excerpts import excerpt
from kebab.index import versions
from kebab.model import Answer, Citation, Hit, citation_range, to_builtins

DEEP = 50


class Gold(msgspec.Struct):
    path: str
    heading: str = ""
    lines: list[int] = []


class Question(msgspec.Struct):
    id: str
    question: str
    gold: list[Gold] = []
    must_contain: list[str] = []
    kind: str = ""
    lang: str = ""
    corpus: str = ""
    near_miss: bool = False  # unanswerable: the notes cover the topic, not the thing asked


def split_of(qid: str) -> str:
    """`dev` or `test`, fixed by the id alone (about half each), so no one picks the split."""
    return "dev" if hashlib.sha256(qid.encode()).digest()[0] % 2 == 0 else "test"


GROUPS = ("split", "corpus", "kind", "lang")


def group_summaries(
    rows: list[dict[str, Any]], summarise_rows: Callable[[list[dict[str, Any]]], dict[str, Any]]
) -> dict[str, Any]:
    """`all`, then every value of every group field, then each group within dev and test."""
    out: dict[str, Any] = {"all": summarise_rows(rows)}
    for field in GROUPS:
        for value in sorted({str(r.get(field)) for r in rows}):
            out[f"{field}={value}"] = summarise_rows(
                [r for r in rows if str(r.get(field)) == value]
            )
    for split in ("dev", "test"):
        for field in GROUPS[1:]:
            for value in sorted({str(r.get(field)) for r in rows}):
                group = [r for r in rows if r["split"] == split and str(r.get(field)) == value]
                if group:
                    out[f"{split}:{field}={value}"] = summarise_rows(group)
    return out


def load_questions(path: str | Path) -> list[Question]:
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(msgspec.json.decode(line, type=Question))
            except msgspec.DecodeError as e:
                raise KebabError(f"{path}:{n}: {e}") from None
    return out


def _norm(heading: str) -> str:
    return re.sub(r"[`*_\s]+", " ", heading).strip().lower()


def matches(hit: Hit | Citation, gold: Gold) -> bool:
    """A retrieved or cited passage hits a gold section: same file, and its heading or lines."""
    if hit.path != gold.path:
        return False
    if gold.heading and _norm(gold.heading) in {_norm(h) for h in hit.heading_path}:
        return True
    if len(gold.lines) == 2:
        return hit.start_line <= gold.lines[1] and gold.lines[0] <= hit.end_line
    return False


def retrieval_metrics(q: Question, hits: list[Hit], k: int) -> dict[str, Any]:
    """Per-question metrics over a ranked list (searched at depth DEEP)."""
    first: list[int | None] = []  # 1-based rank of each gold's first hit
    for g in q.gold:
        first.append(next((i + 1 for i, h in enumerate(hits) if matches(h, g)), None))
    ranks = [r for r in first if r is not None]
    best = min(ranks) if ranks else None
    m: dict[str, Any] = {f"hit@{n}": float(best is not None and best <= n) for n in (1, 3, 5, 10)}
    m[f"recall@{k}"] = sum(1 for r in first if r is not None and r <= k) / len(first)
    m["mrr"] = 1.0 / best if best else 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 10)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(first), 10)))
    m["ndcg@10"] = dcg / idcg if idcg else 0.0
    m[f"all@{k}"] = float(all(r is not None and r <= k for r in first))
    m["miss"] = (
        "found"
        if best is not None and best <= k
        else "ranked_below_k"
        if best is not None
        else "not_in_top_50"
    )
    m["gold_ranks"] = first
    return m


def summarise(rows: list[dict[str, Any]], keys: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for key in keys:
        vals = [r[key] for r in rows if isinstance(r.get(key), int | float)]
        if vals:
            out[key] = round(statistics.fmean(vals), 4)
    misses = [r.get("miss") for r in rows]
    out["ranked_below_k"] = misses.count("ranked_below_k")
    out["not_in_top_50"] = misses.count("not_in_top_50")
    return out


SearchFn = Callable[[Question, str, int], list[Hit]]


def run_retrieval(
    questions: list[Question], search: SearchFn, modes: list[str], k: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Search every answerable question in every mode; per-question rows and a summary."""
    rows: list[dict[str, Any]] = []
    keys = ["hit@1", "hit@3", "hit@5", "hit@10", f"recall@{k}", "mrr", "ndcg@10", f"all@{k}"]
    summary: dict[str, Any] = {}
    for mode in modes:
        mode_rows = []
        for q in questions:
            if not q.gold:
                continue
            started = time.perf_counter()
            hits = search(q, mode, DEEP)
            ms = (time.perf_counter() - started) * 1000
            m = retrieval_metrics(q, hits, k)
            row = {
                "id": q.id,
                "mode": mode,
                "split": split_of(q.id),
                "kind": q.kind,
                "lang": q.lang,
                "corpus": q.corpus,
                "ms": round(ms, 2),
                **m,
                "hits": [
                    {
                        "path": h.path,
                        "heading_path": h.heading_path,
                        "lines": [h.start_line, h.end_line],
                        "score": h.score,
                    }
                    for h in hits[:k]
                ],
            }
            mode_rows.append(row)
        rows += mode_rows
        summary[mode] = group_summaries(mode_rows, lambda rs: summarise(rs, keys))
    return rows, summary


AskFn = Callable[[Question], Awaitable[Answer]]


async def run_answers(
    questions: list[Question], ask: AskFn
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Answer every question: grounded / refusal / right-section / key-fact rates and latency."""
    rows: list[dict[str, Any]] = []
    for q in questions:
        t = time.perf_counter()
        a = await ask(q)
        ms = (time.perf_counter() - t) * 1000
        valid = [any(matches(c, g) for g in q.gold) for c in a.citations]
        text = a.answer.lower()
        listed = [(c.excerpt or "").lower() for c in a.candidates]
        rows.append(
            {
                "id": q.id,
                "mode": "answer",
                "split": split_of(q.id),
                "kind": q.kind,
                "lang": q.lang,
                "corpus": q.corpus,
                "answerable": bool(q.gold),
                "grounded": a.grounded,
                "refusal_reason": a.refusal_reason,
                "outcome": a.outcome,
                "near_miss": q.near_miss,
                # what `rag.outcome` weighed (explain): for the risk-coverage table and fitting
                **_outcome_figures(a),
                "ms": round(ms, 1),
                "citation_valid": (all(valid) if valid else None),
                "cites_gold": any(valid) if a.grounded and q.gold else None,
                "must_contain": (
                    all(s.lower() in text for s in q.must_contain)
                    if q.must_contain and a.grounded
                    else None
                ),
                "has_facts": bool(q.must_contain),
                # a refused answerable question still points at the right place when a gold
                # passage is among the nearest passages listed with the refusal
                "nearest_gold": (
                    any(matches(c, g) for c in a.candidates for g in q.gold)
                    if q.gold and not a.grounded
                    else None
                ),
                # ... and what a person reads of it: every key fact in a listed excerpt
                "nearest_facts": (
                    all(any(f in e for e in listed) for f in map(_as_shown, q.must_contain))
                    if q.gold and q.must_contain and not a.grounded
                    else None
                ),
                "made_up_value": made_up_values(a) if a.grounded else None,
                **by_markers_alone(a, q),
                "by_kebab": sum(1 for c in a.citations if c.by == "kebab"),
                "answer": a.answer,
            }
        )
    return rows, group_summaries(rows, summarise_answers)


def _as_shown(fact: str) -> str:
    """A key fact as an excerpt shows it (`16` without its backticks, a list item without its
    number), lower-cased: excerpts are plain text."""
    return (excerpt(fact, len(fact) + 1) or fact).lower()


def _outcome_figures(a: Answer) -> dict[str, Any]:
    said = (a.explain or {}).get("outcome")
    if not isinstance(said, dict):
        return {}
    return {
        "confidence": said.get("confidence"),
        "part_confidence": said.get("part_confidence"),
        "features": said.get("features"),
        "quoted": said.get("quoted"),
    }


def by_markers_alone(a: Answer, q: Question) -> dict[str, Any]:
    """The same answer judged on the model's own `[#n]` markers alone (before kebab attributed
    anything; from `explain`, so one run measures both): grounded, correct, made-up values."""
    said = (a.explain or {}).get("model_citations")
    if not isinstance(said, dict):
        return {}
    packed = {p["marker"]: p for p in (a.explain or {}).get("packed", [])}
    cited = [
        Citation(
            m,
            packed[m]["path"],
            "",
            packed[m]["heading_path"],
            citation_range(1, 1),
            "",
            "",
            0.0,
            packed[m]["text"],
            packed[m]["start_line"],
            packed[m]["end_line"],
        )
        for m in said["markers"]
        if m in packed
    ]
    grounded = bool(said["grounded"])
    text = str(said["text"])
    return {
        "strict_grounded": grounded,
        "strict_cites_gold": grounded and any(matches(c, g) for c in cited for g in q.gold),
        "strict_must_contain": grounded and all(s.lower() in text.lower() for s in q.must_contain),
        "strict_made_up_value": grounded and bool(_unheld_numbers(text, cited)),
    }


def made_up_values(a: Answer) -> list[str]:
    """Numbers a grounded answer states that none of its cited passages holds (digits
    compared without leading zeros: 02:30 and 2:30 agree): judged on the citations' text
    alone, apart from how kebab judged the answer."""
    return _unheld_numbers(a.answer, a.citations)


def _unheld_numbers(answer: str, citations: list[Citation]) -> list[str]:
    cited = {n.lstrip("0") or "0" for c in citations for n in re.findall(r"\d+", c.text)}
    said = re.findall(r"\d+", re.sub(r"\[#\d+\]", "", answer))
    return [n for n in dict.fromkeys(said) if (n.lstrip("0") or "0") not in cited]


def summarise_answers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]

    def rate(items: list[dict[str, Any]], pred: Callable[[dict[str, Any]], bool]) -> float | None:
        return round(sum(map(pred, items)) / len(items), 4) if items else None

    ms = sorted(r["ms"] for r in rows)
    answered = [r for r in answerable if r.get("outcome") == "answered"]
    closest = [r for r in answerable if r.get("outcome") == "closest"]
    return {
        "n": len(rows),
        # the three outcomes (issue 26): precision and coverage of `answered`, and the rest
        "answered_precision": rate(
            [r for r in answered if r["has_facts"]], lambda r: bool(r["must_contain"])
        ),
        "coverage": rate(answerable, lambda r: r.get("outcome") == "answered"),
        "answerable_closest": rate(answerable, lambda r: r.get("outcome") == "closest"),
        "answerable_not_answered": rate(answerable, lambda r: r.get("outcome") == "not_answered"),
        "unanswerable_answered": rate(unanswerable, lambda r: r.get("outcome") == "answered"),
        "near_miss_answered": rate(
            [r for r in unanswerable if r.get("near_miss")],
            lambda r: r.get("outcome") == "answered",
        ),
        "closest_shows_gold": rate(closest, lambda r: bool(r["nearest_gold"])),
        "closest_facts_shown": rate(
            [r for r in closest if r["has_facts"]], lambda r: bool(r.get("nearest_facts"))
        ),
        "grounded_rate": rate(answerable, lambda r: r["grounded"]),
        "false_refusal_rate": rate(answerable, lambda r: not r["grounded"]),
        "refusal_rate_unanswerable": rate(unanswerable, lambda r: not r["grounded"]),
        "cites_gold_rate": rate(answerable, lambda r: bool(r["cites_gold"])),
        "citation_validity": rate(
            [r for r in answerable if r["citation_valid"] is not None],
            lambda r: r["citation_valid"],
        ),
        "key_fact_rate": rate(
            [r for r in answerable if r["has_facts"]], lambda r: bool(r["must_contain"])
        ),
        "refused_shows_gold": rate(
            [r for r in answerable if r.get("nearest_gold") is not None],
            lambda r: bool(r["nearest_gold"]),
        ),
        # grounded, its key facts stated, and a cited passage on gold
        "grounded_correct_rate": rate(
            [r for r in answerable if r["has_facts"]],
            lambda r: bool(r["grounded"] and r["must_contain"] and r["cites_gold"]),
        ),
        # grounded although it states a number none of its cited passages holds
        "false_grounding_rate": rate(rows, lambda r: bool(r.get("made_up_value"))),
        # the same two on the model's own markers alone (before kebab attributed anything)
        "strict_grounded_correct_rate": rate(
            [r for r in answerable if r["has_facts"] and "strict_grounded" in r],
            lambda r: bool(r["strict_must_contain"] and r["strict_cites_gold"]),
        ),
        "strict_false_grounding_rate": rate(
            [r for r in rows if "strict_grounded" in r], lambda r: r["strict_made_up_value"]
        ),
        "latency_ms_p50": round(statistics.median(ms), 1) if ms else None,
        "latency_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 1) if ms else None,
    }


def run_info(settings: dict[str, Any], embedder: Any = None) -> dict[str, Any]:
    """Versions, settings and the commit, so two runs can be told apart."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {"versions": versions(embedder), "settings": settings, "commit": commit}


def write_run(path: str | Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"summary": summary}, ensure_ascii=False) + "\n")
        for row in rows:
            f.write(json.dumps(to_builtins(row), ensure_ascii=False) + "\n")


def compare(a_path: str | Path, b_path: str | Path) -> dict[str, Any]:
    """Metric deltas B − A, and each question labelled better / same / regressed (by MRR)."""
    a_sum, a_rows = _read_run(a_path)
    b_sum, b_rows = _read_run(b_path)
    deltas: dict[str, Any] = {}
    for mode, groups in b_sum.items():
        if not isinstance(groups, dict) or mode not in a_sum:
            continue
        base = a_sum[mode].get("all", {})
        new = groups.get("all", {})
        deltas[mode] = {
            k: round(new[k] - base[k], 4)
            for k in new
            if isinstance(new.get(k), int | float) and isinstance(base.get(k), int | float)
        }
    labels: dict[str, str] = {}
    for key, row in b_rows.items():
        old = a_rows.get(key)
        if old is None:
            continue
        diff = row.get("mrr", 0) - old.get("mrr", 0)
        labels[f"{key[0]}/{key[1]}"] = (
            "better" if diff > 1e-9 else "regressed" if diff < -1e-9 else "same"
        )
    return {
        "deltas": deltas,
        "questions": labels,
        "counts": {
            lab: list(labels.values()).count(lab) for lab in ("better", "same", "regressed")
        },
    }


def _read_run(path: str | Path) -> tuple[dict[str, Any], dict[tuple[str, str], dict[str, Any]]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        raise KebabError(f"{path} is empty")
    summary = json.loads(lines[0]).get("summary", {})
    retrieval = summary.get("retrieval", summary)
    rows = {}
    for line in lines[1:]:
        row = json.loads(line)
        rows[(row["id"], row.get("mode", ""))] = row
    return retrieval, rows

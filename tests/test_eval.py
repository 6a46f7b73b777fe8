"""`kebab eval`: the metrics a reader trusts, reproducible run to run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kebab.evaluation import Gold, Question, matches, retrieval_metrics, split_of
from kebab.model import Hit

REPO = Path(__file__).resolve().parent.parent


def _hit(path: str, heading: list[str], start: int, end: int) -> Hit:
    return Hit("id", path, heading, start, end, "", "h", 1.0)


def kebab_eval(*args: str | Path, timeout: int = 300) -> str:
    """`kebab eval ARGS` in a fresh process; its stdout (it must exit 0)."""
    return subprocess.run(
        [sys.executable, "-m", "kebab.cli", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    ).stdout


def eval_fixture(workspace: Path, index_dir: Path, out: Path, *flags: str) -> str:
    """`kebab eval` of fixtures/questions.jsonl over `workspace`, writing its run to `out`."""
    questions = REPO / "fixtures/questions.jsonl"
    return kebab_eval(
        questions, "--root", workspace, "--index-dir", index_dir, *flags, "--out", out, "--json"
    )


def test_a_hit_counts_by_heading_or_by_overlapping_lines() -> None:
    gold = Gold(path="a.md", heading="Use `CORSMiddleware`", lines=[10, 12])
    assert matches(_hit("a.md", ["CORS", "Use `CORSMiddleware`"], 30, 40), gold)
    assert matches(_hit("a.md", ["Other"], 11, 20), gold)
    assert not matches(_hit("a.md", ["Other"], 13, 20), gold)
    assert not matches(_hit("b.md", ["Use `CORSMiddleware`"], 10, 12), gold)


def test_metrics_split_misses_into_recall_and_ranking_problems() -> None:
    q = Question(id="q", question="?", gold=[Gold("a.md", "A", [1, 2])])
    below = [_hit(f"x{i}.md", ["X"], 1, 2) for i in range(7)] + [_hit("a.md", ["A"], 1, 2)]
    m = retrieval_metrics(q, below, 5)
    assert m["miss"] == "ranked_below_k" and m["gold_ranks"] == [8]
    assert m["mrr"] == 1 / 8 and m["hit@10"] == 1.0 and m["hit@5"] == 0.0
    m = retrieval_metrics(q, below[:7], 5)
    assert m["miss"] == "not_in_top_50" and m["mrr"] == 0.0


def test_two_eval_runs_give_the_same_metrics_and_compare_as_same(
    tmp_path: Path, fixture_workspace: Path
) -> None:
    runs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.jsonl"
        stdout = eval_fixture(fixture_workspace, tmp_path / "idx", out, "--all-modes")
        summary = json.loads(stdout)
        runs.append(summary["retrieval"])
        assert out.is_file()
    assert runs[0] == runs[1]
    hybrid = runs[0]["hybrid"]["all"]
    assert hybrid["n"] >= 15 and 0.0 < hybrid["mrr"] <= 1.0
    assert set(runs[0]) == {"lexical", "vector", "hybrid"}
    stdout = kebab_eval("--compare", tmp_path / "a.jsonl", tmp_path / "b.jsonl", timeout=60)
    result = json.loads(stdout)
    assert result["counts"]["regressed"] == 0 and result["counts"]["better"] == 0
    assert result["counts"]["same"] > 0
    assert all(v == 0 for v in result["deltas"]["hybrid"].values())


def test_eval_answers_reports_dev_and_test_side_by_side(
    tmp_path: Path, fixture_workspace: Path
) -> None:
    """The split is fixed by each question's id; both halves are in every summary."""
    out = tmp_path / "run.jsonl"
    stdout = eval_fixture(fixture_workspace, tmp_path / "idx", out, "--answers")
    result = json.loads(stdout)
    answers, retrieval = result["answers"], result["retrieval"]["hybrid"]
    assert {"split=dev", "split=test", "all"} <= set(answers) & set(retrieval)
    assert answers["split=dev"]["n"] + answers["split=test"]["n"] == answers["all"]["n"] == 31
    for key in ("grounded_rate", "refusal_rate_unanswerable", "cites_gold_rate", "key_fact_rate"):
        assert 0.0 <= answers["all"][key] <= 1.0, key
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    answered = [r for r in rows if r["mode"] == "answer"]
    assert len(answered) == 31 and {r["split"] for r in answered} == {"dev", "test"}
    assert all(split_of(r["id"]) == r["split"] for r in rows)
    # what a person reads under a refusal or `closest`: judged only where no answer was given
    assert all(r["nearest_facts"] is None for r in answered if r["grounded"])
    unsure = [r for r in answered if r["answerable"] and r["has_facts"] and not r["grounded"]]
    assert all(isinstance(r["nearest_facts"], bool) for r in unsure)
    assert "closest_facts_shown" in answers["all"]


def test_every_labelled_question_has_an_id_of_its_own() -> None:
    """Runs are compared and fitted by question id (`--compare`, `bench/fit_outcome.py` reads
    every set at once): set H's obsidian-tasks questions had taken set v2's ids, so one set's
    answers were scored against the other's key facts."""
    seen: dict[str, str] = {}
    for path in sorted((REPO / "fixtures" / "eval").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                qid = json.loads(line)["id"]
                assert qid not in seen, f"{qid} is in {seen.get(qid)} and {path.name}"
                seen[qid] = path.name

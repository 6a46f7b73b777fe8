"""`kebab index` and `kebab search` from a terminal: exit codes, JSON on stdout, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_MAIN = "import sys; from kebab.cli import main; sys.exit(main())"


def kebab(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `kebab` command line in a fresh process, as a shell would (`env`: more
    environment variables)."""
    return subprocess.run(
        [sys.executable, "-c", _MAIN, *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )


@pytest.fixture
def vault(notes, write_note) -> Path:
    write_note(notes, "ops/backup.md", "# Backups\n\nThe nightly backup runs at 02:30.\n")
    write_note(notes, "ops/nginx.md", "# Nginx\n\nnginx listens on port 8443.\n\n## TLS\n\ncerts\n")
    write_note(notes, "한국어 메모.md", "# 메모\n\n배포는 금요일에 하지 않는다.\n")
    write_note(notes, "broken.md", b"\x00\x01binary")
    return notes


def test_index_json_prints_a_summary_with_file_and_chunk_counts(vault, tmp_path):
    index_dir = tmp_path / "idx"
    run = kebab("index", vault, "--index-dir", index_dir, "--json")
    assert run.returncode == 0, run.stderr
    [line] = run.stdout.splitlines()
    summary = json.loads(line)
    assert (summary["files"], summary["chunks"], summary["added"]) == (3, 4, 3)
    assert summary["embedded"] == 4 and summary["pending_vectors"] == 0
    assert summary["index_dir"] == str(index_dir)
    assert [s["path"] for s in summary["skipped"]] == ["broken.md"]
    assert (index_dir / "kebab.sqlite").is_file()

    again = json.loads(kebab("index", vault, "--index-dir", index_dir, "--json").stdout)
    assert (again["unchanged"], again["added"], again["updated"], again["embedded"]) == (3, 0, 0, 0)


def test_index_without_json_prints_a_readable_summary(vault, tmp_path):
    run = kebab("index", vault, "--index-dir", tmp_path / "idx")
    assert run.returncode == 0, run.stderr
    assert "3 notes, 4 chunks" in run.stdout
    assert "skipped broken.md" in run.stdout


def test_search_json_prints_the_hits(vault, tmp_path):
    run = kebab(
        "search",
        "when does the nightly backup run",
        "--root",
        vault,
        "--index-dir",
        tmp_path / "idx",
        "--json",
        "-k",
        "2",
    )
    assert run.returncode == 0, run.stderr
    hits = json.loads(run.stdout)["hits"]
    assert len(hits) == 2
    top = hits[0]
    assert top["path"] == "ops/backup.md"
    assert top["heading_path"] == ["Backups"]
    assert (top["start_line"], top["end_line"]) == (1, 3)
    assert "02:30" in top["text"]
    assert 0 < top["score"] <= 1


def test_search_with_filters_and_a_mode(vault, tmp_path):
    run = kebab(
        "search",
        "port",
        "--root",
        vault,
        "--index-dir",
        tmp_path / "idx",
        "--json",
        "--mode",
        "lexical",
        "--path-glob",
        "ops/**",
    )
    assert run.returncode == 0, run.stderr
    hits = json.loads(run.stdout)["hits"]
    assert [h["path"] for h in hits] == ["ops/nginx.md"]
    assert hits[0]["lexical_score"] > 0 and hits[0]["vector_score"] is None


def test_search_queries_file_prints_one_json_line_per_query_with_its_id(vault, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "q-backup", "question": "nightly backup time"}\n'
        "\n"
        '{"id": 7, "question": "배포는 언제 안 하나요?"}\n'
        '{"question": "nginx port"}\n',
        encoding="utf-8",
    )
    run = kebab("search", "--queries", queries, "--root", vault, "--index-dir", tmp_path / "idx")
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["q-backup", 7, 4]  # no id: the line number
    assert rows[0]["hits"][0]["path"] == "ops/backup.md"
    assert rows[1]["hits"][0]["path"] == "한국어 메모.md"
    assert rows[2]["hits"][0]["path"] == "ops/nginx.md"


def test_ask_queries_file_echoes_the_callers_ids_and_names_the_stored_answer(vault, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "q-backup", "question": "When does the nightly backup run?"}\n'
        '{"id": "q-port", "question": "Which port does nginx listen on?"}\n',
        encoding="utf-8",
    )
    run = kebab("ask", "--queries", queries, "--root", vault, "--index-dir", tmp_path / "idx")
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["q-backup", "q-port"]  # joinable to the questions
    assert all(isinstance(r["answer_id"], int) for r in rows)
    assert rows[0]["answer_id"] != rows[1]["answer_id"]
    assert "02:30" in rows[0]["answer"] and "8443" in rows[1]["answer"]


def test_a_question_too_long_in_a_queries_file_is_named_by_its_id(vault, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "q-backup", "question": "When does the nightly backup run?"}\n'
        + json.dumps({"id": "q-log", "question": "Why? " + "x" * 30_000})
        + "\n",
        encoding="utf-8",
    )
    run = kebab("ask", "--queries", queries, "--root", vault, "--index-dir", tmp_path / "idx")
    assert run.returncode != 0
    assert [json.loads(line)["id"] for line in run.stdout.splitlines()] == ["q-backup"]
    assert "question q-log: the question is 30,005 characters" in run.stderr, run.stderr


def _one_line_error(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode != 0
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


def test_a_missing_root_exits_non_zero_with_one_line_on_stderr(tmp_path):
    missing = tmp_path / "no-such-vault"
    line = _one_line_error(kebab("index", missing, "--index-dir", tmp_path / "idx", "--json"))
    assert str(missing) in line
    line = _one_line_error(kebab("search", "x", "--root", missing, "--index-dir", tmp_path / "i2"))
    assert str(missing) in line
    assert not (tmp_path / "idx").exists()


def test_a_bad_queries_file_exits_non_zero_with_one_line_naming_the_line(vault, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"question": "ok"}\nnot json\n', encoding="utf-8")
    run = kebab("search", "--queries", queries, "--root", vault, "--index-dir", tmp_path / "idx")
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert f"{queries}:2" in run.stderr.strip().splitlines()[-1]


def test_an_api_key_in_a_kebab_variable_says_what_to_do_and_stops_nothing(vault, tmp_path):
    secret = "sk-test-0123456789abcdef"
    env = {"KEBAB_LLM_API_KEY": secret, "KEBAB_SEARCH_KAY": "3"}
    run = kebab("status", "--root", vault, "--index-dir", tmp_path / "idx", env=env)
    assert run.returncode == 0, run.stderr
    assert "KEBAB_LLM_API_KEY is not a kebab setting" in run.stderr
    assert "llm.api_key_env" in run.stderr and "OPENAI_API_KEY" in run.stderr
    assert "KEBAB_SEARCH_KAY is not a kebab setting" in run.stderr and "k, " in run.stderr
    assert secret not in run.stderr + run.stdout  # the key itself is never printed


def test_bad_request_values_are_one_line_errors_naming_the_field(vault, tmp_path):
    index = tmp_path / "idx"
    ask = kebab("ask", "when is the backup?", "-k", "-3", "--root", vault, "--index-dir", index)
    assert "`$.k`" in _one_line_error(ask) and ">= 1" in ask.stderr
    search = kebab("search", "backup", "-k", "0", "--root", vault, "--index-dir", index)
    assert "k must be 1..200" in _one_line_error(search)
    blank = kebab("ask", "   ", "--root", vault, "--index-dir", index)
    assert "blank" in _one_line_error(blank)

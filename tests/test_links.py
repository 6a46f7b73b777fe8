"""Links between notes as Obsidian reads them (issue 29, item 2): `kebab links PATH` lists a
note's links and its backlinks, read from the notes on disk with no index needed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kebab.links import links_in, resolver
from kebab.model import AskRequest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora"
NOTES = [
    "Getting Started/Installation.md",
    "Queries/Sorting.md",
    "Queries/Grouping.md",
    "archive/Sorting.md",
    "ops/backup plan.md",
]


def test_wikilinks_resolve_by_name_in_the_linking_notes_folder_first() -> None:
    resolve = resolver(NOTES)
    assert resolve("Queries/Grouping.md", "sorting") == "Queries/Sorting.md"  # its own folder
    assert resolve("index.md", "Sorting") == "Queries/Sorting.md"  # else the shortest path
    assert resolve("index.md", "archive/Sorting") == "archive/Sorting.md"  # a partial path
    assert resolve("index.md", "installation.md") == "Getting Started/Installation.md"
    assert resolve("index.md", "Nowhere") is None


def test_every_kind_of_link_is_read_and_code_links_nothing() -> None:
    text = (
        "See [[Installation]], [[Sorting#Sort by due|due dates]] and ![[Grouping#^abc]].\n"
        "A table cell: [[Sorting\\|sort]]. A picture: ![[chart.png]]. [[#Local heading]]\n"
        "[plan](../ops/backup%20plan.md#restore) and [site](https://obsidian.md).\n"
        "[the plan](<../ops/backup plan.md>), as CommonMark writes a target with spaces.\n"
        "`[[Installation]]` is code.\n"
        "```\n[[Grouping]]\n```\n"
    )
    found = links_in("Queries/Index.md", text, resolver([*NOTES, "Queries/Index.md"]))
    got = [(x.line, x.path, x.heading, x.embed) for x in found]
    assert got == [
        (1, "Getting Started/Installation.md", None, False),
        (1, "Queries/Sorting.md", "Sort by due", False),
        (1, "Queries/Grouping.md", "abc", True),
        (2, "Queries/Sorting.md", None, False),
        (2, "Queries/Index.md", "Local heading", False),
        (3, "ops/backup plan.md", "restore", False),
        (4, "ops/backup plan.md", None, False),
    ]


def _kebab_links(root: Path, note: str, tmp_path: Path) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "kebab.cli", "links", note, "--root", str(root), "--json",
         "--index-dir", str(tmp_path / "idx")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(run.stdout)


def _grep_backlinks(root: Path, name: str) -> set[str]:
    """Notes holding `[[name` or a Markdown link ending in `name.md`: what a grep finds."""
    pattern = re.compile(rf"\[\[{re.escape(name)}[\]#|]|\]\([^)]*{re.escape(name)}\.md", re.I)
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.md")
        if ".obsidian" not in p.parts and pattern.search(p.read_text(encoding="utf-8"))
    }


def test_kebab_links_lists_a_fixture_notes_links_and_backlinks(tmp_path: Path) -> None:
    root = ROOT / "fixtures" / "workspace"
    found = _kebab_links(root, "ops/backup.md", tmp_path)
    assert {b["source"] for b in found["backlinks"]} == _grep_backlinks(root, "backup")
    assert all(b["path"] == "ops/backup.md" and b["line"] > 0 for b in found["backlinks"])
    assert [link["path"] for link in found["links"]] == ["ops/postgres.md"]


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora is not beside the checkout")
def test_kebab_links_finds_the_notes_a_grep_of_the_vault_finds(tmp_path: Path) -> None:
    root = CORPORA / "obsidian-tasks"
    found = _kebab_links(root, "Getting Started/Installation.md", tmp_path)
    assert {b["source"] for b in found["backlinks"]} == _grep_backlinks(root, "Installation")
    assert found["backlinks"]


def test_a_note_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "kebab.cli", "links", "nope.md", "--root",
         str(ROOT / "fixtures" / "workspace"), "--index-dir", str(tmp_path / "idx")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode != 0 and "no note 'nope.md'" in run.stderr, run.stderr


async def test_an_embed_is_answered_and_cited_at_its_source(
    fixture_workspace: Path, open_workspace: Any
) -> None:
    """A page that embeds a section (`![[backup#Schedule]]`) holds a link, not a copy: the
    answer quotes the section where it is written and cites that note, never the page."""
    (fixture_workspace / "home" / "dashboard.md").parent.mkdir(exist_ok=True)
    (fixture_workspace / "home" / "dashboard.md").write_text(
        "# Dashboard\n\nThe nightly job:\n\n![[backup#Schedule]]\n\nAnd the proxy: ![[nginx]]\n",
        encoding="utf-8",
    )
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    answer = await ws.ask(AskRequest(question="What time does the nightly backup job run?"))
    assert answer.outcome == "answered" and "02:30" in answer.answer, answer.answer
    assert {c.path for c in answer.citations} == {"ops/backup.md"}
    embeds = [link for link in ws.links("home/dashboard.md")["links"] if link.embed]
    assert [(e.path, e.heading) for e in embeds] == [
        ("ops/backup.md", "Schedule"),
        ("ops/nginx.md", None),
    ]

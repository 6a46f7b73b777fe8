"""Emacs with eglot, the real thing: `emacs --batch` loads Debian's eglot (elpa-eglot 1.9 on
Emacs 28.2) and runs tests/emacs/kebab-eglot-test.el against the real `kebab serve` on a
private copy of fixtures/workspace, its index in tmp. The script does what a person does in
Emacs with the README's configuration (markdown-mode starts eglot, `M-x eglot-code-actions` on
words of several lines, "Answer with kebab", hover, `M-.` into a subfolder, xref-find-apropos,
a diagnostic) and writes what it saw as JSON; the tests below read that. The hover is also
read as eldoc's echo area shows it in an 80x40 terminal (Emacs 28 shows a message taller than
the echo area from its end: one line wider than the terminal hid the hover's header).

The vault is marked the way an Obsidian vault is, by an `.obsidian` folder: no kebab.toml, no
.git, so only the README's root marker keeps a subfolder's note on the same server.

Skipped where there is no `emacs` with eglot (`.ci/run` installs emacs-nox, elpa-eglot and
elpa-markdown-mode from Debian when it can). KBTEST_EMACS names another emacs binary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_editor

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("kebab-eglot-test.el")
FIXTURE = REPO / "fixtures" / "workspace"
KEBAB = Path(sys.executable).with_name("kebab")
TIMEOUT_S = 90
WEEKLY = """# 주간 점검

매주 월요일에 백업 로그를 확인한다.
I check the restic logs every Monday.
매주 백업은 몇 시에 돌아가?

## Notes
"""
# An Obsidian note as people write them: a paragraph per line, lines far wider than a terminal.
GROUPING = """# Grouping

## Custom Groups

To divide the matching tasks up with headings, you can add `group by function` lines to the query, and the groups are sorted by their names, so a function that returns a date string sorts its groups in date order.

The function is written in JavaScript and receives the task as `task`; whatever it returns becomes the group's heading, and a task for which it returns an empty string is put in no group at all.
"""
ECHO_COLUMNS = 79  # an 80-column terminal wraps a longer line (its last column shows `\`)


def cite_grouping(root: Path) -> str:
    """A note citing GROUPING's passage, as Insert writes it: the header its hover shows."""
    from kebab.markdown import parse

    chunk = next(c for c in parse("tasks/grouping.md", GROUPING).chunks if "JavaScript" in c.text)
    title = " › ".join(chunk.heading_path)
    definition = (
        f'[^kb-1]: [{title}](../tasks/grouping.md#custom-groups "kb:{chunk.content_hash[:12]}") '
        f"L{chunk.start_line}–L{chunk.end_line}"
    )
    (root / "tasks").mkdir()
    (root / "tasks" / "grouping.md").write_text(GROUPING, encoding="utf-8")
    (root / "inbox" / "cited.md").write_text(
        f"# Cited\n\nGroups are sorted by their names.[^kb-1]\n\n{definition}\n", "utf-8"
    )
    return f"{title} · tasks/grouping.md lines L{chunk.start_line}–L{chunk.end_line}"


def _emacs_without_eglot() -> tuple[str | None, str]:
    """The emacs binary, and why it cannot run the test ("" when it can)."""
    emacs = os.environ.get("KBTEST_EMACS") or shutil.which("emacs")
    if emacs is None:
        return None, (
            "no emacs on PATH: install Emacs with eglot (Debian: apt-get install emacs-nox "
            "elpa-eglot; .ci/run does this when it runs as root) or set KBTEST_EMACS"
        )
    try:
        probe = subprocess.run(
            [emacs, "--batch", "--eval", "(progn (require 'eglot) (princ emacs-version))"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return emacs, f"{emacs} does not run: {e}"
    if probe.returncode != 0:
        return emacs, (
            f"{emacs} has no eglot (Debian: apt-get install elpa-eglot): "
            f"{probe.stderr.strip().splitlines()[-1:]}"
        )
    return emacs, ""


EMACS, WHY_NOT = _emacs_without_eglot()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "emacs with eglot is there")


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Emacs session through every step; what it saw."""
    tmp = tmp_path_factory.mktemp("emacs")
    root = tmp / "workspace"
    shutil.copytree(FIXTURE, root)
    (root / ".obsidian").mkdir()  # the vault's only root marker
    (root / "inbox" / "weekly.md").write_text(WEEKLY, encoding="utf-8")
    header = cite_grouping(root)
    out = tmp / "out.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KEBAB_") or k == "KEBAB_MODEL_CACHE"
    }
    env.update(
        HOME=str(tmp / "home"),
        XDG_CONFIG_HOME=str(tmp / "xdg" / "config"),
        XDG_CACHE_HOME=str(tmp / "xdg" / "cache"),
        KBTEST_KEBAB=str(KEBAB),
        KBTEST_ROOT=str(root),
        KBTEST_INDEX_DIR=str(tmp / "index"),
        KBTEST_OUT=str(out),
    )
    (tmp / "home").mkdir()
    assert EMACS is not None
    started = time.monotonic()
    output = run_editor([EMACS, "--batch", "-l", str(SCRIPT)], root, env, TIMEOUT_S)
    assert out.exists(), f"emacs wrote nothing {output[-4000:]}"
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["_output"] = output[:9] + output[-4000:]
    result["_seconds"] = time.monotonic() - started
    result["_grouping_header"] = header
    print(f"emacs session: {result['_seconds']:.1f}s, emacs {result.get('emacs_version')}")
    return result


def _show(seen: dict[str, Any]) -> str:
    return json.dumps(seen, indent=1, ensure_ascii=False)[-6000:]


def test_session_ran_every_step(seen: dict[str, Any]) -> None:
    assert "error" not in seen and seen["_output"].startswith("(exit 0)"), _show(seen)
    assert seen["shutdown"] is True
    assert seen["major_mode"] == "markdown-mode"
    assert seen["project_root"] == "./"  # the vault, found by its .obsidian folder
    assert seen["status_state"] == "ready"
    capabilities = seen["capabilities"]
    assert all(v is True for v in capabilities.values()), capabilities


def test_code_action_answers_into_the_note(seen: dict[str, Any]) -> None:
    assert "Answer with kebab" in seen.get("offered_titles", []), _show(seen)
    answer = [a for a in seen["code_actions"] if a["title"] == "Answer with kebab"]
    assert answer == [
        {"title": "Answer with kebab", "kind": "refactor.rewrite", "command": "kebab.insertAnswer"}
    ], seen["code_actions"]
    # Point was on "nightly": eglot sent that word's bounds, and the whole line was asked.
    assert seen["asked"] == "What time does the nightly backup job run?", _show(seen)
    text = seen["buffer_after_answer"]
    assert "02:30" in text, text
    assert seen["reference_line"] and "[^kb-1]" in seen["reference_line"], _show(seen)
    assert seen["definition_line"] and seen["definition_line"].startswith("[^kb-1]: ["), text
    assert "ops/backup.md" in seen["definition_line"], seen["definition_line"]
    # The answer goes under the question, the definitions at the end of the note.
    lines = text.split("\n")
    question = lines.index("What time does the nightly backup job run?")
    assert lines.index(seen["reference_line"]) > question
    assert lines.index(seen["definition_line"]) > lines.index(seen["reference_line"])


def test_eglot_code_actions_on_a_word_asks_its_line_and_only_a_question(
    seen: dict[str, Any],
) -> None:
    offered = {spot: dict(actions or {}) for spot, actions in seen["offered_on_words"].items()}
    assert offered["korean question"] == {"Answer with kebab": "매주 백업은 몇 시에 돌아가?"}
    for spot in ("korean statement", "english statement", "heading", "empty line"):
        assert "Answer with kebab" not in offered[spot], (spot, offered)
    assert "Answer with kebab" not in (seen["offered_at_definition_end"] or {}), _show(seen)


def test_m_dot_into_a_subfolder_stays_on_the_same_server(seen: dict[str, Any]) -> None:
    file, line = seen["jumped_to"]
    assert file == "ops/backup.md" and line > 1, _show(seen)
    assert seen["jumped_project_root"] == "./"
    assert seen["jumped_same_server"] is True and seen["servers_after_jump"] == 1, _show(seen)


def test_hover_on_the_reference_shows_the_cited_passage(seen: dict[str, Any]) -> None:
    assert seen.get("hover_in_eldoc_functions") is True, _show(seen)
    hover = seen.get("eldoc_hover") or ""
    assert "02:30" in hover or "Schedule" in hover, hover
    echo = [line["text"] for line in seen["eldoc_echo_area"]]
    assert echo[0] == "Home server backups › Schedule · ops/backup.md lines L12–L26", echo
    assert "02:30" in "\n".join(echo), echo  # the passage itself, not only its heading


def test_the_echo_area_keeps_the_hovers_header_over_long_lines(seen: dict[str, Any]) -> None:
    """Every line eldoc echoes fits the terminal, so the echo area (which shows a message
    taller than itself from its end) starts with the header: which note, which lines."""
    echo = seen["eldoc_echo_area_long"]
    assert echo and echo[0]["text"] == seen["_grouping_header"], echo
    assert [line for line in echo if line["width"] > ECHO_COLUMNS] == [], echo
    assert "in date order" in " ".join(line["text"] for line in echo), echo  # the passage


def test_definition_opens_the_cited_lines(seen: dict[str, Any]) -> None:
    definitions = seen.get("definitions")
    assert definitions and definitions[0]["file"] == "ops/backup.md", _show(seen)


def test_workspace_symbol_finds_the_passage_by_meaning(seen: dict[str, Any]) -> None:
    symbols = seen.get("symbols") or []
    schedule = [
        s
        for s in symbols
        if s["name"] == "Home server backups › Schedule" and s["container"] == "ops/backup.md"
    ]
    assert schedule, symbols
    # xref-find-apropos lists the same passages, each at its note's first line.
    places = [(a["file"], a["line"]) for a in seen["apropos"]]
    assert ("ops/backup.md", schedule[0]["line"]) in places, seen["apropos"]
    assert len(places) == len(symbols), seen["apropos"]


def test_changed_source_shows_a_diagnostic_in_flymake(seen: dict[str, Any]) -> None:
    diagnostics = seen.get("diagnostics") or []
    assert diagnostics, _show(seen)
    lines = seen["buffer_after_answer"].split("\n")
    definition = lines.index(seen["definition_line"]) + 1
    assert any(d["line"] == definition and "source changed" in d["text"] for d in diagnostics), (
        diagnostics
    )

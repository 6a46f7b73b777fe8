"""Notes as a graph with metadata, as the editors ask it (issue 29): `kebab/links` lists a note's
links and backlinks, `textDocument/references` on a heading finds the links that reach it (on
the title: every link to the note), and `kebab/search` / `kebab/ask` take filters as params or
written at the start of the question, saying so when no note passes them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from lsp_client import KebabClient, serving, until
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOTES = {
    "ops/runbook.md": (
        "---\nstatus: draft\nreviewed: 2024-03-15\n---\n# Runbook\n\n"
        "Before a restore, read [[backup#Restore]] and the [nginx notes](nginx.md).\n\n"
        "The schedule is in [[Backup#Schedule|the backup note]].\n\n![[postgres]]\n"
    ),
    "home/plants.md": "# Plants\n\nWater the fig on Sundays. See [[backup]] for nothing.\n",
}


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=["vscode", "neovim"])
async def editor(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[KebabClient]:
    root = tmp_path_factory.mktemp(request.param)
    async with serving(root, request.param, NOTES) as client:
        await client.wait_ready()
        yield client


def _where(items: list[dict[str, Any]]) -> set[tuple[str, str | None, int]]:
    return {(i["source"], i["heading"], i["line"]) for i in items}


async def test_links_and_backlinks_of_a_note(editor: KebabClient) -> None:
    runbook = (editor.root / "ops/runbook.md").as_uri()
    found = await editor.request("kebab/links", {"uri": runbook})
    assert {(i["path"], i["heading"], i["embed"]) for i in found["links"]} == {
        ("ops/backup.md", "Restore", False),
        ("ops/nginx.md", None, False),
        ("ops/backup.md", "Schedule", False),
        ("ops/postgres.md", None, True),
    }
    backup = (editor.root / "ops/backup.md").as_uri()
    back = await editor.request("kebab/links", {"uri": backup})
    assert {
        ("ops/runbook.md", "Restore", 7),
        ("ops/runbook.md", "Schedule", 9),
        ("home/plants.md", None, 3),
    } <= _where(back["backlinks"])
    assert all(b["uri"] == backup for b in back["backlinks"])
    assert not any(b["source"] == "ops/backup.md" for b in back["backlinks"])


async def test_the_graph_follows_an_edit_and_a_deleted_note(editor: KebabClient) -> None:
    """The link graph lives in the index and is updated with the notes: a link typed into an
    open note is a backlink of its target once the edit is indexed; gone with the note."""
    path = editor.root / "home" / "garden.md"
    path.write_text("# Garden\n\nNothing linked.\n", encoding="utf-8")
    uri = editor.open(path)
    nginx = (editor.root / "ops/nginx.md").as_uri()

    async def garden_links() -> set[int]:
        found = await editor.request("kebab/links", {"uri": nginx})
        return {b["line"] for b in found["backlinks"] if b["source"] == "home/garden.md"}

    editor.replace(uri, "# Garden\n\nNothing linked.\n\nThe proxy: [[nginx#Ports]]\n")
    assert await until(garden_links, "the typed link becoming a backlink") == {5}
    editor.close(uri)
    path.unlink()
    editor.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Deleted)]
        )
    )

    async def gone() -> bool:
        return not await garden_links()

    assert await until(gone, "the deleted note's links going")


async def test_references_on_a_heading_are_the_links_to_that_heading(
    editor: KebabClient,
) -> None:
    path = editor.root / "ops/backup.md"
    uri = editor.open(path)
    lines = path.read_text(encoding="utf-8").split("\n")

    async def refs(line: int) -> set[tuple[str, int]]:
        found = await editor.request(
            types.TEXT_DOCUMENT_REFERENCES,
            types.ReferenceParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=3),
                context=types.ReferenceContext(include_declaration=False),
            ),
        )
        root = editor.root.as_uri() + "/"
        return {(loc.uri.removeprefix(root), loc.range.start.line) for loc in found or []}

    schedule = next(i for i, t in enumerate(lines) if t.startswith("## Schedule"))
    assert await refs(schedule) == {("ops/runbook.md", 8)}  # 0-based: the link on line 9
    title = next(i for i, t in enumerate(lines) if t.startswith("# "))
    every = await editor.request("kebab/links", {"uri": uri})
    assert await refs(title) == {(b["source"], b["line"] - 1) for b in every["backlinks"]}
    assert {("ops/runbook.md", 6), ("ops/runbook.md", 8), ("home/plants.md", 2)} <= await refs(
        title
    )
    body = next(i for i, t in enumerate(lines) if t and not t.startswith(("#", "-")) and i > title)
    assert await refs(body) == set()  # not a heading: nothing to find
    editor.close(uri)


async def test_filters_as_params_and_as_words_in_the_question(editor: KebabClient) -> None:
    found = await editor.request("kebab/search", {"query": "restore", "where": ["status=draft"]})
    assert {h["path"] for h in found["hits"]} == {"ops/runbook.md"}
    written = await editor.request("kebab/search", {"query": "path:home/ water the fig"})
    assert {h["path"] for h in written["hits"]} == {"home/plants.md"}
    asked = await editor.request("kebab/ask", {"question": "#ops when does the backup run?"})
    assert asked["filters"] == "#ops"
    assert all(c["path"].startswith("ops/") for c in asked["citations"] + asked["candidates"])
    with pytest.raises(JsonRpcException, match="no note matches the filter #gardening"):
        await editor.request("kebab/ask", {"question": "when?", "tags": ["gardening"]})


async def _link_action(editor: KebabClient, uri: str, line: int) -> types.CodeAction | None:
    result = await editor.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    found = [a for a in result or [] if isinstance(a, types.CodeAction)]
    return next((a for a in found if a.title == "Link related notes"), None)


@pytest.mark.parametrize(
    ("body", "wiki"),
    [
        ("Restoring one file from the nightly restic snapshots on the NAS.\n", False),
        ("Restoring one file from the nightly restic snapshots. See [[nginx]].\n", True),
    ],
)
async def test_link_related_notes_adds_links_under_the_heading(
    editor: KebabClient, body: str, wiki: bool
) -> None:
    path = editor.root / "home" / "restores.md"
    text = f"# Restores\n\n## One file\n\n{body}\n## Later\n\nNothing yet.\n"
    path.write_text(text, encoding="utf-8")
    uri = editor.open(path, text)
    assert await _link_action(editor, uri, 4) is None  # not on every line of text
    action = await _link_action(editor, uri, 2)
    assert action is not None and action.command is not None
    result = await editor.command(action.command.command, *(action.command.arguments or []))
    assert result["applied"] and result["links"], result
    lines = editor.text(uri).split("\n")
    related = lines[6]
    assert related.startswith("Related: ") and lines[5] == "" and lines[7] == "", lines
    assert lines[8] == "## Later"  # under the heading's own text, before the next section
    assert "restores" not in related.lower()  # never the note itself
    if wiki:
        assert related.count("[[") == len(result["links"]) and "[[nginx" not in related
    else:
        assert related.count("](") == len(result["links"]) and "[[" not in related
        assert "ops/backup.md" in related or "../ops/backup.md" in related
    editor.close(uri)
    path.unlink()


async def test_notes_linked_to_or_from_a_note_join_its_related_passages(
    editor: KebabClient,
) -> None:
    """ops/runbook.md links backup, nginx and postgres: asked for the passages related to its
    first section, those notes are among them, marked linked; an unlinked note is not marked."""
    runbook = (editor.root / "ops/runbook.md").as_uri()
    found = await editor.request(
        "kebab/related", {"uri": runbook, "position": {"line": 5, "character": 0}, "k": 3}
    )
    marked = {h["path"] for h in found["hits"] if h["linked"]}
    assert marked == {"ops/backup.md", "ops/nginx.md", "ops/postgres.md"}, found["hits"]
    assert "ops/runbook.md" not in {h["path"] for h in found["hits"]}


async def test_unresolved_links_are_diagnostics_when_asked_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With `unresolved_links` on, a link that reaches no note is an Information diagnostic on
    its target's words; links that reach a note, or a heading of this one, are not."""
    note = "# Plans\n\nSee [[backup]], [[Nowhere yet]] and [the proxy](../ops/nginx.md).\n"
    note += "Also [[#Plans]] and [gone](../ops/gone.md).\n"
    root = tmp_path_factory.mktemp("unresolved")
    async with serving(root, "vscode", {"home/plans.md": note}, unresolved_links=True) as client:
        await client.wait_ready()
        uri = client.open(client.root / "home" / "plans.md")

        def published() -> list[types.Diagnostic]:
            return [d for d in client.diagnostics.get(uri, []) if d.code == "unresolved-link"]

        found = await until(lambda: len(published()) == 2 and published(), "two link diagnostics")
        said = sorted((d.range.start.line, d.message) for d in found)
        assert said == [
            (2, "no note named 'Nowhere yet': this link reaches nothing"),
            (3, "no note named '../ops/gone.md': this link reaches nothing"),
        ]
        lines = note.split("\n")
        first = next(d for d in found if d.range.start.line == 2)
        assert lines[2][first.range.start.character : first.range.end.character] == "Nowhere yet"
        assert all(d.severity == types.DiagnosticSeverity.Information for d in found)

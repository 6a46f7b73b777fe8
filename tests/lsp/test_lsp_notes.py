"""Answers in notes, as VS Code (UTF-16, versioned edits) drives them: the code action and its
edit, and following a citation (hover, definition, links, diagnostics, the refresh quick fix).
"""

from __future__ import annotations

import re

import pytest
from lsp_client import KebabClient, until
from lsprotocol import types

from kebab import footnotes
from kebab.markdown import content_hash

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "What time does the nightly backup job run?"


def position_of(client: KebabClient, uri: str, needle: str, nth: int = 0) -> types.Position:
    """The client position of the `nth` occurrence of `needle` (characters in client units)."""
    lines = client.text(uri).split("\n")
    seen = 0
    for i, line in enumerate(lines):
        col = line.find(needle)
        while col >= 0:
            if seen == nth:
                units = len(line[:col].encode("utf-16-le")) // 2
                return types.Position(line=i, character=units + 1)
            seen += 1
            col = line.find(needle, col + 1)
    raise AssertionError(f"{needle!r} not in {uri}")


async def cite(client: KebabClient, name: str, query: str, path: str) -> tuple[str, dict]:
    """A note with a hand-written answer citing the top hit for `query` (which must be in `path`)."""
    hit = next(
        h
        for h in (await client.request("kebab/search", {"query": query}))["hits"]
        if h["path"] == path
    )
    assert content_hash(hit["text"]) == hit["content_hash"]  # the hash hover will recompute
    title = " › ".join(hit["heading_path"])
    definition = (
        f'[^kb-1]: [{title}](../{path} "kb:{hit["content_hash"][:12]}") '
        f"L{hit['start_line']}–L{hit['end_line']}"
    )
    text = (
        f"# {name}\n\nAn answer from the notes.[^kb-1] And my own remark.[^1]\n\n"
        f"[^1]: a footnote I wrote myself\n{definition}\n"
    )
    note = client.root / "inbox" / f"{name}.md"
    note.write_text(text, encoding="utf-8")
    return client.open(note), hit


def assert_every_reference_defined(text: str) -> None:
    referenced = set(re.findall(r"\[\^(kb-\d+)\](?!:)", text))
    defined = set(re.findall(r"^\[\^(kb-\d+)\]:", text, re.MULTILINE))
    assert referenced == defined, (referenced, defined)


async def hover_text(client: KebabClient, uri: str, needle: str = "[^kb-1]") -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(client, uri, needle),
        )
    )
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def diagnostics_for(client: KebabClient, uri: str, code: str) -> list[types.Diagnostic]:
    """The `code` diagnostics on `uri`, once they are published."""
    return await until(
        lambda: [d for d in client.diagnostics.get(uri, []) if d.code == code],
        f"a {code!r} diagnostic published on {uri}",
    )


async def code_actions(
    client: KebabClient,
    uri: str,
    line: int,
    character: int = 0,
    diagnostics: list[types.Diagnostic] | None = None,
) -> list[types.CodeAction]:
    pos = types.Position(line=line, character=character)
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(pos, pos),
            context=types.CodeActionContext(diagnostics=diagnostics or []),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


# answering in the note --------------------------------------------------------------------------
NOTE = f"""# Open questions

Things to look up.[^1] Earlier answers live here too.[^kb-2]

{QUESTION}
Is it worth moving Grafana to its own VM?

[^1]: my own footnote, kept as it is
[^kb-2]: [Postgres on nas01](../ops/postgres.md#postgres-on-nas01 "kb:000000000000") L6–L9
"""


async def test_answer_with_kebab_puts_the_answer_under_the_question(vscode: KebabClient) -> None:
    uri = vscode.open(vscode.root / "inbox" / "questions.md", NOTE)
    on_heading = await code_actions(vscode, uri, 0)  # a heading is not a question
    assert [a.title for a in on_heading] == ["Link related notes"]
    actions = await code_actions(vscode, uri, 4, 10)
    assert [(a.title, a.kind) for a in actions] == [("Answer with kebab", "refactor.rewrite")]
    command = actions[0].command
    assert command is not None and list(command.arguments or []) == [uri, 4, QUESTION]

    before = set(vscode.progress_log)
    result = await vscode.command(command.command, *(command.arguments or []))
    assert result["applied"] and result["answer"]["grounded"]
    # the label the panel shows is the one written: after the note's own kb-2
    assert [c["label"] for c in result["answer"]["citations"]] == ["kb-3"]
    lines = vscode.text(uri).split("\n")
    assert lines[4] == QUESTION and lines[5] == ""
    assert "02:30" in lines[6] and "[^kb-3]" in lines[6]
    assert lines[7] == "" and lines[8] == "Is it worth moving Grafana to its own VM?"
    assert "[^1]: my own footnote, kept as it is" in lines
    assert any(line.startswith("[^kb-2]: [Postgres on nas01]") for line in lines)
    new_defs = [
        d
        for d in footnotes.definitions(vscode.text(uri), "inbox/questions.md")
        if d.label == "kb-3"
    ]
    assert new_defs and new_defs[0].path == "ops/backup.md" and len(new_defs[0].content_hash) == 12
    assert vscode.text(uri).endswith("\n") and not vscode.text(uri).endswith("\n\n")
    asks = [t for t in vscode.progress_log if t not in before and str(t).startswith("kebab-ask")]
    assert len(asks) == 1, "the command shows progress while it answers"
    assert vscode.reports(asks[0]) and vscode.ended(asks[0])
    vscode.close(uri)  # unsaved: later answers must not quote this one


async def test_an_edit_refused_as_stale_is_recomputed_on_the_new_text(vscode: KebabClient) -> None:
    uri = vscode.open(vscode.root / "inbox" / "later.md", f"# Later\n\n{QUESTION}\n")

    def user_types_above() -> None:
        vscode.replace(uri, f"# Later\n\nA line typed meanwhile.\n\n{QUESTION}\n")

    vscode.before_next_edit = user_types_above
    refused = len(vscode.refused)
    result = await vscode.command("kebab.insertAnswer", uri, 2, QUESTION)
    assert result["applied"] and len(vscode.refused) == refused + 1
    lines = vscode.text(uri).split("\n")
    assert lines[2] == "A line typed meanwhile." and lines[4] == QUESTION
    assert "[^kb-1]" in lines[6] and lines[-2].startswith("[^kb-")
    assert_every_reference_defined(vscode.text(uri))
    vscode.close(uri)


async def test_a_stored_answer_is_inserted_as_given_and_rendered_for_the_note(
    vscode: KebabClient,
) -> None:
    asked = await vscode.request("kebab/ask", {"question": QUESTION})
    assert asked["grounded"] and isinstance(asked["answer_id"], int)
    uri = vscode.open(vscode.root / "rust" / "scratch.md", "# Scratch\n\n[^kb-4]: old\n")
    result = await vscode.command("kebab.insertAnswer", uri, 0, None, asked["answer_id"])
    assert result["applied"] and result["answer"]["answer"] == asked["answer"]
    assert result["answer"]["answer_id"] == asked["answer_id"]  # read back, it knows its id
    text = vscode.text(uri)
    assert "[^kb-5]" in text  # continues after the note's own highest kb- label
    defs = [d for d in footnotes.definitions(text, "rust/scratch.md") if d.label == "kb-5"]
    assert defs and defs[0].path == asked["citations"][0]["path"]  # ../ops/... resolves back
    with pytest.raises(Exception, match="no grounded answer"):
        await vscode.command("kebab.insertAnswer", uri, 0, None, 10**9)
    vscode.close(uri)


async def test_a_stored_answer_is_not_inserted_where_it_would_cut_a_table(
    vscode: KebabClient,
) -> None:
    """Insert at cursor takes any line: under a table's row the rows below would turn to text,
    so nothing is written and the editor is told why; the answer stays in the response."""
    asked = await vscode.request("kebab/ask", {"question": QUESTION})
    note = "# Hosts\n\n| host | job |\n|---|---|\n| nas01 | backup |\n| web1 | nginx |\n"
    uri = vscode.open(vscode.root / "ops" / "hosts-table.md", note)
    said = len(vscode.messages)
    result = await vscode.command("kebab.insertAnswer", uri, 4, None, asked["answer_id"])
    assert not result["applied"] and result["answer"]["answer"] == asked["answer"]
    assert vscode.text(uri) == note
    await until(
        lambda: any("would change the blocks" in m.message for m in vscode.messages[said:]),
        "a message saying why nothing was inserted",
    )
    vscode.close(uri)


async def test_generate_note_writes_a_footnoted_note_and_never_overwrites_silently(
    vscode: KebabClient,
) -> None:
    target = vscode.root / "inbox" / "backup-digest.md"
    uri = target.as_uri()
    note = await vscode.command("kebab.generateNote", {"topic": "restic backups", "uri": uri})
    assert note["written"] and note["path"] == "inbox/backup-digest.md"
    text = target.read_text(encoding="utf-8")
    defs = footnotes.definitions(text, "inbox/backup-digest.md")
    assert defs and all((vscode.root / d.path).is_file() for d in defs)
    assert any(d.path == "ops/backup.md" for d in defs)
    with pytest.raises(Exception, match="exists"):
        await vscode.command("kebab.generateNote", {"topic": "restic backups", "uri": uri})
    assert target.read_text(encoding="utf-8") == text
    with pytest.raises(Exception, match="outside"):
        await vscode.command("kebab.generateNote", {"topic": "x", "uri": "file:///tmp/x.md"})
    target.unlink()


async def test_a_callout_question_gets_its_answer_inside_the_callout(vscode: KebabClient) -> None:
    uri = vscode.open(
        vscode.root / "inbox" / "callout.md", f"# Callout\n\n> [!question] {QUESTION}\n\nAfter."
    )
    actions = await code_actions(vscode, uri, 2)
    assert actions and actions[0].command is not None
    assert list(actions[0].command.arguments or []) == [uri, 2, QUESTION]
    result = await vscode.command("kebab.insertAnswer", *(actions[0].command.arguments or []))
    assert result["applied"]
    lines = vscode.text(uri).split("\n")
    assert lines[3] == ">" and lines[4].startswith("> ") and "[^kb-1]" in lines[4]
    after = lines.index("After.")
    assert all(line.startswith("> ") for line in lines[4 : after - 1]) and lines[after - 1] == ""
    assert lines[after + 1] == "" and lines[after + 2].startswith("[^kb-1]: [")
    assert not vscode.text(uri).endswith("\n")  # there was no newline at the end; still none
    assert_every_reference_defined(vscode.text(uri))
    vscode.close(uri)


# following a citation ---------------------------------------------------------------------------
async def test_hover_shows_the_cited_passage(vscode: KebabClient) -> None:
    uri, hit = await cite(vscode, "fresh", "nightly backup 02:30 systemd timer", "ops/backup.md")
    for needle in ("[^kb-1]", "[^kb-1]:"):  # the reference and the definition
        value = await hover_text(vscode, uri, needle)
        assert " › ".join(hit["heading_path"]) in value and "`ops/backup.md`" in value
        assert f"L{hit['start_line']}–L{hit['end_line']}" in value and "02:30" in value
        assert "changed" not in value and "not found" not in value and "moved" not in value
    own = await vscode.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(vscode, uri, "[^1]"),
        )
    )
    assert own is None  # the note's own footnotes are not kebab's


async def test_definition_opens_the_cited_lines(vscode: KebabClient) -> None:
    uri, hit = await cite(
        vscode, "definition", "restic retention policy keep daily", "ops/backup.md"
    )
    result = await vscode.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(vscode, uri, "[^kb-1]"),
        )
    )
    assert isinstance(result, types.Location)
    assert result.uri == (vscode.root / "ops" / "backup.md").as_uri()
    assert result.range == types.Range(
        types.Position(hit["start_line"] - 1, 0), types.Position(hit["end_line"], 0)
    )


async def test_definitions_are_document_links(vscode: KebabClient) -> None:
    uri, hit = await cite(vscode, "links", "restic restore single file", "ops/backup.md")
    links = await vscode.text_document_document_link_async(
        types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert links is not None and len(links) == 1
    assert links[0].target == f"{(vscode.root / 'ops' / 'backup.md').as_uri()}#L{hit['start_line']}"
    assert links[0].range.start.line == 5 and links[0].range.start.character == len("[^kb-1]: ")


async def test_hover_and_diagnostics_say_when_the_source_changed(vscode: KebabClient) -> None:
    uri, _ = await cite(vscode, "changed", "postgres listens on port 5433", "ops/postgres.md")
    source = vscode.open(vscode.root / "ops" / "postgres.md")
    vscode.replace(source, vscode.text(source).replace("port **5433**", "port **5434**"))
    value = await hover_text(vscode, uri)
    assert "source changed since this answer" in value and "5434" in value
    (diag,) = await diagnostics_for(vscode, uri, "changed")
    assert diag.severity == types.DiagnosticSeverity.Information and diag.source == "kebab"
    assert diag.range.start.line == 5
    vscode.close(source)


async def test_a_moved_passage_gets_a_quick_fix_that_refreshes_the_span(
    vscode: KebabClient,
) -> None:
    uri, hit = await cite(vscode, "moved", "certbot certificates renewal", "ops/nginx.md")
    source = vscode.open(vscode.root / "ops" / "nginx.md")
    vscode.replace(source, "A line added on top.\n\n" + vscode.text(source))
    start, end = hit["start_line"] + 2, hit["end_line"] + 2
    assert f"moved to L{start}–L{end}" in await hover_text(vscode, uri)
    (diag,) = await diagnostics_for(vscode, uri, "moved")
    (fix,) = await code_actions(vscode, uri, diag.range.start.line, 0, [diag])
    assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is not None
    assert vscode.apply(fix.edit)
    assert vscode.text(uri).split("\n")[5].endswith(f"L{start}–L{end}")
    value = await hover_text(vscode, uri)
    assert "moved" not in value and "changed" not in value
    await until(  # the diagnostic goes away once the span is right
        lambda: not [d for d in vscode.diagnostics.get(uri, []) if d.code == "moved"],
        "the moved diagnostic going away after the fix",
    )
    vscode.close(source)


async def test_hover_and_diagnostics_say_when_the_source_is_gone(vscode: KebabClient) -> None:
    uri, _ = await cite(vscode, "missing", "cargo workspaces members", "rust/cargo-tips.md")
    gone = vscode.root / "rust" / "cargo-tips.md"
    gone.unlink()
    vscode.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=gone.as_uri(), type=types.FileChangeType.Deleted)]
        )
    )
    assert "source not found" in await hover_text(vscode, uri)
    (diag,) = await diagnostics_for(vscode, uri, "missing")
    assert diag.severity == types.DiagnosticSeverity.Warning
    result = await vscode.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(vscode, uri, "[^kb-1]"),
        )
    )
    assert result is None

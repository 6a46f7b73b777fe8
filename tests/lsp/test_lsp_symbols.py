"""`workspace/symbol` answered by hybrid search, as VS Code and Neovim ask for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_client import serving
from lsprotocol import types

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("profile", ["vscode", "neovim"])
async def test_the_symbol_picker_finds_passages_by_meaning(profile: str, tmp_path: Path) -> None:
    async with serving(tmp_path, profile) as client:
        await client.wait_ready()
        assert client.server_capabilities.workspace_symbol_provider
        found = await client.workspace_symbol_async(
            types.WorkspaceSymbolParams(query="when does the nightly backup start")
        )
        assert found, "a query in the user's words finds passages"
        top = next(s for s in found[:3] if s.name == "Home server backups › Schedule")
        assert isinstance(top, types.SymbolInformation)
        assert top.container_name == "ops/backup.md"
        assert top.location.uri == (client.root / "ops" / "backup.md").as_uri()
        assert top.location.range.start == types.Position(line=11, character=0)
        # no shared heading word: "restore one file" is found under "Restoring a single file"
        restore = await client.workspace_symbol_async(
            types.WorkspaceSymbolParams(query="get back one lost document from the snapshots")
        )
        assert any(s.name.endswith("Restoring a single file") for s in (restore or [])[:3])
        empty = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="  "))
        assert empty == []


async def test_related_passages_come_from_other_notes_unless_asked(tmp_path: Path) -> None:
    async with serving(tmp_path, "neovim") as client:
        await client.wait_ready()
        uri = (client.root / "ops" / "backup.md").as_uri()
        at_schedule = {"uri": uri, "position": {"line": 13, "character": 0}, "k": 3}
        found = (await client.request("kebab/related", at_schedule))["hits"]
        assert found[0]["path"] == "ops/postgres.md"  # its nightly dumps
        assert found[0]["heading_path"] == ["Postgres on nas01", "Dumps"]
        assert all(h["path"] != "ops/backup.md" for h in found) and len(found) == 3
        mine = (await client.request("kebab/related", {**at_schedule, "same_note": True}))["hits"]
        assert "ops/backup.md" in {h["path"] for h in mine}
        assert all(h["heading_path"][-1] != "Schedule" for h in mine)  # never itself
        with pytest.raises(Exception, match="position"):
            await client.request("kebab/related", {"uri": uri})

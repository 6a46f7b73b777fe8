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

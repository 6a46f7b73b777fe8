"""A question asked while the first index is still being built is answered from what is indexed
so far, at once, and says that the index is still filling (issue 27 item 9: the first answer in
Neovim took 14.8 s, waiting behind the whole embedding backlog)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsp_client import KebabClient, serving, until

from conftest import bulk_notes

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "What time does the nightly backup job run?"
FILES = re.compile(r"(\d+)/(\d+) files")


def indexing_token(client: KebabClient) -> object | None:
    return next((t for t in client.progress_log if str(t).startswith("kebab-index")), None)


def every_note_read(client: KebabClient) -> bool:
    """The indexing progress said the last file is read: every note is in the lexical index,
    and the vectors come next."""
    token = indexing_token(client)
    for report in client.reports(token):
        read = FILES.fullmatch(str(report.get("message", "")))
        if read and read[1] == read[2]:
            return True
    return False


async def test_an_answer_asked_while_vectors_fill_does_not_wait_for_them(tmp_path: Path) -> None:
    # One embedding batch as large as the whole backlog: an ask that waits for the batch in
    # flight waits for every passage's vector (the 600 generated notes take seconds or more).
    async with serving(
        tmp_path, "neovim", notes=bulk_notes(), embed={"batch_size": 4096}
    ) as client:
        await until(lambda: every_note_read(client), "reading every note", timeout=300)
        token = indexing_token(client)
        answer = await client.request(
            "kebab/ask", {"question": QUESTION, "workDoneToken": "first"}, timeout=300
        )
        # Notifications arrive in order: had indexing finished first, its `end` would be here.
        assert client.ended(token) is None, "the answer waited for indexing to finish"
        status = await client.request("kebab/status", {})
        assert status["state"] == "indexing"
        building = answer["index_building"]
        assert building is not None, "the answer does not say the index is still filling"
        assert building["vectors_pending"] > 0, "the answer waited for every vector"
        assert building["files_done"] is None  # every note was read: only vectors are missing
        assert re.fullmatch(
            r"The index is still being built \([\d,]+ passages not embedded yet, found by their "
            r"words only\): ask again when it is done for a complete answer\.",
            building["message"],
        )
        # ...answered from the words of the notes already read
        assert answer["grounded"], answer["refusal_text"]
        assert answer["citations"][0]["path"] == "ops/backup.md"
        # The embedding that gave way goes on, to the end.
        await client.wait_ready(600)
        assert client.ended(token) is not None
        again = await client.request("kebab/ask", {"question": QUESTION})
        assert again["grounded"] and again["index_building"] is None

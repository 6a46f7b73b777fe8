"""Indexing that someone may be waiting behind (the language server's background jobs, which
pass `should_stop`) runs in short batches, each a commit: the first notes are searchable at
once, a question waits for one short batch, and a job stopped between batches leaves an index
the next run completes (issue 27 item 9)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import NoteWriter, WorkspaceFactory
from kebab.index.backlog import FIRST_BATCH

NOTES = 40


def forty_notes(root: Path, write_note: NoteWriter) -> None:
    for i in range(NOTES):
        write_note(root, f"n{i:02}.md", f"# Note {i}\n\nThe pantry shelf {i} holds jars.\n")


def stop_after(batches: int) -> Callable[[], bool]:
    """A `should_stop` that lets `batches` batches run, then stops the job."""
    asked = 0

    def should_stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > batches

    return should_stop


def test_a_sync_someone_may_wait_for_commits_its_first_notes_at_once(
    open_workspace: WorkspaceFactory, notes: Path, write_note: NoteWriter
) -> None:
    forty_notes(notes, write_note)
    ws = open_workspace(notes)
    read: list[int] = []
    ws.sync(lambda phase, done, total: read.append(done), should_stop=lambda: False)
    assert read[0] == FIRST_BATCH and read[-1] == NOTES
    assert ws.status()["files"] == NOTES


def test_a_sync_nobody_waits_for_reads_in_whole_batches(
    open_workspace: WorkspaceFactory, notes: Path, write_note: NoteWriter
) -> None:
    forty_notes(notes, write_note)
    ws = open_workspace(notes)
    read: list[int] = []
    ws.sync(lambda phase, done, total: read.append(done))
    assert read == [NOTES]


def test_a_sync_stopped_between_batches_is_searchable_and_completed_later(
    open_workspace: WorkspaceFactory, notes: Path, write_note: NoteWriter
) -> None:
    forty_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.sync(should_stop=stop_after(1))
    assert ws.status()["files"] == FIRST_BATCH
    hits = ws.search("pantry shelf jars", k=50, mode="lexical")
    assert {h.path for h in hits} == {f"n{i:02}.md" for i in range(FIRST_BATCH)}
    summary = ws.sync()
    assert summary.files == NOTES and summary.added == NOTES - FIRST_BATCH


def test_embedding_someone_may_wait_for_starts_with_a_short_batch(
    open_workspace: WorkspaceFactory, notes: Path, write_note: NoteWriter
) -> None:
    forty_notes(notes, write_note)
    ws = open_workspace(notes, embed={"batch_size": 4096})
    ws.sync()
    ws.embed(should_stop=stop_after(1))
    assert ws.pending_vectors() == NOTES - FIRST_BATCH  # one passage per note
    assert ws.embed(should_stop=lambda: False) == NOTES - FIRST_BATCH
    assert ws.pending_vectors() == 0

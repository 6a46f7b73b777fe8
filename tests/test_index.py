"""The workspace index: which files become notes, incremental sync, and surviving a killed indexer."""

from __future__ import annotations

import os
import pty
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from kebab.index import vector_rows
from kebab.model import IndexSummary
from kebab.workspace import Workspace

NEEDLE = "needle"  # every note in these tests says it, so one search lists what is indexed


def indexed_paths(ws: Workspace) -> set[str]:
    return {h.path for h in ws.search(NEEDLE, k=200, mode="lexical")}


def found(ws: Workspace, query: str, mode: str = "lexical") -> list[str]:
    return [h.path for h in ws.search(query, k=10, mode=mode)]  # type: ignore[arg-type]


def reasons(summary: IndexSummary, kind: str = "skipped") -> dict[str, str]:
    return {s.path: s.reason for s in getattr(summary, kind)}


# which files are notes ----------------------------------------------------------------------


def test_a_binary_file_with_an_md_name_is_skipped_with_a_reason(notes, write_note, open_workspace):
    write_note(notes, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write_note(notes, "real.md", f"# Real\n\n{NEEDLE} text\n")
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert summary.files == 1
    assert "binary" in reasons(summary)["image.md"]
    assert indexed_paths(ws) == {"real.md"}
    assert {"path": "image.md", "reason": reasons(summary)["image.md"]} in ws.status()["skipped"]


def test_invalid_utf8_is_indexed_with_a_warning(notes, write_note, open_workspace):
    write_note(notes, "latin1.md", "# Café\n\nThe café serves zwieback. needle\n".encode("latin-1"))
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert summary.files == 1
    assert "UTF-8" in reasons(summary, "warnings")["latin1.md"]
    [hit] = ws.search("zwieback", k=5, mode="lexical")
    assert hit.path == "latin1.md"
    assert "\ufffd" in hit.text


def test_a_front_matter_warning_is_reported_again_on_a_later_sync(
    notes, write_note, open_workspace
):
    write_note(notes, "meta.md", "---\ntitle: [unclosed\n---\n# Meta\n\nneedle\n")
    ws = open_workspace(notes)
    assert "front matter" in reasons(ws.refresh(), "warnings")["meta.md"]
    assert "front matter" in reasons(ws.refresh(), "warnings")["meta.md"]


def test_an_invalid_utf8_warning_is_reported_again_on_a_later_sync(
    notes, write_note, open_workspace
):
    write_note(notes, "latin1.md", "# Café\n\nneedle\n".encode("latin-1"))
    ws = open_workspace(notes)
    assert "UTF-8" in reasons(ws.refresh(), "warnings")["latin1.md"]
    assert "UTF-8" in reasons(ws.refresh(), "warnings").get("latin1.md", "")


def test_an_invalid_utf8_warning_is_still_reported_after_the_note_is_touched(
    notes, write_note, open_workspace
):
    write_note(notes, "latin1.md", "# Café\n\nneedle\n".encode("latin-1"))
    ws = open_workspace(notes)
    ws.refresh()
    later = time.time() + 100
    os.utime(notes / "latin1.md", (later, later))
    assert "UTF-8" in reasons(ws.refresh(), "warnings").get("latin1.md", "")


def test_a_file_over_max_file_bytes_is_skipped_with_a_reason(notes, write_note, open_workspace):
    write_note(notes, "big.md", "# Big\n\n" + f"{NEEDLE} " * 400)
    write_note(notes, "small.md", f"# Small\n\n{NEEDLE}\n")
    ws = open_workspace(notes, max_file_bytes=1000)
    summary = ws.refresh()
    assert "max_file_bytes" in reasons(summary)["big.md"]
    assert indexed_paths(ws) == {"small.md"}


def test_ignored_and_hidden_paths_are_not_indexed(notes, write_note, open_workspace):
    layout = {
        "keep.md": "",
        "sub/keep.md": "",
        "drafts/wip.md": "",  # .gitignore: drafts/
        "sub/private.md": "",  # sub/.gitignore: private.md
        "archive/old.md": "",  # .kebabignore
        "scratch/todo.md": "",  # the `ignore` setting
        ".trash/deleted.md": "",
        ".hidden.md": "",
        ".obsidian/workspace.md": "",
        "node_modules/pkg/README.md": "",
    }
    for rel in layout:
        write_note(notes, rel, f"# {rel}\n\n{NEEDLE}\n")
    write_note(notes, ".gitignore", "drafts/\n")
    write_note(notes, "sub/.gitignore", "private.md\n")
    write_note(notes, ".kebabignore", "archive/\n")
    ws = open_workspace(notes, ignore=["scratch/"])
    summary = ws.refresh()
    assert indexed_paths(ws) == {"keep.md", "sub/keep.md"}
    assert summary.files == 2
    assert summary.skipped == []  # ignoring on purpose is not a problem to report


def test_a_symlink_loop_does_not_hang_and_each_note_is_indexed_once(
    notes, write_note, open_workspace
):
    write_note(notes, "a/note.md", f"# A\n\n{NEEDLE} alpha\n")
    write_note(notes, "b/note.md", f"# B\n\n{NEEDLE} bravo\n")
    (notes / "a" / "up").symlink_to(notes, target_is_directory=True)  # a/up/a/up/...
    (notes / "b" / "self").symlink_to(notes / "b", target_is_directory=True)
    (notes / "c").symlink_to(notes / "c", target_is_directory=True)  # points at itself
    ws = open_workspace(notes)
    result: list[IndexSummary] = []
    worker = threading.Thread(target=lambda: result.append(ws.refresh()), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "indexing a workspace with symlink loops did not finish"
    assert result[0].files == 2
    assert sorted(h.path for h in ws.search(NEEDLE, k=50, mode="lexical")) == [
        "a/note.md",
        "b/note.md",
    ]


def test_a_symlink_to_a_folder_outside_the_root_is_not_followed(
    tmp_path, notes, write_note, open_workspace
):
    outside = tmp_path / "elsewhere"
    write_note(outside, "secret.md", f"# Secret\n\n{NEEDLE} classified\n")
    write_note(notes, "inside.md", f"# Inside\n\n{NEEDLE}\n")
    (notes / "linked").symlink_to(outside, target_is_directory=True)
    (notes / "linked-note.md").symlink_to(outside / "secret.md")
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert "outside" in reasons(summary)["linked"]
    assert "outside" in reasons(summary)["linked-note.md"]
    assert indexed_paths(ws) == {"inside.md"}
    assert found(ws, "classified") == []


def test_a_folder_linked_from_inside_the_root_is_indexed_once(notes, write_note, open_workspace):
    write_note(notes, "real/topic.md", f"# Topic\n\n{NEEDLE} quokka\n")
    (notes / "alias").symlink_to(notes / "real", target_is_directory=True)
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert summary.files == 1
    [path] = found(ws, "quokka")
    assert path in ("alias/topic.md", "real/topic.md")


def test_file_names_with_spaces_emoji_and_korean_are_indexed_under_their_names(
    notes, write_note, open_workspace
):
    names = {
        "my notes/a file name.md": "pangolin",
        "🍣 sushi night.md": "wasabi",
        "한국어/회의 메모.md": "narwhal",
    }
    for rel, word in names.items():
        write_note(notes, rel, f"# {word}\n\n{NEEDLE} {word}\n")
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert summary.files == 3
    for rel, word in names.items():
        assert found(ws, word) == [rel]
        assert found(ws, word, mode="hybrid")[0] == rel


def test_a_file_name_that_is_not_utf8_is_skipped_with_a_reason(notes, write_note, open_workspace):
    bad = os.fsdecode(b"bad-\xff-name.md")
    (notes / bad).write_bytes(b"# Bad\n\nneedle\n")
    write_note(notes, "good.md", f"# Good\n\n{NEEDLE}\n")
    ws = open_workspace(notes)
    summary = ws.refresh()
    assert indexed_paths(ws) == {"good.md"}
    [(path, reason)] = reasons(summary).items()
    assert path.startswith("bad-") and path.endswith("-name.md")
    assert "UTF-8" in reason


# incremental sync ---------------------------------------------------------------------------

THREE = {
    "alpha.md": "# Alpha\n\nneedle aardvark\n\n## One\n\nalpha one\n\n## Two\n\nalpha two\n",
    "bravo.md": "# Bravo\n\nneedle buffalo\n\n## One\n\nbravo one\n\n## Two\n\nbravo two\n",
    "notes/charlie.md": "# Charlie\n\nneedle cheetah\n\n## One\n\ncharlie one\n",
}


def three_notes(root: Path, write_note) -> None:
    for rel, text in THREE.items():
        write_note(root, rel, text)


def test_a_new_note_is_added_and_only_its_chunks_are_embedded(notes, write_note, open_workspace):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    first = ws.refresh()
    assert (first.files, first.added, first.chunks, first.embedded) == (3, 3, 8, 8)
    write_note(notes, "delta.md", "# Delta\n\nneedle dingo\n\n## One\n\ndelta one\n")
    second = ws.refresh()
    assert (second.added, second.updated, second.unchanged, second.deleted) == (1, 0, 3, 0)
    assert second.embedded == 2
    assert found(ws, "dingo") == ["delta.md"]


def test_an_unchanged_resync_reports_everything_unchanged_and_embeds_nothing(
    notes, write_note, open_workspace
):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    again = ws.refresh()
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
    assert (again.embedded, again.pending_vectors) == (0, 0)
    assert (again.files, again.chunks) == (3, 8)


def test_touching_a_note_without_changing_it_is_unchanged(notes, write_note, open_workspace):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    later = time.time() + 100
    os.utime(notes / "alpha.md", (later, later))
    touched = ws.refresh()
    assert (touched.updated, touched.unchanged, touched.embedded) == (0, 3, 0)
    assert ws.refresh().unchanged == 3


def test_editing_one_section_reparses_one_note_and_embeds_only_the_changed_text(
    notes, write_note, open_workspace
):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    before = {h.chunk_id: h for h in ws.search(NEEDLE, k=50, mode="lexical")}
    write_note(notes, "bravo.md", THREE["bravo.md"].replace("bravo two", "bravo two wombat"))
    summary = ws.refresh()
    assert (summary.added, summary.updated, summary.unchanged, summary.deleted) == (0, 1, 2, 0)
    assert summary.embedded == 1  # the other chunks of bravo.md kept their vectors
    assert found(ws, "wombat") == ["bravo.md"]
    [hit] = ws.search("wombat", k=1, mode="lexical")
    assert hit.heading_path == ["Bravo", "Two"]
    after = {h.chunk_id: h for h in ws.search(NEEDLE, k=50, mode="lexical")}
    assert before.keys() == after.keys()  # chunk ids survive an edit


def test_a_closed_buffer_is_read_back_from_its_file_and_never_leaves_the_index(
    notes, write_note, open_workspace
):
    """An editor's unsaved text is indexed while the note is open; once closed, the note is
    read back from its file in one transaction (a search meanwhile still finds it), and a note
    whose buffer said what its file says keeps its vectors."""
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    unsaved = THREE["bravo.md"].replace("bravo two", "bravo two wombat")
    ws.sync(overrides={"bravo.md": unsaved, "alpha.md": THREE["alpha.md"]})
    ws.embed()
    assert found(ws, "wombat") == ["bravo.md"]
    seen: list[set[str]] = []
    summary = ws.sync(
        lambda phase, done, total: seen.append(indexed_paths(ws)),
        should_stop=lambda: False,
        reread={"bravo.md", "alpha.md"},
    )
    assert (summary.updated, summary.unchanged) == (1, 2)
    assert seen and all(paths == {"alpha.md", "bravo.md", "notes/charlie.md"} for paths in seen)
    assert found(ws, "wombat") == []
    assert ws.embed() == 0  # both texts had vectors already: closing embeds nothing


def test_a_deleted_note_disappears_from_search(notes, write_note, open_workspace):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    (notes / "notes" / "charlie.md").unlink()
    summary = ws.refresh()
    assert (summary.deleted, summary.unchanged, summary.files, summary.chunks) == (1, 2, 2, 6)
    assert found(ws, "cheetah") == []
    assert "notes/charlie.md" not in found(ws, "charlie cheetah", mode="vector")
    assert indexed_paths(ws) == {"alpha.md", "bravo.md"}


def test_a_renamed_note_is_found_under_its_new_path_without_reembedding(
    notes, write_note, open_workspace
):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    (notes / "archive").mkdir()
    (notes / "alpha.md").rename(notes / "archive" / "alpha renamed.md")
    summary = ws.refresh()
    assert (summary.added, summary.deleted, summary.unchanged) == (1, 1, 2)
    assert (summary.embedded, summary.pending_vectors) == (0, 0)
    assert found(ws, "aardvark") == ["archive/alpha renamed.md"]
    assert found(ws, "alpha one aardvark", mode="vector")[0] == "archive/alpha renamed.md"


def test_a_reopened_index_answers_without_reindexing(tmp_path, notes, write_note, open_workspace):
    three_notes(notes, write_note)
    ws = open_workspace(notes)
    ws.refresh()
    expected = [(h.chunk_id, h.score) for h in ws.search("buffalo bravo", k=5)]
    ws.close()
    reopened = open_workspace(notes)  # same index_dir
    assert [(h.chunk_id, h.score) for h in reopened.search("buffalo bravo", k=5)] == expected
    assert reopened.status()["vectors"] == 8
    summary = reopened.refresh()
    assert (summary.unchanged, summary.embedded) == (3, 0)


# a killed indexer ---------------------------------------------------------------------------

_WORDS = ["river", "forest", "ocean", "valley", "garden", "engine", "lantern", "harbor", "meadow"]


def _generate(root: Path, n: int, rng: random.Random, version: int = 0) -> None:
    for i in range(n):
        words = " ".join(rng.choice(_WORDS) for _ in range(12))
        text = f"# Note {i}\n\nneedle token{i}x{version} {words}\n"
        if i % 10 == 0:
            text += f"\n## Details\n\ndetail{i} {words[::-1]}\n"
        if i % 50 == 7:  # a clear ranking for the comparison queries: more kestrels rank higher
            text += f"\n## Special\n\n{'kestrel ' * (i // 50 + 1)}falcon\n"
        (root / f"group{i % 7}").mkdir(exist_ok=True)
        (root / f"group{i % 7}" / f"note {i:03}.md").write_text(text, encoding="utf-8")


def _index_killed_at(root: Path, index_dir: Path, nth: int) -> int:
    """Run `kebab index` and SIGKILL it on its `nth` progress report that is not its last
    (the progress bar it draws on a terminal, read through a pty): the kill lands mid-run on
    an event, however fast the machine. Returns the exit code; 0 when the run ended first."""
    code = "import sys; from kebab.cli import main; sys.exit(main())"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "index", str(root), "--index-dir", str(index_dir)],
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    buffer = ""
    try:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the pty closes when the process exits
                break
            if not chunk:
                break
            buffer += chunk.decode("utf-8", "replace")
            reports = re.findall(r"\] (\d+)/(\d+)", buffer)
            if sum(int(done) < int(total) for done, total in reports) > nth:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        os.close(master)
    return proc.wait(timeout=30)


def _chunk_ids(ws: Workspace) -> set[str]:
    return {c.id for rows in ws.index.store.iter_chunks() for _, c in rows}


def _top(ws: Workspace, query: str, mode: str) -> list[tuple[str, str]]:
    return [(h.path, h.chunk_id) for h in ws.search(query, k=3, mode=mode)]  # type: ignore[arg-type]


def test_an_index_killed_while_indexing_opens_cleanly_and_catches_up(
    tmp_path, notes, open_workspace
):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    _generate(notes, 200, rng)
    killed_dir = tmp_path / "killed-index"
    kill_points, exits = [], []
    for round_ in range(3):
        # the first run is killed mid-embedding (200 notes, 64 passages a batch); the later
        # ones have little left to do and may end before their chosen report
        nth = 0 if round_ == 0 else rng.randrange(3)
        kill_points.append(nth)
        exits.append(_index_killed_at(notes, killed_dir, nth))
        # the notes keep changing between runs: edits, a deletion, a new note
        for i in range(round_, 200, 40):
            (notes / f"group{i % 7}" / f"note {i:03}.md").write_text(
                f"# Note {i}\n\nneedle edited{i}x{round_} lantern\n", encoding="utf-8"
            )
        (notes / f"group{(round_ + 1) % 7}" / f"note {round_ + 1:03}.md").unlink(missing_ok=True)
        (notes / f"new-{round_}.md").write_text(f"# New {round_}\n\nneedle fresh{round_}\n")
    context = f"seed={seed} killed at reports={kill_points} exit codes={exits}"
    assert exits[0] == -signal.SIGKILL, context

    ws = open_workspace(notes, index_dir=killed_dir)
    ws.search("lantern harbor", k=5)  # searchable right away, whatever state it was left in
    summary = ws.refresh()
    assert summary.pending_vectors == 0, context

    fresh = open_workspace(notes, index_dir=tmp_path / "fresh-index")
    fresh_summary = fresh.refresh()
    assert (summary.files, summary.chunks) == (fresh_summary.files, fresh_summary.chunks), context
    assert _chunk_ids(ws) == _chunk_ids(fresh), context
    assert ws.status()["vectors"] == fresh.status()["vectors"] == fresh_summary.chunks, context
    # Queries with clear winners: BM25 statistics legitimately differ between an index that was
    # updated in place and a fresh one (Tantivy counts deleted documents until it merges), so
    # near-ties further down may order differently; the winners may not.
    for query, depth in (("kestrel falcon", 3), ("token12x0", 1), ("edited41x1", 1), ("fresh2", 1)):
        for mode in ("lexical", "hybrid"):
            got, want = _top(ws, query, mode)[:depth], _top(fresh, query, mode)[:depth]
            assert got == want, (query, mode, context)


def test_every_multi_unit_passage_gets_one_stored_vector_per_unit(
    notes, write_note, open_workspace
):
    from kebab.units import units

    text = (
        "# Services\n\nThe wiki runs on the small box. Its database is Postgres 15. "
        "Redis listens on port 6380 because 6379 was taken.\n\n## Mail\n\nPostfix relays mail.\n"
    )
    write_note(notes, "services.md", text)
    ws = open_workspace(notes)
    ws.refresh()
    assert vector_rows.count_pending(ws.index.store, ws.index.units_model(), "unit_vectors") == 0
    chunks = {c.heading_path[-1]: c for _, c in ws.index.store.chunks_of("services.md")}
    stored = ws.index.unit_vectors([c.content_hash for c in chunks.values()])
    many = chunks["Services"]
    assert stored[many.content_hash].shape == (len(units(many.text)), ws.embedder.dim)
    # one unit: no vectors of its own, its passage vector stands for it
    mail = stored[chunks["Mail"].content_hash]
    assert mail.shape == (1, ws.embedder.dim)
    assert (
        vector_rows.unit_vectors(
            ws.index.store, ws.index.units_model(), [chunks["Mail"].content_hash]
        )[chunks["Mail"].content_hash].size
        == 0
    )
    # row i is unit i: the sentence that answers is the one closest to the question
    qvec = ws.index.embed_query("which port does redis use")
    assert qvec is not None
    best = int((stored[many.content_hash] @ qvec).argmax())
    assert "6380" in units(many.text)[best]


def test_an_edited_buffer_is_found_by_meaning_at_once(fixture_workspace, open_workspace):
    """An unsaved edit re-indexes its note; its changed passage had no vector until the backlog
    came round to it, ranked on its words alone, and the next question quoted a neighbour
    ("Start the new container on the new port") for the port it had just edited."""
    ws = open_workspace(fixture_workspace)
    ws.refresh()
    path = fixture_workspace / "ops" / "postgres.md"
    edited = path.read_text(encoding="utf-8").replace("port **5433**", "port **6543**")
    assert ws.update_text("ops/postgres.md", edited)
    hits = ws.search("Which port does Postgres on nas01 listen on?", k=5)
    [main] = [h for h in hits if "6543" in h.text]
    assert main.vector_score is not None, "the edited passage has its vector"
    stored = vector_rows.unit_vectors(
        ws.index.store,
        ws.index.units_model(),
        [c.content_hash for _, c in ws.index.store.chunks_of("ops/postgres.md")],
    )
    assert len(stored) == len(ws.index.store.chunks_of("ops/postgres.md")), "and its units theirs"

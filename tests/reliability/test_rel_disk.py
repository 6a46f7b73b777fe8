"""The index folder under faults (issue 7): read-only, a full disk, and its permissions.

- Read-only (a folder the process may not write: modes 0555/0444, applied to root too by
  dropping its override capabilities, see rel_helpers.without_root_override): `kebab index`
  fails with one line naming the folder, `kebab search` and the language server still answer
  from the index as it was, and nothing in the folder changes.
- Disk full: `kebab index` in a child whose RLIMIT_FSIZE stops every write past the current
  size (SIGXFSZ ignored, so writes fail with EFBIG as on a full disk) fails with one line; the
  index then opens, passes SQLite's integrity check, serves the previous content, keeps no
  stray files, and a later run with room catches up to what a clean rebuild gives. The same on
  a real full filesystem (a small tmpfs) where mounting is allowed (root, as here).
- The folder is 0700 and the SQLite file 0600, its -wal and -shm files included.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rel_helpers import (
    WORDS,
    generate,
    kebab_cli,
    listing,
    serve,
    until,
    without_root_override,
)

from kebab.workspace import Workspace

NOTES = 60


def build(tmp_path: Path, embedder: object, n: int = NOTES) -> tuple[Path, Path]:
    root, index_dir = tmp_path / "vault", tmp_path / "index"
    generate(root, n)
    refresh(root, index_dir, embedder)
    return root, index_dir


def refresh(root: Path, index_dir: Path, embedder: object) -> None:
    with Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=embedder) as ws:  # type: ignore[arg-type]
        assert ws.refresh().pending_vectors == 0


def grow(root: Path, marker: str) -> None:
    """Edit every note (a lot of new text) and add some: the next index run writes plenty."""
    rng = random.Random(marker)
    for i, path in enumerate(sorted(root.rglob("*.md"))):
        extra = " ".join(rng.choice(WORDS) for _ in range(250))
        path.write_text(path.read_text() + f"\n## Grown {i}\n\n{marker} {extra}\n")
    for i in range(20):
        (root / f"added-{i}.md").write_text(f"# Added {i}\n\n{marker} added{i}\n")


def chunk_ids(index_dir: Path) -> set[str]:
    db = sqlite3.connect(f"file:{index_dir / 'kebab.sqlite'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0] for r in db.execute("SELECT id FROM chunks")}
    finally:
        db.close()


def one_line_error(done: subprocess.CompletedProcess[str], index_dir: Path) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("kebab: ") and str(index_dir) in lines[0], lines[0]
    return lines[0]


def search(
    root: Path, index_dir: Path, query: str, embedder: object, k: int = 3
) -> list[tuple[str, str]]:
    with Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=embedder) as ws:  # type: ignore[arg-type]
        return [(h.path, h.chunk_id) for h in ws.search(query, k=k, mode="lexical")]


# read-only -----------------------------------------------------------------------------------


def make_read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)


def make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)


async def test_a_read_only_index_refuses_updates_clearly_and_still_answers(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = build(tmp_path, embedder)
    before_hits = search(root, index_dir, "kestrel osprey", embedder)
    grow(root, "zeppelin")
    make_read_only(index_dir)
    before = listing(index_dir)
    try:
        done = kebab_cli(
            ["index", str(root), "--index-dir", str(index_dir)],
            tmp_path,
            preexec=without_root_override,
        )
        line = one_line_error(done, index_dir)
        assert "cannot write the index" in line and "Permission denied" in line, line

        found = kebab_cli(
            ["search", "kestrel osprey", "--root", str(root), "--index-dir", str(index_dir)],
            tmp_path,
            preexec=without_root_override,
        )
        assert found.returncode == 0, found.stderr
        assert "cannot be updated" in found.stderr and str(index_dir) in found.stderr
        assert before_hits[0][0] in found.stdout  # the same top note as before

        # the language server opens it too: searches answer, status says why it cannot index
        async with serve(
            root, tmp_path, index_dir=str(index_dir), preexec=without_root_override
        ) as served:
            client = served.client

            async def failed() -> Any:
                folder = (await client.request("kebab/status", {}))["folders"][0]
                return folder if folder["error"] else None

            folder = await until(failed, "kebab/status naming the folder's error", 60, every=0.1)
            hits = await client.request(
                "kebab/search", {"query": "kestrel osprey", "k": 3, "mode": "lexical"}
            )
            grown = await client.request(
                "kebab/search", {"query": "zeppelin", "k": 3, "mode": "lexical"}
            )
            answer = await client.request("kebab/ask", {"question": "Where is the osprey?"})
            messages = [m.message for m in client.messages]
        assert "cannot write the index" in (folder["error"] or ""), folder
        assert folder["read_only"] and folder["files"] == NOTES
        assert [(h["path"], h["chunk_id"]) for h in hits["hits"]] == before_hits
        assert grown["hits"] == []  # the edits since were not indexed, and nothing broke
        assert answer["schema"] == "answer.v1" and "not stored" in (answer["error"] or "")
        assert any("cannot write" in m and str(index_dir) in m for m in messages), messages
        assert listing(index_dir) == before, "a read-only index folder was changed"
    finally:
        make_writable(index_dir)

    # writable again: it catches up
    refresh(root, index_dir, embedder)
    assert search(root, index_dir, "zeppelin", embedder, k=1)


def test_asking_a_read_only_index_still_returns_the_answer(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = build(tmp_path, embedder, n=30)
    make_read_only(index_dir)
    try:
        done = kebab_cli(
            ["ask", "kestrel osprey?", "--root", str(root), "--index-dir", str(index_dir),
             "--json"],
            tmp_path,
            preexec=without_root_override,
        )  # fmt: skip
    finally:
        make_writable(index_dir)
    # The answers row cannot be written; the answer still comes back and says so
    # (rag/pipeline.finish; an xfail here until the rag engineer guarded the save).
    assert done.returncode == 0, done.stderr[-500:]
    answer = json.loads(done.stdout)
    assert answer["schema"] == "answer.v1" and answer["answer"]
    assert "not stored" in (answer["error"] or ""), answer["error"]
    assert str(index_dir) in answer["error"]


# disk full -----------------------------------------------------------------------------------

_SEGMENT = re.compile(r"^([0-9a-f]{32})\.")


def stray_files(index_dir: Path) -> list[str]:
    """Files no consistent index holds: temp files, and Tantivy segment files its meta.json does
    not list (the -wal and -shm files are SQLite's own, recovered on the next open)."""
    meta = json.loads((index_dir / "lexical" / "meta.json").read_text())
    live = {seg["segment_id"].replace("-", "") for seg in meta["segments"]}
    out = []
    for rel in listing(index_dir):
        name = rel.rsplit("/", 1)[-1]
        segment = _SEGMENT.match(name) if rel.startswith("lexical/") else None
        if name.endswith(".tmp") or (segment and segment.group(1) not in live):
            out.append(rel)
    return out


def catches_up(root: Path, index_dir: Path, tmp_path: Path, embedder: object) -> None:
    """With room again, the next run brings the index to what a clean rebuild gives."""
    refresh(root, index_dir, embedder)
    fresh = tmp_path / "fresh-index"
    refresh(root, fresh, embedder)
    assert chunk_ids(index_dir) == chunk_ids(fresh)
    for query in ("kestrel osprey", "added7", "zeppelin"):
        got = search(root, index_dir, query, embedder)[:1]
        assert got == search(root, fresh, query, embedder)[:1], query


@pytest.mark.parametrize("fails_in", ["sync", "embedding"])
def test_a_full_disk_fails_one_line_and_the_index_still_serves(
    tmp_path: Path, embedder: object, fails_in: str
) -> None:
    """`sync`: room for nothing new, so the notes' own transaction fails and the index serves
    exactly what it held. `embedding`: room for the notes but not their vectors, so the new
    text is searchable and the vectors are finished by the next run."""
    root, index_dir = build(tmp_path, embedder)
    ids_before = chunk_ids(index_dir)
    hits_before = search(root, index_dir, "kestrel osprey", embedder)
    grow(root, "zeppelin")
    sizes = listing(index_dir)
    limit = 256 * 1024 if fails_in == "sync" else max(sizes.values()) + 32 * 1024

    done = kebab_cli(["index", str(root), "--index-dir", str(index_dir)], tmp_path, limit)
    line = one_line_error(done, index_dir)
    assert "cannot write the index" in line, line

    assert stray_files(index_dir) == []
    ids_after = chunk_ids(index_dir)  # and SQLite's integrity check passes
    if fails_in == "sync":
        assert ids_after == ids_before
        assert search(root, index_dir, "kestrel osprey", embedder) == hits_before
        assert search(root, index_dir, "zeppelin", embedder) == []
    else:
        assert ids_after > ids_before
        with Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=embedder) as ws:  # type: ignore[arg-type]
            assert ws.search("zeppelin", k=1, mode="lexical")
            assert ws.status()["pending_vectors"] > 0  # type: ignore[operator]
    catches_up(root, index_dir, tmp_path, embedder)


def test_a_really_full_filesystem_fails_one_line_and_loses_nothing(
    tmp_path: Path, embedder: object
) -> None:
    """The same on a tmpfs that runs out of space (ENOSPC), where mounting one is allowed."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    root, built = build(tmp_path, embedder)
    size = sum(listing(built).values()) + 256 * 1024
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); RLIMIT_FSIZE above")
    try:
        index_dir = mount / "index"
        shutil.copytree(built, index_dir)
        ids_before = chunk_ids(index_dir)
        grow(root, "zeppelin")
        done = kebab_cli(["index", str(root), "--index-dir", str(index_dir)], tmp_path)
        line = one_line_error(done, index_dir)
        assert "cannot write the index" in line, line
        assert stray_files(index_dir) == []
        assert chunk_ids(index_dir) >= ids_before
        assert search(root, index_dir, "kestrel osprey", embedder)
        moved = tmp_path / "index-moved"  # room again: off the small disk
        shutil.copytree(index_dir, moved)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
    catches_up(root, moved, tmp_path, embedder)


# permissions ---------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_index_folder_is_0700_and_its_database_files_0600(
    tmp_path: Path, notes: Path, open_workspace: Callable[..., Workspace]
) -> None:
    (notes / "a.md").write_text("# A\n\nneedle\n", encoding="utf-8")
    old_umask = os.umask(0o022)  # a usual umask: files 0644 unless kebab says otherwise
    try:
        index_dir = tmp_path / "deep" / "index"
        ws = open_workspace(notes, index_dir=index_dir)
        ws.refresh()
        files = [index_dir / n for n in ("kebab.sqlite", "kebab.sqlite-wal", "kebab.sqlite-shm")]
        assert all(f.exists() for f in files)  # open in WAL mode: all three are there
        assert mode(index_dir) == 0o700
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        ws.close()

        # an index made by an older kebab, or loosened by hand, is tightened when opened
        for f in [index_dir, *index_dir.iterdir()]:
            os.chmod(f, 0o755 if f.is_dir() else 0o644)
        ws = open_workspace(notes, index_dir=index_dir)
        assert mode(index_dir) == 0o700
        assert {f.name: mode(f) for f in files if f.exists()} == {
            f.name: 0o600 for f in files if f.exists()
        }
    finally:
        os.umask(old_umask)

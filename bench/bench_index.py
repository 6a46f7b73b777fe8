"""Indexing figures per corpus: cold index (sync, then embed), no-change re-sync, reopen, one
changed note until it is searchable, and memory.

    .venv/bin/python bench/bench_index.py [--corpora fastapi-en obsidian-tasks tldr] [--out DIR]

Phases inside sync and embed are timed by wrapping kebab's own functions for the run (nothing in
server/ is changed), so the JSON says where the seconds go. The embedding phase is also compared
with the embedder alone on the same texts and batch size: `embed_phase_over_alone` near 1 means
the phase adds little around the model. Index dirs go under a temp dir unless --out is given
(bench/out/... is git-ignored; bench_query.py reuses bench/out/index by default).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import kebab.index as kindex
from _common import corpus_root, emit, log, machine, make_use_embedder, rss, stats_ms
from kebab import markdown
from kebab.index import embedding_text
from kebab.workspace import Workspace


class PhaseTimes:
    """Seconds and calls per named kebab function, collected while `patched` is active."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1

        return timed_call

    @contextmanager
    def patched(self, ws: Workspace) -> Iterator[None]:
        ix = ws.index
        targets: list[tuple[object, str, str]] = [
            (kindex, "scan", "scan"),
            (kindex, "read_note", "read_note"),
            (markdown, "parse", "parse"),
            (kindex, "embedding_text", "embedding_text"),
            (ix.store, "documents", "sqlite_documents"),
            (ix, "_write_batch", "write_batch"),
            (ix.lexical, "write", "tantivy_write"),
            (ix.store, "put_embeddings", "sqlite_put_vec"),
            (ix.store, "pending_embeddings", "sqlite_pending"),
            (ix.store, "count_pending", "sqlite_count_pending"),
            (ix.store, "vectors_for", "sqlite_vectors_for"),
            (ix, "_vectors_for_hashes", "vectors_for_hashes"),
            (ix, "_save_vectors", "usearch_save"),
            (ws.embedder, "embed", "model_embed"),
        ]
        if ix.vectors is not None:
            targets += [
                (ix.vectors, "add", "usearch_add"),
                (ix.vectors, "remove", "usearch_remove"),
            ]
        with ExitStack() as stack:
            for obj, attr, name in targets:
                stack.enter_context(
                    mock.patch.object(obj, attr, self._wrap(name, getattr(obj, attr)))
                )
            yield

    def breakdown(self) -> dict[str, float]:
        """Sync seconds split into parse / Tantivy / SQLite and the rest of the batch write."""
        s = self.seconds
        rest = s["write_batch"] - s["parse"] - s["tantivy_write"]
        rest -= s["usearch_add"] + s["usearch_remove"] + s["sqlite_vectors_for"]
        parts = {
            "scan": s["scan"],
            "read": s["read_note"],
            "parse": s["parse"],
            "tantivy": s["tantivy_write"],
            "sqlite": rest + s["sqlite_documents"],
        }
        return {f"{k}_s": round(v, 3) for k, v in parts.items()}

    def report(self) -> dict[str, Any]:
        return {
            k: {"s": round(v, 3), "calls": self.calls[k]} for k, v in sorted(self.seconds.items())
        }


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> dict[str, float]:
    wall, cpu = _clock()
    return {"wall_s": round(wall - start[0], 3), "cpu_s": round(cpu - start[1], 3)}


def _searchable(ws: Workspace, marker: str, path: str, timeout: float = 5.0) -> tuple[bool, float]:
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        if any(h.path == path for h in ws.search(marker, k=5, mode="lexical")):
            return True, time.perf_counter() - t
        time.sleep(0.001)
    return False, time.perf_counter() - t


def changed_notes(ws: Workspace, root: Path, n: int) -> dict[str, Any]:
    """Edit `n` notes one at a time: update_text() (buffer) and sync(overrides) until searchable."""
    paths = sorted(ws.index.store.documents())
    picks = random.Random(7).sample(paths, min(n, len(paths)))
    upd: list[float] = []
    upd_total: list[float] = []
    syn: list[float] = []
    syn_total: list[float] = []
    embed_s: list[float] = []
    found_all = True
    for i, path in enumerate(picks):
        original = (root / path).read_text(encoding="utf-8")
        for how, into, total in (("update_text", upd, upd_total), ("sync", syn, syn_total)):
            marker = f"kebabbench{how.replace('_', '')}{i}zq"
            text = f"{original}\n\n## Benchmark edit {i}\n\nThe {marker} marker, added by bench.\n"
            t = time.perf_counter()
            if how == "update_text":
                ws.update_text(path, text)
            else:
                ws.sync(overrides={path: text})
            into.append(time.perf_counter() - t)
            ok, search_s = _searchable(ws, marker, path)
            found_all &= ok
            total.append(into[-1] + search_s)
        t = time.perf_counter()
        ws.embed()  # the edited chunks' vectors, as the server's background embed would
        embed_s.append(time.perf_counter() - t)
        ws.update_text(path, original)  # restore (chunks of the original still have vectors)
    ws.embed()
    return {
        "notes": picks,
        "searchable": found_all,
        "update_text_s": stats_ms(upd),
        "update_text_until_searchable": stats_ms(upd_total),
        "sync_overrides_s": stats_ms(syn),
        "sync_overrides_until_searchable": stats_ms(syn_total),
        "embed_after_edit": stats_ms(embed_s),
    }


def bench_corpus(name: str, index_dir: Path, emb: Any, edits: int, resyncs: int) -> dict[str, Any]:
    root = corpus_root(name)
    shutil.rmtree(index_dir, ignore_errors=True)
    overrides = {"index_dir": str(index_dir)}
    out: dict[str, Any] = {"corpus": name, "rss_before": rss()}
    start = _clock()
    ws = Workspace(root, overrides=overrides, embedder=emb)
    out["open_new_s"] = _since(start)["wall_s"]

    log(f"{name}: cold sync")
    phases = PhaseTimes()
    start = _clock()
    with phases.patched(ws):
        summary = ws.sync()
    sync = _since(start)
    out["files"], out["chunks"] = summary.files, summary.chunks
    out["skipped"], out["warnings"] = len(summary.skipped), len(summary.warnings)
    out["sync"] = {
        **sync,
        "files_per_s": round(summary.files / sync["wall_s"], 1),
        "chunks_per_s": round(summary.chunks / sync["wall_s"], 1),
        "breakdown": phases.breakdown(),
        "phases": phases.report(),
    }

    pending = ws.index.store.pending_embeddings(emb.id, 1 << 40)  # the texts embed() will take
    texts = [embedding_text(c) for _, c in pending]
    log(f"{name}: embedding {len(texts)} distinct chunk texts")
    phases = PhaseTimes()
    start = _clock()
    with phases.patched(ws):
        embedded = ws.embed()
    emb_phase = _since(start)
    out["embed"] = {
        **emb_phase,
        "texts": embedded,
        "chunks_per_s": round(embedded / max(emb_phase["wall_s"], 1e-9), 1),
        "phases": phases.report(),
    }
    out["rss_after_index"] = rss()
    out["cold_total_s"] = round(sync["wall_s"] + emb_phase["wall_s"], 3)
    out["sync_share_of_cold"] = round(sync["wall_s"] / max(out["cold_total_s"], 1e-9), 3)

    log(f"{name}: embedder alone on the same {len(texts)} texts")
    batch = ws.cfg.embed.batch_size
    start = _clock()
    for i in range(0, len(texts), batch):
        emb.embed(texts[i : i + batch])
    alone = _since(start)
    out["embed_alone"] = {
        **alone,
        "batch_size": batch,
        "chunks_per_s": round(len(texts) / max(alone["wall_s"], 1e-9), 1),
    }
    out["embed_phase_over_alone"] = round(emb_phase["wall_s"] / max(alone["wall_s"], 1e-9), 3)

    log(f"{name}: no-change re-sync x{resyncs}")
    times = []
    for _ in range(resyncs):
        phases = PhaseTimes()
        start = _clock()
        with phases.patched(ws):
            again = ws.sync()
        times.append(_since(start)["wall_s"])
    out["resync_nochange"] = {
        "wall_s": times,
        "min_s": min(times),
        "unchanged": again.unchanged,
        "changed": again.added + again.updated + again.deleted,
        "breakdown_last": phases.breakdown(),
    }

    log(f"{name}: reopen the index")
    ws.close()
    start = _clock()
    ws = Workspace(root, overrides=overrides, embedder=emb)
    out["reopen_s"] = _since(start)["wall_s"]
    start = _clock()
    ws.sync()
    out["first_sync_after_reopen_s"] = _since(start)["wall_s"]

    log(f"{name}: {edits} edited notes")
    out["edit"] = changed_notes(ws, root, edits)
    out["rss_end"] = rss()
    ws.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", nargs="+", default=["fastapi-en", "obsidian-tasks", "tldr"])
    ap.add_argument("--out", type=Path, help="keep index dirs in OUT/<corpus> (wiped first)")
    ap.add_argument("--edits", type=int, default=5, help="notes edited one at a time")
    ap.add_argument("--resyncs", type=int, default=3)
    args = ap.parse_args()
    result: dict[str, Any] = {"bench": "index", "machine": machine()}
    emb, load_s = make_use_embedder()
    result["embedder"] = {"id": emb.id, "dim": emb.dim, "load_s": load_s}
    with tempfile.TemporaryDirectory(prefix="kebab-bench-") as tmp:
        base = args.out.resolve() if args.out else Path(tmp)
        result["corpora"] = {
            c: bench_corpus(c, base / c, emb, args.edits, args.resyncs) for c in args.corpora
        }
    result["rss_end"] = rss()
    result["loadavg_end"] = machine()["loadavg"]
    emit(result)


if __name__ == "__main__":
    main()

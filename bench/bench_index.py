"""Indexing figures per corpus: cold index (sync, then embed), no-change re-sync, reopen, one
changed note until it is searchable, and memory.

    .venv/bin/python bench/bench_index.py [--corpora fastapi-en obsidian-tasks tldr] [--out DIR]

Phases inside sync and embed are timed by wrapping kebab's own functions for the run (nothing in
server/ is changed), so the JSON says where the seconds go. The embedding phase is also compared
with the embedder alone on the same texts and batch size, run batch by batch beside it (see
AloneTwin): `embed_phase_over_alone` near 1 means the phase adds little around the model. On a
loaded machine the twin's wall time is noisy; `embed_phase_over_model_calls` (phase over the time
of kebab's own model calls inside it) isolates the overhead, and `twin_over_model_calls` shows the
noise. Index dirs go under a temp dir unless --out is given (bench/out/ is git-ignored;
bench_query.py and bench_vectors.py reuse bench/out/index by default).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from _common import corpus_root, emit, log, machine, make_use_embedder, rss, stats_ms
from _instrument import AloneTwin, PhaseTimes, clock, since
from kebab import markdown
from kebab.index import embedding_text, vector_rows
from kebab.model import Chunk
from kebab.workspace import Workspace


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
    phases = {"update_text": PhaseTimes(), "sync": PhaseTimes()}  # summed over the n edits
    for i, path in enumerate(picks):
        original = (root / path).read_text(encoding="utf-8")
        for how, into, total in (("update_text", upd, upd_total), ("sync", syn, syn_total)):
            marker = f"kebabbench{how.replace('_', '')}{i}zq"
            text = f"{original}\n\n## Benchmark edit {i}\n\nThe {marker} marker, added by bench.\n"
            with phases[how].patched(ws):
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
        "update_text_phases_total": phases["update_text"].report(),
        "sync_overrides_phases_total": phases["sync"].report(),
    }


def bench_corpus(name: str, index_dir: Path, emb: Any, edits: int, resyncs: int) -> dict[str, Any]:
    root = corpus_root(name)
    shutil.rmtree(index_dir, ignore_errors=True)
    overrides = {"index_dir": str(index_dir)}
    out: dict[str, Any] = {"corpus": name, "rss_before": rss()}
    start = clock()
    ws = Workspace(root, overrides=overrides, embedder=emb)
    out["open_new_s"] = since(start)["wall_s"]

    log(f"{name}: cold sync")
    phases = PhaseTimes()
    start = clock()
    with phases.patched(ws):
        summary = ws.sync()
    sync = since(start)
    out["files"], out["chunks"] = summary.files, summary.chunks
    out["skipped"], out["warnings"] = len(summary.skipped), len(summary.warnings)
    out["sync"] = {
        **sync,
        "files_per_s": round(summary.files / sync["wall_s"], 1),
        "chunks_per_s": round(summary.chunks / sync["wall_s"], 1),
        "breakdown": phases.breakdown(),
        "phases": phases.report(),
    }

    rows = vector_rows.pending_embeddings(
        ws.index.store, emb.id, 1 << 40
    )  # the texts embed() will take
    pending: dict[str, Chunk] = {}
    for _, content_hash, chunk in rows:
        pending.setdefault(content_hash, chunk)  # each text once, at its first chunk
    twin = AloneTwin(emb, [embedding_text(c) for c in pending.values()])
    log(
        f"{name}: embedding {len(twin.texts)} distinct chunk texts (each batch twice: see AloneTwin)"
    )
    phases = PhaseTimes()
    start = clock()
    with phases.patched(ws), mock.patch.object(emb, "embed", twin.wrap(emb.embed)):
        embedded = ws.embed()
    raw = since(start)
    emb_phase = {
        "wall_s": round(raw["wall_s"] - twin.wall, 3),
        "cpu_s": round(raw["cpu_s"] - twin.cpu, 3),
    }
    out["embed"] = {
        **emb_phase,
        "texts": embedded,
        "chunks_per_s": round(embedded / max(emb_phase["wall_s"], 1e-9), 1),
        "phases": phases.report(),
    }
    out["rss_after_index"] = rss()
    out["cold_total_s"] = round(sync["wall_s"] + emb_phase["wall_s"], 3)
    out["sync_share_of_cold"] = round(sync["wall_s"] / max(out["cold_total_s"], 1e-9), 3)
    out["embed_alone"] = {
        "wall_s": round(twin.wall, 3),
        "cpu_s": round(twin.cpu, 3),
        "batch_size": ws.cfg.embed.batch_size,
        "batches": twin.calls,
        "texts_match_kebab_batches": twin.mismatches == 0 and twin.offset == len(twin.texts),
        "chunks_per_s": round(len(twin.texts) / max(twin.wall, 1e-9), 1),
    }
    out["embed_phase_over_alone"] = round(emb_phase["wall_s"] / max(twin.wall, 1e-9), 3)
    model = phases.seconds["embedder.embed"]
    out["embed_phase_over_alone_cpu"] = round(emb_phase["cpu_s"] / max(twin.cpu, 1e-9), 3)
    out["embed_phase_over_model_calls"] = round(emb_phase["wall_s"] / max(model, 1e-9), 3)
    out["twin_over_model_calls"] = round(twin.wall / max(model, 1e-9), 3)

    log(f"{name}: no-change re-sync x{resyncs}")
    times = []
    for _ in range(resyncs):
        phases = PhaseTimes()
        start = clock()
        with phases.patched(ws):
            again = ws.sync()
        times.append(since(start)["wall_s"])
    out["resync_nochange"] = {
        "wall_s": times,
        "min_s": min(times),
        "unchanged": again.unchanged,
        "changed": again.added + again.updated + again.deleted,
        "breakdown_last": phases.breakdown(),
    }

    log(f"{name}: reopen the index")
    ws.close()
    start = clock()
    ws = Workspace(root, overrides=overrides, embedder=emb)
    out["reopen_s"] = since(start)["wall_s"]
    start = clock()
    ws.sync()
    out["first_sync_after_reopen_s"] = since(start)["wall_s"]

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
    t = time.perf_counter()
    markdown.parse("warm-up.md", "# Warm up\n\nThe parser's lazy setup (token counter).\n")
    result["parser_first_call_s"] = round(time.perf_counter() - t, 3)  # paid once per process
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

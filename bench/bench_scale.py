"""Scale: build time, index size, memory and query latency as the workspace grows (issue 6).

    .venv/bin/python bench/bench_scale.py [--sizes 1000 10000 100000] [--with-300k] [--no-docs]

Notes are synthetic, written to a temp dir (never to the repo): a title and an intro paragraph,
then 2-6 `##` sections of 1-3 paragraphs, all drawn at random (seeded) from a pool of top-level
paragraphs and headings of the corpora under /work/shared/corpora. Each size (nominal chunk
count) is built in a fresh subprocess, so its memory is its own. Vectors: embedding 100k texts
with the real USE model would take hours here, so each pool paragraph is embedded once with the
real model (cached in bench/out/) and a chunk's vector is the normalised mean of its paragraphs'
real vectors; the real model's throughput on a sample of chunk texts gives the extrapolated real
embedding time. Unit vectors (one per sentence of a passage, several per chunk) get a fixed
pseudo-random vector per text: their values do not change what is measured here (storage, memory,
the cost of scoring them at query time), and the real model would need hours for them. Queries (section headings and paragraph fragments) are embedded with the real
model, as in kebab; "hybrid during fill" searches while ws.embed() runs in a thread, as in the
server. JSON on stdout; the plot goes to bench/out/scale.png and docs/scale.png (matplotlib).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

from _common import CORPORA, OUT, REPO, emit, log, machine, make_use_embedder, stats_ms
from _instrument import clock, since
from kebab import markdown
from kebab.embed import normalise
from kebab.index import embedding_text
from kebab.index.vectors import EXACT_BELOW
from kebab.model import SearchMode
from kebab.workspace import Workspace

MODES: tuple[SearchMode, ...] = ("lexical", "vector", "hybrid")
VECTORS_NOTE = "real USE vectors of source paragraphs, averaged per chunk"
GOAL_RSS_MIB = 500e6 / 2**20  # 500 MB
CAVEATS = [
    "build times are not a real-model build: vectors are " + VECTORS_NOTE + "; "
    "build_with_real_model_extrapolated_s adds the real model's time at the sampled throughput",
    "hybrid_during_fill: the paragraph-mean embedder holds no model lock; with the real model a "
    "query's embedding may also wait for the batch in flight (real_model_batch_ms)",
    "rss: VmRSS of a fresh process per size, with the USE model loaded (as in the server)",
]
_BLANK = re.compile(r"\n[ \t]*\n")


def load_pool(size: int, seed: int) -> dict[str, list[str]]:
    """Top-level paragraphs (60-700 chars, up to size/corpora per corpus), headings and titles."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table").use(front_matter_plugin)
    corpora = sorted(p for p in CORPORA.iterdir() if p.is_dir())
    paras: list[str] = []
    heads: set[str] = set()
    titles: set[str] = set()
    for corpus in corpora:
        found: set[str] = set()
        for path in sorted(corpus.rglob("*.md")):
            lines = markdown.normalise_newlines(path.read_text(errors="replace")).split("\n")
            toks = md.parse("\n".join(lines))
            for i, tok in enumerate(toks):
                if tok.level != 0 or tok.map is None:
                    continue
                if tok.type == "heading_open":
                    text = markdown.clean_heading(toks[i + 1].content)
                    if 3 <= len(text) <= 80:
                        (titles if tok.tag == "h1" else heads).add(text)
                elif tok.type == "paragraph_open":
                    p = "\n".join(lines[tok.map[0] : tok.map[1]]).strip()
                    if 60 <= len(p) <= 700 and not re.search(r"\{\*|^///|^<|^\||^!\[", p, re.M):
                        found.add(p)
        paras += random.Random(seed).sample(sorted(found), min(len(found), size // len(corpora)))
    return {"paragraphs": paras, "headings": sorted(heads), "titles": sorted(titles)}


def _key(paragraph: str) -> str:
    return markdown.plain_text(paragraph).strip()  # as the paragraph appears in embedding_text


def pool_vectors(emb: Any, paras: list[str], batch: int) -> np.ndarray:
    """Real USE vectors of the pool paragraphs, cached in bench/out/ by the pool's hash."""
    digest = hashlib.sha1("\x1e".join([emb.id, *paras]).encode()).hexdigest()[:12]
    cache = OUT / f"scale_pool_{digest}.npy"
    if not cache.is_file():
        log(f"embedding {len(paras)} pool paragraphs with the real model (cached in {cache})")
        keys = [_key(p) for p in paras]
        vecs = [emb.embed(keys[i : i + batch]) for i in range(0, len(keys), batch)]
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, np.concatenate(vecs))
    return np.load(cache)


class ParagraphMeanEmbedder:
    """kebab's Embedder protocol: a chunk's vector is the normalised mean of the real USE vectors
    of the pool paragraphs it contains; text with no known paragraph goes to the real model."""

    backend = "bench"
    id = "use-multilingual-v3-paragraph-mean"
    dim = 512

    def __init__(self, real: Any, paras: list[str], vecs: np.ndarray) -> None:
        self.real = real
        self.known = {_key(p): v for p, v in zip(paras, vecs, strict=True)}
        self.fallback: dict[str, int] = {}  # texts sent to the real model, per thread name

    def preload(self) -> None:
        self.real.preload()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        unknown: list[int] = []
        for i, text in enumerate(texts):
            vecs = [self.known[p] for p in map(str.strip, _BLANK.split(text)) if p in self.known]
            if vecs:
                out[i] = np.mean(vecs, axis=0)
            elif "\n" in text:  # a unit: "heading path\nsentence" (see the module docstring)
                seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
                out[i] = np.random.default_rng(seed).standard_normal(self.dim)
            else:
                unknown.append(i)
        if unknown:
            name = threading.current_thread().name
            self.fallback[name] = self.fallback.get(name, 0) + len(unknown)
            out[unknown] = self.real.embed([texts[i] for i in unknown])
        return normalise(out)


def write_notes(root: Path, pool: dict[str, list[str]], chunks: int, seed: int) -> dict[str, Any]:
    """Notes until their expected chunk count (intro + one per section) reaches `chunks`."""
    rng = random.Random(seed)
    paras, heads, titles = pool["paragraphs"], pool["headings"], pool["titles"]
    used_p: set[int] = set()
    used_h: set[int] = set()
    expected = notes = draws = 0
    while expected < chunks:
        picks = [rng.randrange(len(paras))]
        parts = [f"# {rng.choice(titles)}", paras[picks[0]]]
        sections = rng.randint(2, 6)
        for _ in range(sections):
            h = rng.randrange(len(heads))
            used_h.add(h)
            new = [rng.randrange(len(paras)) for _ in range(rng.randint(1, 3))]
            picks += new
            parts += [f"## {heads[h]}", *(paras[j] for j in new)]
        used_p.update(picks)
        draws += len(picks)
        path = root / f"d{notes // 500:03d}" / f"note-{notes:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        expected += 1 + sections
        notes += 1
    return {"notes": notes, "paragraph_draws": draws, "distinct_paragraphs": len(used_p),
            "used_p": sorted(used_p), "used_h": sorted(used_h)}  # fmt: skip


def query_set(pool: dict[str, list[str]], gen: dict[str, Any], n: int, seed: int) -> list[str]:
    """Half section headings (2+ words), half 5-9 word fragments of paragraphs in the notes."""
    rng = random.Random(seed)
    heads = [pool["headings"][i] for i in gen["used_h"] if " " in pool["headings"][i]]
    long = [w for i in gen["used_p"] if len(w := pool["paragraphs"][i].split()) >= 12]
    out = rng.sample(heads, min(len(heads), n // 2))
    for words in rng.sample(long, min(len(long), n - len(out))):
        start = rng.randrange(len(words) - 9)
        out.append(" ".join(words[start : start + rng.randint(5, 9)]))
    return out


def n_vectors(ws: Workspace) -> int:
    return len(ws.index.vectors) if ws.index.vectors is not None else 0


def disk_mib(d: Path) -> dict[str, float]:
    parts = {"sqlite": d.glob("kebab.sqlite*"), "tantivy": (d / "lexical").rglob("*"),
             "usearch": d.glob("vectors*.usearch")}  # fmt: skip
    out = {k: sum(f.stat().st_size for f in fs if f.is_file()) / 2**20 for k, fs in parts.items()}
    return {k: round(v, 1) for k, v in {**out, "total": sum(out.values())}.items()}


def mem() -> dict[str, float]:
    """VmRSS and its peak VmHWM in MiB (ru_maxrss would carry the parent's peak over exec)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {
        f"{k.lower()}_mib": round(int(status[k].split()[0]) / 1024, 1) for k in ("VmRSS", "VmHWM")
    }


def fill_while_searching(ws: Workspace, queries: list[str], gap_s: float) -> dict[str, Any]:
    """ws.embed() in a thread (as the server runs it) while hybrid searches run every gap_s."""
    fill: dict[str, Any] = {}

    def work() -> None:
        start = clock()
        fill["texts"] = ws.embed()
        fill["wall_s"] = since(start)["wall_s"]

    thread = threading.Thread(target=work, name="vector-fill")
    thread.start()
    lat: list[float] = []
    seen: list[int] = []
    while thread.is_alive():
        seen.append(n_vectors(ws))
        t = time.perf_counter()
        ws.search(queries[len(lat) % len(queries)], mode="hybrid")
        lat.append(time.perf_counter() - t)
        thread.join(gap_s)
    fill.update(
        vectors=n_vectors(ws), queries_meanwhile=len(lat), query_s_meanwhile=round(sum(lat), 3)
    )
    s = np.asarray(seen or [0])
    seen_at = {"min": int(s.min()), "p50": int(np.median(s)), "max": int(s.max())}
    return {"fill": fill, "during": {**stats_ms(lat), "vectors_seen": seen_at}}


def one_size(args: argparse.Namespace) -> dict[str, Any]:
    """Build one synthetic workspace of --one chunks and measure it (runs in its own process)."""
    out: dict[str, Any] = {"chunks_target": args.one, "vectors": VECTORS_NOTE}
    rss = {"start": mem()}
    pool = json.loads(Path(args.pool_file).read_text())
    real, _ = make_use_embedder()
    emb = ParagraphMeanEmbedder(real, pool["paragraphs"], np.load(args.vectors_file))
    rss["model_and_pool_loaded"] = mem()
    with tempfile.TemporaryDirectory(prefix="kebab-scale-") as tmp:
        root, index_dir = Path(tmp) / "notes", Path(tmp) / "index"
        log(f"{args.one}: writing notes")
        gen = write_notes(root, pool, args.one, args.seed)
        queries = query_set(pool, gen, args.queries, args.seed + 1)
        out.update({k: gen[k] for k in ("notes", "paragraph_draws", "distinct_paragraphs")})
        ws = Workspace(root, overrides={"index_dir": str(index_dir)}, embedder=emb)
        log(f"{args.one}: sync of {gen['notes']} notes")
        start = clock()
        out["chunks"] = ws.sync().chunks
        out["sync"] = since(start)
        rss["after_sync"] = mem()
        for q in queries[:10]:  # warm-up: Tantivy searcher, the real model on a query
            ws.search(q, mode="lexical")
        real.embed([queries[0]])
        log(f"{args.one}: vector fill, a hybrid search every {args.fill_gap_ms} ms meanwhile")
        filled = fill_while_searching(ws, queries, args.fill_gap_ms / 1000)
        out["vector_fill"] = {
            **filled["fill"],
            "fallback_texts": emb.fallback.get("vector-fill", 0),
        }
        out["hybrid_during_fill"] = filled["during"]
        rss["after_build"] = mem()
        log(f"{args.one}: {len(queries)} queries x {args.reps} reps per mode")
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for rep in range(args.reps + 1):  # the first round is a warm-up
            for q in queries:
                for mode in MODES:  # interleaved, so background load hits all modes alike
                    t = time.perf_counter()
                    ws.search(q, mode=mode)
                    if rep:
                        times[mode].append(time.perf_counter() - t)
        out["queries"] = {"n": len(queries), "reps": args.reps}
        out["vector_search"] = "exact" if n_vectors(ws) < EXACT_BELOW else "hnsw"
        out["search"] = {m: stats_ms(v) for m, v in times.items()}
        # kebab/related at notes spread over the workspace: from stored vectors, no embedding
        related = []
        for n in range(0, gen["notes"], max(1, gen["notes"] // 100)):
            path = f"d{n // 500:03d}/note-{n:06d}.md"  # as write_notes names them
            t = time.perf_counter()
            ws.related(path, 3, 10)
            related.append(time.perf_counter() - t)
        out["related"] = stats_ms(related[5:])
        rss["after_queries"] = mem()
        ws.close()
        out["disk_mib"] = disk_mib(index_dir)
    out["rss"] = rss
    return out


def throughput(emb: Any, pool: dict[str, list[str]], n: int, batch: int) -> dict[str, Any]:
    """The real model on `n` chunk texts of notes made like the benchmark's (seed apart)."""
    with tempfile.TemporaryDirectory(prefix="kebab-scale-sample-") as tmp:
        write_notes(Path(tmp), pool, n, seed=12345)
        notes = sorted(Path(tmp).rglob("*.md"))
        chunks = [c for p in notes for c in markdown.parse(p.name, p.read_text()).chunks]
    texts = [embedding_text(c) for c in chunks[:n]]
    t = time.perf_counter()
    for i in range(0, len(texts), batch):
        emb.embed(texts[i : i + batch])
    secs = time.perf_counter() - t
    return {"texts": len(texts), "batch": batch, "s": round(secs, 2),
            "texts_per_s": round(len(texts) / secs, 1)}  # fmt: skip


def plot(rows: list[dict[str, Any]], paths: list[Path]) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        msg = "matplotlib is not installed (.venv/bin/pip install matplotlib): no PNG written"
        log(msg)
        return msg
    x = [r["chunks"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for mode in MODES:
        ax1.plot(x, [r["search"][mode]["p50_ms"] for r in rows], "o-", label=mode)
    during = [r["hybrid_during_fill"] for r in rows]  # too few searches: not drawn
    ax1.plot(x, [d["p50_ms"] if d["n"] >= 10 else np.nan for d in during], "o--",
             label="hybrid during vector fill")  # fmt: skip
    ax1.axhline(15, color="grey", ls=":", label="goal: hybrid < 15 ms")
    ax1.set(xscale="log", xlabel="chunks", ylabel="query p50 (ms)", title="Query latency")
    ax1.legend(fontsize=8)
    ax2.plot(x, [r["rss"]["after_build"]["vmrss_mib"] for r in rows], "o-", label="after build")
    ax2.plot(x, [r["rss"]["model_and_pool_loaded"]["vmrss_mib"] for r in rows], "o--",
             label="before the index (model loaded)")  # fmt: skip
    ax2.axhline(GOAL_RSS_MIB, color="grey", ls=":", label="goal: < 500 MB (476.8 MiB)")
    ax2.set(xscale="log", xlabel="chunks", ylabel="VmRSS (MiB)", title="Memory", ylim=(0, None))
    ax2.legend(fontsize=8)
    fig.suptitle("kebab at scale (synthetic notes; " + VECTORS_NOTE + ")", fontsize=9)
    fig.tight_layout()
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=110)
    return ", ".join(str(p) for p in paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--with-300k", action="store_true", help="add 300k chunks (long)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pool", type=int, default=8000, help="source paragraphs (real vectors)")
    ap.add_argument("--sample", type=int, default=256, help="chunk texts for model throughput")
    ap.add_argument("--fill-gap-ms", type=float, default=50, help="pause between fill queries")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-docs", action="store_true", help="don't write docs/scale.png")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child: one size
    ap.add_argument("--pool-file", help=argparse.SUPPRESS)
    ap.add_argument("--vectors-file", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        emit(one_size(args))
        return
    sizes = sorted(set(args.sizes) | ({300_000} if args.with_300k else set()))
    result: dict[str, Any] = {"bench": "scale", "machine": machine(), "vectors": VECTORS_NOTE,
                              "caveats": CAVEATS}  # fmt: skip
    git = ["git", "-C", str(REPO), "status", "--porcelain", "server"]
    dirty = subprocess.run(git, capture_output=True, text=True, check=False).stdout.splitlines()
    result["server_uncommitted"] = [line[3:] for line in dirty]  # measured as the tree stands
    emb, load_s = make_use_embedder()
    batch = 64  # EmbedConfig.batch_size
    log("reading the corpora's paragraphs")
    pool = load_pool(args.pool, args.seed)
    vecs = pool_vectors(emb, pool["paragraphs"], batch)
    result["pool"] = {k: len(v) for k, v in pool.items()}
    log(f"real model throughput on {args.sample} chunk texts")
    model = {"id": emb.id, "load_s": load_s, **throughput(emb, pool, args.sample, batch)}
    result["real_model"] = model
    rate = model["texts_per_s"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kebab-scale-pool-") as tmp:
        pool_file, vectors_file = Path(tmp) / "pool.json", Path(tmp) / "vectors.npy"
        pool_file.write_text(json.dumps(pool))
        np.save(vectors_file, vecs)
        for n in sizes:
            cmd = [sys.executable, __file__, *sys.argv[1:], "--one", str(n),
                   "--pool-file", str(pool_file), "--vectors-file", str(vectors_file)]  # fmt: skip
            t = time.perf_counter()
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
            if proc.returncode != 0:
                rows.append({"chunks_target": n, "error": f"exit {proc.returncode}"})
                continue
            row = json.loads(proc.stdout)
            row["process_s"] = round(time.perf_counter() - t, 1)
            real_s = row["vector_fill"]["texts"] / rate  # + the index work around the vectors:
            build_s = row["sync"]["wall_s"] + row["vector_fill"]["wall_s"] + real_s
            row["real_embed_extrapolated_s"] = round(real_s, 1)
            row["build_with_real_model_extrapolated_s"] = round(build_s, 1)
            row["hybrid_during_fill"]["real_model_batch_ms"] = round(batch / rate * 1000)
            rows.append(row)
    result["sizes"] = rows
    ok = [r for r in rows if "error" not in r]
    result["table"] = [table_row(r) for r in ok]
    for r in (r for r in ok if r["chunks_target"] == 100_000):
        hybrid, mem = r["search"]["hybrid"]["p50_ms"], r["rss"]["after_build"]["vmrss_mib"]
        result["goals_at_100k"] = {"hybrid_p50_ms": hybrid, "hybrid_p50_under_15ms": hybrid < 15,
                                   "vmrss_after_build_mib": mem,
                                   "vmrss_under_500MB_(476.8MiB)": mem < GOAL_RSS_MIB}  # fmt: skip
    paths = [OUT / "scale.png"] + ([] if args.no_docs else [REPO / "docs" / "scale.png"])
    result["plot"] = plot(ok, paths) if ok else "no sizes succeeded"
    result["loadavg_end"] = machine()["loadavg"]
    emit(result)


def table_row(r: dict[str, Any]) -> dict[str, Any]:
    """One line per size: the headline figures."""
    fill, p5095 = r["hybrid_during_fill"], ("p50_ms", "p95_ms")
    return {"chunks": r["chunks"], "sync_s": r["sync"]["wall_s"],
            "vector_fill_s": r["vector_fill"]["wall_s"],
            "real_embed_extrapolated_s": r["real_embed_extrapolated_s"],
            **{f"disk_{k}_mib": v for k, v in r["disk_mib"].items()},
            "vmrss_after_build_mib": r["rss"]["after_build"]["vmrss_mib"],
            **{f"{m}_p50_p95_ms": [r["search"][m][p] for p in p5095] for m in MODES},
            "hybrid_during_fill_p50_p95_ms": [fill.get(p) for p in p5095],
            "vectors_during_fill_p50": fill["vectors_seen"]["p50"]}  # fmt: skip


if __name__ == "__main__":
    main()

"""Helpers shared by the bench scripts: corpora, timing, memory, machine facts, JSON output.

Every script prints one JSON object on stdout and its progress on stderr. Figures are taken on a
shared 2-core machine, so compare ratios measured side by side in one run, not absolute numbers
across runs. Nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("KEBAB_BENCH_CORPORA", REPO.parent / "shared" / "corpora"))
OUT = REPO / "bench" / "out"  # git-ignored
QUESTIONS = REPO / "fixtures" / "eval" / "questions.jsonl"
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def corpus_root(name: str) -> Path:
    root = CORPORA / name
    if not root.is_dir():
        raise SystemExit(f"no corpus {name!r} under {CORPORA}")
    return root


def questions(corpus: str | None = None) -> list[str]:
    """Question texts of fixtures/eval for one corpus (all corpora when None)."""
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [r["question"] for r in rows if corpus is None or r["corpus"] == corpus]


def first_heading(path: Path) -> str | None:
    in_fence = False
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            return m.group(1)
    return None


def rss() -> dict[str, float]:
    """Peak (ru_maxrss) and current (VmRSS) resident memory of this process, in MiB."""
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"ru_maxrss_mib": round(peak, 1), "vmrss_mib": round(current, 1)}


def stats_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / mean / min / max of durations given in seconds, as milliseconds."""
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds, dtype=np.float64) * 1000
    return {
        "n": len(ms),
        "p50_ms": _r(np.percentile(ms, 50)),
        "p95_ms": _r(np.percentile(ms, 95)),
        "mean_ms": _r(ms.mean()),
        "min_ms": _r(ms.min()),
        "max_ms": _r(ms.max()),
    }


def _r(x: float) -> float:
    return round(float(x), 3)


@contextmanager
def timed(into: list[float]) -> Iterator[None]:
    t = time.perf_counter()
    try:
        yield
    finally:
        into.append(time.perf_counter() - t)


def machine() -> dict[str, Any]:
    """Facts that explain a run's numbers: cores, load (others share the box), versions."""
    import tantivy  # noqa: F401  (version lookup below)
    import usearch

    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        rev = ""
    from importlib.metadata import version

    return {
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "usearch": usearch.__version__,
        "tantivy": version("tantivy"),
        "git": rev,
    }


def make_use_embedder() -> tuple[Any, float]:
    """kebab's default embedder, loaded and warmed once; returns (embedder, load seconds)."""
    from kebab.config import EmbedConfig
    from kebab.embed.choose import make_embedder

    emb = make_embedder(EmbedConfig())
    t = time.perf_counter()
    emb.embed(["warm up the model"])
    return emb, round(time.perf_counter() - t, 3)

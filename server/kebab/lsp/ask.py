"""`kebab/ask`, `kebab/search`, `kebab/related`, `kebab/status`, and the commands `kebab.ask`,
`kebab.reindex` and `kebab.generateNote`.

An answer streams as `$/progress` (`answering`); the response is the whole `answer.v1`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from kebab.errors import KebabError
from kebab.lsp import answering
from kebab.lsp import params as params_mod
from kebab.lsp.core import KebabServer, follow_request_cancel, target
from kebab.lsp.folders import Folder
from kebab.lsp.searching import search_folders
from kebab.model import AskRequest, Hit, Turn, citation_range, to_builtins

ASK, SEARCH, STATUS, RELATED = "kebab/ask", "kebab/search", "kebab/status", "kebab/related"
ASK_COMMAND, REINDEX_COMMAND = "kebab.ask", "kebab.reindex"
GENERATE_COMMAND = "kebab.generateNote"


async def ask(ls: KebabServer, raw: Any) -> Any:
    """`kebab/ask`: answer.v1, streamed on the request's workDoneToken."""
    p = params_mod.ask_params(raw)
    folder, path = target(ls, p.uri, ASK)
    answer_ = await answering.answer(ls, folder, request_of(p, path), p.work_done_token)
    return to_builtins(answer_)


async def ask_command(ls: KebabServer, *args: Any) -> Any:
    """`kebab.ask` with arguments `[question]` or `[{params}]`."""
    follow_request_cancel(ls)
    if len(args) != 1:
        raise JsonRpcInvalidParams(
            f"{ASK_COMMAND} takes one argument: a question or the {ASK} params"
        )
    raw = args[0] if not isinstance(args[0], str) else {"question": args[0]}
    return await ask(ls, raw)


async def search(ls: KebabServer, raw: Any) -> Any:
    """`kebab/search`: {hits: [...]} over one folder (`uri`) or all of them, best first."""
    p = params_mod.search_params(raw)
    folders = [target(ls, p.uri, SEARCH)[0]] if p.uri else list(ls.folders)
    found = await search_folders(
        folders, p.query, p.k, p.mode, p.path_glob, [*([p.tag] if p.tag else []), *p.tags], p.where
    )
    return {"hits": [hit_json(f, h) for f, h in found]}


async def related(ls: KebabServer, raw: Any) -> Any:
    """`kebab/related`: {hits: [...]}, the passages elsewhere closest in meaning to the section
    under `position` in `uri`, from stored vectors, best first."""
    p = params_mod.related_params(raw)
    folder, path = target(ls, p.uri, RELATED)
    if path is None:
        raise JsonRpcInvalidParams(f"{RELATED}: `uri` must name a note, not a folder")
    with folder.answering():
        if folder.indexer is not None:
            await folder.indexer.flush()
        async with folder.use() as ws:
            hits = await asyncio.to_thread(ws.related, path, p.position.line + 1, p.k, p.same_note)
    return {"hits": [hit_json(folder, h) for h in hits]}


async def status(ls: KebabServer, raw: Any = None) -> Any:
    """`kebab/status`: index state per folder, counts, models, skipped files with reasons."""
    folders = []
    for folder in ls.folders:
        item: dict[str, Any] = {
            "uri": folder.uri,
            "root": str(folder.root),
            "state": folder.state,
            "progress": {"phase": folder.phase, "done": folder.done, "total": folder.total},
            "error": folder.error,
        }
        if folder.ws is not None:
            ws = folder.ws
            item.update(await asyncio.to_thread(ws.status))
            item["llm"] = {
                "backend": ws.llm.backend,
                "id": ws.llm.id,
                "endpoint": ws.cfg.llm.endpoint or None,
            }
        folders.append(item)
    states = {f["state"] for f in folders}
    state = "indexing" if states & {"opening", "indexing"} else "ready" if folders else "idle"
    return {
        "state": state,
        "folders": folders,
        "files": sum(int(f.get("files", 0)) for f in folders),
        "chunks": sum(int(f.get("chunks", 0)) for f in folders),
    }


async def reindex_command(ls: KebabServer, *args: Any) -> Any:
    """`kebab.reindex` (optional argument: a folder or note uri): sync and embed in the background."""
    uri = args[0] if args and isinstance(args[0], str) else None
    chosen = [target(ls, uri, REINDEX_COMMAND)[0]] if uri else list(ls.folders)
    for folder in chosen:
        if folder.indexer is not None:
            folder.indexer.build(announce=True)
    return {"reindexing": [str(f.root) for f in chosen]}


async def generate_command(ls: KebabServer, *args: Any) -> Any:
    """`kebab.generateNote` with {topic, uri[, overwrite]}: write a new note on the topic at `uri`,
    every claim footnoted to its sources; returns `note.v1` (written false on a refusal)."""
    follow_request_cancel(ls)
    if len(args) == 1 and isinstance(args[0], dict):
        given = args[0]
    else:
        given = dict(zip(("topic", "uri", "overwrite"), args, strict=False))
    topic, uri, overwrite = given.get("topic"), given.get("uri"), given.get("overwrite", False)
    if (
        not isinstance(topic, str)
        or not topic.strip()
        or not isinstance(uri, str)
        or not isinstance(overwrite, bool)
    ):
        raise JsonRpcInvalidParams(
            f"{GENERATE_COMMAND} takes {{topic, uri, overwrite?}}: the "
            "topic text, the new note's file uri, and true to replace it"
        )
    folder, path = target(ls, uri, GENERATE_COMMAND)
    if path is None:
        raise JsonRpcInvalidParams(f"{GENERATE_COMMAND}: `uri` must name a note file")
    async with folder.use() as ws:
        try:
            note = await ws.generate_note(topic.strip(), path, overwrite=overwrite)
        except KebabError as e:
            raise JsonRpcInvalidParams(f"{GENERATE_COMMAND}: {e}") from None
    return to_builtins(note)


def request_of(p: params_mod.AskParams, path: str | None) -> AskRequest:
    return AskRequest(
        question=p.question,
        k=p.k,
        mode=p.mode,
        history=[Turn(t.question, t.answer) for t in p.history],
        conversation=p.conversation,
        path=path,
        temperature=p.temperature,
        seed=p.seed,
        explain=p.explain,
        path_glob=p.path_glob,
        tags=p.tags,
        where=p.where,
    )


def hit_json(folder: Folder, h: Hit) -> dict[str, Any]:
    return {
        "path": h.path,
        "uri": (folder.root / h.path).as_uri(),
        "heading_path": h.heading_path,
        "range": to_builtins(citation_range(h.start_line, h.end_line)),
        "score": h.score,
        "text": h.text,
        "chunk_id": h.chunk_id,
        "content_hash": h.content_hash,
        "start_line": h.start_line,
        "end_line": h.end_line,
        "title": h.title,
        "lexical_score": h.lexical_score,
        "vector_score": h.vector_score,
        "linked": h.linked,
    }

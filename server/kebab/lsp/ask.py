"""`kebab/ask`, `kebab/search`, `kebab/status`, and the commands `kebab.ask` and `kebab.reindex`.

An answer streams as `$/progress` on the request's workDoneToken (or a token the server creates):
begin, then reports whose messages concatenate to the answer text, then end. The response is the
whole `answer.v1`. `$/cancelRequest` stops the answer and the request fails with -32800;
`window/workDoneProgress/cancel` stops it too, and the request returns the cancelled answer.
Either way the engine has written the answers row.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcRequestCancelled

from kebab import footnotes
from kebab.errors import Cancelled, KebabError
from kebab.lsp import params as params_mod
from kebab.lsp import progress
from kebab.lsp import text as textmod
from kebab.lsp.folders import Folder
from kebab.lsp.server import KebabServer
from kebab.model import (
    Answer,
    AskRequest,
    Hit,
    IndexBuilding,
    SearchMode,
    Turn,
    citation_range,
    to_builtins,
)
from kebab.paths import resolve_inside
from kebab.workspace import Workspace

ASK, SEARCH, STATUS, RELATED = "kebab/ask", "kebab/search", "kebab/status", "kebab/related"
ASK_COMMAND, REINDEX_COMMAND = "kebab.ask", "kebab.reindex"
GENERATE_COMMAND = "kebab.generateNote"


def register(server: KebabServer) -> None:
    server.feature(ASK)(ask)
    server.feature(SEARCH)(search)
    server.feature(STATUS)(status)
    server.feature(RELATED)(related)
    server.command(ASK_COMMAND)(ask_command)
    server.command(REINDEX_COMMAND)(reindex_command)
    server.command(GENERATE_COMMAND)(generate_command)


async def ask(ls: KebabServer, raw: Any) -> Any:
    """`kebab/ask`: answer.v1, streamed on the request's workDoneToken."""
    p = params_mod.ask_params(raw)
    folder, path = target(ls, p.uri, ASK)
    answer_ = await answer(ls, folder, request_of(p, path), p.work_done_token)
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


async def answer(
    ls: KebabServer, folder: Folder, request: AskRequest, token: types.ProgressToken | None
) -> Answer:
    """One ask with its progress: the answer (the cancelled one when its progress was cancelled)."""
    task = asyncio.current_task()
    assert task is not None
    by_progress = False

    def cancel_from_progress() -> None:
        nonlocal by_progress
        by_progress = True
        task.cancel()

    if token is None:
        token = await progress.server_token(ls, "kebab-ask")
    work = progress.WorkDone(ls, token, cancel_from_progress) if token is not None else None
    stream = progress.AnswerStream(work) if work is not None else None
    try:
        if work is not None:
            work.begin("kebab", folder.status_line(), cancellable=True)
        with folder.answering():  # made from what is indexed now: indexing waits, not the answer
            if folder.indexer is not None:
                await folder.indexer.flush()
            async with folder.use() as ws:
                try:
                    result = await ws.ask(request, stream.write if stream else None)
                except Cancelled as c:
                    if not by_progress:
                        raise
                    task.uncancel()
                    result = c.answer
                result.index_building = await building(folder, ws, result.question)
        if request.path is not None and result.grounded:
            await asyncio.to_thread(for_note, ls, folder, request.path, result)
        if stream is not None:
            stream.finish(outcome(result))
        return result
    except asyncio.CancelledError:
        if stream is not None:
            stream.finish("cancelled")
        if by_progress:
            task.uncancel()
            raise JsonRpcRequestCancelled("cancelled before the answer started") from None
        raise
    except KebabError as e:
        if stream is not None:
            stream.finish("failed")
        raise JsonRpcInternalError(str(e)) from None
    finally:
        if work is not None:
            work.close()


async def building(folder: Folder, ws: Workspace, question: str) -> IndexBuilding | None:
    """What the answer lacks while the index is still being built: notes not read yet (the
    vector phases are counted as pending vectors), in the question's language."""
    reading = folder.reading and folder.state in ("opening", "indexing")
    counted = reading and folder.phase == "indexing" and folder.total
    done, total = (folder.done, folder.total) if counted else (None, None)
    return await asyncio.to_thread(ws.building, reading, done, total, question)


def for_note(ls: KebabServer, folder: Folder, path: str, result: Answer) -> None:
    """The answer's `markdown` as Insert would write it into the note it was asked from (the
    editor's text of it): the numbers the panel and the float show are the labels it gets."""
    snap = textmod.read_snapshot(ls, textmod.uri_of(folder.root / path))
    if snap is not None:
        style = folder.cfg.footnote_labels if folder.cfg else "kb"
        rendered = footnotes.for_note(
            result.answer, result.citations, snap.text, path, style, all_defs=True
        )
        result.markdown = footnotes.joined(*rendered)


async def search(ls: KebabServer, raw: Any) -> Any:
    """`kebab/search`: {hits: [...]} over one folder (`uri`) or all of them, best first."""
    p = params_mod.search_params(raw)
    folders = [target(ls, p.uri, SEARCH)[0]] if p.uri else list(ls.folders)
    found = await search_folders(folders, p.query, p.k, p.mode, p.path_glob, p.tag)
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


async def search_folders(
    folders: list[Folder],
    query: str,
    k: int | None,
    mode: SearchMode | None = None,
    path_glob: str | None = None,
    tag: str | None = None,
) -> list[tuple[Folder, Hit]]:
    """The best `k` hits over `folders` (each folder's own k when None), best first."""
    found: list[tuple[int, Folder, Hit]] = []
    for folder in folders:
        with folder.answering():
            if folder.indexer is not None:
                await folder.indexer.flush()
            try:
                async with folder.use() as ws:
                    k = k or ws.cfg.search.k
                    hits = await asyncio.to_thread(ws.search, query, k, mode, path_glob, tag)
            except KebabError as e:
                raise JsonRpcInternalError(str(e)) from None
        found += [(rank, folder, h) for rank, h in enumerate(hits)]
    # Fused scores are normalised per index, so folders interleave by rank; at equal rank the
    # cosine (the same model in every folder) decides.
    found.sort(key=lambda rfh: (rfh[0], -(rfh[2].vector_score or 0.0)))
    return [(f, h) for _, f, h in found[: k or 10]]


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


def follow_request_cancel(ls: KebabServer) -> None:
    """Let `$/cancelRequest` on a `workspace/executeCommand` stop the command.

    pygls runs a command as a task of its own and cancels only the request's outer future,
    replying -32800 while the command goes on (and would still edit the note); this links them.
    """
    msg_id = ls.protocol.msg_id
    outer = ls.protocol._request_futures.get(msg_id) if msg_id is not None else None
    task = asyncio.current_task()
    if outer is None or task is None:
        return
    loop = asyncio.get_running_loop()
    outer.add_done_callback(
        lambda f: loop.call_soon_threadsafe(task.cancel) if f.cancelled() else None
    )


def target(ls: KebabServer, uri: str | None, method: str) -> tuple[Folder, str | None]:
    """The folder a request is about and the note's workspace-relative path."""
    if uri:
        found = ls.folders.at(uri)
        if found is None:
            root = ls.folders.root_at(uri)
            if root is not None:
                return root, None
            raise JsonRpcInvalidParams(f"{method}: `uri` {uri} is outside every workspace folder")
        folder, path = found
        if path is not None and resolve_inside(folder.root, path) is None:
            raise JsonRpcInvalidParams(
                f"{method}: `uri` {uri} leads outside the workspace folder (a symlink)"
            )
        return found
    folder = ls.folders.first()
    if folder is None:
        raise JsonRpcInternalError("kebab has no workspace folder open: open a folder first")
    return folder, None


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
    )


def outcome(a: Answer) -> str:
    """A few words for the end of the progress."""
    if a.grounded:
        n = len(a.citations)
        return f"answered with {n} citation{'s' if n != 1 else ''}"
    if a.refusal_reason == "cancelled":
        return "cancelled"
    if a.outcome == "closest":
        return f"closest passages: {len(a.candidates)}"
    return a.refusal_text or "not answered"


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
    }

"""One question answered with its `$/progress`, which `kebab/ask`, the `kebab.ask` command and
`kebab.insertAnswer` share.

An answer streams as `$/progress` on the request's workDoneToken (or a token the server creates):
begin, then reports whose messages concatenate to the answer text, then end. `$/cancelRequest`
stops the answer and the request fails with -32800; `window/workDoneProgress/cancel` stops it
too, and the request returns the cancelled answer. Either way the engine has written the answers
row.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer

from kebab import footnotes
from kebab.errors import Cancelled, InvalidParams, KebabError, NothingMatches
from kebab.lsp import progress, words
from kebab.lsp import text as textmod
from kebab.lsp.folders import Folder
from kebab.model import Answer, AskRequest, IndexBuilding
from kebab.workspace import Workspace


async def answer(
    ls: LanguageServer, folder: Folder, request: AskRequest, token: types.ProgressToken | None
) -> Answer:
    """One ask with its progress: the answer (the cancelled one when its progress was cancelled)."""
    task = asyncio.current_task()
    assert task is not None
    by_progress = False

    def cancel_from_progress() -> None:
        nonlocal by_progress
        by_progress = True
        task.cancel()

    said = words.lang_of(request.question)  # the answer's language, before there is one
    if token is None:
        token = await progress.server_token(ls, "kebab-ask")
    work = progress.WorkDone(ls, token, cancel_from_progress) if token is not None else None
    stream = progress.AnswerStream(work) if work is not None else None
    try:
        if work is not None:
            work.begin("kebab", folder.status_line(said), cancellable=True)
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
            stream.finish(words.say(said, "cancelled"))
        if by_progress:
            task.uncancel()
            raise JsonRpcRequestCancelled("cancelled before the answer started") from None
        raise
    except KebabError as e:
        if stream is not None:
            stream.finish(words.say(said, "failed"))
        if isinstance(e, InvalidParams | NothingMatches):  # the request's doing, not kebab's
            raise JsonRpcInvalidParams(str(e)) from None
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


def for_note(ls: LanguageServer, folder: Folder, path: str, result: Answer) -> None:
    """The answer's `markdown` and `citations[].label` as Insert would write them into the note
    it was asked from (the editor's text of it): the labels the panel and the float show."""
    snap = textmod.read_snapshot(ls, textmod.uri_of(folder.root / path))
    if snap is not None:
        style = folder.cfg.footnote_labels if folder.cfg else "kb"
        rendered = footnotes.for_note(
            result.answer, result.citations, snap.text, path, style, all_defs=True
        )
        result.markdown = footnotes.joined(*rendered)
        named = footnotes.labels(result.answer, result.citations, snap.text, path, style)
        for c in result.citations:
            c.label = named.get(c.marker)


def outcome(a: Answer) -> str:
    """A few words for the end of the progress, in the answer's language."""
    if a.grounded:
        n = len(a.citations)
        return words.say(a.lang, "answered", n=n, s="s" if n != 1 else "")
    if a.refusal_reason == "cancelled":
        return words.say(a.lang, "cancelled")
    if a.outcome == "closest":
        return words.say(a.lang, "closest", n=len(a.candidates))
    return a.refusal_text or words.say(a.lang, "not_answered")

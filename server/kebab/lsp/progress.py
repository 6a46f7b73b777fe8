"""`$/progress` the way kebab uses it: answer text streamed as coalesced reports, and indexing.

A progress runs on the request's `workDoneToken`, or on a token the server creates with
`window/workDoneProgress/create` when the client supports that. pygls keeps a cancellation future
per token and never forgets it (a reused token would be cancelled at once), so `WorkDone.close()`
removes it; `window/workDoneProgress/cancel` reaches the caller through `on_cancel`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

REPORT_INTERVAL_S = 0.052  # answer text: at most 20 reports in any second
_CREATE_TIMEOUT_S = 10.0


async def server_token(ls: LanguageServer, prefix: str) -> types.ProgressToken | None:
    """A fresh token the client agreed to show, or None when it does not do progress."""
    if not get_capability(ls.client_capabilities, "window.work_done_progress", False):
        return None
    token = f"{prefix}-{uuid.uuid4().hex[:12]}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), _CREATE_TIMEOUT_S)
    except Exception as e:  # a client may refuse or never answer: go on without progress
        log.info("client did not create progress %s: %s", token, e)
        ls.work_done_progress.tokens.pop(token, None)
        return None
    return token


class WorkDone:
    """One begin → reports → end sequence on one token."""

    def __init__(
        self,
        ls: LanguageServer,
        token: types.ProgressToken,
        on_cancel: Callable[[], None] | None = None,
    ) -> None:
        self.ls = ls
        self.token = token
        self._on_cancel = on_cancel
        self._ended = False

    def begin(
        self,
        title: str,
        message: str | None = None,
        percentage: int | None = None,
        cancellable: bool = False,
    ) -> None:
        tokens: dict[Any, Future[Any]] = self.ls.work_done_progress.tokens
        stale = tokens.get(self.token)
        if stale is not None and stale.done():  # left over from an earlier use of this token
            tokens.pop(self.token, None)
        self.ls.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title=title, message=message, percentage=percentage, cancellable=cancellable
            ),
        )
        future = tokens.get(self.token)
        if future is not None and self._on_cancel is not None:
            loop = asyncio.get_running_loop()
            callback = self._on_cancel
            future.add_done_callback(
                lambda f: loop.call_soon_threadsafe(callback) if f.cancelled() else None
            )

    def report(self, message: str | None = None, percentage: int | None = None) -> None:
        if not self._ended:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )

    def end(self, message: str | None = None) -> None:
        if not self._ended:
            self._ended = True
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))

    def close(self) -> None:
        """Forget the token (pygls never does); ends the progress first if nobody did."""
        self.end("stopped")
        self.ls.work_done_progress.tokens.pop(self.token, None)


class AnswerStream:
    """Answer text as `report` messages, coalesced: concatenated, they give the answer text."""

    def __init__(self, progress: WorkDone, interval: float = REPORT_INTERVAL_S) -> None:
        self.progress = progress
        self.interval = interval
        self.reports = 0
        self._pieces: list[str] = []
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def write(self, piece: str) -> None:
        """Queue a piece of answer text (the pipeline's `on_text`)."""
        if not piece:
            return
        self._pieces.append(piece)
        if self._timer is None:
            delay = max(0.0, self._last + self.interval - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(delay, self._flush)

    def finish(self, outcome: str) -> None:
        """Send what is queued, then `end` with a short outcome."""
        if self._timer is not None:
            self._timer.cancel()
        self._flush()
        self.progress.end(outcome)

    def _flush(self) -> None:
        self._timer = None
        if not self._pieces:
            return
        text = "".join(self._pieces)
        self._pieces.clear()
        self._last = time.monotonic()
        self.reports += 1
        self.progress.report(message=text)


class Throttled:
    """Progress reports from a worker thread, at most a few a second, sent on the event loop."""

    def __init__(
        self, progress: WorkDone, loop: asyncio.AbstractEventLoop, interval: float = 0.2
    ) -> None:
        self.progress = progress
        self.loop = loop
        self.interval = interval
        self._last = 0.0

    def __call__(self, message: str, percentage: int | None, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        self.loop.call_soon_threadsafe(self.progress.report, message, percentage)

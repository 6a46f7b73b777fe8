"""The engine's Workspace as the server runs it: nothing synchronous on the event loop.

The extractive answerer computes its whole answer (embedding every candidate sentence) inside its
async `stream()` before the first piece, which would stall hover and every other request for up
to a second; here it runs in a worker thread. Closing saves vectors, so it runs in a thread too.
(Engine change asked for: `Extractive.stream` and `Workspace.aclose` doing this themselves.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from kebab.workspace import Workspace

if TYPE_CHECKING:
    from kebab.llm import GenerateRequest, LanguageModel


class ServedWorkspace(Workspace):
    _served: LanguageModel | None = None

    @property
    def llm(self) -> LanguageModel:
        if self._served is None:
            model = super().llm
            self._served = OffLoop(model) if model.backend == "extractive" else model
        return self._served

    async def aclose(self) -> None:
        if self._served is not None:
            await self._served.aclose()
        await asyncio.to_thread(self.close)


class OffLoop:
    """A language model whose `stream()` computes synchronously, run in a worker thread."""

    def __init__(self, inner: LanguageModel) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.id = inner.id
        self.context_tokens = inner.context_tokens

    async def stream(self, request: GenerateRequest) -> AsyncIterator[str]:
        for piece in await asyncio.to_thread(_collect, self.inner, request):
            yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()


def _collect(model: LanguageModel, request: GenerateRequest) -> list[str]:
    async def pieces() -> list[str]:
        return [piece async for piece in model.stream(request)]

    return asyncio.run(pieces())

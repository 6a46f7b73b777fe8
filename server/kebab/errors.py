"""One exception hierarchy. Every message says what happened and what to do about it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kebab.model import Answer


class KebabError(Exception):
    """Base of every error kebab raises on purpose; the message is meant for the user."""


class ConfigError(KebabError):
    """A setting is missing or has the wrong type or value."""


class WorkspaceError(KebabError):
    """The workspace root is missing, unreadable, or a path lies outside it."""


class IndexError_(KebabError):
    """The on-disk index cannot be opened or written."""


class EmbedderError(KebabError):
    """An embedding backend failed (down, slow, wrong answer)."""


class LLMError(KebabError):
    """A language-model backend failed; `partial` holds any text that arrived before the fault."""

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


class InvalidParams(KebabError):
    """A request's parameters are wrong; the message names the parameter."""


class NothingMatches(KebabError):
    """A filter (path glob, tags, front-matter fields) that no note passes: the message names
    it, so it is not read as notes that lack an answer."""


class Cancelled(asyncio.CancelledError):
    """A cancelled question that still carries its persisted partial answer (`Workspace.ask`)."""

    def __init__(self, answer: Answer) -> None:
        super().__init__("cancelled")
        self.answer = answer

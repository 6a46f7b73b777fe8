"""`textDocument/codeAction`: "Answer with kebab" on a question, and the quick fixes for moved
citations. Listing is pure text work on the open buffer: it answers at once, whatever else runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from kebab.lsp import diagnostics, questions, relations
from kebab.lsp import text as textmod
from kebab.lsp.context import note_at
from kebab.lsp.core import KebabServer

KINDS = [questions.KIND, types.CodeActionKind.QuickFix]


def code_actions(ls: KebabServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        actions += diagnostics.quick_fixes(ls, params)
    if _wanted(questions.KIND, only):
        action = answer_action(ls, params)
        if action is not None:
            actions.append(action)
    if _wanted(relations.KIND, only):
        action = link_action(ls, params)
        if action is not None:
            actions.append(action)
    return actions


def answer_action(ls: KebabServer, params: types.CodeActionParams) -> types.CodeAction | None:
    note = note_at(ls, ls.folders, params.text_document.uri)
    if note is None:
        return None
    start = textmod.to_server(ls, note.lines, params.range.start)
    end = textmod.to_server(ls, note.lines, params.range.end)
    question = questions.question_at(note.lines, start, end)
    if question is None:
        return None
    arguments = [note.uri, question.line, question.text]
    return types.CodeAction(
        title=questions.TITLE,
        kind=questions.KIND,
        command=types.Command(
            title=questions.TITLE, command=questions.COMMAND, arguments=arguments
        ),
    )


def link_action(ls: KebabServer, params: types.CodeActionParams) -> types.CodeAction | None:
    """ "Link related notes" on a heading or a selection."""
    note = note_at(ls, ls.folders, params.text_document.uri)
    if note is None:
        return None
    start, _ = textmod.to_server(ls, note.lines, params.range.start)
    end, _ = textmod.to_server(ls, note.lines, params.range.end)
    if not relations.offered(note.lines, start, end):
        return None
    return types.CodeAction(
        title=relations.TITLE,
        kind=relations.KIND,
        command=types.Command(
            title=relations.TITLE, command=relations.COMMAND, arguments=[note.uri, start]
        ),
    )


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """A client's `only` filter names kinds or their parents ("refactor" covers "refactor.rewrite")."""
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)

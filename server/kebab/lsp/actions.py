"""`textDocument/codeAction`: "Answer with kebab" on a question, and the quick fixes for moved
citations. Listing is pure text work on the open buffer: it answers at once, whatever else runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from kebab.lsp import diagnostics, insert
from kebab.lsp import text as textmod
from kebab.lsp.server import KebabServer

KINDS = [insert.KIND, types.CodeActionKind.QuickFix]


def register(server: KebabServer) -> None:
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS)
    )(code_actions)


def code_actions(ls: KebabServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        actions += diagnostics.quick_fixes(ls, params)
    if _wanted(insert.KIND, only):
        action = answer_action(ls, params)
        if action is not None:
            actions.append(action)
    return actions


def answer_action(ls: KebabServer, params: types.CodeActionParams) -> types.CodeAction | None:
    uri = params.text_document.uri
    snap = textmod.open_snapshot(ls, uri)
    if snap is None or ls.folders.at(uri) is None:
        return None
    start = textmod.to_server(ls, snap.lines, params.range.start)
    end = textmod.to_server(ls, snap.lines, params.range.end)
    question = insert.question_at(snap.lines, start, end)
    if question is None:
        return None
    arguments = [uri, question.line, question.text]
    return types.CodeAction(
        title=insert.TITLE,
        kind=insert.KIND,
        command=types.Command(title=insert.TITLE, command=insert.COMMAND, arguments=arguments),
    )


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """A client's `only` filter names kinds or their parents ("refactor" covers "refactor.rewrite")."""
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)

"""Answering in the note: `kebab.insertAnswer` answers a question (`questions`) and puts the
answer under it with `[^kb-n]` footnotes and their definitions at the end of the note.

The answer takes a while; the note may change meanwhile. The edit is computed on the note as it
is when the answer is ready (the question line found again by its text) and sent as a versioned
edit, so it lands in the right place or not at all. A line kebab answered before gets the new
answer in place of the old one (and of the definitions only that cited), never a second copy.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from kebab import footnotes
from kebab.lsp import answering, words
from kebab.lsp import text as textmod
from kebab.lsp.core import KebabServer, follow_request_cancel, target
from kebab.lsp.questions import COMMAND, TITLE, Question, question_at
from kebab.model import Answer, AskRequest, to_builtins
from kebab.placement import answer_text, keeps_structure
from kebab.syntax import FOOTNOTE_DEFINITION

_ATTEMPTS = 3

Done = Literal["inserted", "replaced"]  # what an applied edit did to the note


async def insert_answer(ls: KebabServer, *args: Any) -> Any:
    """`kebab.insertAnswer` with arguments (uri, line[, question[, answer_id]]): answer, then
    edit the note. With `answer_id` (an answer.v1 `id`), that stored answer is inserted under
    `line` as it was given, rendered for this note (relative links, next free labels)."""
    follow_request_cancel(ls)
    uri, line, asked, answer_id = _arguments(args)
    folder, path = target(ls, uri, COMMAND)
    snap = await asyncio.to_thread(textmod.read_snapshot, ls, uri)
    if snap is None or not 0 <= line < len(snap.lines):
        raise JsonRpcInvalidParams(f"{COMMAND}: line {line} is not in {uri}")
    if answer_id is not None:
        async with folder.use() as ws:
            stored = await asyncio.to_thread(ws.stored_answer, answer_id)
        if stored is None or not stored.grounded:
            raise JsonRpcInvalidParams(f"{COMMAND}: no grounded answer with id {answer_id}")
        held = Question(stored.question, line, snap.lines[line])
        style = folder.cfg.footnote_labels if folder.cfg else "kb"
        return _result(await _apply(ls, uri, path, held, stored, style), stored)
    question = question_at(snap.lines, (line, 0), (line, 0))
    if asked:
        question = Question(asked, line, snap.lines[line])
    if question is None:
        raise JsonRpcInvalidParams(
            f"{COMMAND}: line {line + 1} of {uri} is not a question "
            "(end it with '?', select it, or use a > [!question] callout)"
        )
    answer = await answering.answer(ls, folder, AskRequest(question=question.text, path=path), None)
    if not answer.grounded:
        _tell(ls, types.MessageType.Info, f"kebab: {_why_not(answer)}")
        return _result(None, answer)
    style = folder.cfg.footnote_labels if folder.cfg else "kb"
    return _result(await _apply(ls, uri, path, question, answer, style), answer)


def _result(done: Done | None, answer: Answer) -> dict[str, Any]:
    """The command's response: whether the answer is in the note, and whether it replaced the
    answer kebab had written under the line before."""
    return {
        "applied": done is not None,
        "replaced": done == "replaced",
        "answer": to_builtins(answer),
    }


def answer_edits(
    ls: KebabServer,
    snap: textmod.Snapshot,
    line: int,
    end: int | None,
    answer: Answer,
    note_path: str | None,
    style: str,
) -> list[types.TextEdit] | None:
    """The answer under `line`, and its footnote definitions at the end of the note. An answer
    kebab wrote under `line` before is replaced, with the definitions only it cited (the new
    ones go where those were), so answering a line again never stacks a second answer. None
    when the answer would change another block of the note (`placement.keeps_structure`): the
    line is in a table or code, or a line after it would read differently once apart. `end`:
    the last line of the answer kebab wrote under `line` before (`footnotes.answer_below`)."""
    lines = snap.lines
    gone = footnotes.unused_definitions(lines, line + 1, end) if end is not None else []
    gone = [i for i in gone if i != line]  # answered under a definition (Insert at cursor)
    dropped = set(gone) | set(range(line + 1, (end if end is not None else line) + 1))
    rest = "\n".join(s for i, s in enumerate(lines) if i not in dropped)  # labels are free again
    body, defs = _rendered(answer, rest, note_path, style)
    if not keeps_structure(lines, line, body):
        return None
    edits = [_answer_edit(ls, lines, line, line if end is None else end, body)]
    if gone:
        return edits + _definitions_replaced(ls, lines, gone, defs)
    return edits + ([_definitions_appended(ls, lines, defs)] if defs else [])


def _rendered(
    answer: Answer, note_text: str, note_path: str | None, style: str
) -> tuple[str, list[str]]:
    """The answer's body with `[^label]` references, and its new definitions, for this note."""
    if note_path is not None:
        return footnotes.for_note(answer.answer, answer.citations, note_text, note_path, style)
    first = footnotes.next_label(note_text, style)
    return footnotes.render(answer.answer, answer.citations, None, first, style)


def _answer_edit(
    ls: KebabServer, lines: list[str], line: int, end: int, body: str
) -> types.TextEdit:
    """The body after `line`, in place of lines `line`+1..`end` (an earlier answer) if any."""
    text, stop = answer_text(lines, line, end, body)
    start, stop_at = textmod.end_of_line(ls, lines, line), textmod.end_of_line(ls, lines, stop)
    return types.TextEdit(range=types.Range(start=start, end=stop_at), new_text=text)


def _definitions_appended(ls: KebabServer, lines: list[str], defs: list[str]) -> types.TextEdit:
    """The definitions after the note's last line, a blank line before them unless it is one."""
    last = len(lines) - 1
    if last > 0 and lines[last] == "":
        # The note ends with a newline: insert at the end of the last real line, never past
        # the final newline (Neovim adds a blank line for an edit there); the newline stays.
        last -= 1
    last_content = next((s for s in reversed(lines) if s.strip()), "")
    gap = "" if FOOTNOTE_DEFINITION.match(last_content) else "\n"
    new_text = "\n" + gap + "\n".join(defs)
    return types.TextEdit(range=_at(textmod.end_of_line(ls, lines, last)), new_text=new_text)


def _definitions_replaced(
    ls: KebabServer, lines: list[str], gone: list[int], defs: list[str]
) -> list[types.TextEdit]:
    """The new definitions in place of the first run of unused ones; the other runs deleted."""
    runs: list[tuple[int, int]] = []
    for i in gone:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    (first, last), *others = runs
    edits = [_lines_deleted(ls, lines, a, b) for a, b in others]
    if not defs:
        return [_lines_deleted(ls, lines, first, last), *edits]
    at = types.Range(
        start=types.Position(line=first, character=0),
        end=textmod.end_of_line(ls, lines, last),
    )
    return [types.TextEdit(range=at, new_text="\n".join(defs)), *edits]


def _lines_deleted(ls: KebabServer, lines: list[str], first: int, last: int) -> types.TextEdit:
    """Lines `first`..`last` and one line break gone, never touching the position past the
    note's final newline (Neovim adds a line for an edit there)."""
    if first > 0:
        start = textmod.end_of_line(ls, lines, first - 1)
        return types.TextEdit(
            range=types.Range(start=start, end=textmod.end_of_line(ls, lines, last)), new_text=""
        )
    end = types.Position(line=last + 1, character=0)
    return types.TextEdit(range=types.Range(start=types.Position(0, 0), end=end), new_text="")


async def _apply(
    ls: KebabServer, uri: str, path: str | None, question: Question, answer: Answer, style: str
) -> Done | None:
    """Edit the note as it is now; what was done, None when the editor did not take the edit.
    What it tells the user is in the answer's language."""
    lang = answer.lang
    for _ in range(_ATTEMPTS):
        snap = await asyncio.to_thread(textmod.read_snapshot, ls, uri)
        line = _find_again(snap.lines, question) if snap is not None else None
        if snap is None or line is None:
            _tell(ls, types.MessageType.Warning, words.say(lang, "question_changed"))
            return None
        end = footnotes.answer_below(snap.lines, line)
        replacing = end is not None
        edits = answer_edits(ls, snap, line, end, answer, path, style)
        if edits is None:
            _tell(ls, types.MessageType.Warning, words.say(lang, "would_break", line=line + 1))
            return None
        edit = textmod.workspace_edit(ls, snap, edits)
        try:
            result = await ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=TITLE)
            )
        except JsonRpcException as e:  # the editor failed on it: the answer is still returned
            _tell(ls, types.MessageType.Warning, words.say(lang, "editor_failed", error=e))
            return None
        if result.applied:
            if replacing:
                _tell(ls, types.MessageType.Info, words.say(lang, "replaced", line=line + 1))
            return "replaced" if replacing else "inserted"
        now = textmod.open_snapshot(ls, uri)
        if now is None or now.version == snap.version:  # refused for another reason
            why = result.failure_reason or words.say(lang, "no_reason")
            _tell(ls, types.MessageType.Warning, words.say(lang, "editor_refused", error=why))
            return None
    _tell(ls, types.MessageType.Warning, words.say(lang, "kept_changing"))
    return None


def _find_again(lines: list[str], q: Question) -> int | None:
    """The question's line now: where it was if unchanged, else the nearest identical line."""
    if 0 <= q.line < len(lines) and lines[q.line] == q.line_text:
        return q.line
    same = [i for i, s in enumerate(lines) if s == q.line_text]
    return min(same, key=lambda i: abs(i - q.line)) if same else None


def _arguments(args: tuple[Any, ...]) -> tuple[str, int, str | None, int | None]:
    if len(args) == 1 and isinstance(args[0], dict):
        a = args[0]
        args = (a.get("uri"), a.get("line"), a.get("question"), a.get("answer_id"))
    answer_id = args[3] if len(args) == 4 else None
    if answer_id is not None and (not isinstance(answer_id, int) or isinstance(answer_id, bool)):
        raise JsonRpcInvalidParams(f"{COMMAND}: answer_id must be an answer.v1 id (an integer)")
    args = args[:3] if len(args) == 4 else args
    if (
        not 2 <= len(args) <= 3
        or not isinstance(args[0], str)
        or not isinstance(args[1], int)
        or isinstance(args[1], bool)
    ):
        raise JsonRpcInvalidParams(
            f"{COMMAND} takes (uri, line[, question]): a note's uri, "
            "a 0-based line number and optionally the question text"
        )
    asked = args[2] if len(args) == 3 else None
    if asked is not None and (not isinstance(asked, str) or not asked.strip()):
        raise JsonRpcInvalidParams(f"{COMMAND}: the question must be non-blank text")
    return args[0], args[1], asked.strip() if asked else None, answer_id


def _why_not(answer: Answer) -> str:
    said = words.say(answer.lang, "nothing_inserted")
    return f"{answer.refusal_text or answer.answer.strip()} {said}"


def _at(position: types.Position) -> types.Range:
    return types.Range(start=position, end=position)


def _tell(ls: KebabServer, kind: types.MessageType, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

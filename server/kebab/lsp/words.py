"""What the language server itself says around an answer, in the answer's language (answer.v1
`lang`): the first and last lines of its progress, and its notices after Insert. A Korean asker
read "notes: ready" over a Korean answer and "answered with 2 citations" after it.

The answer's own sentences (a refusal's why, the `closest` line) are `rag.outcome`'s; each door
writes its own chrome (`cli/render.py`, the panel's and the float's tables) by the same `lang`.
"""

from __future__ import annotations

from typing import Literal

from kebab import filters
from kebab.model import Language
from kebab.text import language

Key = Literal[
    "answered",
    "closest",
    "cancelled",
    "failed",
    "not_answered",
    "opening",
    "indexing",
    "ready",
    "closed",
    "indexing_files",
    "indexing_passages",
    "replaced",
    "would_break",
    "nothing_inserted",
    "question_changed",
    "editor_failed",
    "editor_refused",
    "no_reason",
    "kept_changing",
]

WORDS: dict[Language, dict[Key, str]] = {
    "en": {
        "answered": "answered with {n} citation{s}",
        "closest": "closest passages: {n}",
        "cancelled": "cancelled",
        "failed": "failed",
        "not_answered": "not answered",
        "opening": "{name}: opening",
        "indexing": "{name}: indexing",
        "ready": "{name}: ready",
        "closed": "{name}: closed",
        "indexing_files": "indexing {name}: {done}/{total} files",
        "indexing_passages": "indexing {name}: {done}/{total} passages embedded",
        "replaced": "kebab: replaced the earlier answer under line {line}",
        "would_break": (
            "kebab: an answer under line {line} would change the blocks around it (a table, a "
            "list, code, a heading's underline); nothing was inserted (the answer is in the "
            "response)"
        ),
        "nothing_inserted": "Nothing was inserted.",
        "question_changed": (
            "kebab: the question changed while the answer was being written; nothing was "
            "inserted (the answer is in the response)"
        ),
        "editor_failed": "kebab: the editor could not apply the answer: {error}",
        "editor_refused": "kebab: the editor did not apply the answer: {error}",
        "no_reason": "no reason given",
        "kept_changing": "kebab: the note kept changing; the answer was not inserted",
    },
    "ko": {
        "answered": "답했습니다: 인용 {n}개",
        "closest": "가장 가까운 구절 {n}개",
        "cancelled": "취소했습니다",
        "failed": "실패했습니다",
        "not_answered": "답하지 못했습니다",
        "opening": "{name}: 여는 중",
        "indexing": "{name}: 색인 중",
        "ready": "{name}: 준비됨",
        "closed": "{name}: 닫힘",
        "indexing_files": "{name} 색인 중: 파일 {done}/{total}",
        "indexing_passages": "{name} 색인 중: 구절 임베딩 {done}/{total}",
        "replaced": "kebab: {line}번째 줄 아래의 이전 답을 새 답으로 바꿨습니다",
        "would_break": (
            "kebab: {line}번째 줄 아래에 답을 넣으면 주변 블록(표, 목록, 코드, 제목 밑줄)이 "
            "바뀝니다. 아무것도 넣지 않았습니다(답은 응답에 있습니다)"
        ),
        "nothing_inserted": "아무것도 넣지 않았습니다.",
        "question_changed": (
            "kebab: 답을 쓰는 동안 질문이 바뀌었습니다. 아무것도 넣지 않았습니다(답은 응답에 "
            "있습니다)"
        ),
        "editor_failed": "kebab: 편집기가 답을 적용하지 못했습니다: {error}",
        "editor_refused": "kebab: 편집기가 답을 적용하지 않았습니다: {error}",
        "no_reason": "이유가 주어지지 않았습니다",
        "kept_changing": "kebab: 노트가 계속 바뀌어 답을 넣지 못했습니다",
    },
}


def say(lang: Language, key: Key, **values: object) -> str:
    """The server's line `key` in `lang`, filled with `values`."""
    return WORDS[lang][key].format(**values)


def lang_of(question: str) -> Language:
    """The language an answer to `question` will be in, known before it is answered: the
    question's, without the filter words at its start (`path:infra/ #ops 백업은?` is Korean), as
    the answer's `lang` reads it. The notes' tags are not read here, so a leading `#word` no
    note carries is taken for a filter, where the answer keeps it as a word of the question."""
    return language(filters.from_question(question)[1])

"""answer.v1 as a person reads it in the terminal, the way the editors show it: markers shown
[1], [2] while the answer streams (the numbers its footnote labels carry), and one refusal
wording ("Not answered. The notes never mention: Redis."; "Closest in your notes." over
passages that may hold the answer), and every word around the answer in the answer's language
(answer.v1 `lang`), as the editors write it.
"""

from __future__ import annotations

import re

from kebab.footnotes import MARKER

# The words a door writes around an answer, in the answer's language (answer.v1 `lang`); the
# VS Code panel (`client-vscode/src/core/answer.ts`) and Neovim (`client-nvim/lua/kebab/ui.lua`)
# write the same.
WORDS: dict[str, dict[str, str]] = {
    "en": {
        "not_answered": "Not answered.",
        "closest": "Closest in your notes.",
        "sources": "Sources",
        "closest_passages": "Closest passages",
        "nearest_passages": "Nearest passages",
        "only": "Only notes matching",
        "disagree": "Notes disagree",
        "by_kebab": "cited by kebab",
    },
    "ko": {
        "not_answered": "답하지 못했습니다.",
        "closest": "노트에서 가장 가까운 곳.",
        "sources": "출처",
        "closest_passages": "가장 가까운 구절",
        "nearest_passages": "가까운 구절",
        "only": "이 노트에서만",
        "disagree": "노트끼리 어긋납니다",
        "by_kebab": "kebab이 인용",
    },
}


def words(lang: str | None) -> dict[str, str]:
    """The chrome in the answer's language (English for an answer stored before `lang`)."""
    return WORDS.get(lang or "en", WORDS["en"])


def shown(label: str | None) -> str:
    """A footnote label as a source's number is shown: `kb-3` → `3` (a label of the note's own,
    `source`, as it is)."""
    return label.removeprefix("kb-") if label else ""


def label_order(label: str | None) -> tuple[int, str]:
    """Sources in the order of their labels: numbers as numbers."""
    number = shown(label)
    return (int(number), "") if number.isdigit() else (1 << 30, number)


def refusal(refusal_text: str | None, outcome: str | None = None, lang: str | None = None) -> str:
    """The one line that says an answer was not given, and why: "Closest in your notes." over
    passages that may hold it (`closest`), "Not answered." when the notes have nothing."""
    head = words(lang)["closest" if outcome == "closest" else "not_answered"]
    return f"{head} {refusal_text}" if refusal_text else head


class Streamed:
    """Answer text as it streams, renumbered line by line (`[#5]` → `[1]`). Lines are held
    until the first citation: a refusal (which cites nothing) is then said once, in the
    refusal's words, rather than streamed and said again."""

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self._line = ""
        self._held: list[str] = []

    def write(self, piece: str) -> str:
        """What can be printed now."""
        self._line += piece
        *done, self._line = self._line.split("\n")
        self._held += [f"{line}\n" for line in done]
        if not any(MARKER.search(line) for line in self._held) and not self.numbers:
            return ""
        out, self._held = "".join(self._held), []
        return self._renumber(out)

    def rest(self) -> str:
        """The unfinished last line and anything held, renumbered (for an answer that stands)."""
        out, self._held, self._line = "".join(self._held) + self._line, [], ""
        return self._renumber(out)

    @property
    def printed(self) -> bool:
        return bool(self.numbers)

    def _renumber(self, text: str) -> str:
        def number(m: re.Match[str]) -> str:
            n = self.numbers.setdefault(int(m.group(1)), len(self.numbers) + 1)
            return f"[{n}]"

        return re.sub(r"[ \t]*" + MARKER.pattern, lambda m: number(m), text)

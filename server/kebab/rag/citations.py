"""Strict citation markers and the model's own verdict on its evidence.

Only `[#n]` counts: `[1]`, `[ #1 ]`, `vec![1]` and `[label][1]` are prose or code, never citations.
An answer with no marker, a marker that names no packed passage, or a self-declared lack of
evidence (English or Korean) is not grounded.
"""

from __future__ import annotations

import re

MARKER = re.compile(r"\[#(\d{1,3})\]")

# "X does not include Y" is a fact about X; only the sources lacking something is a refusal.
_SOURCES = r"\b(notes?|evidence|passages?|context|sources?|documents?|text|information)\s+"
_LACK = re.compile(
    r"(not enough (evidence|information)|insufficient (evidence|information)|"
    rf"{_SOURCES}(do|does|did) not (contain|mention|say|include|provide|cover)|"
    rf"{_SOURCES}(don't|doesn't|didn't|don’t|doesn’t|didn’t) "
    r"(contain|mention|say|include|provide|cover)|cannot answer|can't answer|"
    r"unable to answer|no (relevant )?(information|evidence)|not (mentioned|covered) in|"
    r"근거가 (부족|없)|근거 부족|정보가 (없|부족)|답할 수 없|알 수 없|언급(이|되어 있지) 없|찾을 수 없)",
    re.IGNORECASE,
)


def markers(text: str) -> list[int]:
    """Distinct `[#n]` numbers in order of first appearance."""
    return list(dict.fromkeys(int(m) for m in MARKER.findall(text)))


def self_declared_lack(text: str) -> bool:
    """The answer says, in its first sentence or in lieu of any citation, that evidence is lacking."""
    head = re.split(r"(?<=[.!?。])\s+|\n", text.strip(), maxsplit=1)[0]
    return bool(_LACK.search(head)) or (not markers(text) and bool(_LACK.search(text)))


def judge(text: str, packed: int) -> tuple[bool, list[int], list[int]]:
    """(grounded, valid markers used, unknown markers) for an answer over `packed` passages."""
    used = markers(text)
    valid = [m for m in used if 1 <= m <= packed]
    unknown = [m for m in used if not 1 <= m <= packed]
    grounded = bool(text.strip()) and bool(valid) and not unknown and not self_declared_lack(text)
    return grounded, valid, unknown

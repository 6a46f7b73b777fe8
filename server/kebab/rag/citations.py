"""Strict citation markers and the model's own verdict on its evidence.

Only `[#n]` counts: `[1]`, `[ #1 ]`, `vec![1]` and `[label][1]` are prose or code, never citations.
An answer with no marker, a marker that names no packed passage, or a self-declared lack of
evidence (English or Korean) is not grounded.
"""

from __future__ import annotations

import re

from kebab.footnotes import MARKER

# "X does not include Y" or "X carries no information about Y" is a fact about X; only the
# sources (or the answerer) lacking something is a refusal. Quoted text ('파일을 찾을 수 없음' as an
# error message) is never read as the model's own voice.
_SOURCES = r"\b(the )?(notes?|evidence|passages?|context|sources?|documents?|provided text)\s+"
_LACK = re.compile(
    r"(not enough (evidence|information)|insufficient (evidence|information)|"
    rf"{_SOURCES}(do|does|did) not (contain|mention|say|include|provide|cover|answer)|"
    rf"{_SOURCES}(don't|doesn't|didn't|don’t|doesn’t|didn’t) "
    r"(contain|mention|say|include|provide|cover|answer)|cannot answer|can't answer|"
    r"unable to answer|\b(there is|there's|i have|i found|contains?|provides?) no (relevant )?"
    r"(information|evidence)|not (mentioned|covered) in the (notes|evidence|passages|context)|"
    r"근거가 (부족|없)|근거 부족|(관련 )?(정보|내용)가 (없|부족)|(노트|자료|근거)에 (관련 )?(정보|내용)(이|가) 없|"
    r"(답할|알|찾을) 수 없(습니다|어요|다\.|음\.))",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`|‘[^’\n]*’|“[^”\n]*”|「[^」\n]*」")


def markers(text: str) -> list[int]:
    """Distinct `[#n]` numbers in order of first appearance."""
    return list(dict.fromkeys(int(m) for m in MARKER.findall(text)))


def self_declared_lack(text: str) -> bool:
    """The answer says, in its first sentence or in lieu of any citation, that evidence is lacking."""
    text = _QUOTED.sub("''", text)
    head = re.split(r"(?<=[.!?。])\s+|\n", text.strip(), maxsplit=1)[0]
    return bool(_LACK.search(head)) or (not markers(text) and bool(_LACK.search(text)))


def judge(text: str, packed: int) -> tuple[bool, list[int], list[int]]:
    """(grounded, valid markers used, unknown markers) for an answer over `packed` passages."""
    used = markers(text)
    valid = [m for m in used if 1 <= m <= packed]
    unknown = [m for m in used if not 1 <= m <= packed]
    grounded = bool(text.strip()) and bool(valid) and not unknown and not self_declared_lack(text)
    return grounded, valid, unknown

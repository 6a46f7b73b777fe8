"""Hangul loanwords read as the Latin words they came from: `도커` as docker, `리베이스` as rebase.

A Korean question writes an English tool or term the way it sounds; the notes write it in
English. A glossary never holds them all, so a Korean word the glossary does not know becomes a
pattern over the index's own Latin vocabulary (stemmed terms, as `text.latin_terms` makes them):
each syllable's consonants and vowel as the letters English spells that sound with. The
pattern is matched by the lexical index against the terms it holds, so only words some note has
are ever found, and a pattern that matches too many passages says nothing and is dropped there.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The letters an English word spells each sound with, as Korean writes it down (the National
# Institute of Korean Language's loanword rules, read backwards, with the usual spellings).
_INITIAL = [
    "(g|c|k|gh)",  # ㄱ
    "(k|c|g)",  # ㄲ
    "(n|kn)",  # ㄴ
    "(d|t)",  # ㄷ
    "(t|d)",  # ㄸ
    "(r|l|rr|ll)",  # ㄹ
    "m",  # ㅁ
    "(b|v|p)",  # ㅂ
    "(p|b)",  # ㅃ
    "(s|c|sh|ch|th|ss|z|x)",  # ㅅ
    "(s|ss|c)",  # ㅆ
    "(h|)",  # ㅇ: silent before a vowel
    "(j|g|z|dg|ch|s|si|ti)",  # ㅈ: and -sion (버전)
    "(j|z)",  # ㅉ
    "(ch|c|t|tch)",  # ㅊ
    "(k|c|ck|q|ch|x)",  # ㅋ
    "(t|th)",  # ㅌ
    "(p|f|ph)",  # ㅍ
    "(h|wh)",  # ㅎ
]
_VOWEL = [
    "(a|u|o|ar|ah|i)",  # ㅏ: and the first half of "i" in time, file, type (타임, 파일, 타입)
    "(a|e|ai|ay)",  # ㅐ
    "(ya|ia|a)",  # ㅑ
    "(ye|ya)",  # ㅒ
    "(o|u|e|a|er|ur|ir|or|ar)",  # ㅓ
    "(e|a|ai|ay|ei)",  # ㅔ
    "(ye|yo|io|e)",  # ㅕ
    "(ye|e)",  # ㅖ
    "(o|au|aw|ow|oa|ou)",  # ㅗ
    "(wa|oa|ua)",  # ㅘ
    "(we|wa)",  # ㅙ
    "(we|oe)",  # ㅚ
    "(yo|io)",  # ㅛ
    "(u|oo|ou|o|w)",  # ㅜ
    "(wo|uo|war|wor)",  # ㅝ
    "(we|ue)",  # ㅞ
    "(wi|ui|wee)",  # ㅟ
    "(u|yu|ew|iu)",  # ㅠ
    "(e|u|i|)",  # ㅡ: often no vowel at all (스 in 리베이스 is a bare s)
    "(ui|i)",  # ㅢ
    "(i|e|y|ee|ea|ie|)",  # ㅣ
]
_FINAL = {
    1: "(k|c|ck|g|)",  # ㄱ: or with the next syllable's s, an x (프록시 proxy)
    4: "n",  # ㄴ
    7: "(t|d)",  # ㄷ
    8: "(l|r|ll)",  # ㄹ
    16: "m",  # ㅁ
    17: "(p|b)",  # ㅂ
    19: "(t|s|d)",  # ㅅ
    20: "(t|s)",  # ㅆ
    21: "(ng|n)",  # ㅇ
}
_BARE = 18  # ㅡ, the vowel Korean adds to a consonant English says without one
_RIEUL, _RIEUL_FINAL = 5, 8  # ㄹ as an initial, as a final
_E_VOWELS = (1, 5)  # ㅐ, ㅔ: the e of an -es the index's stemming cuts off
_SYLLABLES = re.compile(r"^[\uac00-\ud7a3]{2,6}$")


@lru_cache(maxsize=4096)
def latin_pattern(word: str) -> str | None:
    """A regular expression for the Latin terms `word` (Hangul, 2-6 syllables, particles cut
    off) may be a loanword of; None for a word that is not all Hangul."""
    if not _SYLLABLES.match(word):
        return None
    jamo = [divmod(ord(ch) - 0xAC00, 588) for ch in word]
    sounds = [(i, *divmod(rest, 28)) for i, rest in jamo]  # (initial, vowel, final)
    parts: list[tuple[str, str, str]] = []
    for k, (initial, vowel, final) in enumerate(sounds):
        # a final consonant may carry the silent e English writes after it (time 타임, file 파일)
        coda = _FINAL[final] + "e?" if final in _FINAL else ""
        # one l between vowels is written ㄹㄹ (릴리스 release, 갤러리 gallery): the next
        # syllable's ㄹ spells it
        if final == _RIEUL_FINAL and k + 1 < len(sounds) and sounds[k + 1][0] == _RIEUL:
            coda = ""
        parts.append((_INITIAL[initial], _VOWEL[vowel], coda))
    # The last syllables the index's stemming cuts off (`kubernetes` is kept as `kubernet`):
    # a closing 스, 즈, 트 of no vowel of its own may be missing from the term, and with it an
    # e before it (`postgres` is kept as `postgr`, 포스트그레스; not 마우스 as `mas`).
    tail = ""
    while len(parts) > 2 and sounds[len(parts) - 1][1] == _BARE:
        tail = f"({''.join(parts.pop())}{tail})?"
    if tail and not parts[-1][2] and sounds[len(parts) - 1][1] in _E_VOWELS:
        onset, nucleus, _ = parts[-1]
        parts[-1] = (onset, f"{nucleus}?", "")
    return "".join("".join(p) for p in parts) + tail


# A word written half in Hangul, half in Latin letters: `마리아DB`, `몽고DB`, `노드JS`.
GLUED = re.compile(r"([\uac00-\ud7a3]{2,6})([A-Za-z][A-Za-z0-9]*)")


def glued_pattern(hangul: str, latin: str) -> re.Pattern[str] | None:
    """The Latin terms a half-Hangul word may stand for whole (`마리아DB`: mariadb), where its
    Latin half alone (`db`) is a different word."""
    sounds = latin_pattern(hangul)
    if sounds is None:
        return None
    # as the index stems the whole word: `nodejs` is kept as `nodej`, `centos` as `cento`
    tail = latin.lower()
    tail = re.escape(tail[:-1]) + "s?" if tail.endswith("s") else re.escape(tail)
    return re.compile(sounds + tail)

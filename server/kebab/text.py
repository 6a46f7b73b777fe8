"""Text analysis shared by the index, search and the extractive answerer: one definition of a term.

Latin-script words go through Tantivy's own simple tokenizer, lowercasing and English stemming;
Korean, Japanese and Chinese runs become overlapping character bigrams, because the bindings ship
no CJK morphology and bigrams keep `설정은` and `설정을` matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from functools import lru_cache
from itertools import pairwise
from typing import Protocol, TypeVar

import tantivy

from kebab.lexicon import english_for, korean_for
from kebab.loanwords import latin_pattern
from kebab.model import Language

_CJK_RUN = re.compile(
    r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7a3\uf900-\ufaff]+"
)
_analyzer = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)

# Question words and glue that carry no topic; dropped from queries only (never from documents).
STOPWORDS = frozenset(
    _analyzer.analyze(
        "a an the and or of to in on at for with by from as is are was were be been being do does did "
        "doing i me my we our you your it its this that these those what which who whom how why when "
        "where can could should would will shall may might must there here about into than then so "
        "if not no yes any some all also just only have has had get gets use used using please want "
        "need tell explain show make way many much whose whichever s t "
        "he him his she her they them their us"
    )
)


# Words that say how the asker feels or puts the question ("this weird error", "the annoying
# prompt", "a pointless step"), never what it is about: a note that lacks them lacks nothing.
MOOD_WORDS = frozenset(
    _analyzer.analyze(
        "weird weirdly strange strangely odd oddly annoying annoyingly annoyed funny pointless "
        "silly stupid dumb crazy confusing confused frustrating frustrated painful tedious "
        "ugly nice cool awesome great terrible horrible awful bad worse worst nasty messy "
        "good better best "
        "cryptic mysterious mysteriously random randomly sudden suddenly basically actually "
        "really honestly literally seriously totally kinda sorta somehow anyway anyways "
        "stuff thing things something someone somewhere whatever whatsoever lol ugh hmm "
        "hate love wish hope wonder wondering guess remember forgot forgotten recall "
        "recalled again still already ever never always quick quickly simple simply easy "
        "easily properly correctly nicely neat handy trick tricks "
        "bunch lot lots couple handful ton tons plenty several various anymore"
    )
)


def latin_terms(text: str) -> list[str]:
    """Stemmed lowercase word terms of the non-CJK parts of `text`."""
    return _analyzer.analyze(_CJK_RUN.sub(" ", text))


def cjk_terms(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character stands as itself)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return out


# Korean question words and glue, and the particles and endings that hang off a word: dropped
# from queries only, so that `어떻게`, `하나요` or the `트는` of `포트는` do not rank passages.
KO_STOPWORDS = frozenset(
    [
        "어떻게",
        "어떤",
        "어떠한",
        "무엇",
        "무엇을",
        "무엇인가요",
        "무엇이",
        "뭐",
        "뭔가요",
        "뭐예요",
        "뭐야",
        "뭘",
        "뭐가",
        "언제",
        "어디",
        "어디서",
        "어디에",
        "어디에서",
        "왜",
        "누가",
        "몇",
        "얼마나",
        "얼마",
        "하나요",
        "있나요",
        "되나요",
        "인가요",
        "하죠",
        "해요",
        "하면",
        "하려면",
        "싶어요",
        "싶은데",
        "싶다",
        "할",
        "수",
        "있어요",
        "있을까요",
        "있는",
        "있나",
        "하는",
        "방법",
        "방법은",
        "방법이",
        "방법을",
        "알려줘",
        "알려주세요",
        "궁금해요",
        "궁금합니다",
        "가능한가요",
        "가능해요",
        "돼요",
        "되요",
        "경우",
        "때",
        "좋을까요",
        "해야",
        "하나",
        "그리고",
        "또는",
        "그럼",
        "좀",
        "꼭",
        "다른",
        "같은",
        "이",
        "그",
        "저",
        "것",
        "거",
        "건가요",
        "걸까요",
        "있는데",
        "없나요",
        "없어요",
        "됩니까",
        "합니까",
        "입니까",
    ]
)
_KO_SUFFIXES = sorted(
    [
        "에서는",
        "으로는",
        "에서도",
        "이라는",
        "라는",
        "에서",
        "으로",
        "에게",
        "까지",
        "부터",
        "처럼",
        "보다",
        "하고",
        "이나",
        "은",
        "는",
        "이",
        "가",
        "을",
        "를",
        "에",
        "로",
        "와",
        "과",
        "의",
        "도",
        "만",
        "하려면",
        "려면",
        "하는",
        "하면",
        "해야",
        "하나요",
        "했는데",
        "되나요",
        "되는",
        "되면",
        "인가요",
        "인데",
        "일까요",
        "할까요",
        "하죠",
        "해서",
        "하게",
        "하기",
        "했어요",
        "해요",
        "돼요",
        "나요",
        "까요",
    ],
    key=len,
    reverse=True,
)


def korean_query_words(question: str) -> str:
    """The question's Korean content words, particles and endings cut off (for bigrams)."""
    out = []
    for word in question.split():
        word = word.strip("?？!.,~\"'()[]")
        if not _CJK_RUN.search(word) or word in KO_STOPWORDS:
            continue
        for suffix in _KO_SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 2:
                word = word[: -len(suffix)]
                break
        if len(word) > 1:  # a lone syllable (`해`, `분`) matches everything
            out.append(word)
    return " ".join(out)


def cjk_weights(question: str) -> dict[str, float]:
    """Each query bigram's weight, so that a Korean word counts once however long it is: the
    four bigrams of a five-syllable word are not four times one two-syllable word (a note's
    title word would otherwise outvote the word that names the answer)."""
    weights: dict[str, float] = {}
    for word in korean_query_words(question).split():
        grams = cjk_terms(word)
        for g in grams:
            weights[g] = max(weights.get(g, 0.0), 1.0 / len(grams))
    return weights


def query_terms(question: str) -> tuple[list[str], list[str]]:
    """(latin, cjk) distinct query terms; stopwords dropped unless nothing else is left."""
    latin = list(dict.fromkeys(latin_terms(question)))
    content = [t for t in latin if t not in STOPWORDS]
    cjk = list(dict.fromkeys(cjk_terms(korean_query_words(question))))
    return (content or latin), (cjk or list(dict.fromkeys(cjk_terms(question))))


def translated_terms(question: str) -> tuple[list[str], list[str]]:
    """(latin, cjk) terms of the question's words in the other language (`kebab.lexicon`):
    English terms for its Korean words, Korean bigrams for its English words; terms the
    question already has are left out."""
    latin, cjk = query_terms(question)
    english = [
        t
        for t in latin_terms(" ".join(english_for(question)))
        if t not in STOPWORDS and t not in latin
    ]
    korean = [g for word in korean_for(latin, latin_terms) for g in cjk_terms(word) if g not in cjk]
    return list(dict.fromkeys(english)), list(dict.fromkeys(korean))


# A Latin-script word of a question as a person wrote it (`app.asar`, `C++`, `firewall-cmd`),
# without the sentence's full stop: what names, subjects and missing words are read from.
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+#-]*[A-Za-z0-9+#]|[A-Za-z]")
# a capital after a lower-case letter inside a word: `deleteBy`, `iPad`, `MySQL`
CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
_WORD = re.compile(r"[^\W\d_][\w.-]*")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


@lru_cache(maxsize=65536)
def is_korean(text: str) -> bool:
    """Whether at least a fifth of the text's words hold Hangul: the one rule for "this question
    or passage is Korean" (answer and refusal language, script preference). Words, not letters:
    `CORSMiddleware allow_credentials 설정하려면?` is a Korean question."""
    words = _WORD.findall(text[:2000])
    return bool(words) and sum(1 for w in words if _HANGUL.search(w)) * 5 >= len(words)


def language(text: str) -> Language:
    """ "ko" or "en": the language of the words kebab writes for a question (answer.v1 `lang`)."""
    return "ko" if is_korean(text) else "en"


def content_terms(question: str) -> list[str]:
    """The question's Latin query terms that can name a thing the notes hold or lack: 3+
    letters, not a number (`8080` is a value the asker brings)."""
    return [t for t in query_terms(question)[0] if len(t) >= 3 and not t.isdigit()]


def judged_terms(question: str) -> list[str]:
    """The content terms whose absence from every note says something: not how the asker
    feels or phrases it ("weird", "annoying"). What `Index.unknown_words` looks for."""
    return [t for t in content_terms(question) if t not in MOOD_WORDS]


def query_words(question: str) -> list[frozenset[str]]:
    """The question's content words, each as the set of terms it is indexed as (one stemmed
    Latin term, or a Korean word's bigrams): the unit of `coverage`."""
    latin, _ = query_terms(question)
    words = [frozenset([t]) for t in latin]
    words += [frozenset(cjk_terms(w)) for w in korean_query_words(question).split()]
    return [w for w in words if w]


def translated_words(question: str) -> list[frozenset[str]]:
    """The question's words as a note in the other language would hold them (`kebab.lexicon`):
    a Korean question's Latin terms and the English for its Korean words; an English
    question's Korean glossary words, each as its bigrams. Empty when the glossary has none."""
    latin, _ = query_terms(question)
    if is_korean(question):
        other, _ = translated_terms(question)
        return [frozenset([t]) for t in dict.fromkeys(latin + other)] if other else []
    return [frozenset(cjk_terms(word)) for word in korean_for(latin, latin_terms)]


def loanword_reads(question: str) -> list[re.Pattern[str]]:
    """A Korean question's longer words the glossary has no English for (three syllables or
    more: `포스트그레스`, `쿠버네티스`), each as the pattern of the Latin terms it may be a
    loanword of (`loanwords.latin_pattern`). Shorter words are left out: everyday words read as
    sounds match Latin terms by chance (`커서` cursor, `여러` error, `안에`)."""
    if not is_korean(question):
        return []
    out = []
    for word in korean_query_words(question).split():
        sounds = None if len(word) < 3 or english_for(word) else latin_pattern(word)
        if sounds is not None:
            out.append(re.compile(sounds))
    return out


def loanword_words(question: str, held: AbstractSet[str]) -> list[frozenset[str]]:
    """The question's `loanword_reads` as the Latin terms of `held` (the evidence's, four
    letters or more) they read as: a name the evidence spells in English (`포스트그레스` as
    `postgr`) is asked, and an English unit that lacks it does not hold it. A word no term
    reads as is left out."""
    reads = loanword_reads(question)
    latin = [t for t in held if t.isascii() and len(t) >= 4] if reads else []
    out = []
    for pattern in reads:
        if found := frozenset(t for t in latin if pattern.fullmatch(t)):
            out.append(found)
    return out


def coverage(
    words: list[frozenset[str]], have: AbstractSet[str], context: AbstractSet[str] | None = None
) -> float:
    """Share of the question's words found in `have` (0..1), each word counting once; a Korean
    word counts by the share of its bigrams present; a word found only in `context` (the
    passage's headings) counts half."""
    if not words:
        return 0.0
    context = context or set()
    total = 0.0
    for w in words:
        inside = len(w & have) / len(w)
        total += max(inside, 0.5 * len(w & context) / len(w))
    return total / len(words)


@lru_cache(maxsize=2048)
def terms_of(text: str) -> frozenset[str]:
    """Every term `text` is indexed as, any script; kept per text, as every ask reads its
    passages' units again."""
    return frozenset(latin_terms(text)) | frozenset(cjk_terms(text))


def is_name(word: str, question: str) -> bool:
    """Whether an unknown word of the question is a name (`Kafka`, `gRPC`, `HEALTHCHECK`,
    `ssl-keyfile`, `v2`) rather than an everyday word (`phone`, `underneath`): a question about a
    thing no note names is not answered from notes about its neighbours, however close in
    meaning they are. A capital that only starts the sentence makes no name; a Latin-script
    word in a Korean question is one (`Todoist API는 어떻게 호출하나요?`). A hyphen makes a name
    of a word written as code (`--ssl-keyfile`, in backticks) or holding more than lower-case
    letters; "sanity-check" and "bill-paying" are everyday words put together."""
    if any(c.isupper() for c in word[1:]) or any(c.isdigit() or c in "_." for c in word):
        return True
    if "-" in word and (
        not word.replace("-", "").isalpha()
        or not word[1:].islower()
        or _quoted(word, question)
        or f"-{word}" in question
    ):
        return True
    if is_korean(question):  # a Korean question says its everyday words in Korean
        return True
    if not word[:1].isupper():
        return False
    at = question.find(word)
    return at > 0 and not re.search(r"[.?!]\s*$", question[:at])


_CLOSED = frozenset(
    [
        "about",
        "above",
        "across",
        "after",
        "against",
        "along",
        "alongside",
        "although",
        "among",
        "around",
        "before",
        "behind",
        "below",
        "beneath",
        "beside",
        "besides",
        "between",
        "beyond",
        "despite",
        "during",
        "except",
        "inside",
        "instead",
        "near",
        "onto",
        "outside",
        "over",
        "since",
        "than",
        "though",
        "through",
        "throughout",
        "toward",
        "towards",
        "under",
        "underneath",
        "unless",
        "unlike",
        "until",
        "upon",
        "via",
        "whereas",
        "while",
        "whilst",
        "within",
        "without",
        # indefinite pronouns: "so nobody can open it" is how it is put, not what it is about
        "anybody",
        "anyone",
        "everybody",
        "everyone",
        "nobody",
        "somebody",
        "someone",
        # when the asker met it ("the file I deleted *yesterday*"): the asker's day, not a thing
        # the notes could mention
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
    ]
)
# "last *night*'s backup", "every *morning*": a time word after one of these says when, not what
_WHEN = frozenset(["last", "this", "next", "every", "each"])
_TIME_NOUNS = frozenset(
    ["night", "morning", "evening", "afternoon", "week", "weekend", "month", "year", "day"]
)
_SUBJECT_OR_MODAL = frozenset(
    [
        "i",
        "you",
        "we",
        "they",
        "he",
        "she",
        "it",
        "to",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "don't",
        "doesn't",
        "didn't",
        "not",
        "then",
        "also",
        "just",
    ]
)
_PARTICLES = frozenset(["off", "up", "out", "down", "over", "back", "away"])
_IDIOM_PARTICLES = frozenset(["off", "up", "out"])  # rarely a preposition after a noun
# Verbs that carry how a question is put, not its subject ("why do my counts *look* off",
# "what *happens* when"): a note rarely needs them to answer.
_LIGHT_VERBS = frozenset(
    [
        "look",
        "looks",
        "seem",
        "seems",
        "feel",
        "feels",
        "happen",
        "happens",
        "work",
        "works",
        "go",
        "goes",
        "come",
        "comes",
        "keep",
        "keeps",
        "try",
        "tries",
        "know",
        "knows",
        "think",
        "thinks",
        "mean",
        "means",
        "say",
        "says",
        "tell",
        "tells",
        "help",
        "helps",
        "behave",
        "behaves",
        "differ",
        "differs",
        "compare",
        "compares",
        "matter",
        "matters",
        "figure",
        "figures",
    ]
)


_OPENING_QUOTES = tuple("'\"`‘“")
_CLOSING_QUOTES = tuple("'\"`’”")


def _quoted(word: str, question: str) -> bool:
    """Whether `word` stands in quotes in `question` (`mentions 'hotfix'`). Searched for with
    its opening quote, so a question of a million words is read a few times, not once a word."""
    for opening in _OPENING_QUOTES:
        start = question.find(opening + word)
        while start >= 0:
            end = start + 1 + len(word)
            if question[end : end + 1] in _CLOSING_QUOTES:
                return True
            start = question.find(opening + word, start + 1)
    return False


def is_phrasing_form(word: str) -> bool:
    """`is_phrasing` by the word's form alone, wherever it stands: an adverb or a verb form
    (`silently`, `squished`, `eating`), a preposition, conjunction or indefinite pronoun
    (`nobody`), a light verb."""
    w = word.lower()
    return w.endswith(("ly", "ing", "ed")) or w in _CLOSED or w in _LIGHT_VERBS


def is_idiom(word: str, question: str) -> bool:
    """Whether the word stands before `up`, `off` or `out` in the question (`act up`, `kick
    off`, `stub out`): half of an idiom, which says nothing alone, not a thing the notes could
    mention. Not before `over` or `back`, which as often lead a phrase of their own ("freeze
    croissants over the winter")."""
    return word.lower() in _put_by_place(question)[2]


def is_phrasing(word: str, question: str) -> bool:
    """Whether a word of the question reads as how it is put rather than what it is about: an
    adverb (`silently`), a verb form (`eating`, `broke` aside), a preposition or conjunction
    (`underneath`, `while`), when the asker met it (`yesterday`, `last night's`), a verb after
    its subject or a modal (`I stop`, `to chop`), one with its particle (`kick off`), or a
    quoted value (`mentions 'hotfix'`)."""
    w = word.lower()
    if is_phrasing_form(w):
        return True
    if _quoted(word, question):
        return True
    after, before, _ = _put_by_place(question)
    return w in after or w in before


@lru_cache(maxsize=8)
def _put_by_place(question: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The question's words (lower-cased) that some occurrence puts after a subject or a modal
    (`I stop`, `to chop`); those it puts before a particle (`kick off`); and those before `up`,
    `off` or `out` alone (`is_idiom`): read once per question, not once per word (a long pasted
    question asked word by word took seconds)."""
    words = re.findall(r"[\w'’-]+", question.lower())
    after = frozenset(x for i, x in enumerate(words) if i and words[i - 1] in _SUBJECT_OR_MODAL)
    when = {re.sub(r"['’]s?$", "", x) for i, x in enumerate(words) if i and words[i - 1] in _WHEN}
    after |= when & _TIME_NOUNS
    pairs = list(pairwise(words))
    before = frozenset(x for x, y in pairs if y in _PARTICLES)
    idiom = frozenset(x for x, y in pairs if y in _IDIOM_PARTICLES)
    return after, before, idiom


# Latin names stand apart from other letters, not at a word boundary: "Windows에서" (Hangul is
# a word character too). "MAC" in capitals is an address, and so is "mac address" / "맥 주소".
_NOT_LATIN = r"(?<![A-Za-z0-9])"
_PLATFORMS = {
    "windows": re.compile(
        _NOT_LATIN + r"(?:windows|win(?:10|11)|powershell)(?![A-Za-z0-9-])|윈도우", re.I
    ),
    "macos": re.compile(
        _NOT_LATIN
        + r"(?:(?i:mac\s?os|os\s?x)|(?:[Mm]ac(?:book|Book)?)(?!\s*(?:address|주소)))"
        + r"(?![A-Za-z0-9])|(?<![가-힣])맥(?:북)?(?:에서|에|의|은|는|을|으로|용|이)?(?![가-힣])(?!\s*주소)"
    ),
    "linux": re.compile(
        _NOT_LATIN
        + r"(?:linux|ubuntu|debian|cent\s?os|rhel|fedora)(?![A-Za-z0-9])|리눅스|우분투|데비안",
        re.I,
    ),
}


def platforms(text: str) -> frozenset[str]:
    """The operating systems `text` names (`windows`, `macos`, `linux`): a question asked for
    one, a section written for one ("## Windows", "### macOS")."""
    return frozenset(name for name, said in _PLATFORMS.items() if said.search(text))


# Headings of a note that describes a problem, then what resolves it (문제 → 해결, Problem →
# Solution): the question describes the first; the answer is the second.
_SYMPTOM = re.compile(
    r"^\W*(문제|증상|현상|에러|오류|이슈|상황|problem|issue|symptoms?|error|bug)\b", re.I
)
_FIX = re.compile(
    r"^\W*(해결|조치|대처|방법|원인|solution|fix|resolution|workaround|cause|answer)", re.I
)


def is_symptom(heading_path: list[str]) -> bool:
    """A passage under a heading that names a problem ("## 문제", "## Error")."""
    return bool(heading_path) and bool(_SYMPTOM.match(heading_path[-1]))


def is_fix(heading_path: list[str]) -> bool:
    """A passage under a heading that names what resolves a problem ("## 해결", "## Fix")."""
    return bool(heading_path) and bool(_FIX.match(heading_path[-1]))


class Section(Protocol):
    """A passage of a note, placed: an evidence passage or a search hit."""

    @property
    def path(self) -> str: ...
    @property
    def heading_path(self) -> list[str]: ...
    @property
    def start_line(self) -> int: ...


S = TypeVar("S", bound=Section)


def fix_for(problem: S, among: Iterable[S]) -> S | None:
    """The passage that resolves `problem` when it describes one ("## 문제", "## Error"): the
    first of `among`, in the caller's order of preference, that sits under a fix heading
    ("## 해결", "## Solution") after it in its note; None otherwise."""
    if not is_symptom(problem.heading_path):
        return None
    return next(
        (
            s
            for s in among
            if s.path == problem.path
            and s.start_line > problem.start_line
            and is_fix(s.heading_path)
        ),
        None,
    )

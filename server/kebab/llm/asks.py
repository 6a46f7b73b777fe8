"""What a question asks for: the kind of thing (a number, a flag, a command: `WANTS`), what it
counts ("how many retries"), and the names the notes must hold (`key_terms`, `names`). Read by the
extractive answerer to score units and by `lead` to weigh passages."""

from __future__ import annotations

import itertools
import re

from kebab.text import is_korean, latin_terms, query_words, terms_of

# What a question asks for, and what a unit holding it looks like.
WANTS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (  # a version
        re.compile(r"\bversions?\b|\breleases?\b|버전|릴리스", re.I),
        re.compile(r"\b\d+\.\d+(\.\d+)?\b"),
    ),
    (  # a quantity, a time, a port, a size, a status code
        re.compile(
            r"\b(how (much|many|long|often|old|big|large)|what (time|port|size|percentage"
            r"|status)|which (port|status))\b|얼마|몇|언제|크기|포트|상태 ?코드",
            re.I,
        ),
        # a number standing as a value (`600`, `15분`, `02:30`, `-1`, `HTTP_404`), or glued to
        # a short option (`-p2222`, `-Xmx4g`) or a cron step (`*/15`); not a digit of a name,
        # a version in it, a path or a footnote: "how big" is not answered by "the
        # DeepSeek-V3.1 repo" or "Qwen2.5-7B", "which port" not by `python3`, `/blob/4096` or
        # `[^1]`
        re.compile(
            r"(?<![A-Za-z0-9/.^])(?<![A-Za-z0-9.]-)\d|(?<=\*/)\d"
            r"|(?<=(?<![^\s`])-[A-Za-z])\d|(?<=-Xm[xs])\d"
        ),
    ),
    (  # an emoji or a symbol
        re.compile(r"\b(emoji|emojis|icon|symbol|signifier)\b|이모지|아이콘|기호", re.I),
        re.compile("[\u2190-\u2bff\U0001f000-\U0001faff]"),
    ),
    (  # a flag or an option
        re.compile(
            r"\b(flag|option|switch|argument|parameter)s?\b|옵션|플래그|인자|매개변수", re.I
        ),
        re.compile(r"(^|[\s`])--?[A-Za-z]|`[^`]+=[^`]*`|\b\w+_\w+\b"),
    ),
    (  # a file or a path
        re.compile(
            r"\b(which|what|where( is| are| do| does)?) (the )?(config(uration)? )?"
            r"(file|folder|directory|path)s?\b|어떤 파일|파일 ?(이름|경로|위치)|경로|어느 (파일|폴더)",
            re.I,
        ),
        re.compile(
            r"[~.]?/[\w.-]+|\b[\w-]+\.(json|ya?ml|toml|ini|conf|cfg|md|txt|py|js|ts|sh|env|lock|xml|plist|rc)\b"
        ),
    ),
    (  # a setting or a key
        re.compile(
            r"\b(which|what) (setting|config|key|variable|env(ironment)? var\w*)|설정값|환경 ?변수",
            re.I,
        ),
        re.compile(r"\b[\w.-]+\s*[=:]\s*\S|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|`[^`]+`"),
    ),
    (  # a command or an instruction
        re.compile(
            r"\b(how (do|can|should|would) (i|you|we)|how to|command|run|install|configure"
            r"|set up|enable|disable)\b|어떻게|방법|명령|하려면|설정",
            re.I,
        ),
        re.compile(r"`[^`]+`"),
    ),
]
# Quoted text, identifiers and numbers, and capitalised names not starting a sentence. ASCII
# classes on purpose: a Korean particle is not part of the name (`ReDoc은` names `ReDoc`), and an
# apostrophe inside "don't" opens no quote.
_KEY_TERM = re.compile(
    r"`([^`]+)`|\"([^\"]+)\"|(?:(?<=\s)|^)'([^'\n]{2,})'(?=[\s.,;:?!)]|$)|“([^”]+)”|"
    r"(?<![A-Za-z0-9])([A-Za-z0-9]*[_\d][A-Za-z0-9_.]*)|"
    r"(?<!^)(?<![.?!]\s)(?<![A-Za-z0-9])([A-Z][a-zA-Z]+[A-Z]?[A-Za-z0-9]*)"
)

COMMAND = WANTS[-1][1]


def shapes_asked(question: str, how: bool = False) -> list[re.Pattern[str]]:
    """The shapes of what `question` asks for (a version, a number, a flag…), as a unit that
    holds them reads; with `how`, a command for "how do I…" too (the last of `WANTS`)."""
    return [shape for asks, shape in (WANTS if how else WANTS[:-1]) if asks.search(question)]


_ITEM_MARKERS = re.compile(r"^[ \t>]*(?:[-*+]|\d{1,9}[.)])[ \t]+", re.M)


def holds(shape: re.Pattern[str], unit: str) -> bool:
    """Whether a unit holds the asked-for shape. A list item's own marker is not said by it:
    a step's `1.` is not the number "how many" or "which port" asks for, on any of its lines
    (a lead-in with its steps, a quoted list)."""
    return bool(shape.search(_ITEM_MARKERS.sub("", unit)))


_COUNTER_KO = re.compile(r"몇\s*([가-힣]+)")
_COUNTER_EN = re.compile(r"\bhow many ([a-z]+)", re.I)
_KO_PARTICLE = re.compile(r"(이나|이에요|인가요|이에|에서|으로|이|가|을|를|에|로|은|는|나)$")


# A Korean counter as a note in either language writes its number: "몇 시에 돌아가?" asked of
# an English note is answered by `02:30` (not by the restore test's `2024-03-02`), "몇 분" by
# "15 minutes". Longest first: `시간` before `시`.
_KO_COUNTER_READS: dict[str, str] = {
    "시간": r"\d\s*(?:시간|hours?\b|hrs?\b|h\b)",
    "시": r"\b\d{1,2}:\d{2}\b|\d\s*(?:시(?!간)|[ap]\.?m\b|o'clock)",
    "분": r"\d\s*(?:분|min(?:ute)?s?\b)",
    "초": r"\d\s*(?:초|sec(?:ond)?s?\b|m?s\b)",
    "일": r"\d\s*(?:일|days?\b)",
    "주": r"\d\s*(?:주|weeks?\b)",
    "개월": r"\d\s*(?:개월|months?\b)",
    "달": r"\d\s*(?:달|months?\b)",
    "년": r"\d\s*(?:년|years?\b)",
    "번": r"\d\s*(?:번|times\b|x\b)",
    "회": r"\d\s*(?:회|times\b|x\b)",
    "퍼센트": r"\d\s*(?:퍼센트|%|percent\b)",
    "프로": r"\d\s*(?:프로|%|percent\b)",
}
# "포트는 몇 번이야?", "몇 번 포트를 써?": which port, not how many times
_NUMBERED = re.compile(r"(포트|port|번호)\S*\s*몇\s*번|몇\s*번\s*(포트|port)", re.I)
# What may follow a counter in its word (`시쯤`, `분마다`, `퍼센트였지`): a postposition or the
# copula; "몇 시그마" counts no hours.
_COPULA = r"(이?면|이?야|이?었\w*|였\w*|인\w*|일\w*|이?에요)"
_KO_AFTER_COUNTER = re.compile(rf"(쯤|까지|부터|마다|정도|에)?{_COPULA}?")
_KO_COPULA = re.compile(rf"{_COPULA}$")


def counted_across(question: str) -> re.Pattern[str] | None:
    """`counted`, only where the counter reads in an English note too (`몇 시` as `02:30`, `몇
    분` as minutes): a Korean counter of no table (`몇 개`) matches only Korean notes, whose
    passages it would favour over the English ones that hold the answer."""
    m = _COUNTER_KO.search(question)
    return counted(question) if m is None or _counter_read(m.group(1)) else None


def _counter_read(word: str) -> str | None:
    """How notes in either language write the number a Korean counter word counts
    (`_KO_COUNTER_READS`), or None for a counter of no table."""
    word = _KO_PARTICLE.sub("", word) or word
    return next(
        (
            r
            for k, r in _KO_COUNTER_READS.items()
            if word.startswith(k) and _KO_AFTER_COUNTER.fullmatch(word[len(k) :])
        ),
        None,
    )


def shapes_wanted(question: str) -> list[re.Pattern[str]]:
    """The shapes a unit that answers `question` holds: what it asks for (`shapes_asked`, not
    "how do I"), and for "how many X" / "몇 X" the number of X (`counted`): "몇 시" is answered
    by `02:30`, not by any number."""
    count = counted(question)
    return [*shapes_asked(question), *([count] if count is not None else [])]


def counted(question: str) -> re.Pattern[str] | None:
    """What a "how many X" / "몇 X" question counts, as a pattern for "<number> X" (`15분`,
    `200 g`, `3 retries`): the unit holding it is the answer, not one with any number."""
    m = _COUNTER_KO.search(question)
    if m and _NUMBERED.search(question):  # "포트 몇 번이야?": which port, not how many times
        return None
    if m:
        if (reads := _counter_read(m.group(1))) is not None:
            return re.compile(reads, re.I)
        word = _KO_PARTICLE.sub("", m.group(1)) or m.group(1)
        counter = _KO_COPULA.sub("", word) or word  # "몇 개야?": 개, not 개야
        return re.compile(rf"\d\s*{re.escape(counter[:2])}")
    m = _COUNTER_EN.search(question)
    if m:
        word = m.group(1).lower().rstrip("s")
        return re.compile(rf"\d\s*{re.escape(word)}", re.I) if len(word) > 2 else None
    return None


def key_terms(question: str) -> list[str]:
    """Names, numbers, identifiers and quoted words of the question (`10` of `10분`); in a Korean
    question a capitalised word is a name wherever it stands (`Todoist API는…`)."""
    out = []
    for match in _KEY_TERM.finditer(f" {question}" if is_korean(question) else question):
        term = next(g for g in match.groups() if g).strip(".")
        if len(term) >= 2:
            out.append(term)
    return out


def names(question: str) -> list[str]:
    """The question's key terms that are names the notes must hold: not values (`14:00`), not a
    quoted phrase of three words or more (a message recalled from memory)."""
    return [t for t in key_terms(question) if not _VALUE.fullmatch(t) and len(t.split()) < 3]


def missing_key_terms(question: str, evidence_text: str) -> list[str]:
    """The question's names that the evidence lacks (a plural counts as its singular), when
    they are what the question is about: at least half of its names. One name missing among
    several is context ("my old `on_event` handler stopped running" is answered from the
    passage on `lifespan`). Values (`14:00`, `2024.09.17`, `30`) are the asker's own, and a
    quoted phrase of three words or more is a message or label recalled from memory: neither
    is a name the notes must hold."""
    haystack = evidence_text.lower()
    held = terms_of(evidence_text)

    def present(term: str) -> bool:
        """As written, or word for word as the index reads words (`tokens` in notes on `token`,
        `configured` in notes that say `configure`)."""
        t = term.lower()
        words = latin_terms(t)
        return t in haystack or (bool(words) and all(w in held for w in words))

    asked = names(question)
    missing = [t for t in asked if not present(t)]
    return missing if missing and len(missing) * 2 >= len(asked) else []


_VALUE = re.compile(r"[\d.,:/-]+")


# Where a question turns to a second thing it asks: a new question after a question mark, or a
# clause joined by "and" / "then" / a semicolon that opens with a question word or a verb of
# doing ("…into WAL mode, and what's the way back?", "pack a folder and then split it"); in
# Korean, "그리고", or a comma after a joining ending ("…갱신하는 명령이랑, …", "…뭐였고, …",
# "…적어야 하고, …"; not "…넣지 않고,", "…바꾸지 말고,", which set a condition). A clause that
# only goes on with the first ("…for a Header() and for a model", "…sponsor the project and
# have guides…") is no second question; a request after ", and" is ("…, and name a server
# that can stand in for it?").
_WH = r"what|what's|which|how|where|when|why|who"
# Hangul syllables that end in ㅆ: a past tense before "고" joins a second thing asked without a
# comma ("몇 버전으로 맞췄고 스프링 부트는 몇 버전이었지?", "뭐였고 결국 …"); a present "…하고"
# goes on with the same clause ("설치하고 실행하면") and needs the comma.
_PAST = "".join(chr(0xAC00 + 28 * i + 20) for i in range(19 * 21))
_SECOND = re.compile(
    r"(?<=[?？])\s+(?=\S)"
    rf"|(?:,|;)?(?<!\s)\s+(?:and|also)\s+(?:then\s+)?(?=(?:{_WH}"
    r"|is|are|do|does|did|can|could|should|will|would|(?:was|were)\s+(?:there|it|they|this|that))\b)"
    r"|,\s+and\s+(?=(?:name|list|give|tell|show)\b)"
    r"|(?:,|;)?(?<!\s)\s+and\s+then\s+(?=[a-z]+\b)"
    rf"|;(?<!\s)\s+(?=(?:{_WH})\b)"
    r"|(?:,\s*|(?<!\s)\s+)(?:그리고|그 ?다음(?:에)?|그런 ?다음(?:에)?)\s+"
    r"|(?:(?<=[가-힣][랑며])|(?<=[가-힣]고)(?<!않고)(?<!말고)(?<!안 하고))\s*,\s+"
    rf"|(?<=[{_PAST}]고)(?<!있고)\s+",
    re.I,
)
PART_WORDS = 2  # content words each part must have to stand as a question of its own
MOST_PARTS = 3  # a longer list of things asked is read as three: each part costs an embedding


def parts(question: str) -> list[str]:
    """The things `question` asks, in order: one element for a question of one part. A part
    with fewer than `PART_WORDS` content words ("and why?") is not a question of its own and
    stays with the one before it; a statement before the first question is its setting and
    stays with it ("zsh says 'no matches found'. How do I get around that…"), one after a
    question says more of it ("…with nmcli? I don't want it around anymore")."""
    spans: list[tuple[int, int]] = []  # (start, end) of each part in `question`
    at = 0
    for m in itertools.islice(_SECOND.finditer(question), 4 * MOST_PARTS):  # a long list
        if m.group().strip() == "" and not _asks(question[at : m.start()]):
            continue  # "…설정을 바꿨고 재시작도 했는데 왜…": a setting, not a thing asked
        if len(query_words(question[at : m.start()])) >= PART_WORDS:
            spans.append((at, m.start()))
            at = m.end()
    if len(query_words(question[at:])) >= PART_WORDS or not spans:
        spans.append((at, len(question)))
    else:
        spans[-1] = (spans[-1][0], len(question))
    if len(spans) > 1 and not _asks(question[spans[0][0] : spans[1][0]]):
        spans[:2] = [(spans[0][0], spans[1][1])]
    # a later statement says more of the part before it ("…with nmcli? I don't want it")
    merged = spans[:1]
    for a, b in spans[1:]:
        if _asks(question[a:b]) and len(merged) < MOST_PARTS:
            merged.append((a, b))
        else:
            merged[-1] = (merged[-1][0], b)
    return [question[a:b].strip() for a, b in merged]


_ASKING = re.compile(
    r"[?？]|(^|[.!:,;—]\s*)(what|which|how|where|when|why|who|is|are|do|does|can|should)\b"
    r"|(^|[.!:,;—]\s*)(?:from|in|since|after|before|under)\s+which\b"  # "From which release…"
    r"|뭐|뭘(?! ?해도)|뭔(?!가)|무엇|어디|어느|언제|어떻게|몇|무슨|어떤|왜|얼마|나요|까요|려면|방법|알려"
    r"|[가-힣][랑며]\s*,\s*$",  # "…명령이랑, …": a thing asked, joined to the next one
    re.I,
)


def _asks(text: str) -> bool:
    """Whether a piece of a question asks something (rather than setting the scene)."""
    return bool(_ASKING.search(text))
